"""``mass --sparsity`` for people: the pattern of M drawn, and the factor's figures."""

from collections.abc import Sequence

from ..naming import shown
from .table import table


def sparsity_table(document: dict, labels: Sequence[str]) -> str:
    """The pattern drawn with '#' (dofs i, j can couple) and '.', then the counts. The
    dof labels are shown as names are (:func:`.naming.shown`: escaped, long ones cut)."""
    labels = [shown(label) for label in labels]
    pattern = document["pattern"]
    nv = len(pattern)
    digits = len(str(max(nv - 1, 0)))
    width = max((len(label) for label in labels), default=0)
    ruler = " " * (digits + width + 3) + "".join(str(k % 10) for k in range(nv))
    rows = [f"{i:>{digits}} {label:<{width}}  " + "".join("#" if x else "." for x in row)
            for i, (label, row) in enumerate(zip(labels, pattern))]
    blocks = table([[b["joint"], b["size"], f"v[{b['first']}:{b['first'] + b['size']}]"]
                    for b in document["subtree_blocks"]],
                   ["joint", "nv_subtree", "block (its row and column of M)"])
    fill, check = document["fill_in"], document["confirmed"]
    solve = ("not finite (M singular)" if check["solve_vs_aba"] is None
             else f"{check['solve_vs_aba']:.3g}")
    return "\n".join([
        "sparsity pattern of M (# where dofs i and j can couple: one supports the other):",
        ruler, *rows, "",
        f"nnz: {document['nnz']} of {nv * nv} (density {100 * document['density']:.1f} %); "
        f"tree-ordered L^T D L factor: {document['nnz_factor']} nonzeros incl. diagonal",
        f"fill-in: {fill['tree_order']} eliminating leaves first (tree order, as MuJoCo); "
        f"{fill['root_first']} new nonzero pair(s) if the root went first",
        f"confirmed on M(q) at {check['samples']} random configurations (seed {check['seed']}):"
        f" max |M_ij| outside the pattern = {check['max_outside']:.3g}, "
        f"{check['zero_inside']} pattern entries zero at every sample; "
        f"L^T D L solve vs ABA: {solve}",
        "", blocks,
    ])
