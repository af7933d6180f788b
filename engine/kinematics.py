"""Forward kinematics and Jacobians: where every body is in the world, and how the joint
velocities move it, for one state ``q`` (nq,) -- or a batch (N, nq), the same numbers with a
leading axis. Readable recursions, root to leaves, in the names of spatial_v2's ``bodypos``
and ``bodyJac``; :mod:`treedyn.engine.analysis.verify` builds identities on them and
``tests/test_kinematics.py`` holds them to Pinocchio.

Frames and conventions
----------------------
Body ``i`` is the body joint ``i`` moves; its frame is the link frame
``model.body_frames[i]`` (its joint's frame, :mod:`treedyn.engine.reference`).

* :func:`placements` gives ``R_i`` (3, 3), the body's axes as columns in world coordinates
  (a vector ``x`` in the body frame is ``R_i x`` in the world), and ``p_i`` (3,), the body
  origin in the world: Pinocchio's ``data.oMi[joint].rotation`` and ``.translation``.
* :func:`body_jacobians` gives ``J_i`` (6, nv) with ``J_i @ v`` the spatial velocity of
  body ``i``. **Rows are (angular, linear)**, Featherstone's order, as every motion in the
  engine: the *reverse* of Pinocchio's ``getJointJacobian``, whose rows are (linear,
  angular) -- ``J_pin = J[[3, 4, 5, 0, 1, 2]]``. The ``frame`` argument says in which frame
  the velocity is written, with Pinocchio's names and meanings:

  - ``LOCAL`` (the default): in body ``i``'s frame; linear is the velocity of the body
    origin. Column block of an ancestor-or-self joint ``k`` is ``S_k`` carried from frame
    ``k`` to frame ``i`` through the world,
    ``[R_i^T R_k S_ang ; R_i^T (R_k S_lin + (R_k S_ang) x (p_i - p_k))]``; other columns
    are zero (spatial_v2's ``bodyJac``).
  - ``WORLD``: in the world frame; linear is the velocity of the body point that is at
    the world origin now: ``[R_i w ; R_i u + p_i x (R_i w)]`` for LOCAL's ``(w, u)``.
  - ``LOCAL_WORLD_ALIGNED``: the body origin's velocity with world axes,
    ``[R_i w ; R_i u]``.

* :func:`frame_placements` and :func:`frame_jacobians` give the same for the named link
  frames ``model.frames`` (every link, merged by a fixed joint or not; Pinocchio's BODY
  frames, ``data.oMf`` and ``getFrameJacobian``): frame ``f`` sits on body ``j`` at
  ``(R_jf, t_jf)`` (``f.rotation``, ``f.translation``), so ``R_f = R_j R_jf`` and
  ``p_f = p_j + R_j t_jf``. Its Jacobian is its body's with the linear part taken at the
  frame's origin: LOCAL_WORLD_ALIGNED ``[w ; u + w x (p_f - p_j)]`` from the body's
  ``(w, u)`` in that frame, LOCAL that rotated by ``R_f^T``, WORLD the body's own (the
  point at the world origin moves with the body whichever frame is asked). A frame on the
  world (``f.joint = -1``) stays at its pose and its Jacobian is zero.
* A model with mimic joints enforced (``model.coupling``) is its uncoupled model at the
  expanded ``q``; its Jacobians are the uncoupled model's times ``G`` (nv_full, nv).
"""
from __future__ import annotations

import numpy as np

from .model import Model
from .reference import joint_transforms
from .state import finish, states

LOCAL = "LOCAL"  # in the body's frame, about its origin
WORLD = "WORLD"  # in the world frame, about the world origin
LOCAL_WORLD_ALIGNED = "LOCAL_WORLD_ALIGNED"  # about the body's origin, with world axes
FRAMES = (LOCAL, WORLD, LOCAL_WORLD_ALIGNED)


def placements(model: Model, q) -> tuple[np.ndarray, np.ndarray]:
    """(R (nj, 3, 3), p (nj, 3)) for one q (nq,): every body's axes and origin in the world,
    root to leaves, ``R_i = R_parent E_i^T`` and ``p_i = p_parent + R_parent r_i`` with the
    joint's ``(E, r)`` (:func:`treedyn.engine.reference.joint_transform`). For q (N, nq):
    (N, nj, 3, 3) and (N, nj, 3)."""
    batch, q = states(model, q)[:2]
    if model.coupling is not None:
        R, p = placements(model.coupling.full, model.coupling.expand_q(q))
        return (R[0], p[0]) if batch.single else (R, p)
    Xup = joint_transforms(model, q)
    R = np.empty((batch.count, model.njoints, 3, 3))
    p = np.empty((batch.count, model.njoints, 3))
    for i in range(model.njoints):
        parent = model.parent[i]
        R_parent = R[:, parent] if parent >= 0 else np.eye(3)
        p_parent = p[:, parent] if parent >= 0 else np.zeros(3)
        R[:, i] = R_parent @ np.swapaxes(Xup.E[i], 1, 2)
        p[:, i] = p_parent + np.einsum("nij,nj->ni", np.broadcast_to(R_parent, R[:, i].shape),
                                       Xup.r[i])
    return (R[0], p[0]) if batch.single else (R, p)


