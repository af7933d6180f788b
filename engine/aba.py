"""Articulated Body Algorithm: forward dynamics a = M(q)^-1 (tau - h(q, v) + sum J^T f_ext).

Three sweeps in each body's frame (LOCAL), M is never formed:

1. root to leaves (the RNEA forward sweep with zero joint accelerations): velocities
   ``V``, bias accelerations ``A0`` (gravity-shifted, joint bias terms included) and the
   bias forces ``pA = I A0 + V x* I V - f_ext``;
2. leaves to root: articulated inertias ``IA`` with the local elimination ``U = IA S``,
   ``D = S^T U + armature``, ``u = tau - S^T pA``; the parent receives
   ``Xup^T (IA - U D^-1 U^T) Xup`` and ``Xup^T (pA + U D^-1 u)``;
3. root to leaves: ``qdd = D^-1 (u - U^T Xup dA_parent)`` and ``dA = Xup dA_parent + S qdd``
   where ``dA = A - A0`` is the acceleration caused by the joint accelerations (zero for
   the world, so gravity only enters through ``A0``).

Layout and frames as in :mod:`treedyn.engine.rnea`; articulated inertias are (21, N) spin
coordinates per body (:mod:`treedyn.engine.batch.spin`): for a revolute joint ``U = IA S``
is 6 of those rows, the rank-one ``U D^-1 U^T`` is subtracted row by row in the child
frame, and ``Xup^T Ia Xup`` is a few rotation row updates (angle and double angle) and one
(21, 21) BLAS call per group -- (21, 15) without armature, where Ia keeps 15 non-zero spin
rows (batch.spin.KEPT); a prismatic joint's shift is a (21, 63) call on
``[Ia; d Ia; d^2 Ia]``. IA is never initialised up front: a body without children starts
from its own inertia I0 when its group comes up, and a body's first child writes I0 plus its
contribution (after a revolute joint without armature, as a I0 column of that matmul
applied to ``[rot(Ia); 1]``, straight into the parents' rows). Singular blocks give
inf/nan (``1 / 0``; Gauss-Jordan without pivoting for multi-dof joints), never an exception.

Readable twin: :func:`treedyn.engine.reference.aba_reference` (Featherstone's FDab, one
state, 6x6 matrices in the link frames). ``tests/test_reference.py`` holds this fast path
to it (``tests/test_mimic.py`` on coupled models), ``tests/test_pinocchio.py`` to Pinocchio.
"""
from __future__ import annotations

import numpy as np

from .batch.load import load_coordinates, load_rows, store_rows
from .batch.plan import FREE, FREE_PERM, GENERIC, REVOLUTE, S_ROW, U_ROWS
from .batch.rows import accumulate, gather, gauss_jordan_inverse, spin_rotate
from .batch.spin import KEPT, NSPIN, PINV_SPIN, matrices_of, spins_of
from .batch.sweeps import forward_sweep, solve_in_chunks, to_child, to_parent, work_shapes
from .crba import crba
from .model import Model
from .rnea import rnea
from .spatial import apply_subspace, force_to_parent, inertia_to_parent, motion_to_child, project_subspace
from .state import finish, states


def aba(model: Model, q, v=None, tau=None, fext=None, gravity=None) -> np.ndarray:
    """Joint accelerations (N, nv) -- or (nv,) -- under joint forces ``tau``.

    Same arguments and frames as :func:`treedyn.engine.rnea.rnea`, with ``tau`` (N, nv)
    in place of ``a``. A singular joint block (a massless subtree) gives inf/nan. On a
    coupled model (mimic joints enforced) it solves the coupled system ``M a = tau - h``
    with its M and h (:func:`coupled_aba`).
    """
    if model.coupling is not None:
        return coupled_aba(model, q, v, tau, fext, gravity)
    return solve_in_chunks(model, "aba", aba_shapes, aba_chunk, q, v, tau, fext, gravity, "tau")


