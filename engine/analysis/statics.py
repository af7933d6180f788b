"""``dyn statics``'s report as data: each actuated joint's gravity load against its effort
limit (:func:`treedyn.engine.statics.statics` computes the numbers), the weakest joint, and
the payload point named as the user named it.

The payload point is a named frame (:func:`treedyn.engine.named.frame_set`) and an offset in
its axes; without a frame, the origin of :func:`~treedyn.engine.statics.common_body`'s
frame (a serial arm's last link). A frame fixed to the world loads no joint.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import Model
from ..named import frame_set
from ..statics import Payload, Statics, common_body, statics
from .plain import plain


@dataclass(frozen=True)
class PayloadSpec:
    """A payload as asked: ``mass`` kg at ``offset`` in the axes of frame ``frame`` (None:
    the default point)."""

    mass: float = 0.0
    frame: str | None = None
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class StaticsRow:
    joint: int
    name: str
    max_abs: float
    q: dict  # the varied joints g_i depends on -> their value at the maximum
    bound: float
    certified: bool
    limit: float
    ratio: float
    capacity: float
    capacity_q: dict | None


@dataclass(frozen=True)
class StaticsReport:
    rows: tuple[StaticsRow, ...]
    payload: dict | None  # {"mass", "frame", "point"} of the payload point, None: none
    notes: tuple[str, ...]
    excused: frozenset = frozenset()  # joints whose verdict is accepted (never "over")

    @property
    def weakest(self) -> StaticsRow | None:
        """The joint with the largest ratio (the first of equals), None without joints."""
        return max(self.rows, key=lambda row: row.ratio, default=None)

    def over(self, fail_above: float | None) -> list[StaticsRow]:
        """The joints whose ratio is above 1, or above ``fail_above`` when given."""
        threshold = 1.0 if fail_above is None else min(1.0, fail_above)
        return [row for row in self.rows
                if row.ratio > threshold and row.name not in self.excused]


def payload_point(model: Model, spec: PayloadSpec) -> tuple[Payload | None, str | None]:
    """(the Payload, the frame's name) of a spec; KeyError (the name) for an unknown frame."""
    name = spec.frame
    if name is None:
        body = common_body(model)
        if body < 0:
            return None, None
        name = model.body_names[body]
    frames = frame_set(model, [name])
    point = frames.translation[0] + frames.rotation[0] @ np.asarray(spec.offset, dtype=float)
    return Payload(float(spec.mass), int(frames.on_body[0]), point), name


def statics_report(model: Model, spec: PayloadSpec = PayloadSpec(), samples: int = 2048,
                   starts: int = 8, seed: int = 0) -> StaticsReport:
    """Every actuated dof's statics (:func:`treedyn.engine.statics.statics`) as rows."""
    payload, frame = payload_point(model, spec)
    if spec.frame is None and payload is None and spec.mass:
        raise ValueError("several bodies hang from the world: the payload needs a frame")
    result: Statics = statics(model, payload, samples=samples, starts=starts, seed=seed)
    rows = tuple(_row(model, d) for d in result.dofs)
    described = None if payload is None else {
        "mass": payload.mass, "frame": frame, "point": [float(x) for x in spec.offset]}
    return StaticsReport(rows, described, result.notes)


def _row(model: Model, d) -> StaticsRow:
    joint = int(model.dof_joint[d.dof])
    names = model.joint_names

    def at(q):
        return None if q is None else {names[j]: float(q[model.idx_q[j]]) for j in d.varied}
    return StaticsRow(joint, names[joint], d.max_abs, at(d.q), d.bound, d.certified,
                      d.limit, d.ratio, d.capacity, at(d.capacity_q))


def statics_document(report: StaticsReport, model) -> dict:
    """The JSON document (docs/interface.md): non-finite numbers as null."""
    weakest = report.weakest
    return plain({
        "model": model.name,
        "payload": report.payload,
        "joints": [{"joint": row.name, "max": row.max_abs, "q": row.q, "bound": row.bound,
                    "certified": row.certified, "limit": row.limit, "ratio": row.ratio,
                    "payload_capacity": row.capacity, "payload_q": row.capacity_q,
                    "source": str(model.limit_sources[row.joint])}
                   for row in report.rows],
        "weakest": None if weakest is None else {"joint": weakest.name,
                                                 "ratio": weakest.ratio},
        "notes": list(report.notes),
    }, nulls=True)
