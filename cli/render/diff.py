"""Rendering ``dyn diff``: the JSON document, the table, GitHub annotations.

Every change is worded once (:func:`describe`); the table, the annotations and the JSON
``message`` all use it. Dofs are named by :mod:`..naming` (each model its own).
"""
from __future__ import annotations

import math

from treedyn.engine.analysis.diff import DiffReport

from treedyn.pipeline.naming import shown, v_labels
from .reports import escape_data, escape_property, github_warning, plain
from .table import table

NOUN = {"joint-added": "joint", "joint-removed": "joint", "type": "joint", "parent": "joint",
        "coordinates": "joint", "placement": "joint", "rotation": "joint", "axis": "joint",
        "limits": "joint", "armature": "joint", "matched": "joint", "layout": "joint",
        "body-added": "body", "body-removed": "body", "mass": "body", "com": "body",
        "inertia": "body", "consistency": "link"}


def _g(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_g(v) for v in value) + ")"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6g}" if isinstance(value, (int, float)) else str(value)


def _percent(change) -> str:
    return "-" if change is None or not math.isfinite(change) else f"{100 * change:.3g} %"


def _signed_percent(old: float, new: float, change) -> str:
    sign = "+" if new >= old else "-"
    return sign + _percent(change) if old else "from zero"


FRAMES = {"parent": "in the parent frame", "body": "in the body frame",
          "world": "in the world at q0", "world-aligned": "world-aligned at q0"}


def describe(change) -> str:  # one branch per kind: a flat table of words
    """The change in words (vectors in the frame its ``detail`` names)."""
    c, old, new = change, change.old, change.new
    frame = FRAMES.get(c.detail, "")
    if c.kind == "joint-added":
        return f"added ({new})"
    if c.kind == "joint-removed":
        return f"removed (was {old})"
    if c.kind in ("type", "parent"):
        if c.kind == "type":
            return f"type {old} -> {new}"
        return f"parent body {shown(old)} -> {shown(new)}"
    if c.kind == "coordinates":
        return (f"q[{old['idx_q']}] -> q[{new['idx_q']}], v[{old['idx_v']}] -> "
                f"v[{new['idx_v']}] (matched by name)")
    if c.kind == "placement":
        return f"origin {_g(old)} -> {_g(new)} m {frame}, moved {c.change:.3g} m"
    if c.kind == "rotation":
        return f"frame turned by {math.degrees(c.change):.3g} deg {frame}"
    if c.kind == "axis":
        return f"axis {_g(old)} -> {_g(new)} {frame}, turned {math.degrees(c.change):.3g} deg"
    if c.kind == "limits":
        return f"{c.detail} limit {_g(old)} -> {_g(new)} (from ref)"
    if c.kind == "armature":
        return f"armature {_g(old)} -> {_g(new)} {c.unit}"
    if c.kind in ("body-added", "body-removed"):
        mass = new if c.kind == "body-added" else old
        return f"{c.kind.split('-')[1]} ({_g(mass)} kg)"
    if c.kind in ("mass", "total-mass"):
        return f"mass {_g(old)} -> {_g(new)} kg ({_signed_percent(old, new, c.change)})"
    if c.kind == "com":
        return f"com {_g(old)} -> {_g(new)} m {frame}, moved {c.change:.3g} m"
    if c.kind == "inertia":
        return f"rotational inertia about the com changed by {_percent(c.change)} (Frobenius)"
    if c.kind == "consistency":
        return f"check {c.detail}: {old} -> {new}"
    if c.kind == "gravity":
        return f"gravity {_g(old)} -> {_g(new)} m/s^2"
    if c.kind == "matched":
        return f"floating root {shown(old)} matched to {shown(new)}"
    if c.kind == "layout":
        return f"coordinates q {_g(old['q'])} -> {_g(new['q'])}; v: {old['v']} -> {new['v']}"
    return f"{_g(old)} -> {_g(new)}"


def _subject(change) -> str:
    """'joint elbow', 'body link2', 'model' (long names shortened, :func:`shown`)."""
    if not change.subject:
        return "model"
    return f"{NOUN.get(change.kind, 'model')} {shown(change.subject)}"


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


