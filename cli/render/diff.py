"""Rendering ``dyn diff``: the table and GitHub annotations. Every change is worded once
(:func:`treedyn.pipeline.diff_report.describe`), and the JSON document is built there too;
the table, the annotations and the JSON ``message`` all use the same words.
"""
from __future__ import annotations

from treedyn.engine.analysis.diff import DiffReport

from treedyn.pipeline.diff_report import describe, percent
from treedyn.pipeline.naming import shown, v_labels
from treedyn.pipeline.reports import github_annotation
from .table import table

NOUN = {"joint-added": "joint", "joint-removed": "joint", "type": "joint", "parent": "joint",
        "coordinates": "joint", "placement": "joint", "rotation": "joint", "axis": "joint",
        "limits": "joint", "armature": "joint", "matched": "joint", "layout": "joint",
        "body-added": "body", "body-removed": "body", "mass": "body", "com": "body",
        "inertia": "body", "consistency": "link"}


def _subject(change) -> str:
    """'joint elbow', 'body link2', 'model' (long names shortened, :func:`shown`)."""
    if not change.subject:
        return "model"
    return f"{NOUN.get(change.kind, 'model')} {shown(change.subject)}"


NOTHING_SHARED = ("the models share nothing: no joint or body name in common, so nothing "
                  "was compared (every joint and body is removed and added)")


def matrix_lines(report: DiffReport, old, new, top: int = 5) -> list[str]:
    matrix = report.matrix
    if matrix is None:
        return ["M(q): no dofs in common"]
    head = (f"M(q) at {matrix.samples} configurations (OLD's neutral one, then random, seed "
            f"{matrix.seed}) on {matrix.dofs} common dofs: largest change "
            f"{percent(matrix.worst)}")
    if not matrix.pairs:
        return [head + " (nothing beyond the tolerance)"]
    labels = v_labels(old)
    rows = [[f"{shown(labels[p.old_dofs[0]])}, {shown(labels[p.old_dofs[1]])}",
             percent(p.change), p.sample,
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
    sizes = (f"largest mass change {percent(report.max_mass_change)}, of M "
             + (percent(report.max_matrix_change) if report.matrix is not None
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
                                       f"{_subject(c)}: {describe(c)}", line))
    if report.shares_nothing:
        lines.append(github_annotation("error" if fail_above is not None else "warning",
                                       new.source, "dyn diff: nothing shared", NOTHING_SHARED))
    if report.matrix is not None and report.matrix.pairs:
        failing = fail_above is not None and report.max_matrix_change > fail_above
        lines.append(github_annotation("error" if failing else "warning", new.source,
                                       "dyn diff: M(q)", matrix_summary(report, old)))
    return "\n".join(lines)