def coupled_aba(model: Model, q, v, tau, fext, gravity) -> np.ndarray:
    """a = M^-1 (tau - h) of a coupled model, M = G^T M_full G and h = G^T h_full: a
    batched dense solve (a mimic couples the tree's branches, so there is no articulated
    sweep; Pinocchio 4.1's ABA refuses mimic joints). Singular M gives nan at that state."""
    batch, q, v, tau, fext = states(model, q, v, tau, fext, x_name="tau")
    rhs = -rnea(model, q, v, None, fext, gravity)  # (N, nv)
    if tau is not None:
        rhs += tau
    M = crba(model, q)  # (N, nv, nv)
    with np.errstate(all="ignore"):
        try:
            a = np.linalg.solve(M, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:  # a singular M somewhere: state by state
            a = np.full_like(rhs, np.nan)
            for n in range(len(M)):
                try:
                    a[n] = np.linalg.solve(M[n], rhs[n])
                except np.linalg.LinAlgError:
                    pass
    return finish(a, batch)


def aba_shapes(plan) -> dict:
    """RNEA's work arrays and the backward sweep's: IA (spin), U, D^-1, u per body."""
    nb, k, nrev = plan.nj + 1, plan.kmax, len(plan.rev_q)
    shapes = work_shapes(plan)
    shapes.update({"IA": (nb, 21), "U": (nb, 6), "Dinv": (nb,), "u": (nb,), "G": (k, 63),
                   "T21": (k, 21), "K": (k, 10), "tspin": (k, 6),
                   "C2": (nrev,), "S2": (nrev,)})
    return shapes


def aba_chunk(plan, W, q, v, tau, fx, a_world, out) -> None:
    """ABA for one chunk: q (m, nq), v/tau (m, nv) or None, fx internal forces or None."""
    load_coordinates(plan, W, q, spin2=True)
    has_v = load_rows(plan, v, W.qd, W.rows)
    if not load_rows(plan, tau, W.tau, W.rows):
        W.tau[...] = 0.0
    generic = forward_sweep(plan, W, q, has_v, False, fx, a_world)  # V, A0, F = pA
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        articulated_sweep(plan, W, generic)
        acceleration_sweep(plan, W, generic)
    store_rows(plan, W.qdd, out, W.rows)


def articulated_sweep(plan, W, generic: dict) -> None:
    """Leaves to root: IA, U, D^-1, u per body; IA and pA passed on to the parents."""
    IA, pA, I0 = W.IA, W.F, plan.I0  # pA: the F rows of the forward sweep
    for g in reversed(plan.groups):
        b, k = g.slots, g.size
        if g.leaves is not None:  # no child wrote their IA: it is their own inertia
            IA[g.leaves] = I0[g.leaves]
        if g.kind == GENERIC:
            generic[b.start] = generic_articulated(g, W, I0, *generic[b.start])
            continue
        if g.kind == FREE:
            generic[b.start] = free_root_articulated(g, W)
            continue
        row = S_ROW[g.kind]
        IAg, Ug, Dg, ug = IA[b], W.U[b], W.Dinv[b], W.u[b]
        np.take(IAg, U_ROWS[g.kind], axis=1, out=Ug, mode="clip")  # U = IA S
        np.add(Ug[:, row], g.armature, out=Dg)
        np.divide(1.0, Dg, out=Dg)  # D^-1
        np.subtract(W.tau[g.dofs], pA[b][:, row], out=ug)  # u = tau - S^T pA
        if g.at_world:
            continue
        t1, t2, T6 = W.t1[:k], W.t2[:k], W.T6[:k]
        # pa = pA + U D^-1 u, to the parent
        pAg = pA[b]
        np.multiply(ug, Dg, out=t1[:, 0])
        np.multiply(Ug, t1[:, :1], out=T6)
        pAg += T6
        to_parent(g, W, pAg, t1, t2)
        np.matmul(g.XTt, pAg, out=T6)
        accumulate(pA, g.parents, T6)
        # Ia = IA - U D^-1 U^T (child frame, in place), then Xup^T Ia Xup to the parent
        Ud = W.H[:k]
        np.multiply(Ug, Dg[:, None], out=Ud)
        G = W.G[:k]
        rows = KEPT if g.kept_rows else NSPIN
        subtract_rank_one(IAg, Ug, Ud, W.K[:k], rows)
        T21 = W.T21[:k]
        if g.kind == REVOLUTE:
            spin_rotate(IAg, W.CS[g.coords][:, None], W.SN[g.coords][:, None],
                        W.C2[g.coords][:, None], W.S2[g.coords][:, None], W.tspin[:k], rows)
            if g.L_first is not None:  # [L | I0_parent] [rot(Ia); 1] into the parents
                IAg[:, rows] = 1.0  # a spin row known to be zero; the child's IA is done
                np.matmul(g.L_first, IAg[:, :rows + 1], out=IA[g.parents.read])
                continue
            np.matmul(g.L_aba, IAg[:, :rows], out=T21)  # L rot(Ia); the child's IA is done
        else:
            d = W.DP[g.coords][:, None]
            G[:, :21] = IAg
            np.multiply(IAg, d, out=G[:, 21:42])
            np.multiply(G[:, 21:42], d, out=G[:, 42:63])
            np.matmul(g.L_aba, G, out=T21)  # [L, L L1, L L2] @ [Ia; d Ia; d^2 Ia]
        accumulate(IA, g.parents, T21, g.first, I0)


def subtract_rank_one(IA, U, Ud, scratch, rows: int = 21) -> None:
    """IA -= spin(U Ud^T) in place for IA (k, 21, m), U and Ud = U / D (k, 6, m).

    U = (a, b) angular/linear; the spin rows (batch.spin.SPIN_TERMS): 0 is b_z bd_z, 1-4
    and 9-14 sums and differences of xy products, 5-8 the x then y parts of
    (b bd_z, a bd_z), 15-16 a_z ad_z, a_z bd_z, 17-20 the x then y parts of
    (a ad_z, a_z bd). ``rows=KEPT`` skips 15-20 (zero after the update when U = IA e_z
    and D = U_z, a revolute joint without armature). Products of strided row views, no
    gathers; scratch (k, 10, m).
    """
    k, m = IA.shape[0], IA.shape[-1]
    t = scratch[:, 0:2]
    np.multiply(U[:, 5], Ud[:, 5], out=t[:, 0])
    IA[:, 0] -= t[:, 0]
    XY = IA[:, 5:9].reshape(k, 2, 2, m)  # [x | y][b bd_z, a bd_z]
    for column, left in ((0, U[:, 3:5]), (1, U[:, 0:2])):
        np.multiply(left, Ud[:, 5:6], out=t)
        XY[:, :, column] -= t
    P1, P2, P3, P4, P5 = (scratch[:, r:r + 2] for r in (0, 2, 4, 6, 8))
    np.multiply(U[:, 0::3], Ud[:, 0::3], out=P1)  # a_x ad_x, b_x bd_x
    np.multiply(U[:, 1::3], Ud[:, 1::3], out=P2)  # a_y ad_y, b_y bd_y
    np.multiply(U[:, 0:2], Ud[:, 3:5], out=P3)  # a_x bd_x, a_y bd_y
    np.multiply(U[:, 0:2], Ud[:, 4:2:-1], out=P4)  # a_x bd_y, a_y bd_x
    np.multiply(U[:, 0::3], Ud[:, 1::3], out=P5)  # a_x ad_y, b_x bd_y
    P5 *= 2.0
    IA[:, 12:14] -= P5  # spin-2 y of 00, 11
    np.add(P1, P2, out=P5)
    IA[:, 1:3] -= P5  # traces of 00, 11
    np.subtract(P1, P2, out=P5)
    IA[:, 9:11] -= P5  # spin-2 x of 00, 11
    sums, differences = P1, P2  # (k, 2, m): rows (3, 14) and (11, 4)
    np.add(P3[:, 0], P3[:, 1], out=sums[:, 0])  # trace of 01
    np.add(P4[:, 0], P4[:, 1], out=sums[:, 1])  # spin-2 y of 01
    np.subtract(P3[:, 0], P3[:, 1], out=differences[:, 0])  # spin-2 x of 01
    np.subtract(P4[:, 0], P4[:, 1], out=differences[:, 1])  # curl of 01
    IA[:, 3] -= sums[:, 0]
    IA[:, 14] -= sums[:, 1]
    IA[:, 11] -= differences[:, 0]
    IA[:, 4] -= differences[:, 1]
    if rows <= KEPT:
        return
    np.multiply(U[:, 2:3], Ud[:, 2::3], out=t)  # a_z ad_z, a_z bd_z
    IA[:, 15:17] -= t
    XY = IA[:, 17:21].reshape(k, 2, 2, m)  # [x | y][a ad_z, a_z bd]
    for column, left, right in ((0, U[:, 0:2], Ud[:, 2:3]), (1, Ud[:, 3:5], U[:, 2:3])):
        np.multiply(left, right, out=t)
        XY[:, :, column] -= t


def acceleration_sweep(plan, W, generic: dict) -> None:
    """Root to leaves: qdd = D^-1 (u - U^T dA'), dA = dA' + S qdd (dA of the world is 0)."""
    dA = W.A
    dA[0] = 0.0
    for g in plan.groups:
        b, k = g.slots, g.size
        if g.kind == GENERIC:
            generic_acceleration(g, W, *generic[b.start])
            continue
        if g.kind == FREE:
            qdd = W.qdd[g.dofs]
            qdd[...] = generic[b.start]
            np.take(qdd, FREE_PERM, axis=0, out=dA[b.start], mode="clip")
            continue
        dAg, qdd = dA[b], W.qdd[g.dofs]
        if g.at_world:
            dAg[...] = 0.0
            np.multiply(W.u[b], W.Dinv[b], out=qdd)
        else:
            np.matmul(g.XT, gather(dA, g.parents, W.P6), out=dAg)
            to_child(g, W, dAg, W.t1[:k], W.t2[:k])
            T6 = W.T6[:k]
            np.multiply(W.U[b], dAg, out=T6)
            dot = W.t1[:k, 0]
            np.sum(T6, axis=1, out=dot)
            np.subtract(W.u[b], dot, out=qdd)
            qdd *= W.Dinv[b]
        dAg[:, S_ROW[g.kind]] += qdd


# spin coordinates -> the free joint's D (6, 6) in its (linear, angular) velocity order
PINV_FREE = PINV_SPIN.reshape(6, 6, -1)[FREE_PERM][:, FREE_PERM].reshape(36, -1)  # (36, 21)


def free_root_articulated(g, W) -> np.ndarray:
    """qdd (6, m) of Pinocchio's free-flyer on the world: D qdd = u with D = S^T IA S.

    S is a permutation, so D is IA in the free joint's (linear, angular) order, read
    straight from the spin rows with a permuted PINV_SPIN; the world does not accelerate,
    so qdd = D^-1 u needs no inverse, only a solve.
    """
    i = g.slots.start
    m = W.IA.shape[-1]
    D = np.matmul(PINV_FREE, W.IA[i]).reshape(6, 6, m)
    for j in range(6):
        D[j, j] += g.armature_full[j]
    u = W.tau[g.dofs] - np.take(W.F[i], FREE_PERM, axis=0)
    return solve_blocks(D, u)


def solve_blocks(D: np.ndarray, u: np.ndarray) -> np.ndarray:
    """x = D^-1 u for blocks D (k, k, m) and u (k, m), both overwritten.

    Gaussian elimination without pivoting (D symmetric positive definite when regular); a
    singular block gives inf/nan, never an exception.
    """
    k = D.shape[0]
    for p in range(k - 1):
        f = D[p + 1:, p] / D[p, p]  # (k - p - 1, m)
        D[p + 1:, p + 1:] -= f[:, None] * D[p, p + 1:][None]
        u[p + 1:] -= f * u[p]
    x = np.empty_like(u)
    for p in range(k - 1, -1, -1):
        rest = u[p] - np.einsum("jm,jm->m", D[p, p + 1:], x[p + 1:]) if p < k - 1 else u[p]
        np.divide(rest, D[p, p], out=x[p])
    return x


def generic_articulated(g, W, I0, E, r, S):
    """Backward step of a generic joint in AoS math; returns what the third sweep needs."""
    i, p = g.slots.start, g.parents.slots[0]
    IA = matrices_of(W.IA[i])  # (m, 6, 6)
    U = IA @ S  # (m, 6, k)
    D = np.swapaxes(S, -1, -2) @ U + np.diag(g.armature_full)
    Dinv = np.ascontiguousarray(gauss_jordan_inverse(np.ascontiguousarray(D.transpose(1, 2, 0)))
                                .transpose(2, 0, 1))
    pA = W.F[i].T
    u = W.tau[g.dofs].T - project_subspace(S, pA)  # (m, k)
    if not g.at_world:
        UDinv = U @ Dinv
        Ia = IA - UDinv @ np.swapaxes(U, 1, 2)
        pa = pA + np.einsum("nik,nk->ni", UDinv, u)
        accumulate(W.IA, g.parents, spins_of(inertia_to_parent(E, r, Ia))[None], g.first, I0)
        W.F[p] += force_to_parent(E, r, pa).T
    return E, r, S, U, Dinv, u


def generic_acceleration(g, W, E, r, S, U, Dinv, u) -> None:
    """Third sweep of a generic joint: qdd = D^-1 (u - U^T dA'), dA = dA' + S qdd."""
    i, p = g.slots.start, g.parents.slots[0]
    dA_parent = motion_to_child(E, r, W.A[p].T)
    rhs = u - np.einsum("nik,ni->nk", U, dA_parent)
    qdd = np.einsum("njk,nk->nj", Dinv, rhs)
    W.qdd[g.dofs] = qdd.T
    W.A[i] = (dA_parent + apply_subspace(S, qdd)).T
