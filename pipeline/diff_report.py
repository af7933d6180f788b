"""``dyn diff``'s report as data: every change worded once (:func:`describe`), and the
JSON document of a :class:`~treedyn.engine.analysis.diff.DiffReport` with each model's
dofs named by :mod:`.naming` (non-finite numbers as ``None``)."""
from __future__ import annotations

import math

from treedyn.engine.analysis.diff import DiffReport
from treedyn.engine.analysis.plain import plain as plain_data

from .naming import shown, v_labels


def plain(value):
    """``value`` with numpy types as Python ones and non-finite floats as None."""
    return plain_data(value, nulls=True)


def _g(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_g(v) for v in value) + ")"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6g}" if isinstance(value, (int, float)) else str(value)


def percent(change) -> str:
    return "-" if change is None or not math.isfinite(change) else f"{100 * change:.3g} %"


def _signedpercent(old: float, new: float, change) -> str:
    sign = "+" if new >= old else "-"
    return sign + percent(change) if old else "from zero"


FRAMES = {"parent": "in the parent frame", "body": "in the body frame",
          "world": "in the world at q0", "world-aligned": "world-aligned at q0"}


# change kind -> its words, from (change, old, new, frame): a flat table, one row per kind
WORDS = {
    "joint-added": lambda c, old, new, frame: f"added ({new})",
    "joint-removed": lambda c, old, new, frame: f"removed (was {old})",
    "type": lambda c, old, new, frame: f"type {old} -> {new}",
    "parent": lambda c, old, new, frame: f"parent body {shown(old)} -> {shown(new)}",
    "coordinates": lambda c, old, new, frame: (
        f"q[{old['idx_q']}] -> q[{new['idx_q']}], v[{old['idx_v']}] -> v[{new['idx_v']}] "
        "(matched by name)"),
    "placement": lambda c, old, new, frame: (
        f"origin {_g(old)} -> {_g(new)} m {frame}, moved {c.change:.3g} m"),
    "rotation": lambda c, old, new, frame: (
        f"frame turned by {math.degrees(c.change):.3g} deg {frame}"),
    "axis": lambda c, old, new, frame: (
        f"axis {_g(old)} -> {_g(new)} {frame}, turned {math.degrees(c.change):.3g} deg"),
    "limits": lambda c, old, new, frame: f"{c.detail} limit {_g(old)} -> {_g(new)} (from ref)",
    "armature": lambda c, old, new, frame: f"armature {_g(old)} -> {_g(new)} {c.unit}",
    "body-added": lambda c, old, new, frame: f"added ({_g(new)} kg)",
    "body-removed": lambda c, old, new, frame: f"removed ({_g(old)} kg)",
    "mass": lambda c, old, new, frame: (
        f"mass {_g(old)} -> {_g(new)} kg ({_signedpercent(old, new, c.change)})"),
    "com": lambda c, old, new, frame: (
        f"com {_g(old)} -> {_g(new)} m {frame}, moved {c.change:.3g} m"),
    "inertia": lambda c, old, new, frame: (
        f"rotational inertia about the com changed by {percent(c.change)} (Frobenius)"),
    "consistency": lambda c, old, new, frame: f"check {c.detail}: {old} -> {new}",
    "gravity": lambda c, old, new, frame: f"gravity {_g(old)} -> {_g(new)} m/s^2",
    "matched": lambda c, old, new, frame: f"floating root {shown(old)} matched to {shown(new)}",
    "layout": lambda c, old, new, frame: (
        f"coordinates q {_g(old['q'])} -> {_g(new['q'])}; v: {old['v']} -> {new['v']}"),
}
WORDS["total-mass"] = WORDS["mass"]


def describe(change) -> str:
    """The change in words (vectors in the frame its ``detail`` names)."""
    words = WORDS.get(change.kind, lambda c, old, new, frame: f"{_g(old)} -> {_g(new)}")
    return words(change, change.old, change.new, FRAMES.get(change.detail, ""))


def matrix_document(report: DiffReport, old, new) -> dict | None:
    matrix = report.matrix
    if matrix is None:
        return None
    labels_old, labels_new = v_labels(old), v_labels(new)
    pairs = [{"dofs": [labels_old[i] for i in p.old_dofs],
              "new_dofs": [labels_new[i] for i in p.new_dofs], "change": plain(p.change),
              "sample": p.sample, "old": plain(p.old), "new": plain(p.new)}
             for p in matrix.pairs]
    worst = matrix.pairs[0] if matrix.pairs else None
    return {"samples": matrix.samples, "seed": matrix.seed, "dofs": matrix.dofs,
            "max_change": plain(matrix.worst), "pairs": pairs,
            "worst_q": plain(matrix.q_old[worst.sample]) if worst else None}


def diff_document(report: DiffReport, old, new, fail_above: float | None) -> dict:
    return {
        "old": {"model": old.name, "format": old.format, "source": old.source},
        "new": {"model": new.name, "format": new.format, "source": new.source},
        "changed": bool(report.changes or (report.matrix and report.matrix.pairs)),
        "changes": [{"kind": c.kind, "subject": c.subject, "detail": c.detail,
                     "old": plain(c.old), "new": plain(c.new), "change": plain(c.change),
                     "unit": c.unit, "message": describe(c)} for c in report.changes],
        "notes": [{"kind": c.kind, "subject": c.subject, "old": plain(c.old),
                   "new": plain(c.new), "message": describe(c)} for c in report.notes],
        "mass_matrix": matrix_document(report, old, new),
        "max_mass_change": plain(report.max_mass_change),
        "max_mass_matrix_change": plain(report.max_matrix_change),
        "tolerance": report.options.tolerance, "size": plain(report.size),
        "fail_above": fail_above,
        "failed": fail_above is not None and report.exceeds(fail_above),
        "shared": {"joints": report.shared_joints, "bodies": report.shared_bodies,
                   "nothing": report.shares_nothing},
    }
