"""Seeded states for the diagnostics and the benchmarks.

* ``q`` uniform within the joint limits (random unit quaternions, see
  :meth:`treedyn.engine.model.Model.random_configuration`);
* ``v``, ``a``, ``tau`` and the external wrenches ``fext`` standard normal, drawn in that
  order after q, so the same seed gives the same q, v, a and tau with or without fext;
  ``fext`` rows are (force, torque) on each body in its frame about its origin.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import Model


@dataclass(frozen=True)
class RandomStates:
    q: np.ndarray  # (N, nq)
    v: np.ndarray  # (N, nv)
    a: np.ndarray  # (N, nv)
    tau: np.ndarray  # (N, nv)
    fext: np.ndarray | None  # (N, nj, 6), or None when not drawn


def random_states(model: Model, count: int, seed: int = 0, fext: bool = True) -> RandomStates:
    """``count`` seeded states (see the module doc); ``fext=False`` draws no wrenches."""
    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng, count)
    v, a, tau = (rng.normal(size=(count, model.nv)) for _ in range(3))
    wrenches = rng.normal(size=(count, model.njoints, 6)) if fext else None
    return RandomStates(q, v, a, tau, wrenches)


def sample_configurations(model: Model, samples: int, seed: int) -> np.ndarray:
    """(samples, nq): the neutral configuration, then random ones within the limits."""
    rng = np.random.default_rng(seed)
    random = model.random_configuration(rng, max(samples - 1, 0))
    return np.vstack([model.q_neutral[None], random])[:max(samples, 1)]
