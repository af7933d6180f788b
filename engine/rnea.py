"""Recursive Newton-Euler: inverse dynamics tau = M(q) a + h(q, v) - sum_i J_i^T f_ext,i.

Conventions (Pinocchio's LOCAL): every body's velocity ``V``, acceleration ``A`` and force
``F`` are spatial vectors in that body's own frame, about its origin. Gravity enters as the
world's acceleration ``-g`` (Featherstone's trick), so ``A`` is the gravity-shifted
acceleration. Armature adds ``armature * a`` to tau.

Implementation (see :mod:`treedyn.engine.compiled` and :mod:`treedyn.engine.kernels`):
states are processed in chunks, component-major (``V[slot, component, state]``), in
internal body frames where every 1-dof joint moves along z, one tree level and joint kind
(a group of k bodies) at a time::

    forward, root to leaves:   V = Xup V_parent + S qd                   (k, 6, N)
                               A = Xup A_parent + S qdd + V x (S qd) [+ cJ]
                               F = I A + V x* (I V) - f_ext
    backward, leaves to root:  tau = S^T F ;  F_parent += Xup^T F

with ``Xup = X_J(q) X_T``: the constant ``X_T`` (k, 6, 6) is one batched BLAS call, the
joint part a rotation about z (cos/sin row updates) or a shift along z.
"""
from __future__ import annotations

import numpy as np

from .compiled import FREE, FREE_PERM, GENERIC, REVOLUTE, S_ROW, plan_of
from .kernels import (accumulate, chunk_size, cross_add, gather, generic_transform, load_coordinates,
                      load_forces, load_rows, prepare_forces, rotate_to_child, rotate_to_parent,
                      run_chunks, shift_to_child, shift_to_parent, store_rows, workspace)
from .model import Model
from .spatial import (apply_subspace, force_cross, force_to_parent, motion_cross, motion_to_child,
                      project_subspace, quaternion_matrix)
from .state import finish, states

X_ROWS = (slice(0, None, 3), slice(1, None, 3), slice(2, None, 3))  # x, y, z of both blocks
W_ROWS = (slice(0, 1), slice(1, 2), slice(2, 3))  # angular x, y, z (broadcast over blocks)


def rnea(model: Model, q, v=None, a=None, fext=None, gravity=None) -> np.ndarray:
    """Joint forces (N, nv) -- or (nv,) for one state -- that produce accelerations ``a``.

    q (N, nq); v, a (N, nv) or None for zeros; fext (nj, 6) or (N, nj, 6) as
    ``[force, torque]`` on each body in its frame about its origin: row ``i`` in the link
    frame ``model.body_frames[i]`` (for MJCF the joint's anchor frame, not always the
    <body> frame; :func:`treedyn.engine.forces.external_forces` places wrenches given on
    named frames); gravity (3,) overrides the model's.
    """
    plan = plan_of(model)
    batch, q, v, a, fext = states(model, q, v, a, fext)
    forces = prepare_forces(plan, batch.count, fext)
    a_world = world_acceleration(model, gravity)
    out = np.empty((batch.count, model.nv))
    capacity = chunk_size(plan, work_shapes, batch.count)

    def work(s0: int, s1: int) -> None:
        W = workspace("rnea", plan, capacity, work_shapes).view(s1 - s0)
        rnea_chunk(plan, W, q[s0:s1], None if v is None else v[s0:s1],
                   None if a is None else a[s0:s1], load_forces(plan, forces, s0, s1, W.Fx),
                   a_world, out[s0:s1])

    run_chunks(batch.count, work, capacity)
    return finish(out, batch)


def nonlinear_effects(model: Model, q, v=None, fext=None, gravity=None) -> np.ndarray:
    """h(q, v) - sum J^T f_ext: Coriolis, centrifugal, gravity (and external) terms."""
    return rnea(model, q, v, None, fext, gravity)


def generalized_gravity(model: Model, q, gravity=None) -> np.ndarray:
    """g(q): the joint forces that hold the robot still against gravity."""
    return rnea(model, q, None, None, None, gravity)


