"""Kinetic and potential energy for a batch of states: what ``dyn energy`` computes.

* **Kinetic** ``T = 1/2 v^T M(q) v``, ``M(q) v`` by :func:`treedyn.engine.rnea.rnea` (the
  joint forces of the acceleration v from rest without gravity), so armature (rotor
  inertia) counts, ``1/2 armature_d v_d^2`` per dof, as in MuJoCo's
  ``data.energy[1]``; without armature it is Pinocchio's ``computeKineticEnergy``.
* **Potential** ``V = -sum_i m_i g . c_i`` over the bodies that move, ``c_i`` the body's
  centre of mass in the world and ``g`` the model's gravity (or the one given):
  Pinocchio's ``computePotentialEnergy`` (zero at the world origin; ``m 9.81 z`` for
  ``g = (0, 0, -9.81)``). MuJoCo's ``data.energy[0]`` also counts the bodies welded to the
  world (a constant) and the joints' springs; neither is here.

With ``a = ABA(q, v, tau)`` the total changes at the rate of the work of ``tau``:
``dT/dt = v^T (tau - g(q))`` and ``dV/dt = v^T g(q)``, ``g(q)`` the generalized gravity
(``tests/test_centroidal_energy.py`` checks both by finite differences). The readable
twin, body by body (``1/2 v_i^T I_i v_i`` with the bodies' LOCAL velocities), is
:func:`energy_reference`.
"""
from __future__ import annotations

import numpy as np

from .kinematics import LOCAL, body_jacobians, placements
from .model import Model
from .rnea import rnea
from .state import states
from .world_poses import WorldPoses


def energy(model: Model, q, v=None, gravity=None) -> np.ndarray:
    """(N, 2): [kinetic, potential] at q (N, nq), v (N, nv) (None: zeros), with the model's
    gravity or ``gravity`` (3,) (see the module doc)."""
    inputs = states(model, q, v)
    return np.stack([kinetic_energy(model, inputs.q, inputs.v),
                     potential_energy(model, inputs.q, gravity)], axis=1)


def kinetic_energy(model: Model, q, v=None) -> np.ndarray:
    """T (N,) = 1/2 v^T M(q) v, armature included: ``M(q) v`` is RNEA with the
    acceleration v, no velocity and no gravity (O(nv) a state; M itself is not formed)."""
    inputs = states(model, q, v)
    if inputs.v is None:
        return np.zeros(inputs.batch.count)
    Mv = rnea(model, inputs.q, None, inputs.v, gravity=np.zeros(3))  # (N, nv)
    return 0.5 * np.einsum("ni,ni->n", inputs.v, Mv)


def potential_energy(model: Model, q, gravity=None) -> np.ndarray:
    """V (N,) = -sum_i m_i g . c_i over the moving bodies, the bodies' centres ``c_i``
    placed by :class:`~treedyn.engine.world_poses.WorldPoses` (states last)."""
    q = states(model, q)[1]
    g = _gravity(model, gravity)
    if model.coupling is not None:
        return potential_energy(model.coupling.full, model.coupling.expand_q(q), g)
    poses = WorldPoses(model, q, np.arange(model.njoints))
    c_i = poses.centres()  # (nj, 3, N)
    return np.einsum("b,bin,i->n", model.body_mass, c_i, -g) + 0.0  # (+0.0: never -0.0)


def energy_reference(model: Model, q, v=None, gravity=None) -> tuple[float, float]:
    """(T, V) at one state q (nq,), v (nv,) or None, body by body: ``T = sum_i 1/2
    v_i^T I_i v_i + sum_d 1/2 armature_d v_d^2`` with ``v_i = J_i v`` (LOCAL) and
    ``V = -sum_i m_i g . (p_i + R_i com_i)``."""
    g = _gravity(model, gravity)
    q = np.asarray(q, dtype=float)
    v = np.zeros(model.nv) if v is None else np.asarray(v, dtype=float)
    if model.coupling is not None:
        cp = model.coupling
        T, V = energy_reference(cp.full, cp.expand_q(q[None])[0], cp.G @ v, g)
        return T + 0.5 * float(model.armature @ v**2), V  # (the full model: no armature)
    R, p = placements(model, q)
    J = body_jacobians(model, q, LOCAL)  # (nj, 6, nv)
    T = 0.5 * float(model.armature @ v**2)
    V = 0.0
    for i in range(model.njoints):
        v_i = J[i] @ v  # body i's velocity in its frame, (angular, linear)
        T += 0.5 * float(v_i @ model.body_inertia[i] @ v_i)
        V -= model.body_mass[i] * float(g @ (p[i] + R[i] @ model.body_com[i]))
    return T, V


def _gravity(model: Model, gravity) -> np.ndarray:
    """The model's gravity (3,), or ``gravity`` checked to be (3,)."""
    if gravity is None:
        return np.asarray(model.gravity, dtype=float)
    gravity = np.asarray(gravity, dtype=float)
    if gravity.shape != (3,):
        raise ValueError(f"gravity has shape {gravity.shape}; expected (3,): (gx, gy, gz)")
    return gravity
