"""A check-inertia report as data: JSON-ready documents of its findings, their summary per
check, and each suggested inertia written as the model file's own element.

Numbers are plain Python ones (:func:`.plain.plain`), values that are not finite ``None``.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from .plain import plain as plain_data


def plain(value):
    """``value`` with numpy types as Python ones and non-finite floats as None."""
    return plain_data(value, nulls=True)


def finding_document(finding, fmt: str) -> dict:
    document = {"body": finding.body, "check": finding.check, "severity": finding.severity,
                "message": finding.message, "value": plain(finding.value),
                "status": finding.status, "margin": plain(finding.margin),
                "file": finding.source.file, "line": finding.source.line,
                "scope": finding.scope, "details": plain(finding.details)}
    if finding.links:
        document["links"] = list(finding.links)
    if finding.fix is not None:
        document["fix"] = fix_document(finding.fix, fmt)
    return document


def fix_document(fix, fmt: str) -> dict:
    return {"mass": plain(fix.mass), "com": plain(fix.com), "inertia": plain(fix.inertia),
            "inertia_as_written": plain(fix.tensor_as_written()), "reason": fix.reason,
            "element": fix_element(fix, fmt)}


def check_summary(report) -> dict:
    """{check: {"pass": n, "fail": n, "skip": n, "errors": n, "warnings": n}}."""
    kinds = report.findings.kinds()  # (links counted in bulk are never made here)
    summary: dict[str, Counter] = {}  # checks in the order of their first finding
    for (check, status, severity), n in kinds.items():
        counts = summary.setdefault(check, Counter())
        counts[status] += n
        if status == "fail":
            counts["errors" if severity == "error" else "warnings"] += n
    keys = ("pass", "fail", "skip", "errors", "warnings")
    return {check: {key: counts[key] for key in keys} for check, counts in summary.items()}


def inertia_document(report, model, show_all: bool = False) -> dict:
    """``findings``: the errors and warnings only; with ``show_all`` the passing checks
    under ``passes`` and the skipped ones under ``skipped``."""
    document = {"ok": report.ok, "model": model.name, "source": model.source,
                "findings": [finding_document(f, model.format) for f in report.failed()],
                "summary": check_summary(report)}
    if show_all:
        for key, status in (("passes", "pass"), ("skipped", "skip")):
            document[key] = [finding_document(f, model.format) for f in report.findings
                             if f.status == status]
    return document


def fix_element(fix, fmt: str) -> str:
    """The fix in the file's own terms: URDF <mass>/<inertia>, a whole MJCF <inertial>,
    SDFormat <mass> and <inertia> (the tensor in the frame of the <inertial>'s <pose>).

    The URDF tensor is written in the frame of the element's own <origin rpy>, so only the
    <inertia> line needs replacing. The MJCF element replaces the old one whole (MuJoCo
    forbids ``quat`` beside ``fullinertia``): ``pos`` and ``fullinertia`` in the <body>
    frame, where MuJoCo reads them (with alignfree too).
    """
    if fmt == "mjcf":
        com, t = fix.in_file_frame()
        t = _denoised(t)
        return (f'<inertial mass="{fix.mass:.9g}" pos="{_vec(com)}" fullinertia="'
                f'{_vec([t[0, 0], t[1, 1], t[2, 2], t[0, 1], t[0, 2], t[1, 2]])}"/>')
    t = _denoised(fix.tensor_as_written())
    if fmt == "sdf":
        moments = "".join(f"<{key}>{t[i, j]:.9g}</{key}>" for key, (i, j) in (
            ("ixx", (0, 0)), ("ixy", (0, 1)), ("ixz", (0, 2)), ("iyy", (1, 1)),
            ("iyz", (1, 2)), ("izz", (2, 2))))
        return f"<mass>{fix.mass:.9g}</mass> <inertia>{moments}</inertia>"
    return (f'<mass value="{fix.mass:.9g}"/> <inertia ixx="{t[0, 0]:.9g}" ixy="{t[0, 1]:.9g}" '
            f'ixz="{t[0, 2]:.9g}" iyy="{t[1, 1]:.9g}" iyz="{t[1, 2]:.9g}" izz="{t[2, 2]:.9g}"/>')


def _denoised(tensor: np.ndarray) -> np.ndarray:
    """Entries below 1e-12 of the largest set to zero (rounding noise of the rotations)."""
    return np.where(np.abs(tensor) > 1e-12 * np.abs(tensor).max(initial=0.0), tensor, 0.0)


def _vec(values) -> str:
    return " ".join(f"{float(v):.9g}" for v in values)
