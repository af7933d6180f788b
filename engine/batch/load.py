"""Loading a chunk into the internal layout, and storing results back in model order.

Joint coordinates become sin/cos of the revolute angles and prismatic shifts; velocity-like
rows (m, nv) become internal dof order, component-major (nv, m); external forces
(``[force, torque]`` per body in its link frame) become (torque, force) rows in the internal
body frames (:mod:`treedyn.engine.batch.plan`).
"""
from __future__ import annotations

import numpy as np

from ..reference import joint_transform
from .sincos import sincos


def load_coordinates(plan, W, q: np.ndarray, spin2: bool = False) -> None:
    """Joint coordinates of a chunk q (m, nq): sin/cos of revolute angles, prismatic shifts."""
    if len(plan.rev_q):
        np.subtract(q[:, plan.rev_q].T, plan.rev_ref, out=W.TH)
        scratch = W.SC
        sincos(W.TH, W.SN, W.CS, scratch[0], scratch[1], scratch[2].view(np.intp))
        if spin2:  # cos 2 theta, sin 2 theta
            np.multiply(W.CS, W.CS, out=W.C2)
            np.multiply(W.SN, W.SN, out=W.S2)
            np.subtract(W.C2, W.S2, out=W.C2)
            np.multiply(W.SN, W.CS, out=W.S2)
            W.S2 *= 2.0
    if len(plan.pri_q):
        np.subtract(q[:, plan.pri_q].T, plan.pri_ref, out=W.DP)


def load_rows(plan, x: np.ndarray | None, out: np.ndarray, scratch: np.ndarray) -> bool:
    """A (m, nv) chunk into internal dof order, component-major (nv, m); False if x is None."""
    if x is None:
        return False
    if plan.identity_v:
        np.copyto(out, x.T)
    else:
        np.copyto(scratch, x.T)
        np.take(scratch, plan.perm_v, axis=0, out=out, mode="clip")
    return True


def store_rows(plan, rows: np.ndarray, out: np.ndarray, scratch: np.ndarray) -> None:
    """Internal-order rows (nv, m) into the model-order output chunk out (m, nv)."""
    if plan.identity_v:
        np.copyto(out, rows.T)
    else:
        np.take(rows, plan.inv_perm_v, axis=0, out=scratch, mode="clip")
        np.copyto(out, scratch.T)


def prepare_forces(plan, count: int, fext):
    """External forces as ('shared', (nj + 1, 6, 1)) or ('batch', (N, nj, 6)), or None.

    ``fext`` is ``[force, torque]`` per body in its link frame about its origin, (nj, 6)
    for all states or (N, nj, 6), shapes checked by :func:`treedyn.engine.state.states`;
    internally (torque, force) in the internal body frames.
    """
    if fext is None:
        return None
    if fext.ndim == 2 or fext.shape[0] == 1:
        rows = fext.reshape(plan.nj, 6)[plan.slot_joint[1:]]
        shared = np.zeros((plan.nj + 1, 6, 1))
        shared[1:, :, 0] = np.einsum("sij,sj->si", plan.force_map, rows)
        return ("shared", shared)
    return ("batch", np.broadcast_to(fext, (count, plan.nj, 6)))


def load_forces(plan, forces, s0: int, s1: int, Fx: np.ndarray):
    """The chunk's internal external forces, None if absent: the shared (nj + 1, 6, 1), or
    the batch's rows written into the work array Fx (nj + 1, 6, m)."""
    if forces is None:
        return None
    kind, data = forces
    if kind == "shared":
        return data
    chunk = data[s0:s1][:, plan.slot_joint[1:]]  # (m, nj, 6)
    Fx[0] = 0.0
    np.matmul(plan.force_map, chunk.transpose(1, 2, 0), out=Fx[1:])
    return Fx


def generic_transform(group, q: np.ndarray):
    """(E (m,3,3), r (m,3), S, qj) of a generic joint for the chunk q (m, nq), internal frames.

    E maps the parent's internal coordinates to the child's (its link frame), r is the
    child origin in the parent's internal coordinates; S is (6, k) or (m, 6, k).
    """
    qj = q[:, group.q_block]
    E, r, S = joint_transform(group.joint, qj)
    if group.Q_parent is not None:
        E = E @ group.Q_parent
        r = r @ group.Q_parent
    return E, r, S, qj
