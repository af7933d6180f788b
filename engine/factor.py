"""MuJoCo-style sparse L^T D L factorization of the mass matrix in tree order.

Conventions
-----------
* Dofs are in the model's tree order (parents first), and ``dof_parent[i]`` is the
  previous dof on the path from dof ``i`` to the root (-1 at a root), as
  :class:`~treedyn.engine.model.Model` stores it.
* ``M = L^T D L`` with ``L`` unit lower triangular and ``D`` diagonal positive (MuJoCo's
  ``mj_factorI``; Pinocchio's ``cholesky.decompose`` writes the same factor as
  ``M = U D U^T`` with ``U = L^T``). Row ``i`` of ``L`` is non-zero only at dof ``i`` and
  its ancestors, so eliminating the dofs from the last to the first (leaves before their
  parents) creates no fill-in: the factor's pattern is the lower half of M's structural
  pattern.
* The compressed layout is MuJoCo's ``M_rownnz``, ``M_rowadr``, ``M_colind``: row ``i``
  lists its ancestors in increasing order and then ``i`` itself (the diagonal last).
* Everything numeric is batched over a leading N: ``M`` (N, nv, nv) or (nv, nv).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class FactorStructure(NamedTuple):
    """MuJoCo's compressed lower-triangle layout of M and of its tree-ordered factor."""

    rownnz: np.ndarray  # (nv,) non-zeros in row i: its ancestors and itself
    rowadr: np.ndarray  # (nv,) start of row i in colind
    colind: np.ndarray  # (nnz,) column of each non-zero, rows concatenated

    @property
    def nnz(self) -> int:
        return int(len(self.colind))


class LTDL(NamedTuple):
    """The factor M = L^T D L: ``L`` (N, nv, nv) unit lower triangular, ``D`` (N, nv)."""

    L: np.ndarray
    D: np.ndarray


def ancestors(dof_parent: np.ndarray) -> list[np.ndarray]:
    """For each dof, its ancestor dofs in increasing order (itself excluded)."""
    chains: list[np.ndarray] = []
    for i, parent in enumerate(np.asarray(dof_parent, dtype=int)):
        chains.append(np.append(chains[parent], parent) if parent >= 0 else
                      np.zeros(0, dtype=int))
    return chains


def descendants(dof_parent: np.ndarray) -> list[np.ndarray]:
    """For each dof, the dofs that have it as an ancestor, in increasing order."""
    below: list[list[np.ndarray]] = [[] for _ in dof_parent]
    for i in reversed(range(len(dof_parent))):
        parent = int(dof_parent[i])
        if parent >= 0:
            below[parent].append(np.append(i, np.concatenate(below[i])) if below[i] else
                                 np.array([i]))
    return [np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=int)
            for parts in below]


def factor_structure(dof_parent: np.ndarray,
                     diagonal_only: np.ndarray | None = None) -> FactorStructure:
    """The compressed pattern (MuJoCo's M_rownnz, M_rowadr, M_colind) of M's lower half.

    ``diagonal_only`` (nv,) bool marks rows reduced to their diagonal: MuJoCo does this
    for the dofs of its "simple" bodies (``dof_simplenum > 0``: a leaf body without moving
    ancestors whose joints sit at its inertial frame on aligned axes, where the couplings
    vanish identically). By default every row holds all its ancestors.
    """
    chains = ancestors(dof_parent)
    if diagonal_only is not None:
        chains = [np.zeros(0, dtype=int) if reduce else chain
                  for chain, reduce in zip(chains, diagonal_only)]
    rows = [np.append(chain, i) for i, chain in enumerate(chains)]
    rownnz = np.array([len(row) for row in rows], dtype=int)
    rowadr = np.concatenate([[0], np.cumsum(rownnz)[:-1]]).astype(int)[:len(rows)]
    colind = np.concatenate(rows).astype(int) if rows else np.zeros(0, dtype=int)
    return FactorStructure(rownnz, rowadr, colind)


def dof_depth(dof_parent: np.ndarray) -> np.ndarray:
    """(nv,) int: the number of ancestors of each dof (0 at a root). Parents come first."""
    dof_parent = np.asarray(dof_parent, dtype=int)
    depth = np.zeros(len(dof_parent), dtype=int)
    for i, parent in enumerate(dof_parent.tolist()):
        if parent >= 0:
            depth[i] = depth[parent] + 1
    return depth


def dof_subtree_end(dof_parent: np.ndarray) -> np.ndarray:
    """(nv,) int: dofs ``i .. end[i]-1`` are dof i and its descendants.

    Needs the model's tree order, depth first with parents first, where every subtree is
    a contiguous range (as :class:`~treedyn.engine.model.Model` stores dofs). Then dofs i
    and j couple in M (one supports the other) exactly when ``i <= j < end[i]`` or
    ``j <= i < end[j]``: the pattern of M in two (nv,) arrays instead of an (nv, nv) one.
    """
    dof_parent = np.asarray(dof_parent, dtype=int)
    end = np.arange(1, len(dof_parent) + 1)
    for i in range(len(dof_parent) - 1, -1, -1):
        parent = dof_parent[i]
        if parent >= 0 and end[i] > end[parent]:
            end[parent] = end[i]
    return end


