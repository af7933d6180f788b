"""Rendering ``dyn statics``: the table for people (the JSON document is
:func:`treedyn.engine.analysis.statics.statics_document`, the GitHub annotations
:func:`treedyn.pipeline.reports.statics_github`)."""
from __future__ import annotations

from treedyn.engine.analysis.statics import StaticsReport
from treedyn.pipeline.findings import configuration as _where
from treedyn.pipeline.findings import number as _number
from .table import text_table, wrapped


def statics_table(report: StaticsReport, model, fail_above: float | None) -> str:
    """One row per actuated joint, then the weakest joint and the verdict."""
    if not report.rows:
        return f"{model.name}: no actuated joint"
    rows = [[row.name, _number(row.max_abs), _number(row.limit), _number(row.ratio),
             _number(row.bound) + ("" if row.certified else " (max found: lower bound)"),
             _number(row.capacity), _where(row.q)] for row in report.rows]
    payload = report.payload
    heading = "max |g_i(q)| over the joint ranges (N m or N)"
    if payload is not None:
        heading += (f"; payload {payload['mass']:g} kg" if payload["mass"] else
                    "; payload capacity") + (
            f" at {payload['frame']} + ({', '.join(f'{x:g}' for x in payload['point'])})")
    lines = [wrapped(heading), text_table(rows, ["joint", "max |g|", "limit", "ratio", "bound",
                                                 "capacity kg", "at q"])]
    weakest = report.weakest
    lines.append(f"weakest: {weakest.name} (ratio {_number(weakest.ratio)})")
    lines += [f"note: {note}" for note in report.notes]
    over = report.over(fail_above)
    if over:
        lines.append("FAIL: " + ", ".join(row.name for row in over))
    return "\n".join(lines)

