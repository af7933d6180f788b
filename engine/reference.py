"""The readable path: the textbook recursions, one joint and (for the dynamics) one state
at a time, array-of-structures with 6x6 matrices.

Everything here is written for clarity, not speed; the batched kernels
(:mod:`treedyn.engine.rnea`, :mod:`~treedyn.engine.crba`, :mod:`~treedyn.engine.aba`) are
tested against it and the diagnostics (:mod:`treedyn.engine.analysis`) build on it.

Conventions (Featherstone's, Pinocchio's LOCAL, as in :mod:`treedyn.engine.spatial`)
----------------------------------------------------------------------------------------
* Motions are ``(angular, linear)``, forces ``(torque, force)``, every body's quantities in
  its own (link) frame about its origin. ``Xup[i]`` (6, 6) maps motions from the parent's
  frame into body ``i``'s (``Xup[i].T`` maps forces back); ``S[i]`` (6, k) is the joint's
  motion subspace, ``vJ = S qd`` its velocity and ``cJ`` its own bias acceleration.
* Gravity enters as the world's spatial acceleration ``a_world = (0, -g)``
  (Featherstone's trick; spatial_v2 writes ``a_grav`` for ``+g`` and starts from
  ``-a_grav``), so body accelerations are shifted by gravity. External wrenches ``fext``
  (nj, 6) are ``[force, torque]`` on each body in its frame about its origin. Armature
  adds ``armature * qdd`` to the joint forces.
* Body placements in the world and the Jacobians are in :mod:`treedyn.engine.kinematics`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .description import skew
from .model import Model
from .spatial import apply_subspace, inertia_to_parent, motion_matrix
from .state import states, world_acceleration


# ------------------------------------------------------------------------- joint motion
def joint_transform(joint, qj: np.ndarray):
    """(E (N, 3, 3), r (N, 3), S) of one joint model at its coordinates qj (N, nq_i):
    E turns parent coordinates into the child's, r is the child origin in the parent;
    S is (6, k) shared or (N, 6, k)."""
    E, r = joint.transform(qj)
    return E, r, joint.subspace(qj)


class JointTransforms(NamedTuple):
    E: list  # nj x (N, 3, 3): parent -> child coordinates
    r: list  # nj x (N, 3): child origin in parent coordinates
    S: list  # nj x (6, k) or (N, 6, k): motion subspaces
    q: list  # nj x (N, nq_i): configuration blocks


def joint_transforms(model: Model, q: np.ndarray) -> JointTransforms:
    """Xup = X_J(q) X_T of every joint, and its motion subspace, for the batch q (N, nq)."""
    E, r, S, blocks = [], [], [], []
    for i, joint in enumerate(model.joint_models):
        qj = q[:, model.idx_q[i]:model.idx_q[i] + model.nq_joint[i]]
        Ei, ri, Si = joint_transform(joint, qj)
        E.append(Ei)
        r.append(ri)
        S.append(Si)
        blocks.append(qj)
    return JointTransforms(E, r, S, blocks)


def joint_velocity(model: Model, transforms: JointTransforms, i: int, v: np.ndarray):
    """(vJ, cJ): the joint's spatial velocity (N, 6) and its own bias acceleration (N, 6),
    None for joints without one."""
    vj = v[:, model.idx_v[i]:model.idx_v[i] + model.nv_joint[i]]
    vJ = apply_subspace(transforms.S[i], vj)
    joint = model.joint_models[i]
    cJ = joint.bias(transforms.q[i], vj) if joint.has_bias else None
    return vJ, cJ


def crm(v: np.ndarray) -> np.ndarray:
    """The 6x6 motion cross product matrix: crm(v) @ m = v x m."""
    w, l = skew(v[:3]), skew(v[3:])
    return np.block([[w, np.zeros((3, 3))], [l, w]])


def crf(v: np.ndarray) -> np.ndarray:
    """The 6x6 force cross product matrix: crf(v) @ f = v x* f."""
    return -crm(v).T


class Joints(NamedTuple):
    """One state's joint quantities, one entry per joint (AoS)."""

    Xup: list  # nj x (6, 6)
    S: list  # nj x (6, k)
    vJ: list  # nj x (6,) joint velocity S qd
    cJ: list  # nj x (6,) the joint's own bias acceleration (zero for most joints)
    dofs: list  # nj x slice of the joint's velocity coordinates


def one_state(model: Model, q, v=None) -> Joints:
    """The joint quantities at one state: q (nq,), v (nv,) or None for zero."""
    q = np.asarray(q, dtype=float)[None]
    v = np.zeros((1, model.nv)) if v is None else np.asarray(v, dtype=float)[None]
    Xj = joint_transforms(model, q)
    Xup, S, vJ, cJ, dofs = [], [], [], [], []
    for i in range(model.njoints):
        Xup.append(motion_matrix(Xj.E[i], Xj.r[i])[0])
        S.append(np.broadcast_to(Xj.S[i], (1,) + Xj.S[i].shape[-2:])[0])
        velocity, bias = joint_velocity(model, Xj, i, v)
        vJ.append(velocity[0])
        cJ.append(np.zeros(6) if bias is None else bias[0])
        dofs.append(slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i]))
    return Joints(Xup, S, vJ, cJ, dofs)


