"""Composite Rigid Body Algorithm: the joint-space mass matrix M(q).

Composite inertias ``Ic`` (N, nj, 6, 6) are accumulated leaf to root in each body's frame
(LOCAL). Column block of joint ``i`` is ``F = Ic_i S_i``; walking ``F`` up the support
path gives the blocks M[j, i] = S_j^T X^T ... F for every ancestor j. Only the dofs of the
subtree of j (nv_subtree) can be non-zero in row j. Armature is added on the diagonal.
The full symmetric matrix is returned.
"""
from __future__ import annotations

import numpy as np

from .model import Model
from .spatial import forces_to_parent, inertia_to_parent, project_columns
from .state import as_rows, batch_of, finish, joint_transforms


def crba(model: Model, q) -> np.ndarray:
    """M(q): (N, nv, nv), or (nv, nv) for a single q (nq,)."""
    batch = batch_of(model, q)
    q = as_rows(q, batch, model.nq)
    Xup = joint_transforms(model, q)
    Ic = np.repeat(model.body_inertia[None], batch.count, axis=0)  # (N, nj, 6, 6)
    M = np.zeros((batch.count, model.nv, model.nv))

    for i in reversed(range(model.njoints)):
        p = model.parent[i]
        if p >= 0:
            Ic[:, p] += inertia_to_parent(Xup.E[i], Xup.r[i], Ic[:, i])

    for i in range(model.njoints):
        cols = slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i])
        F = Ic[:, i] @ Xup.S[i]  # (N, 6, nv_i)
        M[:, cols, cols] = project_columns(Xup.S[i], F)
        j = i
        while model.parent[j] >= 0:
            F = forces_to_parent(Xup.E[j], Xup.r[j], F)
            j = model.parent[j]
            rows = slice(model.idx_v[j], model.idx_v[j] + model.nv_joint[j])
            block = project_columns(Xup.S[j], F)
            M[:, rows, cols] = block
            M[:, cols, rows] = np.swapaxes(block, 1, 2)

    diagonal = np.arange(model.nv)
    M[:, diagonal, diagonal] += model.armature
    return finish(M, batch)
