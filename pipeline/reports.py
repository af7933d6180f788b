"""The reports' machine formats: CSV rows of ``info``, ``check-inertia``, ``condition``,
``verify`` and ``inertia-from-geometry``, the JSON documents of ``info``, ``identify``,
``verify`` and ``inertia-from-geometry``, and GitHub
Actions annotations (``check-inertia``'s, ``statics``'; ``diff``'s are
:func:`treedyn.pipeline.diff_report.diff_github`) (the other JSON documents are the engine's:
:mod:`treedyn.engine.analysis.check_report`, :mod:`treedyn.engine.analysis.condition_report`).
Tables for people are the command line's.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from treedyn.engine.analysis.check_report import finding_document, fix_element, plain
from treedyn.engine.analysis.plain import plain as plain_data
from treedyn.engine.analysis.summary import model_summary

from .layout import layout_document
from .naming import csv_writer, printable


FINDING_COLUMNS = ("body", "check", "severity", "status", "value", "margin", "file", "line",
                   "scope", "message")


def inertia_csv(report, stream, fmt: str, fixes: bool = False, show_all: bool = False) -> None:
    """One row per finding (error or warning; with ``show_all`` every check, its status
    column telling them apart); list values (principal moments) joined with spaces; with
    ``fixes`` (--fix) a last column ``fix`` holds the suggested element."""
    writer = csv_writer(stream)
    columns = FINDING_COLUMNS + (("fix",) if fixes else ())
    writer.writerow(columns)
    for finding in report.findings if show_all else report.failed():
        row = finding_document(finding, fmt)
        value = row["value"]
        row["value"] = " ".join(map(repr, value)) if isinstance(value, list) else value
        row["fix"] = row["fix"]["element"] if "fix" in row else None
        writer.writerow(["" if row[c] is None else row[c] for c in columns])


def github_annotation(kind: str, path: str, title: str, text: str, line: int = 0) -> str:
    """One GitHub Actions annotation (``::error`` or ``::warning``) for the file ``path``,
    at ``line`` when known."""
    where = f"file={escape_property(path)}" + (f",line={line}" if line else "")
    return f"::{kind} {where},title={escape_property(title)}::{escape_data(text)}"


def github_warning(path: str, title: str, text: str) -> str:
    """One GitHub Actions ``::warning`` annotation for the file ``path``."""
    return github_annotation("warning", path, title, text)


def github_annotations(report, fmt: str) -> str:
    """``::error file=...,line=...,title=...::message`` per error and warning (with the
    suggested element on a second line of the message under --fix)."""
    lines = []
    for f in report.failed():
        message = f"{f.body}: {f.message}"
        if f.fix is not None:
            message += f"\nsuggested ({f.fix.reason}): {fix_element(f.fix, fmt)}"
        lines.append(github_annotation("error" if f.severity == "error" else "warning",
                                       f.source.file, f"dyn check-inertia: {f.check} ({f.body})",
                                       message, f.source.line))
    return "\n".join(lines)


def statics_github(found) -> str:
    """An ``::error`` at the ``<limit>`` line of each joint over the threshold (``found``:
    :func:`treedyn.pipeline.findings.statics_findings`)."""
    return "\n".join(github_annotation("error", f.file, f"dyn statics: {f.subject}", f.message,
                                       f.line) for f in found)


def escape_data(text: str) -> str:  # (and no other control character reaches the log raw)
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def condition_csv(report, q_names: Sequence[str], stream) -> None:
    """One row per sampled configuration: cond(M), its extreme eigenvalues and q (the header
    alone for ``report`` None, a model without dofs)."""
    writer = csv_writer(stream)
    writer.writerow(["sample", "cond", "lambda_min", "lambda_max", *[f"q:{n}" for n in q_names]])
    for n, q in enumerate(() if report is None else report.q):
        writer.writerow([n, *[float(x) for x in (report.cond[n], report.eigenvalues[n, 0],
                                                 report.eigenvalues[n, -1])], *q.tolist()])


def verify_note(result) -> str:
    """A verify result's note in the command line's terms (the engine gives a reason)."""
    if result.reason == "fixed-base":
        return "fixed base (a URDF floats with --free-flyer, an MJCF body with <freejoint>)"
    if result.reason == "singular":
        return f"{result.note} (see dyn check-inertia)"
    return result.note


def verify_document(report, model, options) -> dict:
    return {"ok": report.ok, "model": model.name, "states": report.states,
            "seed": options.seed,
            "identities": [{"name": r.name, "identity": r.identity,
                            "residual": plain(r.residual), "tolerance": plain(r.tolerance),
                            "status": r.status, "note": verify_note(r)} for r in report.results]}


def verify_csv(report, stream) -> None:
    writer = csv_writer(stream)
    writer.writerow(["name", "residual", "tolerance", "status", "identity", "note"])
    for r in report.results:
        writer.writerow([r.name, r.residual, r.tolerance, r.status, r.identity, verify_note(r)])


def info_document(model, gravity: np.ndarray | None) -> dict:
    """What ``dyn info --format json`` prints (the keys of interface.md, and a few more):
    the model's summary and the layout of its q and v."""
    return {**model_summary(model, gravity), "layout": layout_document(model)}