def world_and_forces(model: Model, fext=None, gravity=None) -> tuple[np.ndarray, np.ndarray]:
    """(a_world (6,), fx (nj, 6)) of one state, the two inputs the recursions start from.

    ``a_world`` is the world's spatial acceleration that gravity is modelled by, (0, -g)
    as (angular, linear), with the model's gravity unless ``gravity`` (3,) is given
    (:func:`treedyn.engine.state.world_acceleration`). ``fx`` are the external wrenches
    ``fext`` (nj, 6), given as [force, torque] on each body in its frame about its origin,
    in the recursions' (torque, force) order; zeros for None.
    """
    a_world = world_acceleration(model, gravity)
    fx = np.zeros((model.njoints, 6))
    if fext is not None:
        fext = np.asarray(fext, dtype=float).reshape(model.njoints, 6)
        fx = np.concatenate([fext[:, 3:], fext[:, :3]], axis=1)
    return a_world, fx


# --------------------------------------------------------------------------- algorithms
def rnea_reference(model: Model, q, v=None, a=None, fext=None, gravity=None) -> np.ndarray:
    """tau (nv,) at one state (Featherstone's ID): forward velocities, accelerations and
    body forces, then joint forces from the leaves to the root. A coupled model: G^T tau
    of its uncoupled model at the expanded state (:func:`coupling_reference`)."""
    if model.coupling is not None:
        q_full, G = coupling_reference(model, q)
        qdd = np.zeros(model.nv) if a is None else np.asarray(a, dtype=float)
        tau = rnea_reference(model.coupling.full, q_full, None if v is None else G @ v,
                             G @ qdd, fext, gravity)
        return G.T @ tau + model.armature * qdd
    qdd = np.zeros(model.nv) if a is None else np.asarray(a, dtype=float)
    J = one_state(model, q, v)
    # a_world = (0, -g): the world's spatial acceleration that gravity is modelled by
    a_world, fx = world_and_forces(model, fext, gravity)
    I, parent = model.body_inertia, model.parent
    vel, acc, f = [None] * model.njoints, [None] * model.njoints, [None] * model.njoints
    for i in range(model.njoints):
        p = parent[i]
        vel[i] = (J.Xup[i] @ vel[p] if p >= 0 else 0.0) + J.vJ[i]
        acc[i] = (J.Xup[i] @ (acc[p] if p >= 0 else a_world) + J.S[i] @ qdd[J.dofs[i]]
                  + J.cJ[i] + crm(vel[i]) @ J.vJ[i])
        f[i] = I[i] @ acc[i] + crf(vel[i]) @ I[i] @ vel[i] - fx[i]
    tau = np.zeros(model.nv)
    for i in reversed(range(model.njoints)):
        tau[J.dofs[i]] = J.S[i].T @ f[i]
        if parent[i] >= 0:
            f[parent[i]] = f[parent[i]] + J.Xup[i].T @ f[i]
    return tau + model.armature * qdd


def crba_reference(model: Model, q) -> np.ndarray:
    """M (nv, nv) at one state (Featherstone's CRBA): composite inertias leaves to root,
    then each joint's force columns carried up its chain of ancestors. A coupled model:
    G^T M G of its uncoupled model, plus its armature."""
    if model.coupling is not None:
        q_full, G = coupling_reference(model, q)
        return G.T @ crba_reference(model.coupling.full, q_full) @ G + np.diag(model.armature)
    J = one_state(model, q)
    parent = model.parent
    IC = [inertia.copy() for inertia in model.body_inertia]
    for i in reversed(range(model.njoints)):
        if parent[i] >= 0:
            IC[parent[i]] = IC[parent[i]] + J.Xup[i].T @ IC[i] @ J.Xup[i]
    H = np.diag(model.armature).astype(float)
    for i in range(model.njoints):
        F = IC[i] @ J.S[i]  # (6, k)
        H[J.dofs[i], J.dofs[i]] += J.S[i].T @ F
        j = i
        while parent[j] >= 0:
            F = J.Xup[j].T @ F
            j = parent[j]
            H[J.dofs[i], J.dofs[j]] = F.T @ J.S[j]
            H[J.dofs[j], J.dofs[i]] = H[J.dofs[i], J.dofs[j]].T
    return H


