"""Articulated Body Algorithm: forward dynamics a = M(q)^-1 (tau - h(q, v) + sum J^T f_ext).

Three passes in each body's frame (LOCAL): (1) root to leaves, velocities ``vel``, bias
accelerations ``c`` and bias forces ``pA``; (2) leaves to root, articulated inertias ``IA``
with the local D-block elimination ``U = IA S``, ``D = S^T U + armature``,
``u = tau - S^T pA``; (3) root to leaves, the joint accelerations
``qdd = D^-1 (u - U^T a')``. M is never formed.
"""
from __future__ import annotations

import numpy as np

from .model import Model
from .spatial import (apply_subspace, force_cross, force_to_parent, inertia_to_parent,
                      motion_cross, motion_to_child, project_subspace)
from .state import as_rows, batch_of, body_forces, finish, joint_transforms, joint_velocity, root_acceleration


def aba(model: Model, q, v=None, tau=None, fext=None, gravity=None) -> np.ndarray:
    """Joint accelerations (N, nv) -- or (nv,) -- under joint forces ``tau``.

    Same arguments and frames as :func:`treedyn.engine.rnea.rnea`, with ``tau`` (N, nv)
    in place of ``a``.
    """
    batch = batch_of(model, q)
    q = as_rows(q, batch, model.nq)
    v = as_rows(v, batch, model.nv)
    tau = as_rows(tau, batch, model.nv)
    forces = body_forces(model, batch, fext)
    Xup = joint_transforms(model, q)
    zero = np.zeros((batch.count, 6))
    nj = model.njoints
    vel, c, pA = [zero] * nj, [zero] * nj, [zero] * nj
    IA = np.repeat(model.body_inertia[None], batch.count, axis=0)  # (N, nj, 6, 6)
    U, Dinv, u = [None] * nj, [None] * nj, [None] * nj

    for i in range(nj):
        p = model.parent[i]
        vJ, cJ = joint_velocity(model, Xup, i, v)
        vel[i] = motion_to_child(Xup.E[i], Xup.r[i], vel[p] if p >= 0 else zero) + vJ
        c[i] = motion_cross(vel[i], vJ) if cJ is None else motion_cross(vel[i], vJ) + cJ
        pA[i] = force_cross(vel[i], vel[i] @ model.body_inertia[i].T)
        if forces is not None:
            pA[i] = pA[i] - forces[:, i]

    for i in reversed(range(nj)):
        p = model.parent[i]
        dofs = slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i])
        S = Xup.S[i]
        U[i] = IA[:, i] @ S  # (N, 6, k)
        D = np.swapaxes(S, -1, -2) @ U[i] + np.diag(model.armature[dofs])  # (N, k, k)
        Dinv[i] = invert_blocks(D)
        u[i] = tau[:, dofs] - project_subspace(S, pA[i])  # (N, k)
        if p >= 0:
            with np.errstate(invalid="ignore"):
                UDinv = U[i] @ Dinv[i]  # (N, 6, k)
            Ia = IA[:, i] - UDinv @ np.swapaxes(U[i], 1, 2)
            pa = (pA[i] + np.einsum("nij,nj->ni", Ia, c[i])
                  + np.einsum("nik,nk->ni", UDinv, u[i]))
            IA[:, p] += inertia_to_parent(Xup.E[i], Xup.r[i], Ia)
            pA[p] = pA[p] + force_to_parent(Xup.E[i], Xup.r[i], pa)

    a_world = root_acceleration(model, batch, gravity)
    acc = [zero] * nj
    qdd = np.empty((batch.count, model.nv))
    for i in range(nj):
        p = model.parent[i]
        dofs = slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i])
        a_pre = motion_to_child(Xup.E[i], Xup.r[i], acc[p] if p >= 0 else a_world) + c[i]
        rhs = u[i] - np.einsum("nik,ni->nk", U[i], a_pre)
        qdd[:, dofs] = np.einsum("njk,nk->nj", Dinv[i], rhs)
        acc[i] = a_pre + apply_subspace(Xup.S[i], qdd[:, dofs])

    return finish(qdd, batch)


def invert_blocks(D: np.ndarray) -> np.ndarray:
    """Inverses of the joint blocks D (N, k, k); a singular block gives inf/nan, not an error.

    A singular D means the subtree of that joint has no inertia along some joint direction
    (massless links): M is singular there and the accelerations are undefined.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        if D.shape[-1] == 1:
            return 1.0 / D
        try:
            return np.linalg.inv(D)
        except np.linalg.LinAlgError:
            singular = np.linalg.matrix_rank(D) < D.shape[-1]
            out = np.full_like(D, np.nan)
            out[~singular] = np.linalg.inv(D[~singular])
            return out
