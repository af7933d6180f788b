"""``dyn diff``'s report as data: every change worded once (:func:`describe`, its subject
:func:`subject`), the JSON document of a :class:`~treedyn.engine.analysis.diff.DiffReport`
with each model's dofs named by :mod:`.naming` (non-finite numbers as ``None``), and its
GitHub Actions annotations at the elements changed (:func:`diff_github`); the table for
people is the command line's."""
from __future__ import annotations

import math

from treedyn.engine.analysis.diff import DiffReport
from treedyn.engine.analysis.plain import plain as plain_data

from .naming import shown, v_labels
from .reports import github_annotation


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


NOUN = {"joint-added": "joint", "joint-removed": "joint", "type": "joint", "parent": "joint",
        "coordinates": "joint", "placement": "joint", "rotation": "joint", "axis": "joint",
        "limits": "joint", "armature": "joint", "matched": "joint", "layout": "joint",
        "body-added": "body", "body-removed": "body", "mass": "body", "com": "body",
        "inertia": "body", "consistency": "link"}


def subject(change) -> str:
    """'joint elbow', 'body link2', 'model' (long names shortened, :func:`shown`)."""
    if not change.subject:
        return "model"
    return f"{NOUN.get(change.kind, 'model')} {shown(change.subject)}"


NOTHING_SHARED = ("the models share nothing: no joint or body name in common, so nothing "
                  "was compared (every joint and body is removed and added)")


def _where(change, old, new) -> tuple[str, int]:
    """(file, line) of the element a change is about, in the new model (the old one for
    what was removed): the joint, the link's <inertial> (else the link or body)."""
    model = old if change.kind.endswith("removed") else new
    if NOUN.get(change.kind) == "joint" and change.subject in model.joint_ids:
        source = model.joint_sources[model.joint_ids[change.subject]]
        return source.file or model.source, source.line
    for link in model.description.links:
        if link.name == change.subject:
            source = link.inertial_source if link.inertial_source.line else link.source
            return source.file or model.source, source.line
    return model.source, 0


def matrix_summary(report: DiffReport, old) -> str:
    """One line: the largest change of M and where it is."""
    matrix, labels = report.matrix, v_labels(old)
    worst = matrix.pairs[0]
    dofs = ", ".join(shown(labels[i]) for i in worst.old_dofs)
    return (f"M(q): largest change {percent(worst.change)} in ({dofs}): {worst.old:.6g} -> "
            f"{worst.new:.6g} at sample "
            f"{worst.sample} of {matrix.samples}; {len(matrix.pairs)} of the "
            f"{matrix.dofs * (matrix.dofs + 1) // 2} entries on {matrix.dofs} common dofs "
            "changed beyond the tolerance")


def diff_github(report: DiffReport, old, new, fail_above: float | None) -> str:
    """A ``::warning`` per change; ``::error`` for a mass or M beyond --fail-above."""
    lines = []
    for c in report.changes:
        path, line = _where(c, old, new)
        failing = (fail_above is not None and c.kind in ("mass", "total-mass", "body-added",
                                                         "body-removed")
                   and c.change is not None and c.change > fail_above)
        lines.append(github_annotation("error" if failing else "warning", path,
                                       f"dyn diff: {c.kind} ({shown(c.subject) or 'model'})",
                                       f"{subject(c)}: {describe(c)}", line))
    if report.shares_nothing:
        lines.append(github_annotation("error" if fail_above is not None else "warning",
                                       new.source, "dyn diff: nothing shared", NOTHING_SHARED))
    if report.matrix is not None and report.matrix.pairs:
        failing = fail_above is not None and report.max_matrix_change > fail_above
        lines.append(github_annotation("error" if failing else "warning", new.source,
                                       "dyn diff: M(q)", matrix_summary(report, old)))
    return "\n".join(lines)
