"""Composite Rigid Body Algorithm: the joint-space mass matrix M(q).

Composite inertias ``Ic`` are accumulated leaf to root in each body's frame (LOCAL):
``Ic_parent += Xup^T Ic Xup``. Then, leaves first, each joint ``i`` sets the force columns
of its own dofs ``F = Ic_i S_i`` and reads its rows ``M[i, subtree(i)] = S_i^T F`` off the
columns of its whole subtree (all expressed in frame i by then), and moves those columns
to its parent's frame, ``F <- Xup_i^T F`` (Pinocchio's CRBA, LOCAL convention). Only the
dofs of the subtree of i (nv_subtree) can be non-zero in row i. Armature is added on the
diagonal. The full symmetric matrix is returned (zeros outside the sparsity pattern).

Layout (see :mod:`treedyn.engine.batch.plan`): ``Ic`` as (21, N) spin coordinates per body
in the internal frames, a group of one tree level transformed by a rotation of its rows
and one (21, 21) BLAS call; the force columns ``F[dof, component, state]`` in the model's
dof order, a subtree's columns moved to the parent by a rotation and one batched 6x6 call.

A batch of ``rootframe.MIN_STATES`` states or more of a model whose joints below the
bodies on the world all have one dof (revolute, prismatic) takes
:mod:`treedyn.engine.batch.rootframe` instead (Pinocchio's WORLD convention, in each
tree's root frame): no column moves, ``M[i, j] = J_i . F_j``; smaller batches and the
other models (a spherical, planar or free joint below the root) this local path. The two
agree to rounding (a few ulp), not bit for bit.

Readable twin: :func:`treedyn.engine.reference.crba_reference` (Featherstone's CRBA, one
state, 6x6 matrices in the link frames). ``tests/test_reference.py`` holds this fast path
to it (``tests/test_mimic.py`` on coupled models), ``tests/test_pinocchio.py`` to Pinocchio.
"""
from __future__ import annotations

import numpy as np

from .batch import rootframe
from .batch.load import generic_transform, load_coordinates
from .batch.memory import workspace
from .batch.plan import FREE, FREE_PERM, GENERIC, REVOLUTE, S_ROW, U_ROWS, plan_of
from .batch.rows import accumulate, rotate, shift_to_parent, spin_rotated
from .batch.spin import PINV_SPIN, matrices_of, spins_of
from .batch.threads import chunk_size, run_chunks
from .model import Model
from .spatial import forces_to_parent, inertia_to_parent
from .state import finish, states


def crba(model: Model, q) -> np.ndarray:
    """M(q): (N, nv, nv), or (nv, nv) for a single q (nq,); on a coupled model (mimic joints
    enforced) G^T M_full(q_full) G + diag(armature)."""
    if model.coupling is not None:
        return coupled_crba(model, q)
    plan = plan_of(model)
    batch, q = states(model, q)[:2]
    M = np.zeros((batch.count, model.nv, model.nv))
    key, shapes, chunk = (("crba-root", rootframe.shapes, root_frame_chunk) if rootframe.takes(plan, batch.count)
                          else ("crba", crba_shapes, crba_chunk))
    capacity = chunk_size(plan, shapes, batch.count)

    def work(s0: int, s1: int) -> None:
        W = workspace(key, plan, capacity, shapes).view(s1 - s0)
        chunk(plan, W, q[s0:s1], M[s0:s1])

    run_chunks(batch.count, work, capacity)
    if plan.has_armature:
        diagonal = np.arange(model.nv)
        M[:, diagonal, diagonal] += model.armature
    return finish(M, batch)


def coupled_crba(model: Model, q) -> np.ndarray:
    """M of a coupled model (:mod:`treedyn.engine.coupling`)."""
    c = model.coupling
    batch, q = states(model, q)[:2]
    M = c.project_matrix(crba(c.full, c.expand_q(q)))
    diagonal = np.arange(model.nv)
    M[:, diagonal, diagonal] += model.armature
    return finish(M, batch)


