"""Centroidal momentum: the matrix ``Ag`` (6, nv) with ``hg = Ag v`` the robot's momentum
about its centre of mass, and the centroidal composite inertia ``Ig`` (6, 6), for a batch
of states q (N, nq): what ``dyn centroidal`` computes; Pinocchio's ``ccrba`` (``data.Ag``,
``data.hg``, ``data.Ig``).

Conventions
-----------
* **Rows (linear, angular)**, Pinocchio's order for a force (the reverse of the engine's
  Featherstone (angular, linear) elsewhere): ``hg[:3]`` is the linear momentum
  ``m dc/dt``, ``hg[3:]`` the angular momentum about the centre of mass ``c``, both in
  world axes (the *centroidal frame*: at ``c``, axes aligned with the world's).
* ``Ig`` is the spatial inertia of the whole model about ``c`` in world axes, in the same
  row order: ``[[m 1, 0], [0, I_c]]`` with ``I_c`` the rotational inertia about ``c``.
* Bodies are those that move (mass welded to the world is not counted, as in Pinocchio,
  :func:`treedyn.engine.named.center_of_mass`); armature (rotor inertia) is no body's
  momentum and is not in ``Ag``. A model without mass has no centre: NaN.
* A model with mimic joints enforced is its uncoupled model at the expanded q:
  ``Ag = Ag_full G``.

Batched path (:func:`centroidal_momentum`, the bodies placed and every dof's motion by
:class:`~treedyn.engine.world_poses.WorldPoses`): every body's centre ``c_i``, mass ``m_i`` and
rotational inertia about ``c`` in world axes; their sums over each joint's subtree (a
contiguous range of the depth-first order: differences of prefix sums); then column ``d``
of joint ``k``, whose motion is ``(w, u_c)`` in world axes at ``c`` (``u_c = u + w x c``),
is ``linear = m_k u_c + w x s_k`` and ``angular = I_k w + s_k x u_c``, with ``m_k``,
``s_k = sum m_i (c_i - c)`` and ``I_k`` the subtree's mass, first moment and rotational
inertia about ``c``. The readable twin, body by body with 6x6 matrices, is
:func:`centroidal_reference`; ``tests/test_centroidal_energy.py`` holds the two together
and to Pinocchio.
"""
from __future__ import annotations

import numpy as np

from .kinematics import LOCAL, body_jacobians, placements
from .model import Model
from .spatial import forces_to_parent, inertia_to_parent
from .state import states
from .world_poses import WorldPoses, subtree_sums

LINEAR_FIRST = [3, 4, 5, 0, 1, 2]  # (angular, linear) rows -> (linear, angular)


def centroidal_momentum(model: Model, q, v=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Ag (N, 6, nv), hg (N, 6), Ig (N, 6, 6)) at q (N, nq) and v (N, nv) (None: zeros),
    rows (linear, angular) in the centroidal frame (see the module doc)."""
    inputs = states(model, q, v)
    Ag, Ig = centroidal_matrices(model, inputs.q)
    hg = np.zeros(Ag.shape[:2]) if inputs.v is None else np.einsum("nij,nj->ni", Ag, inputs.v)
    return Ag, hg, Ig


def centroidal_matrices(model: Model, q) -> tuple[np.ndarray, np.ndarray]:
    """(Ag (N, 6, nv), Ig (N, 6, 6)) at q (N, nq): see the module doc."""
    q = states(model, q)[1]
    if model.coupling is not None:
        c = model.coupling
        Ag, Ig = centroidal_matrices(c.full, c.expand_q(q))
        return Ag @ c.G, Ig
    poses = WorldPoses(model, q, np.arange(model.njoints))  # (views of the work arena)
    R = np.moveaxis(poses.R, -1, 0)  # (N, nj, 3, 3)
    _, w, u = poses.motions()  # every dof in order, (nv, 3, N) each: world axes, at 0
    w, u = np.moveaxis(w, -1, 0), np.moveaxis(u, -1, 0)  # (N, nv, 3)
    m = model.body_mass  # (nj,)
    mass = float(m.sum())
    c_i = np.moveaxis(poses.centres(), -1, 0)  # (N, nj, 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.einsum("b,nbi->ni", m, c_i) / mass  # (N, 3)
    r = c_i - c[:, None]  # (N, nj, 3) each body's centre from c
    I_c = (R @ model.body_rotational_inertia @ np.swapaxes(R, -1, -2)  # (N, nj, 3, 3)
           + m[:, None, None] * (np.einsum("nbi,nbi->nb", r, r)[..., None, None] * np.eye(3)
                                 - r[..., :, None] * r[..., None, :]))
    dof = model.dof_joint
    m_k = subtree_sums(m, model.subtree_end)[dof]  # (nv,)
    s_k = subtree_sums(m[:, None] * r, model.subtree_end, axis=1)[:, dof]  # (N, nv, 3)
    I_k = subtree_sums(I_c, model.subtree_end, axis=1)[:, dof]  # (N, nv, 3, 3)
    u_c = u + np.cross(w, c[:, None])  # (N, nv, 3) the velocity of the point at c
    linear = m_k[:, None] * u_c + np.cross(w, s_k)
    angular = np.einsum("ndij,ndj->ndi", I_k, w) + np.cross(s_k, u_c)
    Ag = np.swapaxes(np.concatenate([linear, angular], axis=-1), 1, 2)  # (N, 6, nv)
    Ig = np.zeros((len(q), 6, 6))
    Ig[:, :3, :3] = mass * np.eye(3)
    Ig[:, 3:, 3:] = I_c.sum(axis=1)
    return Ag, Ig


def centroidal_reference(model: Model, q, v=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Ag (6, nv), hg (6,), Ig (6, 6)) at one state q (nq,), v (nv,) or None, rows
    (linear, angular): every body's momentum ``I_i J_i v`` in its own frame (LOCAL
    Jacobians, :func:`treedyn.engine.kinematics.body_jacobians`) carried as a force to the
    centroidal frame, ``X^T (I_i J_i)``, and its inertia ``X^T I_i X``, with ``X`` the
    motion transform from the centroidal frame to body ``i``'s (``E = R_i^T``,
    ``r = p_i - c``)."""
    q = np.asarray(q, dtype=float)
    v = np.zeros(model.nv) if v is None else np.asarray(v, dtype=float)
    if model.coupling is not None:
        cp = model.coupling
        Ag, _, Ig = centroidal_reference(cp.full, cp.expand_q(q[None])[0])
        Ag = Ag @ cp.G
        return Ag, Ag @ v, Ig
    R, p = placements(model, q)  # (nj, 3, 3), (nj, 3)
    J = body_jacobians(model, q, LOCAL)  # (nj, 6, nv) (angular, linear)
    mass = model.body_mass.sum()
    c = sum(m * (p[i] + R[i] @ model.body_com[i]) for i, m in enumerate(model.body_mass)) / mass
    Ag, Ig = np.zeros((6, model.nv)), np.zeros((6, 6))
    for i in range(model.njoints):
        E, r = R[i].T[None], (p[i] - c)[None]
        Ag += forces_to_parent(E, r, (model.body_inertia[i] @ J[i])[None])[0]
        Ig += inertia_to_parent(E, r, model.body_inertia[i][None])[0]
    Ag, Ig = Ag[LINEAR_FIRST], Ig[np.ix_(LINEAR_FIRST, LINEAR_FIRST)]
    return Ag, Ag @ v, Ig