JOINT_COLUMNS = ("name", "type", "parent", "idx_q", "nq", "idx_v", "nv", "nv_subtree", "body")


def info_csv(document: dict, stream) -> None:
    """The joints of ``info`` as CSV, one row per joint in tree order."""
    writer = csv_writer(stream)
    writer.writerow(JOINT_COLUMNS)
    writer.writerows([joint[c] for c in JOINT_COLUMNS] for joint in document["joints"])


def identify_document(document: dict) -> dict:
    """The report of :func:`treedyn.engine.analysis.identify_report.report`, plain JSON
    (non-finite numbers as null)."""
    return plain_data(document, nulls=True)


GEOMETRY_COLUMNS = ("link", "status", "mass", "density", "com x", "com y", "com z", "ixx",
                    "ixy", "ixz", "iyy", "iyz", "izz", "note")


def geometry_link(result) -> dict:
    """A link's object in ``inertia-from-geometry``'s document, from its
    :class:`treedyn.parsers.geometry_inertia.LinkResult`: its new inertia (link frame: mass,
    density, com, the tensor's ixx, ixy, ixz, iyy, iyz, izz about the com), or why it is
    left alone."""
    entry = {"link": result.link, "status": result.status}
    if result.inertia is None:
        return {**entry, "reason": result.reason}
    inertia, tensor = result.inertia, result.inertia.inertia
    return {**entry, "mass": inertia.mass, "measure": result.measure,
            "density": inertia.mass / result.measure, "com": inertia.com.tolist(),
            "inertia": [tensor[0, 0], tensor[0, 1], tensor[0, 2], tensor[1, 1],
                        tensor[1, 2], tensor[2, 2]], "hull": list(result.hulls)}


def geometry_document(model: str, role: str, shell: bool, results) -> dict:
    """What ``dyn inertia-from-geometry --format json`` prints: the model file, the shapes'
    ``role`` ("collision" or "visual"), ``shell``, and a :func:`geometry_link` per link."""
    return {"model": model, "from": role, "shell": shell,
            "links": [geometry_link(result) for result in results]}


def geometry_rows(document: dict) -> list[list]:
    """A row per link of :func:`geometry_document`, as :data:`GEOMETRY_COLUMNS` name its
    cells (empty where a link is left alone): the CSV's rows and the table's."""
    return [[entry["link"], entry["status"], entry.get("mass", ""), entry.get("density", ""),
             *entry.get("com", [""] * 3), *entry.get("inertia", [""] * 6),
             entry.get("reason") or ("convex hull: " + ", ".join(entry["hull"])
                                     if entry["hull"] else "")]
            for entry in document["links"]]


def geometry_csv(document: dict, stream) -> None:
    """``inertia-from-geometry``'s rows as CSV (spaces in the headers as ``_``)."""
    writer = csv_writer(stream)
    writer.writerow([column.replace(" ", "_") for column in GEOMETRY_COLUMNS])
    writer.writerows(geometry_rows(document))