NOTHING_SHARED = ("the models share nothing: no joint or body name in common, so nothing "
                  "was compared (every joint and body is removed and added)")


def matrix_lines(report: DiffReport, old, new, top: int = 5) -> list[str]:
    matrix = report.matrix
    if matrix is None:
        return ["M(q): no dofs in common"]
    head = (f"M(q) at {matrix.samples} configurations (OLD's neutral one, then random, seed "
            f"{matrix.seed}) on {matrix.dofs} common dofs: largest change "
            f"{_percent(matrix.worst)}")
    if not matrix.pairs:
        return [head + " (nothing beyond the tolerance)"]
    labels = v_labels(old)
    rows = [[f"{shown(labels[p.old_dofs[0]])}, {shown(labels[p.old_dofs[1]])}",
             _percent(p.change), p.sample,
             p.old, p.new] for p in matrix.pairs[:top]]
    more = len(matrix.pairs) - top
    return [head, table(rows, ["dofs", "change", "sample", "old M", "new M"])] + (
        [f"... and {more} more entries beyond the tolerance"] if more > 0 else [])


def diff_table(report: DiffReport, old, new, fail_above: float | None) -> str:
    title = (f"diff {shown(old.name)} ({old.format}, {old.source}) -> {shown(new.name)} "
             f"({new.format}, {new.source}): {len(report.changes)} change(s)")
    lines = [title, ""]
    if report.shares_nothing:
        lines += [NOTHING_SHARED, ""]
    if report.changes:
        rows = [[_subject(c), c.kind, describe(c)] for c in report.changes]
        lines += [table(rows, ["what", "change", "details"], maxcolwidths=[None, None, 80]), ""]
    else:
        lines += ["no change beyond the tolerance", ""]
    if report.notes:
        lines += ["notes (conventions, not changes):",
                  *[f"  {_subject(c)}: {describe(c)}" for c in report.notes], ""]
    lines += matrix_lines(report, old, new)
    tolerance = (f"tolerance {report.options.tolerance:g} relative (lengths: "
                 f"{report.options.tolerance * report.size:.3g} m, for a model of "
                 f"{report.size:.3g} m)")
    lines += ["", tolerance, _verdict(report, fail_above)]
    return "\n".join(lines)


def _verdict(report: DiffReport, fail_above: float | None) -> str:
    sizes = (f"largest mass change {_percent(report.max_mass_change)}, of M "
             + (_percent(report.max_matrix_change) if report.matrix is not None
                else "not compared (no dofs in common)"))
    if report.shares_nothing:
        sizes = "no change measured: the models share nothing"
    if fail_above is None:
        return sizes
    status = "FAILED" if report.exceeds(fail_above) else "ok"
    return f"{status}: {sizes} (--fail-above {fail_above:g})"


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
    return (f"M(q): largest change {_percent(worst.change)} in ({dofs}): {worst.old:.6g} -> "
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
        properties = f"file={escape_property(path)}" + (f",line={line}" if line else "")
        title = escape_property(f"dyn diff: {c.kind} ({shown(c.subject) or 'model'})")
        text = escape_data(f"{_subject(c)}: {describe(c)}")
        lines.append(f"::{'error' if failing else 'warning'} {properties},title={title}::{text}")
    if report.shares_nothing:
        kind = "error" if fail_above is not None else "warning"
        lines.append(f"::{kind} file={escape_property(new.source)},"
                     f"title={escape_property('dyn diff: nothing shared')}::"
                     f"{escape_data(NOTHING_SHARED)}")
    if report.matrix is not None and report.matrix.pairs:
        text = matrix_summary(report, old)
        if fail_above is not None and report.max_matrix_change > fail_above:
            lines.append(f"::error file={escape_property(new.source)},"
                         f"title={escape_property('dyn diff: M(q)')}::{escape_data(text)}")
        else:
            lines.append(github_warning(new.source, "dyn diff: M(q)", text))
    return "\n".join(lines)
