"""Recursive Newton-Euler: inverse dynamics tau = M(q) a + h(q, v) - sum_i J_i^T f_ext,i.

Conventions (Pinocchio's LOCAL): every body's velocity ``vel``, acceleration ``acc`` and
force ``f`` are spatial vectors in that body's own frame, about its origin. Gravity enters
as the world's acceleration ``-g`` (Featherstone's trick), so ``acc`` is the
gravity-shifted acceleration. Armature adds ``armature * a`` to tau.
"""
from __future__ import annotations

import numpy as np

from .model import Model
from .spatial import force_cross, force_to_parent, motion_cross, motion_to_child, project_subspace, apply_subspace
from .state import as_rows, batch_of, body_forces, finish, joint_transforms, joint_velocity, root_acceleration


def rnea(model: Model, q, v=None, a=None, fext=None, gravity=None) -> np.ndarray:
    """Joint forces (N, nv) -- or (nv,) for one state -- that produce accelerations ``a``.

    q (N, nq); v, a (N, nv) or None for zeros; fext (nj, 6) or (N, nj, 6) as
    ``[force, torque]`` on each body in its frame about its origin; gravity (3,) overrides
    the model's.
    """
    batch = batch_of(model, q)
    q = as_rows(q, batch, model.nq)
    v = as_rows(v, batch, model.nv)
    a = as_rows(a, batch, model.nv)
    forces = body_forces(model, batch, fext)
    Xup = joint_transforms(model, q)
    a_world = root_acceleration(model, batch, gravity)
    zero = np.zeros((batch.count, 6))
    nj = model.njoints
    vel, acc, f = [zero] * nj, [zero] * nj, [zero] * nj
    tau = np.empty((batch.count, model.nv))

    for i in range(nj):
        p = model.parent[i]
        vJ, cJ = joint_velocity(model, Xup, i, v)
        dofs = slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i])
        vel_p = vel[p] if p >= 0 else zero
        acc_p = acc[p] if p >= 0 else a_world
        vel[i] = motion_to_child(Xup.E[i], Xup.r[i], vel_p) + vJ
        acc[i] = (motion_to_child(Xup.E[i], Xup.r[i], acc_p) + apply_subspace(Xup.S[i], a[:, dofs])
                  + motion_cross(vel[i], vJ))
        if cJ is not None:
            acc[i] += cJ
        I = model.body_inertia[i]
        f[i] = acc[i] @ I.T + force_cross(vel[i], vel[i] @ I.T)
        if forces is not None:
            f[i] = f[i] - forces[:, i]

    for i in reversed(range(nj)):
        p = model.parent[i]
        dofs = slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i])
        tau[:, dofs] = project_subspace(Xup.S[i], f[i])
        if p >= 0:
            f[p] = f[p] + force_to_parent(Xup.E[i], Xup.r[i], f[i])

    return finish(tau + model.armature * a, batch)


def nonlinear_effects(model: Model, q, v=None, fext=None, gravity=None) -> np.ndarray:
    """h(q, v) - sum J^T f_ext: Coriolis, centrifugal, gravity (and external) terms."""
    return rnea(model, q, v, None, fext, gravity)


def generalized_gravity(model: Model, q, gravity=None) -> np.ndarray:
    """g(q): the joint forces that hold the robot still against gravity."""
    return rnea(model, q, None, None, None, gravity)
