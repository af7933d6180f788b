"""The checks' findings as CI tools take them: one kind for ``check-inertia``, ``statics``
and ``check-limits`` (:class:`Finding`: a check's name, what it is about, a level, a
message and where in the model file), which checks are reported (``--select``,
``--ignore``) and which findings are already known (``--baseline``: a previous ``--format
json`` output; :class:`Selection`).

A finding is matched to a baseline by its check and its subject (the body, joint or dof it
is about), never by its message or its value: a finding whose numbers moved is still the
same finding, and a new check failing on a known body is a new one.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import orjson

from .errors import UsageError
from .paths import reading

# command -> the key naming a finding's subject in its JSON ("findings": [{..}])
SUBJECTS = {"check-inertia": "body", "statics": "joint", "check-limits": "dof"}

# command -> check -> what it finds (SARIF's rules: their ids and help)
RULES = {
    "check-inertia": {
        "finite": "A mass, centre of mass or inertia entry is not a finite number.",
        "mass": "A link's mass is negative, absurd, or zero on a moving body whose subtree "
                "gives its joint no mass.",
        "inertia-pd": "The rotational inertia is not symmetric positive definite.",
        "triangle": "The principal moments break the triangle inequality (no rigid body has "
                    "them).",
        "pseudo-inertia": "The 4x4 pseudo-inertia [[tr(I)/2 1 - I, h], [h^T, m]] is not "
                          "positive definite: no mass distribution has these parameters.",
        "plausibility": "The inertia is far from that of a uniform solid filling the link's "
                        "geometry (100x is an error).",
        "about-origin": "The inertia looks given about the link origin instead of the centre "
                        "of mass.",
        "orientation": "The principal axes disagree with the geometry's (the inertial rpy "
                       "applied wrongly).",
        "density": "The mass over the geometry's volume is an implausible density.",
        "articulated-inertia": "ABA's articulated inertia of a joint is singular or nearly "
                               "so (a chain without inertia to move).",
        "merged-pseudo-inertia": "Links merged by fixed joints make a body whose "
                                 "pseudo-inertia is not positive definite.",
        "limits": "A joint's limits are inconsistent (lower above upper, negative effort or "
                  "velocity).",
    },
    "statics": {
        "gravity-load": "Holding the robot still needs more than a joint's effort limit "
                        "somewhere in the joint ranges (max |g_i(q)| / limit above 1, or "
                        "above --fail-above).",
    },
    "check-limits": {
        "position": "A logged position leaves the joint's [lower, upper] range.",
        "velocity": "A logged |velocity| exceeds the joint's velocity limit.",
        "effort": "A logged (or inverse dynamics') |effort| exceeds the joint's effort limit.",
    },
}


class Finding(NamedTuple):
    """A failing check: ``check`` (a name of :data:`RULES`), ``subject`` (a body, joint or
    dof), ``level`` (error, warning or note), the message, and the model file and 1-based
    line it is about (0: the file as a whole)."""

    check: str
    subject: str
    level: str
    message: str
    file: str
    line: int = 0

    def document(self, subject_key: str) -> dict:
        return {"check": self.check, subject_key: self.subject, "severity": self.level,
                "message": self.message, "file": self.file, "line": self.line}


@dataclasses.dataclass(frozen=True)
class Selection:
    """The checks reported (``checks``) and the known findings (``known``: (check,
    subject) pairs of a baseline), which are not reported and do not fail the run."""

    checks: frozenset
    known: frozenset = frozenset()

    def keeps(self, check: str, subject: str) -> bool:
        """Whether a failing ``check`` on ``subject`` is reported (and counts)."""
        return check in self.checks and (check, subject) not in self.known

    def kept(self, findings) -> list[Finding]:
        return [f for f in findings if self.keeps(f.check, f.subject)]


def selection(command: str, select: str | None = None, ignore: str | None = None,
              baseline: str | None = None) -> Selection:
    """The Selection of ``command``'s options: ``select`` and ``ignore``, comma-separated
    check names (None: every check; none ignored), ``baseline`` the path of a previous
    ``--format json`` output of the command. UsageError: an unknown name (the names
    listed), a baseline that cannot be read or is not that command's document."""
    names = tuple(RULES[command])
    chosen = set(named(select, names, "--select")) if select is not None else set(names)
    chosen -= set(named(ignore, names, "--ignore")) if ignore is not None else set()
    known = frozenset() if baseline is None else baseline_findings(baseline, command)
    return Selection(frozenset(chosen), known)


def named(text: str, names: tuple, option: str) -> list[str]:
    """The check names of ``text`` (comma-separated); UsageError on one not in ``names``."""
    words = [word.strip() for word in text.split(",") if word.strip()]
    unknown = [word for word in words if word not in names]
    if unknown or not words:
        raise UsageError(f"dyn: {option} {text!r}: "
                         f"{'no check named ' + repr(unknown[0]) if unknown else 'no check'}; "
                         f"the checks are {', '.join(names)}")
    return words