def body_jacobians(model: Model, q, frame: str = LOCAL) -> np.ndarray:
    """J (nj, 6, nv) for one q (nq,), (N, nj, 6, nv) for q (N, nq): row block ``J[i]`` maps
    v to body ``i``'s spatial velocity, (angular, linear), written in ``frame`` (LOCAL,
    WORLD or LOCAL_WORLD_ALIGNED; see the module doc)."""
    if frame not in FRAMES:
        raise ValueError(f"unknown frame {frame!r}; known: {', '.join(FRAMES)}")
    batch, q = states(model, q)[:2]
    if model.coupling is not None:
        c = model.coupling
        return finish(body_jacobians(c.full, c.expand_q(q), frame) @ c.G, batch)
    R, p = placements(model, q)
    J = _local_jacobians(model, q, R, p)
    if frame != LOCAL:
        J[:, :, :3], J[:, :, 3:] = R @ J[:, :, :3], R @ J[:, :, 3:]  # world axes
        if frame == WORLD:  # the velocity of the body point at the world origin
            J[:, :, 3:] += np.cross(p[:, :, :, None], J[:, :, :3], axisa=2, axisb=2, axisc=2)
    return finish(J, batch)


def _local_jacobians(model: Model, q, R, p) -> np.ndarray:
    """The LOCAL Jacobians (N, nj, 6, nv) of an uncoupled model at q (N, nq) whose bodies
    are at R (N, nj, 3, 3), p (N, nj, 3): joint ``k``'s axes, in the world, carried to
    every body of its subtree."""
    Xup = joint_transforms(model, q)
    count = len(q)
    J = np.zeros((count, model.njoints, 6, model.nv))
    for k in range(model.njoints):
        S = np.broadcast_to(Xup.S[k], (count, 6, model.nv_joint[k]))
        angular = (R[:, k] @ S[:, :3])[:, None]  # (N, 1, 3, m) world axes
        linear = (R[:, k] @ S[:, 3:])[:, None]
        cols = slice(model.idx_v[k], model.idx_v[k] + model.nv_joint[k])
        below = slice(k, model.subtree_end[k])  # joint k's subtree, itself first
        lever = (p[:, below] - p[:, k, None])[..., None]  # (N, b, 3, 1) origin k to each origin
        moved = linear + np.cross(angular, lever, axisa=2, axisb=2, axisc=2)  # (N, b, 3, m)
        Rt = np.swapaxes(R[:, below], 2, 3)  # (N, b, 3, 3)
        J[:, below, :3, cols] = Rt @ angular
        J[:, below, 3:, cols] = Rt @ moved
    return J


def frame_placements(model: Model, q) -> tuple[np.ndarray, np.ndarray]:
    """(R (nf, 3, 3), p (nf, 3)) of the link frames ``model.frames`` in the world at one q
    (nq,), (N, nf, 3, 3) and (N, nf, 3) for q (N, nq): ``R_f = R_j R_jf``,
    ``p_f = p_j + R_j t_jf`` on body ``j`` (the world's identity for a frame on it)."""
    return attached_placements(model, q, *link_frames(model))


def frame_jacobians(model: Model, q, frame: str = LOCAL) -> np.ndarray:
    """J (nf, 6, nv) of the link frames ``model.frames`` at one q (nq,), (N, nf, 6, nv) for
    q (N, nq): ``J[f] @ v`` is frame ``f``'s spatial velocity, (angular, linear), written
    in ``frame`` (LOCAL: in frame ``f``, about its origin; see the module doc)."""
    return attached_jacobians(model, q, *link_frames(model), frame)