def crba_shapes(plan) -> dict:
    """Work arrays: composite inertias IC (spin), force columns F by model dof, scratch."""
    nb, k, nrev, nv = plan.nj + 1, plan.kmax, len(plan.rev_q), plan.nv
    return {"IC": (nb, 21), "G": (k, 63), "T21": (k, 21), "t1": (k, 6), "F": (nv, 6),
            "FT": (nv, 6), "t6": (nv, 4), "TH": (nrev,), "SC": (3, nrev), "SN": (nrev,), "CS": (nrev,),
            "C2": (nrev,), "S2": (nrev,), "DP": (len(plan.pri_q),)}


def crba_chunk(plan, W, q, M) -> None:
    """M for one chunk: q (m, nq) -> M (m, nv, nv), already zero."""
    load_coordinates(plan, W, q, spin2=True)
    generic = composite_sweep(plan, W, q)
    column_sweep(plan, W, generic, M)


def root_frame_chunk(plan, W, q, M) -> None:
    """M for one chunk in the roots' frames (:mod:`treedyn.engine.batch.rootframe`)."""
    load_coordinates(plan, W, q, spin2=True)
    rootframe.placements(plan, W)
    rootframe.composites(plan, W)
    rootframe.world_columns(plan, W)
    free = []  # free-flyers' (own, sub, rows), written with the others' rows below
    for slot in range(rootframe.roots(plan), 0, -1):
        g = plan.group_of_slot[slot]
        own, sub = plan.own_cols[slot], plan.subtree_cols[slot]
        if g.kind == FREE:
            free.append((own, sub, free_root_values(W, slot, own, sub, W.FP[sub])))
            continue
        joint_columns(plan, W, slot, generic_transform(g, q)[:3] if g.kind == GENERIC else None, M)
    rootframe.mass_rows(plan, W)
    block = rootframe.block_states(plan)
    for s0 in range(0, len(q), block):  # M a block of states at a time: it stays in cache
        s1 = min(s0 + block, len(q))
        for own, sub, values in free:
            write_block(M[s0:s1], own, sub, values[..., s0:s1])
        rootframe.write_rows(plan, W, M[s0:s1], write_row, s0, s1)


def joint_columns(plan, W, slot: int, transform, M) -> None:
    """The rows of one joint's dofs from its F columns, by kind (``transform`` (E, r, S) of
    a generic joint), and below the world its subtree's columns moved to the parent."""
    g = plan.group_of_slot[slot]
    own, sub = plan.own_cols[slot], plan.subtree_cols[slot]
    if g.kind == FREE:
        free_root_columns(W, slot, own, sub, M)
    elif g.kind == GENERIC:
        generic_columns(W, slot, g, own, sub, transform, M)
    else:
        one_dof_columns(plan, W, slot, g, own, sub, M)


def write_row(M, dof: int, columns: slice, values) -> None:
    """M[dof, columns] and M[columns, dof] = values (m, n) of every state."""
    M[:, dof, columns] = values
    M[:, columns, dof] = values


def composite_sweep(plan, W, q) -> dict:
    """Leaves to root: IC_parent += Xup^T IC Xup (spin rows, IC (nj + 1, 21, m)).

    Returns the generic joints' transforms {slot: (E, r, S)} for :func:`column_sweep`.
    """
    IC = W.IC
    IC[...] = plan.I0
    generic = {}
    for g in reversed(plan.groups):
        b, k = g.slots, g.size
        if g.kind == FREE:
            continue
        if g.kind == GENERIC:
            generic[b.start] = generic_transform(g, q)[:3]
            if not g.at_world:
                E, r, _ = generic[b.start]
                IC[g.parents.slots[0]] += spins_of(inertia_to_parent(E, r, matrices_of(IC[b.start])))
            continue
        if g.at_world:
            continue
        T21 = W.T21[:k]
        if g.kind == REVOLUTE:
            G = spin_rotated(IC[b], W.CS[g.coords][:, None], W.SN[g.coords][:, None],
                             W.C2[g.coords][:, None], W.S2[g.coords][:, None], W.G[:k, :21], W.t1[:k])
        else:
            G, d = W.G[:k], W.DP[g.coords][:, None]
            G[:, :21] = IC[b]
            np.multiply(IC[b], d, out=G[:, 21:42])
            np.multiply(G[:, 21:42], d, out=G[:, 42:63])
        np.matmul(g.L_crba, G, out=T21)
        accumulate(IC, g.parents, T21)
    return generic


