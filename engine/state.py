"""Shared pieces of the algorithms: batch shapes and the per-joint transforms of a batch.

Every algorithm takes states with a leading batch dimension: ``q`` of shape (N, nq) runs
N states at once, and a single state (nq,) is N = 1 with the batch axis dropped again on
output.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .model import Model
from .spatial import apply_subspace


class Batch(NamedTuple):
    count: int  # N
    single: bool  # inputs were 1-D: squeeze the batch axis from the outputs


def batch_of(model: Model, q: np.ndarray) -> Batch:
    q = np.asarray(q)
    return Batch(1 if q.ndim == 1 else q.shape[0], q.ndim == 1)


def as_rows(x: np.ndarray | None, batch: Batch, width: int) -> np.ndarray:
    """x as a float (N, width) array; None means zeros; a 1-D x is shared by every state."""
    if x is None:
        return np.zeros((batch.count, width))
    x = np.asarray(x, dtype=float)
    return np.broadcast_to(x, (batch.count, width)) if x.ndim == 1 else x


def finish(x: np.ndarray, batch: Batch) -> np.ndarray:
    return x[0] if batch.single else x


class JointTransforms(NamedTuple):
    E: list  # nj x (N, 3, 3): parent -> child coordinates
    r: list  # nj x (N, 3): child origin in parent coordinates
    S: list  # nj x (6, k) or (N, 6, k): motion subspaces
    q: list  # nj x (N, nq_i): configuration blocks


def joint_transforms(model: Model, q: np.ndarray) -> JointTransforms:
    """Xup = X_J(q) X_T of every joint, and its motion subspace, for the batch q (N, nq)."""
    E, r, S, blocks = [], [], [], []
    for i, joint in enumerate(model.joint_models):
        qj = q[:, model.idx_q[i]:model.idx_q[i] + model.nq_joint[i]]
        Ei, ri = joint.transform(qj)
        E.append(Ei)
        r.append(ri)
        S.append(joint.subspace(qj))
        blocks.append(qj)
    return JointTransforms(E, r, S, blocks)


def joint_velocity(model: Model, transforms: JointTransforms, i: int, v: np.ndarray):
    """(vJ, cJ): the joint's spatial velocity (N, 6) and its own bias acceleration (N, 6)."""
    vj = v[:, model.idx_v[i]:model.idx_v[i] + model.nv_joint[i]]
    vJ = apply_subspace(transforms.S[i], vj)
    joint = model.joint_models[i]
    cJ = joint.bias(transforms.q[i], vj) if joint.has_bias else None
    return vJ, cJ

