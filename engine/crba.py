"""Composite Rigid Body Algorithm: the joint-space mass matrix M(q).

Composite inertias ``Ic`` are accumulated leaf to root in each body's frame (LOCAL):
``Ic_parent += Xup^T Ic Xup``. Then, leaves first, each joint ``i`` sets the force columns
of its own dofs ``F = Ic_i S_i`` and reads its rows ``M[i, subtree(i)] = S_i^T F`` off the
columns of its whole subtree (all expressed in frame i by then), and moves those columns
to its parent's frame, ``F <- Xup_i^T F`` (Pinocchio's CRBA, LOCAL convention). Only the
dofs of the subtree of i (nv_subtree) can be non-zero in row i. Armature is added on the
diagonal. The full symmetric matrix is returned (zeros outside the sparsity pattern).

Layout (see :mod:`treedyn.engine.compiled`): ``Ic`` as (21, N) spin coordinates per body
in the internal frames, a group of one tree level transformed by a rotation of its rows
and one (21, 21) BLAS call; the force columns ``F[dof, component, state]`` in the model's
dof order, a subtree's columns moved to the parent by a rotation and one batched 6x6 call.
"""
from __future__ import annotations

import numpy as np

from .compiled import FREE, FREE_PERM, GENERIC, PINV_SPIN, P_SPIN, REVOLUTE, S_ROW, U_ROWS, plan_of
from .kernels import (accumulate, chunk_size, generic_transform, load_coordinates, rotated_to_parent,
                      run_chunks, spin_rotated, workspace)
from .model import Model
from .spatial import forces_to_parent, inertia_to_parent
from .state import finish, states


def crba(model: Model, q) -> np.ndarray:
    """M(q): (N, nv, nv), or (nv, nv) for a single q (nq,)."""
    plan = plan_of(model)
    batch, q = states(model, q)[:2]
    M = np.zeros((batch.count, model.nv, model.nv))
    capacity = chunk_size(plan, crba_shapes, batch.count)

    def work(s0: int, s1: int) -> None:
        W = workspace("crba", plan, capacity, crba_shapes).view(s1 - s0)
        crba_chunk(plan, W, q[s0:s1], M[s0:s1])

    run_chunks(batch.count, work, capacity)
    if plan.has_armature:
        diagonal = np.arange(model.nv)
        M[:, diagonal, diagonal] += model.armature
    return finish(M, batch)


def crba_shapes(plan) -> dict:
    nb, k, nrev, nv = plan.nj + 1, plan.kmax, len(plan.rev_q), plan.nv
    return {"IC": (nb, 21), "G": (k, 63), "T21": (k, 21), "t1": (k, 6), "F": (nv, 6),
            "FT": (nv, 6), "t6": (nv, 2), "TH": (nrev,), "SC": (3, nrev), "SN": (nrev,), "CS": (nrev,),
            "C2": (nrev,), "S2": (nrev,), "DP": (len(plan.pri_q),)}


def crba_chunk(plan, W, q, M) -> None:
    """M for one chunk: q (m, nq) -> M (m, nv, nv), already zero."""
    load_coordinates(plan, W, q, spin2=True)
    IC = W.IC
    IC[...] = plan.W0
    generic = {}
    for g in reversed(plan.groups):  # composite inertias, leaves to root
        b, k = g.slots, g.size
        if g.kind == FREE:
            continue
        if g.kind == GENERIC:
            generic[b.start] = generic_transform(g, q)[:3]
            if not g.at_world:
                E, r, _ = generic[b.start]
                m = IC.shape[-1]
                Ic = (PINV_SPIN @ IC[b.start]).T.reshape(m, 6, 6)
                IC[g.parents.slots[0]] += P_SPIN @ inertia_to_parent(E, r, Ic).reshape(m, 36).T
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

    F = W.F  # force columns F[dof], model dof order
    for slot in range(plan.nj, 0, -1):  # leaves first (slots are breadth-first)
        g = plan.group_of_slot[slot]
        own, sub = plan.own_cols[slot], plan.subtree_cols[slot]
        Fs = F[sub]  # (nsub, 6, m)
        if g.kind == FREE:  # on the world: S a permutation
            m = IC.shape[-1]
            Ic = np.matmul(PINV_SPIN, IC[slot]).reshape(6, 6, m)
            F[own] = np.take(Ic, FREE_PERM, axis=1).transpose(1, 0, 2)
            values = np.take(Fs, FREE_PERM, axis=1)  # (nsub, 6, m)
            M[:, own, sub] = values.transpose(2, 1, 0)
            M[:, sub, own] = values.transpose(2, 0, 1)
            continue
        if g.kind == GENERIC:
            E, r, S = generic[slot]
            m = IC.shape[-1]
            Ic = (PINV_SPIN @ IC[slot]).T.reshape(m, 6, 6)
            F[own] = (Ic @ S).transpose(2, 1, 0)  # (k, 6, m)
            if S.ndim == 2:
                rows = np.einsum("ak,can->nkc", S, Fs)
            else:
                rows = np.einsum("nak,can->nkc", S, Fs)
            M[:, own, sub] = rows
            M[:, sub, own] = rows.transpose(0, 2, 1)
            if not g.at_world:
                F[sub] = forces_to_parent(E, r, Fs.transpose(2, 1, 0)).transpose(2, 1, 0)
            continue
        row = S_ROW[g.kind]
        np.take(IC[slot], U_ROWS[g.kind], axis=0, out=F[own.start], mode="clip")  # Ic S
        values = Fs[:, row].T  # (m, nsub): S_i^T F
        M[:, own.start, sub] = values
        M[:, sub, own.start] = values
        if g.at_world:
            continue
        m_row = plan.row_in_group[slot]
        FT = W.FT[:Fs.shape[0]]
        if g.kind == REVOLUTE:
            coord = g.coords.start + m_row
            rotated_to_parent(Fs, W.CS[coord], W.SN[coord], FT, W.t6[:Fs.shape[0]])
        else:
            FT[...] = Fs
            d = W.DP[g.coords.start + m_row]
            t = W.t6[:Fs.shape[0], 0]
            np.multiply(d, FT[:, 4], out=t)
            FT[:, 0] -= t
            np.multiply(d, FT[:, 3], out=t)
            FT[:, 1] += t
        np.matmul(g.XTt[m_row], FT, out=Fs)