def column_sweep(plan, W, generic: dict, M) -> None:
    """Leaves first: F = IC_i S_i, M[i, subtree(i)] = S_i^T F[subtree(i)], and the subtree's
    force columns moved to the parent's frame (F (nv, 6, m) by model dof)."""
    for slot in range(plan.nj, 0, -1):  # leaves first (slots are breadth-first)
        joint_columns(plan, W, slot, generic.get(slot), M)


def free_root_columns(W, slot: int, own: slice, sub: slice, M) -> None:
    """Pinocchio's free-flyer on the world: S is a permutation."""
    write_block(M, own, sub, free_root_values(W, slot, own, sub))


def free_root_values(W, slot: int, own: slice, sub: slice, out=None) -> np.ndarray:
    """A free-flyer's rows (nsub, 6, m): its own columns F = Ic S set, then S^T F[sub]."""
    F, IC = W.F, W.IC
    m = IC.shape[-1]
    Ic = np.matmul(PINV_SPIN, IC[slot]).reshape(6, 6, m)
    F[own] = np.take(Ic, FREE_PERM, axis=1).transpose(1, 0, 2)
    return np.take(F[sub], FREE_PERM, axis=1, out=out)


def write_block(M, own: slice, sub: slice, values) -> None:
    """M[own, sub] and M[sub, own] of every state from values (nsub, nown, m)."""
    M[:, own, sub] = values.transpose(2, 1, 0)
    M[:, sub, own] = values.transpose(2, 0, 1)


def generic_columns(W, slot: int, g, own: slice, sub: slice, transform, M) -> None:
    """A generic joint in AoS math: S (6, k) or (m, 6, k)."""
    E, r, S = transform
    F = W.F
    Fs = F[sub]  # (nsub, 6, m)
    F[own] = (matrices_of(W.IC[slot]) @ S).transpose(2, 1, 0)  # (k, 6, m)
    if S.ndim == 2:
        rows = np.einsum("ak,can->nkc", S, Fs)
    else:
        rows = np.einsum("nak,can->nkc", S, Fs)
    M[:, own, sub] = rows
    M[:, sub, own] = rows.transpose(0, 2, 1)
    if not g.at_world:
        F[sub] = forces_to_parent(E, r, Fs.transpose(2, 1, 0)).transpose(2, 1, 0)


def one_dof_columns(plan, W, slot: int, g, own: slice, sub: slice, M) -> None:
    """A revolute or prismatic joint: F = IC e_z read off spin rows, X_J^T by rows."""
    F = W.F
    Fs = F[sub]  # (nsub, 6, m)
    row = S_ROW[g.kind]
    np.take(W.IC[slot], U_ROWS[g.kind], axis=0, out=F[own.start], mode="clip")  # Ic S
    write_row(M, own.start, sub, Fs[:, row].T)  # (m, nsub): S_i^T F
    if g.at_world:
        return
    m_row = plan.row_in_group[slot]
    n = Fs.shape[0]
    FT = W.FT[:n]
    FT[...] = Fs
    if g.kind == REVOLUTE:
        coord = g.coords.start + m_row
        rotate(FT, W.CS[coord], W.SN[coord], W.t6[:n, :2], W.t6[:n, 2:])
    else:
        shift_to_parent(FT, W.DP[g.coords.start + m_row], W.t6[:n, 0])
    np.matmul(g.XTt[m_row], FT, out=Fs)
