"""The batched joint torque regressor Y (N, nv, P) over the batch plan.

Columns and conventions as :mod:`treedyn.engine.regressor`. Per chunk: the forward sweep
RNEA uses (:func:`~.sweeps.forward_sweep`) gives every body's velocity ``V`` and
gravity-shifted acceleration ``A`` in its internal frame (:mod:`.plan`); a body's
regressor ``Yb(V, A)`` there, times the constant map from its link-frame parameters to its
internal ones, is carried up its chain of ancestors as ten force columns laid out
``(10, 6, m)`` (one column per parameter, component-major, states last), with the same
row operations as RNEA's backward sweep: ``tau_i = S_i^T F`` and ``F <- Xup_i^T F``.

Readable twin: :func:`treedyn.engine.regressor.regressor_reference` (one state, spatial_v2
style); ``tests/test_regressor.py`` holds this fast path to it
(``test_batched_equals_reference``), and to Pinocchio's regressor
(``test_equals_pinocchio_regressor``).
"""
from __future__ import annotations

import numpy as np

from ..model import Model
from ..regressor import body_regressor, joint_term_columns, layout_of, rotated_parameters
from ..spatial import forces_to_parent
from ..state import finish, states, world_acceleration
from .load import load_coordinates, load_rows
from .memory import workspace
from .plan import FREE, FREE_PERM, GENERIC, PRISMATIC, S_ROW, plan_of
from .rows import rotate, shift_to_parent
from .sweeps import forward_sweep, work_shapes
from .threads import chunk_size, run_chunks


def regressor(model: Model, q, v=None, a=None, gravity=None, terms=()) -> np.ndarray:
    """Y (N, nv, P) -- or (nv, P) for one state -- with tau = Y pi (RNEA's tau for the
    parameters pi of :func:`treedyn.engine.regressor.model_parameters`).

    q (N, nq); v, a (N, nv) or None for zeros; gravity (3,) overrides the model's;
    ``terms`` the per-joint columns (names of ``JOINT_TERMS`` or a ``JointTerms``).
    """
    layout = layout_of(model, terms)
    plan = plan_of(model)
    batch, q, v, a, _ = states(model, q, v, a)
    # a_world (6, 1) = (0, -g): the world's spatial acceleration that gravity is modelled by
    a_world = world_acceleration(model, gravity)[:, None]
    maps = _parameter_maps(plan, model, layout)
    out = np.zeros((batch.count, model.nv, layout.size))
    capacity = chunk_size(plan, work_shapes, batch.count)

    def work(s0: int, s1: int) -> None:
        W = workspace("regressor", plan, capacity, work_shapes).view(s1 - s0)
        _chunk(plan, layout, maps, W, q[s0:s1], None if v is None else v[s0:s1],
               None if a is None else a[s0:s1], a_world, out[s0:s1])

    run_chunks(batch.count, work, capacity)
    return finish(out, batch)


def _parameter_maps(plan, model: Model, layout) -> list[tuple[int, np.ndarray]]:
    """(slot, P (10, 10)) per body: its internal-frame parameters are P times its link
    frame's (the internal axes are the link's turned by Q, x_link = Q x_int)."""
    slot_of = np.empty(model.njoints, dtype=int)
    slot_of[plan.slot_joint[1:]] = np.arange(1, model.njoints + 1)
    maps = []
    for j in layout.body_joint:
        s = int(slot_of[j])
        Q = plan.force_map[s - 1, :3, 3:].T  # force_map holds Q^T
        maps.append((s, rotated_parameters(Q)))
    return maps


def _chunk(plan, layout, maps, W, q, v, a, a_world, out) -> None:
    """The regressor of one chunk: q (m, nq), v/a (m, nv) or None, into out (m, nv, P)."""
    load_coordinates(plan, W, q)
    has_v = load_rows(plan, v, W.qd, W.rows)
    has_a = load_rows(plan, a, W.qdd, W.rows)
    if not has_v:
        W.V[...] = 0.0
    generic = forward_sweep(plan, W, q, has_v, has_a, None, a_world)
    m = len(q)
    scratch = (np.empty((10, 2, m)), np.empty((10, 2, m)))
    for b, (s, P) in enumerate(maps):
        Yb = body_regressor(W.V[s].T, W.A[s].T) @ P  # (m, 6, 10), internal rows
        F = np.ascontiguousarray(Yb.transpose(2, 1, 0))  # (10, 6, m)
        _carry_up(plan, W, generic, s, F, out[:, :, 10 * b:10 * b + 10], scratch)
    joint_term_columns(layout, v, a, out)


def _carry_up(plan, W, generic, slot: int, F, out, scratch) -> None:
    """Body columns F (10, 6, m) at ``slot`` to each joint from it to the root: out
    (m, nv, 10) gets S^T F at the joint's dofs, then F moves to the parent's frame."""
    t1, t2 = scratch
    while slot:
        g = plan.group_of_slot[slot]
        member = int(plan.row_in_group[slot])
        if g.kind == FREE:
            out[:, plan.perm_v[g.dofs]] = F[:, FREE_PERM].transpose(2, 1, 0)
            return
        if g.kind == GENERIC:
            E, r, S = generic[g.slots.start]
            Fm = F.transpose(2, 1, 0)  # (m, 6, 10)
            out[:, plan.perm_v[g.dofs]] = np.swapaxes(S, -1, -2) @ Fm
            F = np.ascontiguousarray(forces_to_parent(E, r, Fm).transpose(2, 1, 0))
        else:
            out[:, plan.perm_v[g.dofs.start + member]] = F[:, S_ROW[g.kind]].T
            coord = g.coords.start + member
            if g.kind == PRISMATIC:
                shift_to_parent(F, W.DP[coord], t1[:, 0])
            else:
                rotate(F, W.CS[coord], W.SN[coord], t1, t2)
            F = np.matmul(g.XTt[member], F)
        slot = int(g.parents.slots[member])