def link_frames(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(on_body (nf,) int, R_jf (nf, 3, 3), t_jf (nf, 3)) of the link frames
    ``model.frames``: the body each sits on (-1: the world) and its pose there."""
    on_body = np.array([f.joint for f in model.frames], dtype=int)
    R_in = np.array([f.rotation for f in model.frames], dtype=float).reshape(-1, 3, 3)
    t_in = np.array([f.translation for f in model.frames], dtype=float).reshape(-1, 3)
    return on_body, R_in, t_in


def attached_placements(model: Model, q, on_body, R_in, t_in) -> tuple[np.ndarray, np.ndarray]:
    """(R (k, 3, 3), p (k, 3)) in the world at one q (nq,), (N, k, 3, 3) and (N, k, 3) for
    q (N, nq), of k frames fixed on bodies: frame ``f`` on body ``on_body[f]`` (-1: the
    world) at ``(R_in[f], t_in[f])`` in that body's frame."""
    batch, q = states(model, q)[:2]
    R, p = placements(model, q)
    R_body, p_body = on_bodies(R, p, on_body)
    R_frame = R_body @ R_in
    p_frame = p_body + (R_body @ t_in[..., None])[..., 0]
    return (R_frame[0], p_frame[0]) if batch.single else (R_frame, p_frame)


def attached_jacobians(model: Model, q, on_body, R_in, t_in, frame: str = LOCAL) -> np.ndarray:
    """J (k, 6, nv) at one q (nq,), (N, k, 6, nv) for q (N, nq), (angular, linear) in
    ``frame``, of the k frames fixed on bodies as :func:`attached_placements` takes them."""
    if frame not in FRAMES:
        raise ValueError(f"unknown frame {frame!r}; known: {', '.join(FRAMES)}")
    batch, q = states(model, q)[:2]
    R, p = placements(model, q)
    R_body, p_body = on_bodies(R, p, on_body)
    J = np.zeros((batch.count, len(on_body), 6, model.nv))
    moving = on_body >= 0
    if frame == WORLD:
        J[:, moving] = body_jacobians(model, q, WORLD)[:, on_body[moving]]
        return finish(J, batch)
    aligned = body_jacobians(model, q, LOCAL_WORLD_ALIGNED)[:, on_body[moving]]
    lever = (R_body[:, moving] @ t_in[moving, ..., None])  # (N, m, 3, 1): p_f - p_j
    J[:, moving, :3] = aligned[:, :, :3]
    J[:, moving, 3:] = aligned[:, :, 3:] + np.cross(aligned[:, :, :3], lever, axisa=2,
                                                      axisb=2, axisc=2)
    if frame == LOCAL:
        Rt = np.swapaxes(R_body[:, moving] @ R_in[moving], -1, -2)  # R_f^T
        J[:, moving, :3], J[:, moving, 3:] = Rt @ J[:, moving, :3], Rt @ J[:, moving, 3:]
    return finish(J, batch)


def weighted_center_of_mass(model: Model, q, bodies) -> tuple[np.ndarray, np.ndarray]:
    """(c (3,), Jcom (3, nv)) at one q (nq,) of ``bodies`` (indices), body by body: the
    mass-weighted mean of their centres ``c_i = p_i + R_i com_i`` and of those points'
    Jacobians, each body's WORLD Jacobian moved to its centre ``u + w x c_i`` (the
    readable twin of :func:`treedyn.engine.named.center_of_mass`)."""
    R, p = placements(model, q)
    J = body_jacobians(model, q, WORLD)  # (nj, 6, nv), (angular, linear)
    m = model.body_mass[bodies]
    c = p[bodies] + np.einsum("bij,bj->bi", R[bodies], model.body_com[bodies])  # (k, 3)
    linear = J[bodies, 3:] + np.cross(J[bodies, :3], c[:, :, None], axis=1)  # (k, 3, nv)
    return m @ c / m.sum(), np.einsum("b,bin->in", m, linear) / m.sum()


def on_bodies(R, p, on_body):
    """(R_j (N, k, 3, 3), p_j (N, k, 3)): the placement of the body ``on_body[f]`` of each
    frame (the world's for -1), from the bodies' R (N, nj, 3, 3), p (N, nj, 3)."""
    count = len(R)
    R_world = np.concatenate([R, np.broadcast_to(np.eye(3), (count, 1, 3, 3))], axis=1)
    p_world = np.concatenate([p, np.zeros((count, 1, 3))], axis=1)  # index -1: the world
    return R_world[:, on_body], p_world[:, on_body]


def generalized_forces(jacobians: np.ndarray, fext: np.ndarray) -> np.ndarray:
    """sum_i J_i^T (torque_i, force_i): (N, nv) from LOCAL J (N, nj, 6, nv), fext (N, nj, 6).

    ``fext`` rows are (force, torque) on each body in its frame about its origin (the
    engine's external-force layout), turned to (torque, force) to meet J's
    (angular, linear) rows.
    """
    internal = np.concatenate([fext[..., 3:], fext[..., :3]], axis=-1)
    return np.einsum("nisv,nis->nv", jacobians, internal)
