"""Shared pieces of the algorithms: the batch shapes of their inputs.

Every algorithm takes states with a leading batch dimension: ``q`` of shape (N, nq) runs
N states at once, and a single state (nq,) is N = 1 with the batch axis dropped again on
output.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .model import Model


class Batch(NamedTuple):
    count: int  # N
    single: bool  # no input had a batch axis: squeeze it from the outputs


class CallInputs(NamedTuple):
    """Validated inputs of one call, every vector with the batch axis (N, ...)."""

    batch: Batch
    q: np.ndarray  # (N, nq), a broadcast view when q is shared by the states
    v: np.ndarray | None  # (N, nv) or None for zeros
    x: np.ndarray | None  # (N, nv): a (inverse dynamics) or tau (forward dynamics), or None
    fext: np.ndarray | None  # (nj, 6) shared by the states, (N, nj, 6), or None


def states(model: Model, q, v=None, x=None, fext=None, x_name: str = "a") -> CallInputs:
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
            continuous = cos_sin_continuous(model, array.shape[-1]) if name == "q" and array.ndim else 0
            hint = (f" (Pinocchio's layout, with cos and sin for each of the {continuous} "
                    "continuous joints? q holds one angle for each: atan2(sin, cos))"
                    if continuous else "")
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

    return CallInputs(batch, rows("q", model.nq), rows("v", model.nv), rows(x_name, model.nv),
                  arrays.get("fext"))


def cos_sin_continuous(model: Model, width: int) -> int:
    """The number of continuous joints when ``width`` numbers per q are nq plus one per
    continuous joint (Pinocchio's layout, with (cos, sin) for each of them), else 0."""
    continuous = sum(model.public_type(j) == "continuous" for j in range(model.njoints))
    return continuous if continuous and width == model.nq + continuous else 0


def _shape(shape: tuple) -> str:
    return "(" + ", ".join(map(str, shape)) + (",)" if len(shape) == 1 else ")")


def world_acceleration(model: Model, gravity=None) -> np.ndarray:
    """a_world (6,): the world's spatial acceleration that gravity is modelled by, (0, -g)
    as (angular, linear) -- every body's acceleration is then shifted by gravity
    (Featherstone's trick). ``g`` is the model's gravity, or ``gravity`` (3,) when given."""
    a_world = np.zeros(6)
    if gravity is None:
        a_world[3:] = -model.gravity
        return a_world
    gravity = np.asarray(gravity, dtype=float)
    if gravity.shape != (3,):
        raise ValueError(f"gravity has shape {gravity.shape}; expected (3,): (gx, gy, gz)")
    a_world[3:] = -gravity
    return a_world


def finish(x: np.ndarray, batch: Batch) -> np.ndarray:
    return x[0] if batch.single else x
