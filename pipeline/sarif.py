"""Findings as a SARIF 2.1.0 log (``--format sarif``), the format code-scanning services
read (GitHub's ``upload-sarif``, GitLab, Azure DevOps): one run of the tool ``dyn`` whose
rules are the command's checks (ids: their names, :data:`.findings.RULES`) and whose
results are its findings, each at the model file (relative to ``base``, the current
folder, when it is below it) and the element's line.
"""
from __future__ import annotations

import json
import os
from urllib.parse import quote

from .findings import RULES, Finding

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def artifact_uri(path: str, base: str) -> str:
    """``path`` as a SARIF artifact URI: relative to ``base`` (with forward slashes) when
    it lies below it, else absolute as a ``file://`` URI; percent-encoded (a space is
    %20)."""
    full = os.path.abspath(path)
    relative = os.path.relpath(full, base)
    if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
        return quote(relative.replace(os.sep, "/"))
    return "file://" + quote(full.replace(os.sep, "/"))


def sarif_log(command: str, findings: list[Finding], version: str, base: str) -> dict:
    """The SARIF log of ``dyn command``'s ``findings``, the tool at ``version``."""
    checks = list(RULES[command])
    rules = [{"id": check, "shortDescription": {"text": text}, "help": {"text": text}}
             for check, text in RULES[command].items()]
    results = []
    for finding in findings:
        location = {"artifactLocation": {"uri": artifact_uri(finding.file, base)}}
        if finding.line > 0:
            location["region"] = {"startLine": finding.line}
        results.append({"ruleId": finding.check, "ruleIndex": checks.index(finding.check),
                        "level": finding.level, "message": {"text": finding.message},
                        "locations": [{"physicalLocation": location}]})
    driver = {"name": "dyn", "fullName": f"dyn {command}", "version": version,
              "rules": rules}
    return {"$schema": SCHEMA, "version": "2.1.0",
            "runs": [{"tool": {"driver": driver}, "results": results,
                      "columnKind": "unicodeCodePoints"}]}


def sarif_text(command: str, findings: list[Finding], version: str, base: str) -> str:
    """:func:`sarif_log` as the text ``--format sarif`` prints."""
    return json.dumps(sarif_log(command, findings, version, base), indent=2)
