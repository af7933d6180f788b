"""Rendering ``dyn statics``: the table and the GitHub annotations at each joint's
``<limit>`` line (the JSON document is :func:`treedyn.engine.analysis.statics.statics_document`)."""
from __future__ import annotations

import math

from treedyn.engine.analysis.statics import StaticsReport

from treedyn.pipeline.reports import github_annotation
from .table import text_table, wrapped


def _number(value: float) -> str:
    return ("inf" if value > 0 else "-inf") if math.isinf(value) else f"{value:.6g}"


def _where(q: dict | None) -> str:
    # below 1e-9 is the optimiser's rounding of a zero
    return "" if not q else ", ".join(f"{name}={value if abs(value) > 1e-9 else 0.0:.4g}"
                                      for name, value in q.items())


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


def statics_github(report: StaticsReport, model, fail_above: float | None) -> str:
    """An ``::error`` at the ``<limit>`` line of each joint over the threshold."""
    return "\n".join(
        github_annotation("error", model.limit_sources[row.joint].file,
                          f"dyn statics: {row.name}",
                          f"{row.name}: holding the robot still needs {_number(row.max_abs)} "
                          f"at {_where(row.q) or 'every configuration'}, over its effort "
                          f"limit {_number(row.limit)} (ratio {_number(row.ratio)})",
                          model.limit_sources[row.joint].line)
        for row in report.over(fail_above))