def baseline_findings(path: str, command: str) -> frozenset:
    """The (check, subject) pairs of the findings in the ``--format json`` output of
    ``command`` at ``path``."""
    if path == "-":
        raise UsageError("dyn: --baseline -: give the previous output as a file, not stdin")
    reading(path, "the --baseline file")
    try:
        with open(path, "rb") as stream:
            document = orjson.loads(stream.read())  # (nesting past 1024: an error)
    except OSError as error:
        raise UsageError(f"{path}: cannot read the baseline ({error.strerror or error})"
                         ) from None
    except ValueError as error:
        raise UsageError(f"{path}: the baseline is not JSON ({error})") from None
    key, schema = SUBJECTS[command], f"treedyn.{command}/"
    found = document.get("findings") if isinstance(document, dict) else None
    written = document.get("schema", schema) if isinstance(document, dict) else None
    if not (isinstance(written, str) and written.startswith(schema)
            and isinstance(found, list)
            and all(isinstance(f, dict) and isinstance(f.get("check"), str)
                    and isinstance(f.get(key), str) for f in found)):
        raise UsageError(f"{path}: the baseline is not the output of dyn {command} "
                         f"--format json (findings with \"check\" and \"{key}\")")
    return frozenset((f["check"], f[key]) for f in found)


def with_findings(document: dict, findings, command: str) -> dict:
    """``document`` with its ``"findings"`` (as :meth:`Finding.document` writes them)."""
    key = SUBJECTS[command]
    return {**document, "findings": [finding.document(key) for finding in findings]}


def inertia_findings(report) -> list[Finding]:
    """check-inertia's failing findings (the report's errors and warnings)."""
    return [Finding(f.check, f.body, "error" if f.severity == "error" else "warning",
                    f"{f.body}: {f.message}", f.source.file, f.source.line)
            for f in report.failed()]


def selected_inertia(report, chosen: Selection):
    """The check-inertia report with only the findings ``chosen`` keeps among the failing
    ones and only the chosen checks among the others (its verdict follows them)."""
    from treedyn.engine.analysis.inertia import InertiaReport

    if chosen.checks >= set(RULES["check-inertia"]) and not chosen.known:
        return report  # every check, no baseline: nothing to leave out (or to make)

    def keep(finding) -> bool:
        if finding.status == "fail":
            return chosen.keeps(finding.check, finding.body)
        return finding.check in chosen.checks

    return InertiaReport(report.model, report.findings.only(keep, chosen.checks))


def statics_findings(report, model, fail_above: float | None) -> list[Finding]:
    """``dyn statics``' findings: each joint over its effort limit (or ``fail_above``),
    at the joint's ``<limit>`` line."""
    found = []
    for row in report.over(fail_above):
        source = model.limit_sources[row.joint]
        found.append(Finding(
            "gravity-load", row.name, "error",
            f"{row.name}: holding the robot still needs {number(row.max_abs)} at "
            f"{configuration(row.q) or 'every configuration'}, over its effort limit "
            f"{number(row.limit)} (ratio {number(row.ratio)})", source.file, source.line))
    return found


def number(value: float) -> str:
    """A report's number: 6 significant digits (infinities as inf and -inf)."""
    return f"{value:.6g}"


def configuration(q: dict | None) -> str:
    """``name=value, ...`` of a configuration (below 1e-9: the optimiser's rounding of a
    zero, shown as 0)."""
    return "" if not q else ", ".join(f"{name}={value if abs(value) > 1e-9 else 0.0:.4g}"
                                      for name, value in q.items())


def selected_statics(report, chosen: Selection):
    """The statics report whose joints over their limits are only those ``chosen`` keeps."""
    excused = frozenset(row.name for row in report.rows
                        if not chosen.keeps("gravity-load", row.name))
    return dataclasses.replace(report, excused=report.excused | excused)


def limits_findings(entries: list[dict], layout) -> list[Finding]:
    """``dyn check-limits``' findings: per dof and kind of limit (position, velocity,
    effort), the states outside it, at the joint's limit (else the joint's element)."""
    from treedyn.engine.analysis.limits import KINDS

    model, found = layout.model, []
    dof = {label: d for d, label in enumerate(layout.v_labels)}  # (one lookup per entry)
    for entry in entries:
        if not any(entry.get(kind) and entry[kind]["count"] for kind in KINDS):
            continue
        label = entry["dof"]
        joint = int(model.dof_joint[dof[label]])
        source = model.limit_sources[joint]
        if not source.line:
            source = model.joint_sources[joint]
        for kind in KINDS:
            tally = entry.get(kind)
            if not tally or not tally["count"]:
                continue
            worst = tally["worst"]
            found.append(Finding(
                kind, label, "error",
                f"{label}: {tally['count']} state(s) outside the {kind} limit "
                f"[{tally['lower']}, {tally['upper']}] {tally['unit']}; worst "
                f"{worst['value']:.6g} at state {worst['state']} ({worst['where']})",
                source.file, source.line))
    return found

