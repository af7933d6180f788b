"""The structure of the mass matrix as data: its pattern, the tree-ordered LᵀDL factor's
layout and fill-in, and a numeric confirmation of both at random configurations.

Dofs are in the model's tree order (parents first). ``pattern[i][j]`` is 1 where one of
dofs i, j supports the other, the only places CRBA can write; the factor is MuJoCo's
sparse ``M = Lᵀ D L`` with L unit lower-triangular, eliminated leaves first.
"""
from __future__ import annotations

import numpy as np

from ..aba import aba
from ..crba import crba
from ..factor import (dense_pattern, dof_depth, factor_structure, ltdl, ltdl_solve,
                      tree_fill_in)
from ..rnea import rnea


def sparsity_document(model, samples: int = 3, seed: int = 0, dense: bool = True) -> dict:
    """The structural pattern of M, its tree-ordered L^T D L factor, and a numeric check.

    ``pattern``, ``nnz`` and ``nnz_factor`` are the interface's keys. ``factor`` is the
    factor's compressed layout in MuJoCo's terms (``M_rownnz``, ``M_rowadr``,
    ``M_colind``, every row with all its ancestors: MuJoCo 4 shortens the rows of its
    "simple" dofs to the diagonal); ``fill_in`` counts the new non-zeros (pairs below the diagonal) that
    eliminating in another order would create; ``confirmed`` checks the pattern on M(q) at
    random configurations, and the factor's solve against ABA there.

    Everything but ``pattern``, ``factor.colind`` and ``confirmed`` is linear in nv (from
    the dof parent array). Those three grow with M itself (nv^2 entries, nnz_factor column
    indices, M at ``samples`` configurations): with ``dense`` False they are left out and
    ``omitted`` lists them, so a model whose M is too large to hold still gets its
    structure.
    """
    nv = int(model.nv)
    depth = dof_depth(model.dof_parent)  # (nv,) ancestors of each dof
    nnz = nv + 2 * int(depth.sum())
    rownnz = depth + 1  # (nv,) factor row i: its ancestors and itself
    rowadr = np.concatenate([[0], np.cumsum(rownnz)[:-1]]).astype(int)[:nv]
    document = {
        "nnz": nnz,
        "nnz_factor": nv + int(depth.sum()),
        "density": nnz / nv ** 2 if nv else 0.0,
        "nv_subtree": {name: int(n) for name, n in zip(model.joint_names, model.nv_subtree)},
        "subtree_blocks": [{"joint": name, "first": int(model.idx_v[j]),
                            "size": int(model.nv_subtree[j])}
                           for j, name in enumerate(model.joint_names)],
        "factor": {"rownnz": rownnz.tolist(), "rowadr": rowadr.tolist()},
        "fill_in": tree_fill_in(model.dof_parent),
    }
    if not dense:
        return {**document, "omitted": list(DENSE_KEYS)}
    document["factor"]["colind"] = factor_structure(model.dof_parent).colind.tolist()
    return {"pattern": dense_pattern(model.dof_parent).astype(int).tolist(), **document,
            "confirmed": confirm_pattern(model, samples, seed)}


DENSE_KEYS = ("pattern", "factor.colind", "confirmed")  # what grows with M, not with nv


def confirm_pattern(model, samples: int, seed: int) -> dict:
    """M(q) at random q against the pattern, and the factor's solve against ABA."""
    if model.nv == 0:
        return {"samples": 0, "seed": seed, "max_outside": 0.0, "zero_inside": 0,
                "solve_vs_aba": 0.0}
    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng, samples)
    tau = rng.normal(size=(samples, model.nv))
    M = crba(model, q).reshape(samples, model.nv, model.nv)
    pattern = dense_pattern(model.dof_parent)  # (nv, nv) bool, beside M
    outside = np.abs(M[:, ~pattern])
    zero_inside = int(np.sum(np.all(M[:, pattern] == 0, axis=0)))
    with np.errstate(all="ignore"):
        solved = ltdl_solve(model.dof_parent, ltdl(model.dof_parent, M),
                            tau - rnea(model, q, None, None))
        expected = aba(model, q, None, tau)
        difference = np.abs(solved - expected)  # inf - inf when M is singular
    gap = float(difference.max()) if np.all(np.isfinite(difference)) else None
    return {"samples": samples, "seed": seed,
            "max_outside": float(outside.max()) if outside.size else 0.0,
            "zero_inside": zero_inside, "solve_vs_aba": gap}
