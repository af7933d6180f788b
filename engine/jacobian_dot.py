"""The time variation of Jacobians, dJ/dt, for a batch of states (q, v) (N, nq), (N, nv):
the dofs' motions in the world and how fast they turn (:func:`world_rates`), and a named
frame's ``Jdot`` in Pinocchio's three reference frames (:func:`frame_jacobian_rates`),
``J a + Jdot v`` its spatial acceleration. ``tests/test_coriolis.py`` holds it to
Pinocchio's ``computeJointJacobiansTimeVariation`` + ``getFrameJacobianTimeVariation``
and to finite differences of ``J v`` along a motion.

Frames and conventions
----------------------
A dof ``d`` of joint ``i`` moves the bodies of ``i``'s subtree by ``S_d`` (6,), written
in world axes about the world origin, rows (angular, linear)
(:meth:`~treedyn.engine.world_poses.WorldPoses.motions`): ``S_d = X_i S_local`` with
``X_i`` body ``i``'s placement. Body ``i``'s spatial velocity in the same frame is
``ov_i = sum S_d v_d`` over the dofs that support it, and the column turns at

    dS_d/dt = ov_i x S_d + X_i dS_local/dt,

the second term only for a joint whose ``S_local`` depends on q (MuJoCo's free joint,
:meth:`~treedyn.engine.joints.JointModel.subspace_rate`); Pinocchio's joints have none,
and this is its ``data.dJ``. A frame's Jacobians follow :mod:`treedyn.engine.named`
(rows (linear, angular)); their rates are the exact time derivatives:

* ``WORLD``: the columns' rates as they are;
* ``LOCAL_WORLD_ALIGNED``: linear rows ``dS_lin + dS_ang x p_f + S_ang x dp_f``, with
  ``dp_f = ov_lin + ov_ang x p_f`` the velocity of the frame's origin;
* ``LOCAL``: ``R_f^T`` times those, less ``w_f x J`` (``w_f`` the frame's angular
  velocity in its own axes, ``J`` its LOCAL Jacobian).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .kinematics import FRAMES, LOCAL, WORLD
from .model import Model
from .named import Frames, frame_placements, support
from .spatial import motion_cross
from .state import states
from .world_poses import WorldPoses


class WorldRates(NamedTuple):
    """The bodies' placements and motions, and the dofs' columns and their rates, of a
    batch of states, world axes about the world origin, (angular, linear)."""

    R: np.ndarray  # (N, nj, 3, 3) bodies' axes in the world
    p: np.ndarray  # (N, nj, 3) bodies' origins
    S: np.ndarray  # (N, nv, 6) every dof's motion subspace
    ov: np.ndarray  # (N, nj, 6) every body's spatial velocity
    dS: np.ndarray  # (N, nv, 6) dS/dt of every dof's column


def world_rates(model: Model, q: np.ndarray, v: np.ndarray) -> WorldRates:
    """:class:`WorldRates` of an uncoupled model at q (N, nq), v (N, nv)."""
    poses = WorldPoses(model, q, np.arange(model.njoints))  # (the thread's arena: copied)
    R = np.moveaxis(poses.R, -1, 0).copy()  # (N, nj, 3, 3)
    p = np.moveaxis(poses.p, -1, 0).copy()  # (N, nj, 3)
    _, w, u = poses.motions()  # every dof in order, (nv, 3, N) each
    S = np.moveaxis(np.concatenate([w, u], axis=1), -1, 0).copy()  # (N, nv, 6)
    ov = np.einsum("jd,ndx->njx", support(model, np.arange(model.njoints)),
                   S * v[..., None])  # (N, nj, 6)
    dS = motion_cross(ov[:, model.dof_joint].reshape(-1, 6), S.reshape(-1, 6)).reshape(S.shape)
    for i, joint in enumerate(model.joint_models):
        dofs = slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i])
        qj = q[:, model.idx_q[i]:model.idx_q[i] + model.nq_joint[i]]
        rate = joint.subspace_rate(qj, v[:, dofs])  # (N, 6, k) child frame, or None
        if rate is not None:
            angular = R[:, i] @ rate[:, :3]  # (N, 3, k) world axes
            linear = R[:, i] @ rate[:, 3:] + np.cross(p[:, i, :, None], angular, axis=1)
            dS[:, dofs] += np.swapaxes(np.concatenate([angular, linear], axis=1), 1, 2)
    return WorldRates(R, p, S, ov, dS)


def frame_jacobian_rates(model: Model, q, v, frames: Frames,
                         reference: str = LOCAL) -> np.ndarray:
    """Jdot (N, k, 6, nv) of ``frames`` at q (N, nq), v (N, nv), rows (linear, angular),
    the time derivative of :func:`treedyn.engine.named.frame_jacobians` in ``reference``
    (LOCAL, WORLD or LOCAL_WORLD_ALIGNED; see the module doc): Pinocchio's
    ``getFrameJacobianTimeVariation``."""
    if reference not in FRAMES:
        raise ValueError(f"unknown reference frame {reference!r}; known: {', '.join(FRAMES)}")
    _, q, v = states(model, q, v)[:3]
    v = np.zeros((len(q), model.nv)) if v is None else v
    if model.coupling is not None:
        c = model.coupling
        full = frame_jacobian_rates(c.full, c.expand_q(q), c.expand_v(v), frames, reference)
        return full @ c.G
    rates = world_rates(model, q, v)
    R_f, p_f = frame_placements(model, q, frames)  # (N, k, 3, 3), (N, k, 3)
    on = frames.on_body
    mask = support(model, on)  # (k, nv) (nothing for a frame on the world)
    J = np.swapaxes(rates.S, 1, 2)[:, None] * mask[None, :, None]  # (N, k, 6, nv)
    dJ = np.swapaxes(rates.dS, 1, 2)[:, None] * mask[None, :, None]
    if reference != WORLD:
        ov = np.concatenate([rates.ov, np.zeros((len(q), 1, 6))], axis=1)[:, on]  # (N, k, 6)
        dp = ov[..., 3:] + np.cross(ov[..., :3], p_f)  # (N, k, 3) the origin's velocity
        J_lin = J[:, :, 3:] + np.cross(J[:, :, :3], p_f[..., None], axis=2)
        dJ[:, :, 3:] += (np.cross(dJ[:, :, :3], p_f[..., None], axis=2)
                         + np.cross(J[:, :, :3], dp[..., None], axis=2))
        J[:, :, 3:] = J_lin
    if reference == LOCAL:
        Rt = np.swapaxes(R_f, -1, -2)
        w = (Rt @ ov[..., :3, None])  # (N, k, 3, 1) the frame's angular velocity, own axes
        for rows in (slice(0, 3), slice(3, 6)):
            dJ[:, :, rows] = Rt @ dJ[:, :, rows] - np.cross(w, Rt @ J[:, :, rows], axis=2)
    return np.concatenate([dJ[:, :, 3:], dJ[:, :, :3]], axis=2)
