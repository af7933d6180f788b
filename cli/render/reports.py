"""Rendering the diagnostics: tables for people. Their CSV and annotations
(:mod:`treedyn.pipeline.reports`) and JSON documents
(:mod:`treedyn.engine.analysis.check_report`, :mod:`treedyn.engine.analysis.condition_report`)
are the library's: the commands import them from there.
``tabulate`` is imported only when a table is printed.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from treedyn.engine.analysis.check_report import check_summary, fix_element
from treedyn.pipeline.naming import listing
from treedyn.pipeline.reports import verify_note

from .table import fitted, table, text_table, wrapped

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


# ----------------------------------------------------------------------------- check-inertia

def inertia_table(report, model, show_all: bool) -> str:
    shown = list(report.findings) if show_all else report.failed()
    shown.sort(key=lambda f: SEVERITY_ORDER[f.severity])
    rows = [[f.severity, f.body + (" (body)" if f.scope == "body" else ""), f.check,
             _where(f.source, model.source), f.message] for f in shown]
    errors = sum(f.severity == "error" for f in report.findings.made())
    warnings = sum(f.severity == "warning" for f in report.findings.made())
    summary = check_summary(report)
    counts = table([[check, c["pass"], c["warnings"], c["errors"], c["skip"]]
                    for check, c in summary.items()],
                   ["check", "pass", "warning", "error", "skipped"])
    lines = [f"check-inertia {model.name} ({model.format}, {model.source}): "
             f"{_count(errors + warnings, 'finding')} ({_count(errors, 'error')}, "
             f"{_count(warnings, 'warning')}) from {_count(len(report.findings), 'check')}",
             ""]
    if rows:
        lines += [text_table(rows, ["severity", "body", "check", "line", "message"]), ""]
    elif not show_all:
        lines += ["no errors or warnings", ""]
    lines += [counts, "", _fixes(report, model.format), _verdict(errors, warnings, show_all)]
    return "\n".join(line for line in lines if line is not None).replace("\n\n\n", "\n\n")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _verdict(errors: int, warnings: int, show_all: bool) -> str:
    hint = "" if show_all else " (--all lists the passing checks too)"
    status = "FAILED" if errors else "ok"
    return f"{status}: {errors} error(s), {warnings} warning(s){hint}"


def _fixes(report, fmt: str) -> str | None:
    """The suggested inertias, one per link and reason (printed, never applied)."""
    seen, blocks = set(), []
    for finding in report.findings.made():  # (the others, passes and skips, have no fix)
        fix = finding.fix
        if fix is None or (finding.body, fix.reason) in seen:
            continue
        seen.add((finding.body, fix.reason))
        blocks.append(f"{finding.body} ({_where(finding.source)}, {finding.check}): "
                      f"{fix.reason}\n  {fix_element(fix, fmt)}")
    if not blocks:
        return None
    return "\n".join(["suggested inertias (--fix; not applied, paste to use):", *blocks, ""])


def _where(source, model_file: str = "") -> str:
    """file:line, or the line alone in the model's own file (named in the header)."""
    if not source.file:
        return "-"
    if source.file == model_file:
        return str(source.line) if source.line else "-"
    return f"{source.file}:{source.line}" if source.line else source.file


def missing_meshes(geometry: dict) -> str:
    """The warning for the links whose meshes were not found ("" when none is missing)."""
    meshes = list(dict.fromkeys(mesh for link in geometry.values() for mesh in link.missing))
    if not meshes:
        return ""
    skipped = sum(bool(link.missing) for link in geometry.values())
    return (f"{len(meshes)} mesh file(s) not found ({listing(meshes, 2, 200)}): the geometry "
            f"checks of {skipped} link(s) were skipped (package:// is looked up above the "
            "model and in ROS_PACKAGE_PATH and AMENT_PREFIX_PATH; --mesh-path DIR adds "
            "folders to look in)")


def unreadable_meshes(geometry: dict) -> list[str]:
    """One warning per link and mesh file that was found but cannot be read."""
    lines = []
    for name, link in geometry.items():
        for mesh, why in link.unreadable:
            then = (f"its {link.role} geometry is used instead" if link.role else
                    "its geometry checks were skipped")
            lines.append(f"link {name}: mesh {mesh} cannot be read ({why}): {then}")
    return lines


# ----------------------------------------------------------------------------- condition

