"""Forward kinematics and body Jacobians, computed directly (not through RNEA's recursion).

Conventions
-----------
* ``placements`` gives every body's pose in the world: ``R`` (N, nj, 3, 3) with body axes
  as columns in world coordinates, and ``p`` (N, nj, 3) the body origin in the world, from
  the joint transforms composed root to leaf.
* ``body_jacobians`` gives ``J`` (N, nj, 6, nv) with ``J[:, i] @ v`` the spatial velocity of
  body ``i`` as (angular, linear) in body ``i``'s frame, linear being the velocity of the
  body origin (Pinocchio's LOCAL Jacobian). Column block of an ancestor-or-self joint
  ``k`` is ``S_k`` carried from frame ``k`` to frame ``i`` through the world:
  ``[R_i^T R_k S_ang ; R_i^T (R_k S_lin + (R_k S_ang) x (p_i - p_k))]``; the other columns are
  zero.
* A wrench ``f`` = (force, torque) on body ``i`` in its frame about its origin contributes
  ``J_i^T (torque, force)`` to the generalized forces.
"""
from __future__ import annotations

import numpy as np

from .model import Model
from .state import finish, joint_transforms, states


def placements(model: Model, q) -> tuple[np.ndarray, np.ndarray]:
    """(R (N, nj, 3, 3), p (N, nj, 3)): body orientations and origins in the world."""
    batch, q = states(model, q)[:2]
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


def body_jacobians(model: Model, q) -> np.ndarray:
    """LOCAL body Jacobians (N, nj, 6, nv), or (nj, 6, nv) for a single q."""
    batch, q = states(model, q)[:2]
    Xup = joint_transforms(model, q)
    R, p = placements(model, q)
    J = np.zeros((batch.count, model.njoints, 6, model.nv))
    for k in range(model.njoints):
        S = np.broadcast_to(Xup.S[k], (batch.count, 6, model.nv_joint[k]))
        angular = (R[:, k] @ S[:, :3])[:, None]  # (N, 1, 3, m) world axes
        linear = (R[:, k] @ S[:, 3:])[:, None]
        cols = slice(model.idx_v[k], model.idx_v[k] + model.nv_joint[k])
        below = slice(k, model.subtree_end[k])  # joint k's subtree, itself first
        lever = (p[:, below] - p[:, k, None])[..., None]  # (N, b, 3, 1) origin k to each origin
        moved = linear + np.cross(angular, lever, axisa=2, axisb=2, axisc=2)  # (N, b, 3, m)
        Rt = np.swapaxes(R[:, below], 2, 3)  # (N, b, 3, 3)
        J[:, below, :3, cols] = Rt @ angular
        J[:, below, 3:, cols] = Rt @ moved
    return finish(J, batch)


def generalized_forces(jacobians: np.ndarray, fext: np.ndarray) -> np.ndarray:
    """sum_i J_i^T (torque_i, force_i): (N, nv) from J (N, nj, 6, nv), fext (N, nj, 6).

    ``fext`` rows are (force, torque) on each body in its frame about its origin (the
    engine's external-force layout).
    """
    internal = np.concatenate([fext[..., 3:], fext[..., :3]], axis=-1)
    return np.einsum("nisv,nis->nv", jacobians, internal)
