"""``mass --sparsity`` for people: the pattern of M drawn, and the factor's figures."""

from collections.abc import Sequence

from treedyn.pipeline.naming import shown
from .table import table, wrapped


def sparsity_table(document: dict, labels: Sequence[str]) -> str:
    """The pattern drawn with '#' (dofs i, j can couple) and '.', then the counts. A
    document without the pattern (M too large to hold, see its ``omitted``) gives the
    counts alone. The dof labels are shown as names are (:func:`.naming.shown`: escaped,
    long ones cut)."""
    labels = [shown(label) for label in labels]
    nv = len(labels)
    drawn = []
    if "pattern" in document:
        digits = len(str(max(nv - 1, 0)))
        width = max((len(label) for label in labels), default=0)
        ruler = " " * (digits + width + 3) + "".join(str(k % 10) for k in range(nv))
        rows = [f"{i:>{digits}} {label:<{width}}  " + "".join("#" if x else "." for x in row)
                for i, (label, row) in enumerate(zip(labels, document["pattern"]))]
        drawn = [wrapped("sparsity pattern of M (# where dofs i and j can couple: one "
                         "supports the other):"), ruler, *rows, ""]
    blocks = table([[b["joint"], b["size"], f"v[{b['first']}:{b['first'] + b['size']}]"]
                    for b in document["subtree_blocks"]],
                   ["joint", "nv_subtree", "block (its row and column of M)"])
    fill = document["fill_in"]
    lines = [
        f"nnz: {document['nnz']} of {nv * nv} (density {100 * document['density']:.1f} %); "
        f"tree-ordered L^T D L factor: {document['nnz_factor']} nonzeros incl. diagonal",
        f"fill-in: {fill['tree_order']} eliminating leaves first (tree order, as MuJoCo); "
        f"{fill['root_first']} new nonzero pair(s) if the root went first",
    ]
    if "confirmed" in document:
        check = document["confirmed"]
        solve = ("not finite (M singular)" if check["solve_vs_aba"] is None
                 else f"{check['solve_vs_aba']:.3g}")
        lines.append(
            f"confirmed on M(q) at {check['samples']} random configurations (seed "
            f"{check['seed']}): max |M_ij| outside the pattern = {check['max_outside']:.3g}, "
            f"{check['zero_inside']} pattern entries zero at every sample; "
            f"L^T D L solve vs ABA: {solve}")
    else:
        lines.append(f"without M (too large): not shown {', '.join(document['omitted'])}")
    return "\n".join([*drawn, *map(wrapped, lines), "", blocks])