def weakest_direction(vector: np.ndarray, names: Sequence[str], count: int = 4) -> str:
    """The largest components of a unit vector, named: '+0.98 wrist_3, -0.2 wrist_2'."""
    order = np.argsort(-np.abs(vector))[:count]
    return ", ".join(f"{vector[i]:+.3g} {names[i]}" for i in order if abs(vector[i]) >= 1e-3)


def _cond_line(report, options) -> str:
    """min, median and max of cond(M); the singular configurations counted apart."""
    regular = report.cond[~report.singular] if report.singular is not None else report.cond
    limit = f"(warning above {options.max_cond:.3g})"
    if not report.singular_count:
        return (f"min {np.min(regular):.4g}, median {np.median(regular):.4g}, "
                f"max {np.max(regular):.4g} {limit}")
    head = (f"M is singular at {report.singular_count} of {len(report.cond)} configurations "
            "(a pivot of its L^T D L factor at or below nv eps of its largest diagonal)")
    if not regular.size:
        return head
    return (f"{head}; the others: min {np.min(regular):.4g}, median {np.median(regular):.4g}, "
            f"max {np.max(regular):.4g} {limit}")


def condition_table(report, model, names: Sequence[str], q_names: Sequence[str], options,
                    top: int = 10) -> str:
    worst, eigen = report.worst, report.eigenvalues
    blocks = sorted(report.blocks, key=lambda b: b.ratio)[:top]
    several = bool((model.nv_joint > 1).any())  # a 1-dof joint's D is a number: cond(D) 1
    block_rows = [[b.joint, b.d_min, b.ratio, *([b.d_cond] if several else [])]
                  for b in blocks]
    ratio_rows = [[r.parent, r.child, r.parent_mass, r.child_mass, r.ratio]
                  for r in report.mass_ratios[:top]]
    configuration = ", ".join(f"{name}={value:.4g}" for name, value in zip(q_names,
                                                                            report.q[worst]))
    lines = [
        wrapped(f"cond(M) of {model.name} over {len(report.q)} configurations (neutral "
                f"first, then random within the limits, seed {options.seed}):"),
        wrapped(_cond_line(report, options), indent="  "),
        wrapped(f"worst configuration (sample {worst}): "  # wrapped to the terminal
                f"{configuration or '(no coordinates)'}"),
        wrapped(f"weakest direction there (lambda_min = {eigen[worst, 0]:.4g}, lambda_max = "
                f"{eigen[worst, -1]:.4g}): {weakest_direction(report.weakest, names)}"),
        *([wrapped(f"M is singular there: the motions of joints "
                   f"{', '.join(report.coinciding)} coincide (nothing with mass or inertia "
                   "moves between them)")]
          if len(report.coinciding) > 1 else []),
        "",
        wrapped(f"ABA's local D-blocks, worst over the samples (smallest {len(blocks)} of "
                f"{len(report.blocks)}; ratio = lambda_min(D) / lambda_max(M), cond(M) >= "
                "1/ratio):"),
        fitted(table(block_rows, ["joint", "lambda_min(D)", "ratio",
                                  *(["cond(D)"] if several else [])])),
        "",
        "parent/child body mass ratios (largest first):",
        fitted(table(ratio_rows, ["parent", "child", "parent kg", "child kg", "ratio"]))
        if ratio_rows else "  (no parent/child pairs)",
        "",
        "warnings:" + ("" if report.warnings else " none"),
        *[wrapped(w, indent="  ") for w in report.warnings],
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- verify

def verify_table(report, model, options) -> str:
    rows = [[r.status, r.name, _number(r.residual), _number(r.tolerance), verify_note(r)]
            for r in report.results]
    failed = sum(r.status == "fail" for r in report.results)
    skipped = [r.name for r in report.results if r.status == "skip"]
    identities = [f"  {r.name}: {r.identity}" for r in report.results]
    return "\n".join([
        wrapped(f"verify {model.name}: {report.states} random states (seed {options.seed}), "
                f"nq={model.nq}, nv={model.nv}"),
        "residual = max|lhs - rhs| / max(1, max|rhs|)",
        text_table(rows, ["status", "identity", "residual", "tolerance", "note"]),
        "", "identities:", *identities, "",
        f"{'FAILED' if failed else 'ok'}: {failed} of {len(rows)} identities failed"
        + (f"; {len(skipped)} not checked ({', '.join(skipped)})" if skipped else ""),
    ])


def _number(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.3g}"
