"""M(q) of two models at the same configurations, matched joint by joint.

The configurations are the old model's (:func:`treedyn.engine.samples.sample_configurations`:
its neutral one, then random ones within its limits), carried to the new model joint by
joint (:func:`carry_configurations`): a 1-dof joint keeps its displacement from ``ref``, a
quaternion is reordered between Pinocchio's (x, y, z, w) and MuJoCo's (w, x, y, z), a
joint the old model lacks stays at the new model's neutral value. M is compared on the
dofs of the joints both models have with the same coordinates (the same type, or revolute
and continuous), the new model's M expressed in the old model's velocity coordinates
(they differ only for a free joint whose linear velocity is in the body frame on one side,
Pinocchio's LOCAL, and in the world frame on the other, MuJoCo's: ``v_new = T v_old``,
``M_new -> T^T M_new T``).

The change of entry (i, j) is ``|M_new - M_old| / sqrt(M_ii M_jj)`` with the old model's
diagonal (the new one's where the old is zero): relative to the entry's largest possible
size, so that couplings near zero do not blow up and mixed units (rad, m) compare.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..crba import crba
from ..model import Model
from ..samples import sample_configurations


@dataclass(frozen=True)
class PairChange:
    """The largest change of one entry of M over the samples (its mirror is the same)."""

    old_dofs: tuple[int, int]  # (i, j) in the old model's v, i <= j
    new_dofs: tuple[int, int]  # the same dofs in the new model's v
    change: float  # relative, as in the module doc
    sample: int  # where it is largest
    old: float  # M_old[i, j] there
    new: float  # M_new[i, j] there (in the old model's velocity coordinates)


@dataclass(frozen=True)
class MatrixDiff:
    samples: int
    seed: int
    dofs: int  # dofs compared
    worst: float  # the largest change of any entry (0 when none)
    pairs: tuple[PairChange, ...]  # entries changed beyond the tolerance, largest first
    q_old: np.ndarray  # (samples, nq_old) the configurations
    q_new: np.ndarray  # (samples, nq_new) the same, carried to the new model
    change: np.ndarray  # (dofs, dofs) every entry's largest change over the samples
    compared: tuple[int, ...]  # (dofs,) the compared dofs in the old model's v


def zero_configuration(model: Model) -> np.ndarray:
    """(nq,) the neutral configuration with free joints at the world origin: every joint at
    zero displacement (the reference configuration of :mod:`.diff`)."""
    q = model.q_neutral.copy()
    for j, joint in enumerate(model.joint_models):
        if model.public_type(j) == "free":
            q[model.idx_q[j]:model.idx_q[j] + 7] = joint.neutral()
    return q


def _scalar_first(block: np.ndarray, joint) -> np.ndarray:
    """A quaternion block (N, 4) in the joint's order, as (w, x, y, z)."""
    return block if joint.scalar_first else np.roll(block, 1, axis=1)


def _in_order(wxyz: np.ndarray, joint) -> np.ndarray:
    return wxyz if joint.scalar_first else np.roll(wxyz, -1, axis=1)


def carry_configurations(old: Model, new: Model, pairs: dict[int, int],
                         q_old: np.ndarray) -> np.ndarray:
    """(N, nq_new): ``q_old`` (N, nq_old) carried joint by joint (module doc); ``pairs``
    maps old joints to new joints with the same coordinates (the same type, or revolute
    and continuous)."""
    q_new = np.repeat(new.q_neutral[None], len(q_old), axis=0)
    for j, k in pairs.items():
        jo, jn = old.joint_models[j], new.joint_models[k]
        block = q_old[:, old.idx_q[j]:old.idx_q[j] + old.nq_joint[j]]
        if old.nq_joint[j] == 1:
            block = block - jo.ref + jn.ref
        elif old.public_type(j) == "spherical":
            block = _in_order(_scalar_first(block, jo), jn)
        elif old.public_type(j) == "free":
            block = np.hstack([block[:, :3], _in_order(_scalar_first(block[:, 3:], jo), jn)])
        q_new[:, new.idx_q[k]:new.idx_q[k] + new.nq_joint[k]] = block
    return q_new