def dofs_couple(end: np.ndarray, i, j) -> np.ndarray:
    """Whether dofs i and j (ints or arrays, broadcast) can couple in M: one supports the
    other (``end`` from :func:`dof_subtree_end`)."""
    i, j = np.asarray(i), np.asarray(j)
    return ((i <= j) & (j < end[i])) | ((j <= i) & (i < end[j]))


def pattern_nnz(dof_parent: np.ndarray) -> int:
    """Ones in M's structural pattern: the diagonal and each (dof, ancestor) pair twice."""
    return int(len(dof_parent) + 2 * dof_depth(dof_parent).sum())


def dense_pattern(dof_parent: np.ndarray) -> np.ndarray:
    """M's structural pattern (nv, nv) bool, from the subtree ranges (tree order as in
    :func:`dof_subtree_end`). Quadratic by nature: only for outputs that hold M too."""
    end = dof_subtree_end(dof_parent)
    columns = np.arange(len(end))
    pattern = (columns >= columns[:, None]) & (columns < end[:, None])  # j in i's subtree
    return pattern | pattern.T


def tree_fill_in(dof_parent: np.ndarray) -> dict[str, int]:
    """The fill-in of :func:`fill_in` for the two orders of the tree, in linear time.

    ``tree_order`` (leaves first, nv-1 .. 0): none, as the factor's pattern is M's lower
    half. ``root_first`` (0 .. nv-1, parents first): a dof eliminated before two others
    links them when a path joins them through earlier dofs only; every pair of one root's
    subtree has such a path through their common ancestor (which comes first), and pairs
    of different roots' subtrees none. So each root's subtree becomes a clique: the fill is
    the pairs of every root's subtree less M's own pairs (one per dof and ancestor).
    Tree order as in :func:`dof_subtree_end`.
    """
    dof_parent = np.asarray(dof_parent, dtype=int)
    end = dof_subtree_end(dof_parent)
    roots = np.flatnonzero(dof_parent < 0)
    sizes = end[roots] - roots
    pairs = int(np.sum(sizes * (sizes - 1) // 2))
    return {"tree_order": 0, "root_first": pairs - int(dof_depth(dof_parent).sum())}


def ltdl(dof_parent: np.ndarray, M: np.ndarray) -> LTDL:
    """Factor M = L^T D L in tree order, one row at a time from the last dof to the first.

    Only the structurally non-zero entries of M are read. Writing ``below(i)`` for the dofs
    that have ``i`` among their ancestors, the factor's row ``i`` follows from M's row ``i``
    and the rows of ``below(i)``, all computed before it (eliminating the leaves before
    their parents creates no fill-in)::

        D_i          = M_ii - sum_{k in below(i)} L_ki D_k L_ki
        D_i L_ij     = M_ij - sum_{k in below(i)} L_ki D_k L_kj     (j an ancestor of i)

    MuJoCo's ``mj_factorI`` subtracts the same products, as a rank-one update of the
    ancestors each time it eliminates a k (only the order of the sums differs). Summed here
    as one matrix product per run of consecutive dofs, a deep chain costs BLAS calls instead
    of a dense update of all ancestors per dof. The pivots are not checked: M is positive
    definite exactly when every entry of ``D`` is positive; a zero pivot (M singular) leaves
    inf/nan in ``L`` where its row couples, a negative one (M indefinite) a negative ``D``.
    """
    M = np.asarray(M, dtype=float)
    single = M.ndim == 2
    M = M[None] if single else M
    nv = M.shape[-1]
    chains = ancestors(dof_parent)
    below = descendants(dof_parent)
    L = np.zeros(M.shape)  # (N, nv, nv)
    D = np.empty(M.shape[:2])  # (N, nv)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i in reversed(range(nv)):
            columns = np.append(chains[i], i)
            row = M[:, i, columns]  # (N, depth + 1): D_i L_ij, then D_i last
            weights = L[:, below[i], i] * D[:, below[i]]  # (N, len(below)): L_ki D_k
            for rows, at_rows in _runs(below[i]):
                for cols, at_cols in _runs(columns):
                    row[:, at_cols] -= (weights[:, None, at_rows] @ L[:, rows, cols])[:, 0]
            D[:, i] = row[:, -1]
            L[:, i, chains[i]] = row[:, :-1] / row[:, -1:]
    L[:, np.arange(nv), np.arange(nv)] = 1.0
    return LTDL(L[0], D[0]) if single else LTDL(L, D)


def singular_pivots(factor: LTDL, M: np.ndarray) -> np.ndarray:
    """Which pivots of ``M = L^T D L`` leave M singular in double precision: (N, nv) bool,
    or (nv,) for one M (nv, nv).

    A pivot ``D_i`` is what remains of ``M_ii`` once the dofs below ``i`` are eliminated;
    it is singular when at or below ``nv * eps * max_j M_jj`` (rounding of the sums that
    made it), or not finite. Relative to M's largest diagonal entry, the verdict does not
    depend on the scale of the units: a model scaled to grams or millimetres keeps it.
    """
    D = factor.D
    M = np.asarray(M, dtype=float)
    nv = M.shape[-1]
    scale = np.abs(np.diagonal(M, axis1=-2, axis2=-1)).max(axis=-1, initial=0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        limit = nv * np.finfo(float).eps * scale
        return ~(D > limit[..., None]) | ~np.isfinite(D)


def _runs(chain: np.ndarray) -> list[tuple[slice, slice]]:
    """The increasing dofs ``chain`` as runs of consecutive dofs: (dofs, places in chain)."""
    if not len(chain):
        return []
    breaks = np.flatnonzero(np.diff(chain) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(chain)]])
    return [(slice(chain[a], chain[b - 1] + 1), slice(a, b)) for a, b in zip(starts, ends)]


def ltdl_solve(dof_parent: np.ndarray, factor: LTDL, b: np.ndarray) -> np.ndarray:
    """x with M x = b through the factor: x = L^-1 D^-1 L^-T b (MuJoCo's mj_solveLD).

    ``b`` is (nv,) or (N, nv) matching the factor's batch; L is walked along the tree
    (each row only at its ancestors).
    """
    L, D = factor
    single = D.ndim == 1
    L = L[None] if single else L
    D = D[None] if single else D
    x = np.array(np.broadcast_to(b, D.shape), dtype=float)
    chains = ancestors(dof_parent)
    nv = D.shape[-1]
    for i in reversed(range(nv)):  # x <- L^-T x
        chain = chains[i]
        x[:, chain] -= L[:, i, chain] * x[:, i:i + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        x /= D  # x <- D^-1 x
    for i in range(nv):  # x <- L^-1 x
        chain = chains[i]
        x[:, i] -= np.einsum("nj,nj->n", L[:, i, chain], x[:, chain])
    return x[0] if single else x


def factor_nnz(dof_parent: np.ndarray) -> int:
    """Non-zeros of the tree-ordered factor, diagonal included (no fill-in)."""
    return factor_structure(dof_parent).nnz


def fill_in(pattern: np.ndarray, order: np.ndarray) -> int:
    """New off-diagonal non-zeros (pairs i > j) that eliminating the dofs in ``order`` creates.

    Symbolic elimination on the graph of ``pattern`` (nv, nv) bool, symmetric: eliminating
    a dof connects all of its not-yet-eliminated neighbours. Tree order from the leaves
    (``order = nv-1 .. 0``) creates none; eliminating a root first couples all its
    branches (the textbook's star example).

    Counted through the elimination tree, as a symbolic Cholesky factorization does: the
    later neighbours of the dof eliminated p-th, once it goes, are its own later neighbours
    in M together with those of every dof whose first later neighbour it was. Every pair is
    then listed once, at its earlier end, so the fill is that total minus M's own pairs.
    """
    pattern = np.asarray(pattern, dtype=bool)
    order = np.asarray(order, dtype=int)
    nv = len(pattern)
    by_position = pattern[np.ix_(order, order)]  # row and column p: the dof eliminated p-th
    # each row as a bit set (a Python int): bit j set when the p-th and j-th dofs are linked
    rows = [int.from_bytes(np.packbits(row, bitorder="little").tobytes(), "little")
            for row in by_position]
    merged: list[list[int]] = [[] for _ in range(nv)]  # later neighbour sets handed to p
    listed = 0
    for p in range(nv):
        later = rows[p] >> (p + 1) << (p + 1)
        for neighbours in merged[p]:
            later |= neighbours
        later &= ~(1 << p)
        listed += later.bit_count()
        if later:
            first = (later & -later).bit_length() - 1  # its parent in the elimination tree
            merged[first].append(later)
    original = int(np.count_nonzero(pattern) - np.count_nonzero(np.diagonal(pattern))) // 2
    return listed - original


def eliminate(M: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The numeric Schur-complement updates of eliminating ``order`` from one M (nv, nv).

    Returns the matrix after every elimination step has updated the remaining block, with
    the eliminated rows/columns left as they were when eliminated; entries that were
    structurally zero and are now non-zero are the fill-in values (e.g. -0.4 * 0.4 / 4 =
    -0.04 in the textbook's star tree when the root goes first).
    """
    work = np.array(M, dtype=float)
    remaining = np.ones(len(work), dtype=bool)
    for k in order:
        remaining[k] = False
        rest = np.flatnonzero(remaining)
        work[np.ix_(rest, rest)] -= np.outer(work[rest, k], work[k, rest]) / work[k, k]
    return work
