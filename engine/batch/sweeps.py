"""What RNEA and ABA share: the chunked call, the work arrays and the forward sweep.

Frames and layout as in :mod:`treedyn.engine.rnea`: per-body velocities ``V``,
accelerations ``A`` (gravity-shifted: the world accelerates at ``-g``) and forces ``F``,
component-major ``(nj + 1, 6, m)`` by slot, in the internal body frames
(:mod:`treedyn.engine.batch.plan`).
"""
from __future__ import annotations

import numpy as np

from ..model import Model
from ..spatial import apply_subspace, force_cross, motion_cross, motion_to_child, quaternion_matrix
from ..state import finish, states, world_acceleration
from .load import generic_transform, load_forces, prepare_forces
from .memory import workspace
from .plan import FREE, FREE_PERM, GENERIC, REVOLUTE, S_ROW, plan_of
from .rows import cross_add, gather, rotate, shift_to_child, shift_to_parent
from .threads import chunk_size, run_chunks

X_ROWS = (slice(0, None, 3), slice(1, None, 3), slice(2, None, 3))  # x, y, z of both blocks
W_ROWS = (slice(0, 1), slice(1, 2), slice(2, 3))  # angular x, y, z (broadcast over blocks)


def solve_in_chunks(model: Model, key: str, shapes, chunk_function, q, v, x, fext, gravity,
                    x_name: str) -> np.ndarray:
    """(N, nv), or (nv,) for one state: ``chunk_function(plan, W, q, v, x, fx, a_world,
    out)`` over the batch in chunks, each with this thread's work arrays ``shapes`` under
    ``key``; x is ``a`` (RNEA) or ``tau`` (ABA), named ``x_name`` in shape errors."""
    plan = plan_of(model)
    batch, q, v, x, fext = states(model, q, v, x, fext, x_name=x_name)
    forces = prepare_forces(plan, batch.count, fext)
    # a_world (6, 1) = (0, -g): the world's spatial acceleration that gravity is modelled by
    a_world = world_acceleration(model, gravity)[:, None]
    out = np.empty((batch.count, model.nv))
    capacity = chunk_size(plan, shapes, batch.count)

    def work(s0: int, s1: int) -> None:
        W = workspace(key, plan, capacity, shapes).view(s1 - s0)
        chunk_function(plan, W, q[s0:s1], None if v is None else v[s0:s1],
                       None if x is None else x[s0:s1], load_forces(plan, forces, s0, s1, W.Fx),
                       a_world, out[s0:s1])

    run_chunks(batch.count, work, capacity)
    return finish(out, batch)


def work_shapes(plan) -> dict:
    """Work arrays of one chunk (the trailing state axis is added by the workspace)."""
    nb, k = plan.nj + 1, plan.kmax
    return {"V": (nb, 6), "A": (nb, 6), "F": (nb, 6), "Fx": (nb, 6), "H": (k, 6), "T6": (k, 6),
            "P6": (k, 6), "t1": (k, 2), "t2": (k, 2), "qd": (plan.nv,), "qdd": (plan.nv,),
            "tau": (plan.nv,), "rows": (plan.nv,), "TH": (len(plan.rev_q),),
            "SC": (3, len(plan.rev_q)), "SN": (len(plan.rev_q),), "CS": (len(plan.rev_q),),
            "DP": (len(plan.pri_q),)}


def forward_sweep(plan, W, q, has_v: bool, has_a: bool, fx, a_world) -> dict:
    """Root to leaves: V, A (gravity-shifted) and the body forces F = I A + V x* I V - f_ext.

    Returns the generic joints' per-state transforms {slot: (E, r, S)} for later sweeps.
    """
    V, A, F = W.V, W.A, W.F
    V[0] = 0.0
    A[0] = a_world
    generic = {}
    for g in plan.groups:
        b = g.slots
        if g.kind == GENERIC:
            generic[b.start] = generic_forward(g, W, q, has_v, has_a)
        elif g.kind == FREE:
            free_root_forward(g, W, q, has_v, has_a, a_world)
            if has_v:  # V = S qd: V x (S qd) = 0
                body_forces(g, W)
            else:
                np.matmul(g.inertia, A[b], out=F[b])
        else:
            one_dof_forward(g, W, has_v, has_a)
        if fx is not None:
            F[b] -= fx[b]
    return generic


def one_dof_forward(g, W, has_v: bool, has_a: bool) -> None:
    """V, A and F of a group of revolute or prismatic joints (k, 6, m)."""
    b, k = g.slots, g.size
    V, A = W.V, W.A
    Vg, Ag, t1, t2 = V[b], A[b], W.t1[:k], W.t2[:k]
    row, qd = S_ROW[g.kind], W.qd[g.dofs]
    if has_v:
        np.matmul(g.XT, gather(V, g.parents, W.P6), out=Vg)
        to_child(g, W, Vg, t1, t2)
        Vg[:, row] += qd
    np.matmul(g.XT, gather(A, g.parents, W.P6), out=Ag)
    to_child(g, W, Ag, t1, t2)
    if has_a:
        Ag[:, row] += W.qdd[g.dofs]
    if not has_v:
        np.matmul(g.inertia, Ag, out=W.F[b])
        return
    # A += V x (S qd): revolute qd (wy, -wx, 0, ly, -lx, 0); prismatic (0, 0, 0, qd wy, -qd wx, 0)
    if g.kind == REVOLUTE:
        np.multiply(Vg[:, 1::3], qd[:, None], out=t1)
        Ag[:, 0::3] += t1
        np.multiply(Vg[:, 0::3], qd[:, None], out=t1)
        Ag[:, 1::3] -= t1
    else:
        np.multiply(Vg[:, 1], qd, out=t1[:, 0])
        Ag[:, 3] += t1[:, 0]
        np.multiply(Vg[:, 0], qd, out=t1[:, 0])
        Ag[:, 4] -= t1[:, 0]
    body_forces(g, W)


def body_forces(g, W) -> None:
    """F = I A + V x* (I V) for the group's bodies (k, 6, m)."""
    b, k = g.slots, g.size
    Vg, Fg, t1 = W.V[b], W.F[b], W.t1[:k]
    np.matmul(g.inertia, W.A[b], out=Fg)
    H = W.H[:k]
    np.matmul(g.inertia, Vg, out=H)
    # F += V x* H = (w x h_n + l x h_f, w x h_f)
    cross_add(Fg, Vg, H, t1, W_ROWS, X_ROWS, X_ROWS)
    cross_add(Fg, Vg, H, t1[:, 0], (3, 4, 5), (3, 4, 5), (0, 1, 2))


def to_child(g, W, X, t1, t2) -> None:
    """X_J applied in place to motions X (k, 6, m) of group g."""
    if g.kind == REVOLUTE:
        rotate(X, W.CS[g.coords][:, None], W.SN[g.coords][:, None], t1, t2, to_child=True)
    else:
        shift_to_child(X, W.DP[g.coords], t1[:, 0])


def to_parent(g, W, X, t1, t2) -> None:
    """X_J^T applied in place to forces X (k, 6, m) of group g."""
    if g.kind == REVOLUTE:
        rotate(X, W.CS[g.coords][:, None], W.SN[g.coords][:, None], t1, t2)
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