def aba_reference(model: Model, q, v=None, tau=None, fext=None, gravity=None) -> np.ndarray:
    """qdd (nv,) at one state (Featherstone's ABA, FDab): velocities and bias forces, then
    articulated inertias leaves to root, then accelerations root to leaves. A coupled
    model: the solution of M a = tau - h with its M and h."""
    if model.coupling is not None:
        rhs = -rnea_reference(model, q, v, None, fext, gravity)
        return np.linalg.solve(crba_reference(model, q), rhs if tau is None else rhs + tau)
    tau = np.zeros(model.nv) if tau is None else np.asarray(tau, dtype=float)
    J = one_state(model, q, v)
    # a_world = (0, -g): the world's spatial acceleration that gravity is modelled by
    a_world, fx = world_and_forces(model, fext, gravity)
    parent, nj = model.parent, model.njoints
    vel, c, IA, pA = [None] * nj, [None] * nj, [None] * nj, [None] * nj
    for i in range(nj):
        p = parent[i]
        vel[i] = (J.Xup[i] @ vel[p] if p >= 0 else 0.0) + J.vJ[i]
        c[i] = J.cJ[i] + crm(vel[i]) @ J.vJ[i]
        IA[i] = model.body_inertia[i].copy()
        pA[i] = crf(vel[i]) @ IA[i] @ vel[i] - fx[i]
    U, d, u = [None] * nj, [None] * nj, [None] * nj
    for i in reversed(range(nj)):
        U[i] = IA[i] @ J.S[i]  # (6, k)
        d[i] = J.S[i].T @ U[i] + np.diag(model.armature[J.dofs[i]])
        u[i] = tau[J.dofs[i]] - J.S[i].T @ pA[i]
        p = parent[i]
        if p >= 0:
            Ud = U[i] @ np.linalg.inv(d[i])
            Ia = IA[i] - Ud @ U[i].T
            pa = pA[i] + Ia @ c[i] + Ud @ u[i]
            IA[p] = IA[p] + J.Xup[i].T @ Ia @ J.Xup[i]
            pA[p] = pA[p] + J.Xup[i].T @ pa
    qdd, acc = np.zeros(model.nv), [None] * nj
    for i in range(nj):
        p = parent[i]
        acc[i] = J.Xup[i] @ (acc[p] if p >= 0 else a_world) + c[i]
        qdd[J.dofs[i]] = np.linalg.solve(d[i], u[i] - U[i].T @ acc[i])
        acc[i] = acc[i] + J.S[i] @ qdd[J.dofs[i]]
    return qdd


def articulated_blocks(model: Model, q) -> list[np.ndarray]:
    """ABA's D-blocks ``S^T IA S + armature``, one (N, k, k) array per joint (k = the
    joint's nv), for q (N, nq): the backward sweep of :func:`aba_reference` over a batch.

    A singular block (a joint that moves no inertia) is passed on to the parent with a
    pseudo-inverse, so the other blocks stay finite. A coupled model has no such blocks
    (its M is not that of a tree): ValueError.
    """
    if model.coupling is not None:
        raise ValueError("a model with mimic joints enforced has no articulated blocks")
    batch, q = states(model, q)[:2]
    Xup = joint_transforms(model, q)
    IA = np.repeat(model.body_inertia[None], batch.count, axis=0)  # (N, nj, 6, 6)
    blocks: list[np.ndarray] = [np.zeros(0)] * model.njoints
    for i in reversed(range(model.njoints)):
        dofs = slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i])
        S = Xup.S[i]
        U = IA[:, i] @ S  # (N, 6, k)
        blocks[i] = np.swapaxes(S, -1, -2) @ U + np.diag(model.armature[dofs])
        p = model.parent[i]
        if p >= 0:
            reduced = IA[:, i] - U @ np.linalg.pinv(blocks[i]) @ np.swapaxes(U, 1, 2)
            IA[:, p] += inertia_to_parent(Xup.E[i], Xup.r[i], reduced)
    return blocks


# ----------------------------------------------------------------------- mimic joints
def coupling_reference(model: Model, q) -> tuple[np.ndarray, np.ndarray]:
    """(q_full (nq_full,), G (nv_full, nv)) of a coupled model at one q (nq,), joint by
    joint and by name: a joint's own coordinates are copied, a mimic joint's are
    ``multiplier * q_master + offset``, and its dof moves ``multiplier`` times the master's
    (:mod:`treedyn.engine.coupling`)."""
    full, q = model.coupling.full, np.asarray(q, dtype=float)
    q_full, G = np.zeros(full.nq), np.zeros((full.nv, model.nv))
    for j, name in enumerate(full.joint_names):
        mimic = model.mimic[name] if model.nv_joint[j] < full.nv_joint[j] else None
        source = j if mimic is None else model.joint_index(mimic.joint)
        scale, offset = (1.0, 0.0) if mimic is None else (mimic.multiplier, mimic.offset)
        for k in range(full.nq_joint[j]):
            q_full[full.idx_q[j] + k] = scale * q[model.idx_q[source] + k] + offset
        for k in range(full.nv_joint[j]):
            G[full.idx_v[j] + k, model.idx_v[source] + k] = scale
    return q_full, G