def world_acceleration(model: Model, gravity) -> np.ndarray:
    """The world's spatial acceleration (6, 1): minus gravity in its linear part."""
    a0 = np.zeros((6, 1))
    if gravity is None:
        a0[3:, 0] = -model.gravity
        return a0
    gravity = np.asarray(gravity, dtype=float)
    if gravity.shape != (3,):
        raise ValueError(f"gravity has shape {gravity.shape}; expected (3,): (gx, gy, gz)")
    a0[3:, 0] = -gravity
    return a0


def work_shapes(plan) -> dict:
    """Work arrays of one chunk (the trailing state axis is added by the workspace)."""
    nb, k = plan.nj + 1, plan.kmax
    return {"V": (nb, 6), "A": (nb, 6), "F": (nb, 6), "Fx": (nb, 6), "H": (k, 6), "T6": (k, 6),
            "P6": (k, 6), "t1": (k, 2), "t2": (k, 2), "qd": (plan.nv,), "qdd": (plan.nv,),
            "tau": (plan.nv,), "rows": (plan.nv,), "TH": (len(plan.rev_q),),
            "SC": (3, len(plan.rev_q)), "SN": (len(plan.rev_q),), "CS": (len(plan.rev_q),),
            "DP": (len(plan.pri_q),)}


def rnea_chunk(plan, W, q, v, a, fx, a_world, out) -> None:
    """RNEA for one chunk: q (m, nq), v/a (m, nv) or None, fx internal forces or None."""
    load_coordinates(plan, W, q)
    has_v = load_rows(plan, v, W.qd, W.rows)
    has_a = load_rows(plan, a, W.qdd, W.rows)
    generic = forward_sweep(plan, W, q, has_v, has_a, fx, a_world)
    backward_sweep(plan, W, generic)
    if has_a and plan.has_armature:
        W.tau += plan.armature * W.qdd
    store_rows(plan, W.tau, out, W.rows)


def forward_sweep(plan, W, q, has_v: bool, has_a: bool, fx, a_world) -> dict:
    """Root to leaves: V, A (gravity-shifted) and the body forces F = I A + V x* I V - f_ext.

    Returns the generic joints' per-state transforms {slot: (E, r, S)} for later sweeps.
    """
    V, A, F = W.V, W.A, W.F
    V[0] = 0.0
    A[0] = a_world
    generic = {}
    for g in plan.groups:
        b, k = g.slots, g.size
        if g.kind == GENERIC:
            generic[b.start] = generic_forward(g, W, q, has_v, has_a)
        else:
            Vg, Ag, Fg, t1, t2 = V[b], A[b], F[b], W.t1[:k], W.t2[:k]
            row = S_ROW.get(g.kind)
            qd = W.qd[g.dofs]
            if g.kind == FREE:
                free_root_forward(g, W, q, has_v, has_a, a_world)
            elif has_v:
                np.matmul(g.XT, gather(V, g.parents, W.P6), out=Vg)
                _to_child(g, W, Vg, t1, t2)
                Vg[:, row] += qd
            if g.kind != FREE:
                np.matmul(g.XT, gather(A, g.parents, W.P6), out=Ag)
                _to_child(g, W, Ag, t1, t2)
                if has_a:
                    Ag[:, row] += W.qdd[g.dofs]
            if not has_v:
                np.matmul(g.inertia, Ag, out=Fg)
            else:
                # A += V x (S qd): revolute qd (wy, -wx, 0, ly, -lx, 0); prismatic (0, 0, 0, qd wy, -qd wx, 0)
                if g.kind == FREE:
                    pass  # V = S qd: V x (S qd) = 0
                elif g.kind == REVOLUTE:
                    np.multiply(Vg[:, 1::3], qd[:, None], out=t1)
                    Ag[:, 0::3] += t1
                    np.multiply(Vg[:, 0::3], qd[:, None], out=t1)
                    Ag[:, 1::3] -= t1
                else:
                    np.multiply(Vg[:, 1], qd, out=t1[:, 0])
                    Ag[:, 3] += t1[:, 0]
                    np.multiply(Vg[:, 0], qd, out=t1[:, 0])
                    Ag[:, 4] -= t1[:, 0]
                np.matmul(g.inertia, Ag, out=Fg)
                H = W.H[:k]
                np.matmul(g.inertia, Vg, out=H)
                # F += V x* H = (w x h_n + l x h_f, w x h_f)
                cross_add(Fg, Vg, H, t1, W_ROWS, X_ROWS, X_ROWS)
                cross_add(Fg, Vg, H, t1[:, 0], (3, 4, 5), (3, 4, 5), (0, 1, 2))
        if fx is not None:
            F[b] -= fx[b]
    return generic


