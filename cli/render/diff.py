"""Rendering ``dyn diff``: the table for people. Every change is worded once
(:func:`treedyn.pipeline.diff_report.describe`), where the JSON document and the GitHub
annotations are made too; the table, the annotations and the JSON ``message`` all use the
same words.
"""
from __future__ import annotations

from treedyn.engine.analysis.diff import DiffReport

from treedyn.pipeline.diff_report import NOTHING_SHARED, describe, percent, subject
from treedyn.pipeline.naming import shown, v_labels
from .table import table


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
        rows = [[subject(c), c.kind, describe(c)] for c in report.changes]
        lines += [table(rows, ["what", "change", "details"], maxcolwidths=[None, None, 80]), ""]
    else:
        lines += ["no change beyond the tolerance", ""]
    if report.notes:
        lines += ["notes (conventions, not changes):",
                  *[f"  {subject(c)}: {describe(c)}" for c in report.notes], ""]
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
