"""Pictures of matrices over the dofs: ``mass --sparsity``'s patterns and ``diff``'s
change of M. Rows and columns are the dofs in the model's velocity order (v), labelled
with their names; entry (i, j) is drawn at row i, column j (matrix order, origin top
left)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import sized

# the factor picture's cells: empty, M's own entry, a fill-in of the tree order (none for
# a tree: a check), a fill-in if the root went first (each root's subtree a clique)
CELL_COLOURS = ("white", "#1f3b73", "#ff7f0e", "#d62728")
CELL_NAMES = ("", "nonzero of M", "fill-in (tree order)", "fill-in if the root went first")


def dof_axes(axes, labels: Sequence[str]) -> None:
    """Dof names on both axes of a matrix picture, small enough for about 40 dofs."""
    n = len(labels)
    size = 8 if n <= 12 else max(4.0, 8 - (n - 12) / 8)
    axes.set_xticks(range(n), labels, rotation=90, fontsize=size)
    axes.set_yticks(range(n), labels, fontsize=size)
    axes.set_xlabel("dof j (column)")
    axes.set_ylabel("dof i (row)")


def outline_blocks(axes, blocks: Sequence[dict]) -> None:
    """Each subtree's block of M (the rows and columns of a joint and every dof below it)
    outlined on the diagonal."""
    from matplotlib.patches import Rectangle

    for block in blocks:
        if block["size"] > 1:
            corner = block["first"] - 0.5
            axes.add_patch(Rectangle((corner, corner), block["size"], block["size"],
                                     fill=False, edgecolor="#2ca02c", linewidth=0.8))


def factor_pattern(factor: dict, nv: int) -> np.ndarray:
    """(nv, nv) bool: the L^T D L factor's nonzeros (lower half, diagonal included) from its
    row layout (MuJoCo's rownnz, rowadr, colind)."""
    pattern = np.zeros((nv, nv), dtype=bool)
    for i, (count, start) in enumerate(zip(factor["rownnz"], factor["rowadr"])):
        pattern[i, factor["colind"][start:start + count]] = True
    return pattern


def root_first_pattern(blocks: Sequence[dict], nv: int) -> np.ndarray:
    """(nv, nv) bool, lower half: the factor's pattern if the root went first. Every pair
    of one root's subtree is joined through their common ancestor, eliminated before
    them: each root's subtree block fills (:func:`treedyn.engine.factor.tree_fill_in`)."""
    filled = np.zeros((nv, nv), dtype=bool)
    end = 0
    for block in sorted(blocks, key=lambda b: b["first"]):
        if block["first"] >= end:  # a root: the first block not inside the one before
            end = block["first"] + block["size"]
            filled[block["first"]:end, block["first"]:end] = True
    return np.tril(filled)


def factor_cells(document: dict, nv: int) -> np.ndarray:
    """(nv, nv) int: the index into :data:`CELL_COLOURS` of each cell of the factor
    picture (the lower half; the upper half empty)."""
    pattern = np.tril(np.asarray(document["pattern"], dtype=bool))
    factor = factor_pattern(document["factor"], nv)
    cells = np.where(factor, np.where(pattern, 1, 2), 0)
    root_first = root_first_pattern(document["subtree_blocks"], nv)
    return np.where((cells == 0) & root_first, 3, cells)


@sized(14, 7.5)
def sparsity(figure, document: dict, labels: Sequence[str]) -> None:
    """``mass --sparsity``: M's structural pattern, and beside it the tree-ordered
    L^T D L factor with the fill-in a root-first order would create, each subtree's block
    outlined. ``document`` is the JSON's ``sparsity`` (it must hold ``pattern``)."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from treedyn.pipeline.errors import UsageError

    if "pattern" not in document:  # (M past the size dyn mass writes)
        raise UsageError(f"dyn: --plot: M of this model ({len(labels)} dofs) is too large to "
                         "draw")
    nv = len(labels)
    left, right = figure.subplots(1, 2)
    colours = ListedColormap(CELL_COLOURS)
    left.imshow(np.asarray(document["pattern"], dtype=int), cmap=colours, vmin=0, vmax=3,
                interpolation="nearest")
    left.set_title(f"structural pattern of M: {document['nnz']} of {nv * nv} nonzero")
    right.imshow(factor_cells(document, nv), cmap=colours, vmin=0, vmax=3,
                 interpolation="nearest")
    fill = document["fill_in"]
    right.set_title(f"tree-ordered L^T D L: {document['nnz_factor']} nonzeros; root first: "
                    f"{fill['root_first']} fill-in")
    for axes in (left, right):
        dof_axes(axes, labels)
        outline_blocks(axes, document["subtree_blocks"])
    handles = [Patch(facecolor=colour, edgecolor="grey", label=name)
               for colour, name in zip(CELL_COLOURS[1:], CELL_NAMES[1:])]
    handles.append(Patch(fill=False, edgecolor="#2ca02c", label="a joint's subtree block"))
    figure.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8)


@sized(9, 8)
def mass_change(figure, document: dict, matrix, old) -> None:
    """``diff``: every compared entry's largest relative change of M over the samples
    (|M_new - M_old| / sqrt(M_ii M_jj), :mod:`treedyn.engine.analysis.diff_matrix`), the
    dofs named as in the model ``old``. ``document``: diff's JSON document; ``matrix``:
    the report's :class:`~treedyn.engine.analysis.diff_matrix.MatrixDiff` (None: no dof
    compared)."""
    from matplotlib.colors import LogNorm, Normalize

    from treedyn.pipeline.naming import v_labels

    axes = figure.subplots()
    section = document["mass_matrix"]
    if matrix is None:
        axes.set_axis_off()
        axes.set_title("M(q) not compared: the models share no joint with a dof")
        return
    names = v_labels(old)
    change = np.where(np.isfinite(matrix.change), matrix.change, np.nan)
    positive = change[change > 0]
    top = float(positive.max()) if positive.size else 1.0
    low = max(float(positive.min()) if positive.size else top, top * 1e-12)
    # (a log scale when the changes span more than two decades)
    norm = LogNorm(vmin=low, vmax=top) if top > 100 * low else Normalize(vmin=0, vmax=top)
    image = axes.imshow(np.where(change > 0, change, np.nan), norm=norm, cmap="viridis",
                        interpolation="nearest")
    bar = figure.colorbar(image, ax=axes)
    bar.set_label("largest relative change of M_ij over the samples (1 = 100 %)")
    dof_axes(axes, [names[i] for i in matrix.compared])
    largest = section["max_change"]  # (null when not finite)
    axes.set_title(f"change of M(q) at {section['samples']} configurations (seed "
                   f"{section['seed']}): largest "
                   f"{'not finite' if largest is None else format(largest, '.3g')}; blank: none")