def backward_sweep(plan, W, generic: dict) -> None:
    """Leaves to root: tau = S^T F, and F_parent += Xup^T F."""
    F = W.F
    for g in reversed(plan.groups):
        b, k = g.slots, g.size
        if g.kind == GENERIC:
            E, r, S = generic[b.start]
            f = F[b.start].T
            W.tau[g.dofs] = project_subspace(S, f).T
            if not g.at_world:
                F[g.parents.slots[0]] += force_to_parent(E, r, f).T
            continue
        Fg = F[b]
        if g.kind == FREE:
            np.take(Fg[0], FREE_PERM, axis=0, out=W.tau[g.dofs], mode="clip")
            continue
        W.tau[g.dofs] = Fg[:, S_ROW[g.kind]]
        if not g.at_world:
            _to_parent(g, W, Fg, W.t1[:k], W.t2[:k])
            T = W.T6[:k]
            np.matmul(g.XTt, Fg, out=T)
            accumulate(F, g.parents, T)


def _to_child(g, W, X, t1, t2) -> None:
    """X_J applied in place to motions X (k, 6, m) of group g."""
    if g.kind == REVOLUTE:
        rotate_to_child(X, W.CS[g.coords][:, None], W.SN[g.coords][:, None], t1, t2)
    else:
        shift_to_child(X, W.DP[g.coords], t1[:, 0])


def _to_parent(g, W, X, t1, t2) -> None:
    """X_J^T applied in place to forces X (k, 6, m) of group g."""
    if g.kind == REVOLUTE:
        rotate_to_parent(X, W.CS[g.coords][:, None], W.SN[g.coords][:, None], t1, t2)
    else:
        shift_to_parent(X, W.DP[g.coords], t1[:, 0])


def generic_forward(g, W, q, has_v: bool, has_a: bool):
    """Forward step of a generic joint (spherical, ball, free, free_world, planar), AoS math."""
    i, p = g.slots.start, g.parents.slots[0]
    E, r, S, qj = generic_transform(g, q)
    I = g.inertia[0]
    acc = motion_to_child(E, r, W.A[p].T)
    if has_a:
        acc += apply_subspace(S, W.qdd[g.dofs].T)
    if has_v:
        vj = W.qd[g.dofs].T
        vJ = apply_subspace(S, vj)
        vel = motion_to_child(E, r, W.V[p].T) + vJ
        acc += motion_cross(vel, vJ)
        if g.joint.has_bias:
            acc += g.joint.bias(qj, vj)
        W.V[i] = vel.T
        f = acc @ I.T + force_cross(vel, vel @ I.T)
    else:
        f = acc @ I.T
    W.A[i] = acc.T
    W.F[i] = f.T
    return E, r, S


def free_rotation(g, q) -> np.ndarray:
    """R (3, 3, m): a free joint's child-in-parent rotation from its quaternion (x, y, z, w)."""
    x, y, z, w = (q[:, g.q_block.start + k] for k in (3, 4, 5, 6))
    return quaternion_matrix(w, x, y, z).transpose(1, 2, 0)


def free_root_forward(g, W, q, has_v: bool, has_a: bool, a_world) -> None:
    """V = S qd, A = S qdd + Xup A_world for Pinocchio's free-flyer on the world.

    S maps v = (linear, angular) to the motion rows (angular, linear); the world has no
    velocity, so V x (S qd) = 0 and only the linear world acceleration, E a_world, enters:
    E = R^T E_T with R the base rotation.
    """
    i = g.slots.start
    Vi, Ai = W.V[i], W.A[i]
    if has_v:
        np.take(W.qd[g.dofs], FREE_PERM, axis=0, out=Vi, mode="clip")
    if has_a:
        np.take(W.qdd[g.dofs], FREE_PERM, axis=0, out=Ai, mode="clip")
    else:
        Ai[...] = 0.0
    g_joint = g.E_T @ a_world[3:, 0]  # world acceleration in the joint frame at q = 0
    Ai[3:] += np.tensordot(g_joint, free_rotation(g, q), axes=([0], [0]))  # R^T g_joint
