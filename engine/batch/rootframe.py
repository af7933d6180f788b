"""CRBA in each tree's root frame: placements, composite inertias as 10 parameters, and the
mass matrix's entries as dot products (Pinocchio's CRBA in its WORLD convention).

For a model whose joints below the bodies on the world are all revolute or prismatic (any
joint on the world), on batches of :data:`MIN_STATES` states or more: every body's placement ``(R, p)`` is taken relative to the internal
frame of the body at the top of its tree (its *root*), the composite inertias ``Ic`` are
accumulated leaves to root in the bodies' own frames as 10 parameters (a rotation about the
joint axis turns three pairs of them, a constant (10, 10) map does the joint placement:
:data:`~treedyn.engine.batch.spin.TEN_OF`), and each body's force column ``F = Ic S`` and
motion column ``J = S`` are expressed once in its root's frame. Then
``M[i, j] = J_i . F_j`` for every dof j in the subtree of i: no column is moved from
frame to frame as in the local convention of :func:`treedyn.engine.crba.column_sweep`.
The roots' own rows (a free-flyer, a generic joint, or a 1-dof joint on the world) use that
sweep's per-joint functions, which need no move at the top of a tree.

Layout (component-major, by slot, see :mod:`.plan`): rotations ``R[slot, 3 a + c, state]``
(root axis a of body axis c), origins ``P[slot, a, state]``, composites ``T[slot, 10,
state]``, motion columns ``J[slot, 6, state]``, force columns ``F[dof, 6, state]`` by model
dof. Measured on a loaded 2-core machine (CPU time per state of one 4096-state chunk, M
already allocated, this path and :func:`treedyn.engine.crba.crba_chunk` interleaved in one
process, 1 thread): talos_reduced (free-flyer, 32 revolute joints) 16.2 us against 20.5
us, xarm7 1.55 us against 2.03 us. About 6 of talos' 16 us are the stores into M (rows
and columns of states 11 KB apart), which :func:`block_states` keeps in cache. Reference:
:func:`treedyn.engine.reference.crba_reference`, which ``tests/test_reference.py`` holds
this path to (random 1-dof trees on every kind of root, and the fixture models).
"""
from __future__ import annotations

import numpy as np

from .plan import PRISMATIC, REVOLUTE
from .rows import accumulate, cross_add, gather, turn
from .spin import PINV_SPIN, SPIN_OF_TEN, TEN_OF, TEN_ROTATING

EYE9 = np.eye(3).reshape(9, 1)
# batches from this many states on (below, the extra numpy calls per chunk cost more than
# the path saves per state: one state of xarm7 0.8 ms here against 0.39 ms on the local
# path, 256 states of talos_reduced 5.3 ms on both)
MIN_STATES = 512
XYZ, LINEAR = (0, 1, 2), (3, 4, 5)


def takes(plan, count: int) -> bool:
    """Whether the root-frame path computes ``count`` states of this model: 1-dof joints
    below the roots, and at least :data:`MIN_STATES` states."""
    return count >= MIN_STATES and all(g.at_world or g.kind in (REVOLUTE, PRISMATIC)
                                       for g in plan.groups)


def roots(plan) -> int:
    """The number of bodies on the world (slots 1..roots; the groups of level 0)."""
    return sum(g.size for g in plan.groups if g.at_world)


TEN_OF_SPIN = TEN_OF @ PINV_SPIN  # (10, 21): a spatial inertia's parameters from its spin


def shapes(plan) -> dict:
    """Work arrays: placements R, P, composites T, columns J and F, scratch by group."""
    nb, k, nrev, nv = plan.nj + 1, plan.kmax, len(plan.rev_q), plan.nv
    return {"R": (nb, 9), "P": (nb, 3), "T": (nb, 10), "J": (nb, 6), "F": (nv, 6),
            "IC": (roots(plan) + 1, 21), "RT": (k, 9), "PT": (k, 3), "G": (k, 30),
            "G10": (k, 10), "T10": (k, 10), "FW": (k, 6), "U": (k, 6), "t": (k,),
            "MP": (pairs(plan),), "FP": (nv, 6), "tmp": (nv,), "TH": (nrev,), "SC": (3, nrev), "SN": (nrev,),
            "CS": (nrev,), "C2": (nrev,), "S2": (nrev,), "DP": (len(plan.pri_q),)}


def placements(plan, W) -> None:
    """Root to leaves: R_i = R_parent E^T Rz(theta), p_i = p_parent + R_parent r (plus
    d R_i e_z for a prismatic joint), with XT = plx(E, r); the roots are (1, 0)."""
    R, P = W.R, W.P
    m = R.shape[-1]
    top = roots(plan)
    R[1:top + 1] = EYE9
    P[1:top + 1] = 0.0
    for g in plan.groups:
        if g.at_world:
            continue
        k, b = g.size, g.slots
        E, r = g.placement
        RP = gather(R, g.parents, W.RT).reshape(k, 3, 3, m)
        Rg, Pg = R[b], P[b]
        np.matmul(E, RP, out=Rg.reshape(k, 3, 3, m))
        np.matmul(r, RP, out=Pg.reshape(k, 3, 1, m))
        Pg += gather(P, g.parents, W.PT)
        t1, t2 = W.U[:k, :3], W.U[:k, 3:]
        if g.kind == REVOLUTE:  # columns x, y of R E^T Rz(theta)
            turn(Rg[:, 0::3], Rg[:, 1::3], W.CS[g.coords][:, None], W.SN[g.coords][:, None],
                 t1, t2, backwards=True)
        else:
            np.multiply(Rg[:, 2::3], W.DP[g.coords][:, None], out=t1)
            Pg += t1


