"""Limits along a motion: where a logged position, velocity or joint force leaves its
limit, one chunk of states at a time (:func:`outside`), merged into one summary over the
whole motion (:class:`LimitSummary`) and written out as data (:meth:`LimitSummary.entries`).

The three kinds take one form, an interval per coordinate:

- ``position``: q of a 1-dof joint (revolute, prismatic, hinge, slide) against
  [lower, upper]; continuous joints and the entries of multi-dof joints have no limits;
- ``velocity``: v of a dof against [-limit, +limit];
- ``effort``: tau of a dof against [-limit, +limit].

A coordinate whose bounds are both infinite is not checked. A value is outside when it is
below ``lower`` or above ``upper`` (a value on the bound is inside); its *excess* is how far
(``lower - x`` or ``x - upper``, positive). The summary keeps per coordinate the number of
states outside, the first of them, and the worst (largest excess; the first of equal ones),
with the value there. Arrays only: the caller gives the values and bounds in the units it
reports, and a label of where each state came from.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..model import Model

KINDS = ("position", "velocity", "effort")


@dataclass(frozen=True)
class Bounds:
    """The intervals of one kind: ``lower`` and ``upper`` (k,), one per coordinate (per
    dof: v's order), ±inf where a side is unbounded."""

    lower: np.ndarray  # (k,)
    upper: np.ndarray  # (k,)

    @property
    def checked(self) -> np.ndarray:
        """(k,) bool: the coordinate has a finite bound."""
        return np.isfinite(self.lower) | np.isfinite(self.upper)

    def scaled(self, factor: np.ndarray) -> "Bounds":
        """The bounds divided by ``factor`` (k,): in the units of values divided alike."""
        return Bounds(self.lower / factor, self.upper / factor)


def dof_bounds(model: Model) -> dict[str, Bounds]:
    """The model's limits per dof (v's order) for each kind, in SI units: position from
    ``q_lower``/``q_upper`` of the 1-dof joints that are not continuous (a dof of another
    joint: unbounded), velocity and effort symmetric about zero from ``velocity_limit`` and
    ``effort_limit`` (+inf: none)."""
    lower = np.full(model.nv, -np.inf)
    upper = np.full(model.nv, np.inf)
    for j in range(model.njoints):
        if model.nq_joint[j] == 1 and model.nv_joint[j] == 1 \
                and model.public_type(j) != "continuous":
            lower[model.idx_v[j]] = model.q_lower[model.idx_q[j]]
            upper[model.idx_v[j]] = model.q_upper[model.idx_q[j]]
    velocity = np.asarray(model.velocity_limit, dtype=float)
    effort = np.asarray(model.effort_limit, dtype=float)
    return {"position": Bounds(lower, upper), "velocity": Bounds(-velocity, velocity),
            "effort": Bounds(-effort, effort)}


def position_values(model: Model, q: np.ndarray) -> np.ndarray:
    """(n, nv) the positions :func:`dof_bounds` compares: q of each 1-dof joint in its
    dof's column (other columns zero, never outside their unbounded interval)."""
    values = np.zeros((len(q), model.nv))
    one = (model.nq_joint == 1) & (model.nv_joint == 1)
    values[:, model.idx_v[one]] = q[:, model.idx_q[one]]
    return values


@dataclass(frozen=True)
class Offences:
    """One chunk checked against one kind's bounds (k coordinates, n states)."""

    count: np.ndarray  # (k,) states outside
    first: np.ndarray  # (k,) the first state outside, -1 when none
    worst: np.ndarray  # (k,) the state of the largest excess, -1 when none
    excess: np.ndarray  # (k,) that excess, 0 when none
    outside: np.ndarray  # (n,) bool: the state is outside on some coordinate


def outside(values: np.ndarray, bounds: Bounds) -> Offences:
    """The states of ``values`` (n, k) outside ``bounds``: counted, first and worst per
    coordinate."""
    n, k = values.shape
    with np.errstate(invalid="ignore"):  # (inf - inf never arises: values are finite)
        excess = np.maximum(bounds.lower - values, values - bounds.upper)  # (n, k)
    out = excess > 0
    count = out.sum(axis=0)
    if n == 0:
        none = np.full(k, -1)
        return Offences(count, none, none, np.zeros(k), np.zeros(0, dtype=bool))
    hit = count > 0
    first = np.where(hit, out.argmax(axis=0), -1)
    worst = np.where(hit, excess.argmax(axis=0), -1)  # (argmax: the first of equal ones)
    largest = np.where(hit, excess[np.maximum(worst, 0), np.arange(k)], 0.0)
    return Offences(count, first, worst, largest, out.any(axis=1))


@dataclass
class Tally:
    """The summary of one kind so far (k coordinates): :class:`Offences` merged over
    chunks, with states counted from the start of the motion."""

    bounds: Bounds
    count: np.ndarray  # (k,) int
    first: np.ndarray  # (k,) int, -1 none
    first_value: np.ndarray  # (k,)
    worst: np.ndarray  # (k,) int, -1 none
    worst_value: np.ndarray  # (k,)
    excess: np.ndarray  # (k,)
    first_where: list  # (k,) where the first state came from (None: none)
    worst_where: list

    @staticmethod
    def empty(bounds: Bounds) -> "Tally":
        k = len(bounds.lower)
        return Tally(bounds, np.zeros(k, dtype=np.int64), np.full(k, -1), np.zeros(k),
                     np.full(k, -1), np.zeros(k), np.zeros(k), [None] * k, [None] * k)

    def add(self, values: np.ndarray, start: int, where: Callable[[int], str]) -> np.ndarray:
        """Merge the chunk ``values`` (n, k), whose first state is state ``start`` of the
        motion (``where(i)``: where its state i came from); the chunk's states outside."""
        found = outside(values, self.bounds)
        new_first = (self.first < 0) & (found.first >= 0)
        for c in np.flatnonzero(new_first):
            i = int(found.first[c])
            self.first[c], self.first_value[c] = start + i, values[i, c]
            self.first_where[c] = where(i)
        new_worst = found.excess > self.excess  # (a later equal excess: not the first)
        for c in np.flatnonzero(new_worst):
            i = int(found.worst[c])
            self.worst[c], self.worst_value[c] = start + i, values[i, c]
            self.excess[c], self.worst_where[c] = found.excess[c], where(i)
        self.count += found.count
        return found.outside


class LimitSummary:
    """Offences against each kind's bounds, accumulated chunk by chunk over a motion: memory
    is the coordinates' summary, whatever the number of states."""

    def __init__(self, bounds: dict[str, Bounds]):
        self.tallies = {kind: Tally.empty(bounds[kind]) for kind in KINDS if kind in bounds}
        self.states = 0  # states seen
        self.offending = 0  # states outside on some coordinate of some kind
        self.checked: set[str] = set()  # kinds that values were given for

    def add(self, values: dict[str, np.ndarray], count: int,
            where: Callable[[int], str]) -> None:
        """Merge a chunk of ``count`` states: ``values[kind]`` (count, k) for the kinds the
        chunk holds (a kind left out is not checked in this chunk)."""
        outside_any = np.zeros(count, dtype=bool)
        for kind, chunk in values.items():
            if kind in self.tallies:
                outside_any |= self.tallies[kind].add(chunk, self.states, where)
                self.checked.add(kind)
        self.states += count
        self.offending += int(outside_any.sum())

    @property
    def ok(self) -> bool:
        return self.offending == 0

    def entries(self, labels, units: dict[str, list]) -> list[dict]:
        """One entry per coordinate that has a bound of some kind: ``{"dof": label,
        <kind>: {"lower", "upper", "unit", "count", "first", "worst"} or None}``, where
        ``first`` is ``{"state", "where", "value"}`` and ``worst`` adds ``"excess"`` (None
        when no state is outside); ``units[kind][c]`` names the unit of coordinate c."""
        found = []
        for c, label in enumerate(labels):
            entry = {"dof": label}
            for kind, tally in self.tallies.items():
                entry[kind] = _kind_entry(tally, c, units[kind][c]) \
                    if tally.bounds.checked[c] else None
            if any(entry[kind] is not None for kind in self.tallies):
                found.append(entry)
        return found


def _kind_entry(tally: Tally, c: int, unit: str) -> dict:
    """One coordinate's bounds and offences of one kind, as plain data (±inf: None)."""
    def bound(x):
        return float(x) if np.isfinite(x) else None

    first = worst = None
    if tally.first[c] >= 0:
        first = {"state": int(tally.first[c]), "where": tally.first_where[c],
                 "value": float(tally.first_value[c])}
        worst = {"state": int(tally.worst[c]), "where": tally.worst_where[c],
                 "value": float(tally.worst_value[c]), "excess": float(tally.excess[c])}
    return {"lower": bound(tally.bounds.lower[c]), "upper": bound(tally.bounds.upper[c]),
            "unit": unit, "count": int(tally.count[c]), "first": first, "worst": worst}