def _change_of_basis(old: Model, new: Model, pairs: dict[int, int], q_old: np.ndarray,
                     dofs: np.ndarray) -> np.ndarray | None:
    """T (N, n, n) with v_new = T v_old on the compared dofs, or None when it is 1."""
    T = None
    for j, k in pairs.items():
        jo, jn = old.joint_models[j], new.joint_models[k]
        if old.public_type(j) != "free" or jo.type == jn.type:
            continue
        R = jo.rotation_of(q_old[:, old.idx_q[j]:old.idx_q[j] + 7])  # (N, 3, 3) body in parent
        if T is None:
            T = np.repeat(np.eye(len(dofs))[None], len(q_old), axis=0)
        first = int(np.flatnonzero(dofs == old.idx_v[j])[0])
        # free_world (MuJoCo) has v_lin in the parent frame = R v_lin(LOCAL)
        T[:, first:first + 3, first:first + 3] = R if jn.type == "free_world" else \
            np.swapaxes(R, 1, 2)
    return T


def matrix_diff(old: Model, new: Model, pairs: dict[int, int], samples: int, seed: int,
                tolerance: float) -> MatrixDiff | None:
    """M(q) of both models at ``samples`` configurations (module doc), on the dofs of
    ``pairs`` (old joint -> new joint with the same coordinates); None when there are none."""
    pairs = {j: k for j, k in pairs.items() if old.nv_joint[j]}
    if not pairs:
        return None
    dofs_old = np.concatenate([np.arange(old.idx_v[j], old.idx_v[j] + old.nv_joint[j])
                               for j in pairs])
    dofs_new = np.concatenate([np.arange(new.idx_v[k], new.idx_v[k] + new.nv_joint[k])
                               for k in pairs.values()])
    q_old = sample_configurations(old, samples, seed)
    q_new = carry_configurations(old, new, pairs, q_old)
    with np.errstate(all="ignore"):
        A = crba(old, q_old).reshape(len(q_old), old.nv, old.nv)[:, dofs_old][:, :, dofs_old]
        B = crba(new, q_new).reshape(len(q_new), new.nv, new.nv)[:, dofs_new][:, :, dofs_new]
        T = _change_of_basis(old, new, pairs, q_old, dofs_old)
        if T is not None:
            B = np.swapaxes(T, 1, 2) @ B @ T
        diagonal = np.diagonal(A, axis1=1, axis2=2)
        diagonal = np.where(diagonal > 0, diagonal, np.diagonal(B, axis1=1, axis2=2))
        scale = np.sqrt(np.abs(diagonal[:, :, None] * diagonal[:, None, :]))
        delta = np.abs(B - A)
        change = np.where(delta == 0, 0.0, delta / np.where(scale > 0, scale, np.nan))
    change = np.where(np.isnan(change), np.inf, change)  # (N, n, n)
    worst = change.max(axis=0)  # (n, n)
    where = change.argmax(axis=0)
    rows, cols = np.triu_indices(len(dofs_old))
    order = sorted((c for c in zip(rows, cols) if worst[c] > tolerance), key=lambda c: -worst[c])
    pairs_changed = tuple(PairChange((int(dofs_old[i]), int(dofs_old[j])),
                                     (int(dofs_new[i]), int(dofs_new[j])), float(worst[i, j]),
                                     int(where[i, j]), float(A[where[i, j], i, j]),
                                     float(B[where[i, j], i, j])) for i, j in order)
    return MatrixDiff(len(q_old), seed, len(dofs_old), float(worst.max(initial=0.0)),
                      pairs_changed, q_old, q_new, worst, tuple(int(i) for i in dofs_old))