def composites(plan, W) -> None:
    """Leaves to root: T_parent += L (Rz(theta) or shift d) T_child, 10 parameters each in
    the body's internal frame."""
    T = W.T
    T[...] = np.matmul(TEN_OF_SPIN, plan.I0)  # the bodies' own inertias
    for g in reversed(plan.groups):
        if g.at_world:
            continue
        k, b = g.size, g.slots
        if g.kind == REVOLUTE:
            G = W.G10[:k]
            np.copyto(G, T[b])
            for X, Y, multiple in TEN_ROTATING:
                c, s = (W.CS, W.SN) if multiple == 1 else (W.C2, W.S2)
                width = X.stop - X.start
                turn(G[:, X], G[:, Y], c[g.coords][:, None], s[g.coords][:, None],
                     W.U[:k, :width], W.U[:k, 3:3 + width])
        else:
            G, d = W.G[:k], W.DP[g.coords][:, None]
            G[:, :10] = T[b]
            np.multiply(T[b], d, out=G[:, 10:20])
            np.multiply(G[:, 10:20], d, out=G[:, 20:])
        np.matmul(g.L_ten, G, out=W.T10[:k])
        accumulate(T, g.parents, W.T10[:k])
    top = roots(plan)
    np.matmul(SPIN_OF_TEN, T[1:top + 1], out=W.IC[1:top + 1])


def world_columns(plan, W) -> None:
    """Below the roots: J = S and F = Ic S in the root's frame, F into rows by model dof.

    In a body's frame a revolute joint's F = (I_xz, I_yz, I_zz, -h_y, h_x, 0), a prismatic
    joint's (h_y, -h_x, 0, 0, 0, m); in the root's frame (R f_a + p x R f_l, R f_l).
    """
    for g in plan.groups:
        if g.at_world:
            continue
        k, b, m = g.size, g.slots, W.R.shape[-1]
        R, p, T, J, FW = W.R[b].reshape(k, 3, 3, m), W.P[b], W.T[b], W.J[b], W.FW[:k]
        fa, fl, u = FW[:, :3], FW[:, 3:], W.U[:k, :3]
        if g.kind == REVOLUTE:
            _combine(fl, R, T, ((1, 4),), ((0, 6),), u)
            _combine(fa, R, T, ((0, 5), (1, 7), (2, 2)), (), u)
            J[:, :3] = R[:, :, 2]
            J[:, 3:] = 0.0
            cross_add(J, p, J, W.t[:k], XYZ, XYZ, LINEAR)  # p x axis
        else:
            _combine(fa, R, T, ((0, 6),), ((1, 4),), u)
            np.multiply(R[:, :, 2], T[:, 0:1], out=fl)
            J[:, :3] = 0.0
            J[:, 3:] = R[:, :, 2]
        cross_add(FW, p, FW, W.t[:k], XYZ, LINEAR, XYZ)  # + p x f_l
        W.F[plan.perm_v[g.dofs]] = FW


def _combine(out, R, T, plus, minus, u) -> None:
    """out (k, 3, m) = sum R[:, :, c] T[:, row] over ``plus`` (c, row) minus over ``minus``."""
    (c, row), rest = plus[0], plus[1:]
    np.multiply(R[:, :, c], T[:, row:row + 1], out=out)
    for terms, add in ((rest, np.add), (minus, np.subtract)):
        for c, row in terms:
            np.multiply(R[:, :, c], T[:, row:row + 1], out=u)
            add(out, u, out=out)


def mass_rows(plan, W) -> None:
    """M[i, subtree(i)] = J_i . F[subtree(i)] for every body below the roots, into the rows
    of W.MP, a body after the other (leaves last)."""
    J, F, MP = W.J, W.F, W.MP
    start = 0
    for slot in range(roots(plan) + 1, plan.nj + 1):
        sub = plan.subtree_cols[slot]
        n = sub.stop - sub.start
        acc, tmp = MP[start:start + n], W.tmp[:n]
        start += n
        components = LINEAR if plan.group_of_slot[slot].kind == PRISMATIC else XYZ + LINEAR
        np.multiply(F[sub, components[0]], J[slot, components[0]], out=acc)
        for c in components[1:]:
            np.multiply(F[sub, c], J[slot, c], out=tmp)
            acc += tmp


def write_rows(plan, W, M, write, s0: int, s1: int) -> None:
    """The states s0:s1 of :func:`mass_rows` into M (s1 - s0, nv, nv) with ``write(M, dof,
    columns, values (m, n))``, which stores a row and its column."""
    start = 0
    for slot in range(roots(plan) + 1, plan.nj + 1):
        sub = plan.subtree_cols[slot]
        n = sub.stop - sub.start
        write(M, plan.own_cols[slot].start, sub, W.MP[start:start + n, s0:s1].T)
        start += n


def pairs(plan) -> int:
    """The entries of M's upper triangle that :func:`mass_rows` computes."""
    return sum(plan.subtree_cols[slot].stop - plan.subtree_cols[slot].start
               for slot in range(roots(plan) + 1, plan.nj + 1))


def block_states(plan) -> int:
    """States whose M (nv, nv) fill about 2 MB: L2 holds them while their rows and columns
    are written. Measured (talos_reduced, a 4096-state chunk, CPU medians of 9 on a loaded
    machine): 6.1 us a state for the stores against 8.0 us over the whole chunk at once."""
    return max(16, (2 << 20) // (8 * plan.nv * plan.nv + 1))
