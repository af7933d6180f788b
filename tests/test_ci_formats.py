"""The checks' CI formats: ``--format sarif`` (validated against the official SARIF 2.1.0
schema, tests/data/sarif-schema-2.1.0.json, from the OASIS SARIF TC's repository
oasis-tcs/sarif-spec, sarif-2.1/schema), ``--select``/``--ignore`` by check name and
``--baseline`` (a previous ``--format json`` output): docs/interface.md, "CI formats"."""
import json
from pathlib import Path

import jsonschema
import pytest

from in_process import dyn_here
from treedyn.engine.analysis.inertia import CHECKS
from treedyn.pipeline.findings import RULES

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
ARM = "fixtures/two_link_arm.urdf"
LIMITS_LOG = "fixtures/two_link_arm_limits_log.csv"
BROKEN = ["fixtures/broken/inertia_about_origin.urdf", "fixtures/broken/negative_mass.urdf"]
RUNS = {  # command -> arguments giving findings, and the line of the file they are at
    "check-inertia": [BROKEN[0]],
    "statics": [ARM, "--samples", "16", "--fail-above", "0.01"],
    "check-limits": [ARM, "--input", LIMITS_LOG],
}


def dyn(*args):
    return dyn_here(list(args), cwd=ROOT)


def json_of(command, *extra):
    done = dyn(command, *RUNS[command], "--format", "json", *extra)
    return done.returncode, json.loads(done.stdout)


def test_the_rules_are_the_checks():
    assert tuple(RULES["check-inertia"]) == CHECKS


@pytest.mark.parametrize("command", list(RUNS))
def test_sarif_is_valid_and_matches_the_json_findings(command):
    done = dyn(command, *RUNS[command], "--format", "sarif")
    assert done.returncode == 1, done.stderr
    log = json.loads(done.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    run, = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "dyn" and [r["id"] for r in driver["rules"]] == list(RULES[command])
    assert all(rule["help"]["text"] for rule in driver["rules"])
    _, document = json_of(command)
    findings = document["findings"]
    assert len(run["results"]) == len(findings) > 0
    for result, finding in zip(run["results"], findings):
        assert result["ruleId"] == finding["check"]
        assert driver["rules"][result["ruleIndex"]]["id"] == finding["check"]
        assert result["level"] == finding["severity"]
        where = result["locations"][0]["physicalLocation"]
        assert where["artifactLocation"]["uri"] == finding["file"]  # relative to the cwd
        assert where["region"]["startLine"] == finding["line"] > 0


def test_sarif_lines_are_the_elements_of_the_file():
    log = json.loads(dyn("check-inertia", BROKEN[1], "--format", "sarif").stdout)
    result, = log["runs"][0]["results"]
    line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
    text = (ROOT / BROKEN[1]).read_text().splitlines()
    assert result["ruleId"] == "mass" and "<inertial" in text[line - 1]


@pytest.mark.parametrize("command", list(RUNS))
def test_a_baseline_of_the_findings_passes_and_a_new_one_fails(command, tmp_path):
    code, document = json_of(command)
    assert code == 1 and len(document["findings"]) >= 2
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(document))
    code, known = json_of(command, "--baseline", str(baseline))
    assert code == 0 and known["findings"] == []
    new_one = next(f for f in document["findings"] if f["severity"] == "error")
    shorter = {**document, "findings": [f for f in document["findings"] if f != new_one]}
    baseline.write_text(json.dumps(shorter))
    code, new = json_of(command, "--baseline", str(baseline))
    assert code == 1 and new["findings"] == [new_one]
    # matched by check and subject: other messages and values are the same findings
    reworded = {**document, "findings": [{**f, "message": "x", "value": None}
                                         for f in document["findings"]]}
    baseline.write_text(json.dumps(reworded))
    assert json_of(command, "--baseline", str(baseline))[0] == 0


def test_select_and_ignore_by_check_name():
    code, document = json_of("check-limits")
    checks = {f["check"] for f in document["findings"]}
    assert code == 1 and checks == {"position", "velocity", "effort"}
    code, only = json_of("check-limits", "--select", "velocity")
    assert code == 1 and {f["check"] for f in only["findings"]} == {"velocity"}
    code, none = json_of("check-limits", "--ignore", "position,velocity,effort")
    assert code == 0 and none["findings"] == [] and none["ok"] is True
    code, inertia = json_of("check-inertia", "--ignore", "about-origin")
    assert code == 0 and [f["check"] for f in inertia["findings"]] == ["plausibility"]
    assert "about-origin" not in inertia["summary"]


@pytest.mark.parametrize("args, words", [
    (["--select", "velocity,speed"], ["'speed'", "position, velocity, effort"]),
    (["--ignore", ","], ["no check", "position, velocity, effort"]),
    (["--baseline", "missing.json"], ["missing.json", "cannot read"]),
    (["--baseline", ARM], ["not JSON"]),
])
def test_a_bad_name_or_baseline_is_one_line(args, words):
    done = dyn("check-limits", *RUNS["check-limits"], *args)
    line = done.stderr.decode()
    assert done.returncode == 2 and line.count("\n") == 1
    assert all(word in line for word in words), line


def test_a_baseline_of_another_command_is_refused(tmp_path):
    _, document = json_of("statics")
    baseline = tmp_path / "statics.json"
    baseline.write_text(json.dumps(document))
    done = dyn("check-limits", *RUNS["check-limits"], "--baseline", str(baseline))
    assert done.returncode == 2 and b"not the output of dyn check-limits" in done.stderr


def test_artifact_uris_are_relative_below_the_folder_and_encoded(tmp_path):
    from treedyn.pipeline.sarif import artifact_uri

    base = tmp_path / "work"
    assert artifact_uri(str(base / "robots" / "my arm.urdf"), str(base)) == "robots/my%20arm.urdf"
    assert artifact_uri(str(base / "..x" / "a.urdf"), str(base)) == "..x/a.urdf"
    outside = artifact_uri(str(tmp_path / "other" / "b.urdf"), str(base))
    assert outside == "file://" + str(tmp_path / "other" / "b.urdf")


def test_a_baseline_nested_past_any_reason_is_one_line(tmp_path):
    """A baseline of 200 000 nested arrays: 'not JSON' in one line, exit 2 (the standard
    library's reader ran out of stack: an internal error)."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000)
    done = dyn("check-inertia", ARM, "--baseline", str(deep))
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"{deep}: the baseline is not JSON")
