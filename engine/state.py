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
    single: bool  # no input had a batch axis: squeeze it from the outputs


class States(NamedTuple):
    """Validated inputs of one call, every vector with the batch axis (N, ...)."""

    batch: Batch
    q: np.ndarray  # (N, nq), a broadcast view when q is shared by the states
    v: np.ndarray | None  # (N, nv) or None for zeros
    x: np.ndarray | None  # (N, nv): a (inverse dynamics) or tau (forward dynamics), or None
    fext: np.ndarray | None  # (nj, 6) shared by the states, (N, nj, 6), or None


def states(model: Model, q, v=None, x=None, fext=None, x_name: str = "a") -> States:
    """Check the shapes of one call's inputs and give them a common batch axis.

    q is (nq,) or (N, nq); v and x are (nv,) or (N, nv); fext is (nj, 6) or (N, nj, 6).
    An input without the batch axis, or with N = 1, is shared by every state (numpy's
    broadcasting). The outputs drop the batch axis when q, v and x have none and fext has
    at most one state (:func:`~treedyn.engine.forces.external_forces` gives (1, nj, 6) for
    wrenches shared by all states). Any other shape, or two different N, raises ValueError
    naming the input: a mistaken shape never silently broadcasts into other numbers.
    """
    named = {"q": (q, (model.nq,)), "v": (v, (model.nv,)), x_name: (x, (model.nv,)),
             "fext": (fext, (model.njoints, 6))}
    arrays, counts = {}, {}
    for name, (value, shape) in named.items():
        if value is None:
            continue
        arrays[name] = array = np.asarray(value, dtype=float)
        if array.shape == shape:
            continue
        if array.ndim != len(shape) + 1 or array.shape[1:] != shape:
            hint = cos_sin_hint(model, array.shape[-1]) if name == "q" and array.ndim else ""
            raise ValueError(f"{name} has shape {array.shape}; expected {_shape(shape)}, or "
                             f"{_shape(('N',) + shape)} for N states{hint}")
        counts[name] = array.shape[0]
    sizes = sorted({n for n in counts.values() if n != 1})
    if len(sizes) > 1:
        listed = ", ".join(f"{name} has {n}" for name, n in counts.items())
        raise ValueError(f"the inputs disagree on the number of states: {listed}")
    batch = Batch(sizes[0] if sizes else 1, not counts or counts == {"fext": 1})

    def rows(name: str, width: int) -> np.ndarray | None:
        array = arrays.get(name)
        return None if array is None else np.broadcast_to(array, (batch.count, width))

    return States(batch, rows("q", model.nq), rows("v", model.nv), rows(x_name, model.nv),
                  arrays.get("fext"))


def cos_sin_hint(model: Model, width: int) -> str:
    """A hint when ``width`` numbers per q are nq plus one per continuous joint: Pinocchio's
    layout, with (cos, sin) for each of them ("" otherwise)."""
    continuous = sum(model.public_type(j) == "continuous" for j in range(model.njoints))
    if not continuous or width != model.nq + continuous:
        return ""
    return (f" (Pinocchio's layout, with cos and sin for each of the {continuous} continuous "
            "joints? dyn takes one angle for each: atan2(sin, cos))")


def _shape(shape: tuple) -> str:
    return "(" + ", ".join(map(str, shape)) + (",)" if len(shape) == 1 else ")")


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

