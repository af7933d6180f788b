"""Recursive Newton-Euler: inverse dynamics tau = M(q) a + h(q, v) - sum_i J_i^T f_ext,i.

Conventions (Pinocchio's LOCAL): every body's velocity ``V``, acceleration ``A`` and force
``F`` are spatial vectors in that body's own frame, about its origin. Gravity enters as the
world's acceleration ``-g`` (Featherstone's trick), so ``A`` is the gravity-shifted
acceleration. Armature adds ``armature * a`` to tau.

Implementation (see :mod:`treedyn.engine.batch`):
states are processed in chunks, component-major (``V[slot, component, state]``), in
internal body frames where every 1-dof joint moves along z, one tree level and joint kind
(a group of k bodies) at a time::

    forward, root to leaves:   V = Xup V_parent + S qd                   (k, 6, N)
                               A = Xup A_parent + S qdd + V x (S qd) [+ cJ]
                               F = I A + V x* (I V) - f_ext
    backward, leaves to root:  tau = S^T F ;  F_parent += Xup^T F

with ``Xup = X_J(q) X_T``: the constant ``X_T`` (k, 6, 6) is one batched BLAS call, the
joint part a rotation about z (cos/sin row updates) or a shift along z.

Readable twin: :func:`treedyn.engine.reference.rnea_reference` (Featherstone's ID, one
state, 6x6 matrices in the link frames). ``tests/test_reference.py`` holds this fast path
to it (``tests/test_mimic.py`` on coupled models), ``tests/test_pinocchio.py`` to Pinocchio.
"""
from __future__ import annotations

import numpy as np

from .batch.load import load_coordinates, load_rows, store_rows
from .batch.plan import FREE, FREE_PERM, GENERIC, S_ROW
from .batch.rows import accumulate
from .batch.sweeps import forward_sweep, solve_in_chunks, to_parent, work_shapes
from .model import Model
from .spatial import force_to_parent, project_subspace
from .state import finish, states


def rnea(model: Model, q, v=None, a=None, fext=None, gravity=None) -> np.ndarray:
    """Joint forces (N, nv) -- or (nv,) for one state -- that produce accelerations ``a``.

    q (N, nq); v, a (N, nv) or None for zeros; fext (nj, 6) or (N, nj, 6) as
    ``[force, torque]`` on each body in its frame about its origin: row ``i`` in the link
    frame ``model.body_frames[i]`` (for MJCF the joint's anchor frame, not always the
    <body> frame; :func:`treedyn.engine.forces.external_forces` places wrenches given on
    named frames); gravity (3,) overrides the model's. A coupled model (mimic joints
    enforced, :mod:`treedyn.engine.coupling`) gives the coupled system's forces.
    """
    if model.coupling is not None:
        return coupled_rnea(model, q, v, a, fext, gravity)
    return solve_in_chunks(model, "rnea", work_shapes, rnea_chunk, q, v, a, fext, gravity, "a")


def coupled_rnea(model: Model, q, v, a, fext, gravity) -> np.ndarray:
    """tau = G^T RNEA_full(q_full, G v, G a) + armature * a on a coupled model."""
    c = model.coupling
    batch, q, v, a, fext = states(model, q, v, a, fext)
    tau = c.project(rnea(c.full, c.expand_q(q), c.expand_v(v), c.expand_v(a), fext, gravity))
    if a is not None:
        tau += model.armature * a
    return finish(tau, batch)


def nonlinear_effects(model: Model, q, v=None, fext=None, gravity=None) -> np.ndarray:
    """h(q, v) - sum J^T f_ext: Coriolis, centrifugal, gravity (and external) terms."""
    return rnea(model, q, v, None, fext, gravity)


def generalized_gravity(model: Model, q, gravity=None) -> np.ndarray:
    """g(q): the joint forces that hold the robot still against gravity."""
    return rnea(model, q, None, None, None, gravity)


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
            to_parent(g, W, Fg, W.t1[:k], W.t2[:k])
            T = W.T6[:k]
            np.matmul(g.XTt, Fg, out=T)
            accumulate(F, g.parents, T)
