"""Diagnostics against references: fixtures, MuJoCo's compiler, Pinocchio, identities.

* Each deliberately broken model in fixtures/broken is caught with the right link, the
  line of its element (found with lxml here, independently of the parser) and the check.
* The triangle verdict equals MuJoCo's compiler's; the pseudo-inertia equals the sum of
  m [p; 1][p; 1]^T over point masses; the uniform inertia of primitive solids equals
  MuJoCo's geom inertia; the nearest consistent inertia is a projection.
* Every example-robot-data URDF gets a verdict from check-inertia and verify; verify finds
  no failing identity there; the articulated-inertia error appears exactly where
  Pinocchio's mass matrix is singular.
* Conditioning bounds and the verify identities are exercised on random trees, and verify
  catches a deliberately broken engine.
"""
from __future__ import annotations

import contextlib
import dataclasses
import glob
import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from random_trees import random_description, random_model, random_rotation, trees
from reference_models import dm_control_id, dm_control_models, gymnasium_models, robots_root
from treedyn.engine import Inertia, JointSpec, LinkSpec, TreeDescription, build_model, crba
from treedyn.engine.analysis.conditioning import analyze
from treedyn.engine.analysis.check_inertia import check_inertia
from treedyn.engine.analysis.inertia import CHECKS, CheckOptions, triangle_slack
from treedyn.engine.inertia_forms import nearest_consistent
from treedyn.engine.inertia_forms import pseudo_inertia_of as pseudo_inertia
from treedyn.engine.analysis.verify import VerifyOptions, verify
from treedyn.engine.description import Shape
from treedyn.engine.factor import ltdl
from treedyn.engine.geometry import solid_properties
from treedyn.engine.reference import articulated_blocks
from treedyn.parsers import load_model
from treedyn.parsers.collada import dae_points
from treedyn.parsers.link_geometry import link_geometry, mesh_bounds
from treedyn.parsers.packages import PackagePaths, resolve_uri

ROOT = Path(__file__).resolve().parents[1]
BROKEN = ROOT / "fixtures" / "broken"
ARM = ROOT / "fixtures" / "two_link_arm.urdf"




ROBOTS = robots_root()
URDFS = sorted(glob.glob(os.path.join(ROBOTS, "**", "*.urdf"), recursive=True)) if ROBOTS else []


def dyn(*args) -> subprocess.CompletedProcess:
    """``dyn ARGS`` in this interpreter (stdout, stderr captured, exit code kept)."""
    from treedyn.cli.app import run

    out, err = io.StringIO(), io.StringIO()
    with (contextlib.redirect_stdout(out), contextlib.redirect_stderr(err),
          pytest.raises(SystemExit) as exit_info):
        run([str(a) for a in args])
    code = exit_info.value.code
    return subprocess.CompletedProcess(args, 0 if code is None else code, out.getvalue(),
                                       err.getvalue())


def element_line(path: Path, link: str, element: str) -> int:
    """The line of ``<link name=link>`` or of its ``<inertial>``, read with lxml."""
    tree = etree.parse(str(path))
    node = tree.find(f"link[@name='{link}']")
    return (node if element == "link" else node.find("inertial")).sourceline


# ----------------------------------------------------------------------------- fixtures

CASES = [  # file, link, check, severity, element whose line is reported
    ("rotated_inertial_origin.urdf", "forearm", "orientation", "error", "inertial"),
    ("triangle_violation.urdf", "link2", "triangle", "error", "inertial"),
    ("massless_leaf.urdf", "gripper", "mass", "error", "link"),
    ("inertia_about_origin.urdf", "motor", "about-origin", "error", "inertial"),
    ("huge_inertia.urdf", "finger", "plausibility", "error", "inertial"),
    ("negative_mass.urdf", "payload", "mass", "error", "inertial"),
    ("near_singular_chain.urdf", "link3", "articulated-inertia", "warning", "inertial"),
    ("merged_tool.urdf", "tool", "triangle", "error", "inertial"),
]


@pytest.mark.parametrize("name, link, check, severity, element", CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_broken_fixture_is_caught_at_its_link_line_and_check(name, link, check, severity,
                                                             element):
    path = BROKEN / name
    result = dyn("check-inertia", path, "--format", "json")
    document = json.loads(result.stdout)
    errors = [f for f in document["findings"] if f["severity"] == "error"]
    assert result.returncode == (1 if errors else 0)
    assert document["ok"] == (not errors)
    line = element_line(path, link, element)
    matches = [f for f in document["findings"] if (f["body"], f["check"]) == (link, check)]
    assert len(matches) == 1, matches
    finding = matches[0]
    assert (finding["severity"], finding["status"], finding["file"], finding["line"]) == (
        severity, "fail", str(path), line)
    assert {"body", "check", "severity", "message", "value"} <= set(finding)
    for other in document["findings"]:  # nothing else in the file is at fault
        if other["status"] == "fail" and other["severity"] == "error":
            assert other["body"] == link or link in other.get("links", []), other


def test_triangle_deficit_is_reported_in_absolute_and_percent():
    document = json.loads(dyn("check-inertia", BROKEN / "triangle_violation.urdf",
                              "--format", "json").stdout)
    finding = next(f for f in document["findings"] if f["check"] == "triangle"
                   and f["body"] == "link2")
    assert finding["details"]["deficit"] == pytest.approx(0.0309 - 0.03, rel=1e-9)
    assert finding["details"]["deficit_percent"] == pytest.approx(0.0009 / 0.0309 * 100)
    assert finding["details"]["principal_moments"] == pytest.approx([0.01, 0.02, 0.0309])
    assert dyn("check-inertia", BROKEN / "triangle_violation.urdf", "--tolerance",
               "0.03").returncode == 0  # a 3 % tolerance accepts the 2.9 % deficit


def test_merged_body_is_checked_and_links_keep_their_names():
    document = json.loads(dyn("check-inertia", BROKEN / "merged_tool.urdf",
                              "--format", "json", "--all").stdout)
    merged = [f for f in every_finding(document) if f["check"] == "merged-pseudo-inertia"]
    assert [(f["body"], f["links"], f["scope"]) for f in merged] == [
        ("link2", ["link2", "tool"], "body")]
    # the tool's own tensor is inconsistent (its triangle error), the body as a whole is not
    assert merged[0]["status"] == "pass"
    model = load_model(str(BROKEN / "merged_tool.urdf"))
    rigid = Inertia.from_spatial(model.body_inertia[1])
    J = pseudo_inertia(rigid.mass, rigid.com, rigid.inertia)
    assert merged[0]["value"] == pytest.approx(np.linalg.eigvalsh(J)[0])


def test_near_singular_chain_names_the_wrist_in_dyn_condition():
    result = dyn("condition", BROKEN / "near_singular_chain.urdf", "--samples", "20",
                 "--format", "json")
    document = json.loads(result.stdout)
    direction = document["worst"]["weakest_direction"]
    assert max(direction, key=lambda name: abs(direction[name])) == "wrist"
    assert any("wrist" in w for w in document["warnings"])
    assert document["cond"]["max"] > 1e8
    assert dyn("condition", BROKEN / "near_singular_chain.urdf", "--samples", "5",
               "--strict").returncode == 1
    assert dyn("condition", ARM, "--samples", "5", "--strict").returncode == 0


@pytest.mark.skipif(not ROBOTS, reason="example-robot-data is not installed")
def test_check_inertia_seed_chooses_the_sampled_configurations():
    """--seed, as in condition and verify: UR5's shoulder is at its worst in another random
    configuration under seed 1 than under seed 0, and the API agrees for each seed."""
    path = os.path.join(ROBOTS, "ur_description", "urdf", "ur5_robot.urdf")
    model = load_model(path)
    values = []
    for seed in (0, 1):
        result = dyn("check-inertia", path, "--samples", "3", "--seed", str(seed), "-f", "json",
                     "--all")
        shoulder = next(f for f in every_finding(json.loads(result.stdout))
                        if f["check"] == "articulated-inertia" and f["body"] == "shoulder_link")
        report = check_inertia(model, link_geometry(model.description, path),
                               CheckOptions(samples=3, seed=seed))
        expected = next(f for f in report.findings
                        if f.check == "articulated-inertia" and f.body == "shoulder_link")
        assert shoulder["value"] == expected.value
        values.append(shoulder["value"])
    assert values[0] != values[1]


def test_condition_csv_prints_its_warnings_on_stderr():
    """CSV rows are the samples: the warnings that fail --strict go to stderr, as in JSON's
    "warnings" and the table's list."""
    path = BROKEN / "near_singular_chain.urdf"
    expected = json.loads(dyn("condition", path, "--samples", "5", "--format", "json")
                          .stdout)["warnings"]
    result = dyn("condition", path, "--samples", "5", "--strict", "--format", "csv")
    assert result.returncode == 1 and expected
    assert result.stderr.splitlines() == [f"dyn: warning: {w}" for w in expected]
    assert len(result.stdout.splitlines()) == 6


# ----------------------------------------------------------------------------- --fix

def test_fixes_are_consistent_and_undo_the_planted_mistakes():
    triangle = json.loads(dyn("check-inertia", BROKEN / "triangle_violation.urdf", "--fix",
                              "--format", "json").stdout)
    fix = next(f["fix"] for f in triangle["findings"] if f["check"] == "triangle" and "fix" in f)
    moments = np.linalg.eigvalsh(np.array(fix["inertia"]))
    assert triangle_slack(moments) > 0 and fix["mass"] == 1.0
    origin = json.loads(dyn("check-inertia", BROKEN / "inertia_about_origin.urdf", "--fix",
                            "--format", "json").stdout)
    fix = next(f["fix"] for f in origin["findings"] if f["check"] == "about-origin")
    box = 1.0 * (0.2 ** 2 + 0.2 ** 2) / 12  # the block's true inertia about its com
    np.testing.assert_allclose(fix["inertia"], box * np.eye(3), atol=1e-8)
    rotated = json.loads(dyn("check-inertia", BROKEN / "rotated_inertial_origin.urdf", "--fix",
                             "--format", "json").stdout)
    fix = next(f["fix"] for f in rotated["findings"] if f["check"] == "orientation")
    np.testing.assert_allclose(fix["inertia"], np.diag([0.000833333, 0.0420833, 0.0420833]),
                               atol=1e-12)
    table = dyn("check-inertia", BROKEN / "rotated_inertial_origin.urdf", "--fix").stdout
    assert "not applied" in table and "<inertia ixx=" in table


def one_link_urdf(inertial: str, geometry: str = "") -> str:
    """A revolute link ``arm`` on a fixed base, with the given <inertial> (and geometry)."""
    return (f'<robot name="r"><link name="base"/><link name="arm"><inertial>{inertial}'
            f'</inertial>{geometry}</link><joint name="j" type="revolute"><parent link="base"/>'
            '<child link="arm"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" '
            'velocity="1"/></joint></robot>')


def every_finding(document: dict) -> list[dict]:
    """A ``--all`` document's findings, passes and skipped checks."""
    return document["findings"] + document["passes"] + document["skipped"]


def findings_of(path, *options) -> tuple[dict, int]:
    result = dyn("check-inertia", path, "--format", "json", "--all", *options)
    return {f["check"]: f for f in every_finding(json.loads(result.stdout))
            if f["body"] == "arm"}, result.returncode


@pytest.mark.parametrize("offset", [0.0, 0.05, 10.0])
def test_pseudo_inertia_verdict_does_not_depend_on_where_the_link_origin_is(tmp_path, offset):
    """A 9 % triangle deficit is an impossible body wherever its com sits: the verdict and
    margin are the same with the com at the origin, 5 cm or 10 m away (the margin was
    normalized about the origin and fell to a warning as the com moved away)."""
    path = tmp_path / "finger.urdf"
    path.write_text(one_link_urdf(f'<origin xyz="{offset} 0 0"/><mass value="0.05"/><inertia '
                                  'ixx="1e-6" ixy="0" ixz="0" iyy="1e-6" iyz="0" izz="2.2e-6"/>'))
    findings, code = findings_of(path, "--tolerance", "0.001")
    pseudo = findings["pseudo-inertia"]
    assert code == 1 and findings["triangle"]["severity"] == "error"
    # the same defect: reported once, by the triangle check; the skip keeps its numbers
    assert pseudo["status"] == "skip" and "implied by the triangle finding" in pseudo["message"]
    # Sigma_c's eigenvalues are the halved slacks: (1 + 1 - 2.2) / 2 = -0.1 of 1e-6 kg m^2,
    # over tr(Sigma_c) = tr(I) / 2 = 2.1e-6
    assert pseudo["value"] == pytest.approx(-0.1e-6, rel=1e-9)
    assert pseudo["margin"] == pytest.approx(-0.1 / 2.1, rel=1e-9)


def test_zero_mass_with_an_inertia_tensor_is_flagged_on_a_moving_link(tmp_path):
    path = tmp_path / "ghost.urdf"
    path.write_text(one_link_urdf('<mass value="0"/><inertia ixx="0.01" ixy="0" ixz="0" '
                                  'iyy="0.01" iyz="0" izz="0.01"/>'))
    findings, _ = findings_of(path)
    assert findings["mass"]["status"] == "fail"
    assert "zero mass but a non-zero inertia tensor" in findings["mass"]["message"]
    assert findings["pseudo-inertia"]["status"] == "skip"  # not "a point or rod idealisation"


@pytest.mark.parametrize("tolerance", ["1e-6", "0.01", "0.05", "0.15", "0.5"])
def test_the_triangle_fix_stays_near_whatever_the_tolerance(tmp_path, tolerance):
    """Moments 0.01, 0.02, 0.0309 miss the triangle by 0.0009 (2.9 %: a triangle error
    below the tolerance 0.05, a pseudo-inertia warning above): the fix moves them by
    about 5e-4, not up to ten times the tolerance times their trace (which tripled them)."""
    path = BROKEN / "triangle_violation.urdf"
    document = json.loads(dyn("check-inertia", path, "--fix", "--tolerance", tolerance,
                              "--format", "json").stdout)
    fix = next(f["fix"] for f in document["findings"] if f["body"] == "link2" and "fix" in f)
    moments = np.linalg.eigvalsh(np.array(fix["inertia"]))
    assert np.abs(moments - [0.01, 0.02, 0.0309]).max() < 0.01
    assert np.trace(fix["inertia"]) == pytest.approx(0.0609, rel=0.2)  # not tripled
    if float(tolerance) < 0.3:  # the fix passes the checks at the tolerance it was made for
        fixed = tmp_path / "fixed.urdf"
        fixed.write_text(path.read_text().replace(
            next(line for line in path.read_text().splitlines() if 'izz="0.0309"' in line),
            fix["element"].split("/> ", 1)[1]))
        findings = json.loads(dyn("check-inertia", fixed, "--tolerance", tolerance,
                                  "--format", "json").stdout)["findings"]
        assert not [f for f in findings if f["body"] == "link2" and f["status"] == "fail"
                    and f["check"] in ("triangle", "pseudo-inertia")]


def test_fix_reaches_csv_and_github_annotations():
    path = BROKEN / "triangle_violation.urdf"
    rows = list(csv.DictReader(io.StringIO(
        dyn("check-inertia", path, "--fix", "--format", "csv").stdout)))
    assert [row["fix"] for row in rows if row["check"] == "triangle" and row["fix"]][0].startswith(
        "<mass ")
    assert "fix" not in next(csv.DictReader(io.StringIO(
        dyn("check-inertia", path, "--format", "csv").stdout)))
    annotations = dyn("check-inertia", path, "--fix", "--format", "github").stdout
    triangle = next(line for line in annotations.splitlines() if "triangle" in line)
    assert "%0Asuggested (nearest inertia" in triangle and "<inertia ixx=" in triangle


def test_a_token_geometry_too_small_for_the_mass_judges_no_inertia(tmp_path):
    """tiago's 1 mm hand spheres hold 0.05 kg and a deliberate 1e-3 inertia: the density
    check says the shape is a token, so plausibility does not call the inertia 10^5 x too
    large nor suggest the sphere's (which would make M nearly singular)."""
    sphere = '<geometry><sphere radius="0.001"/></geometry>'
    path = tmp_path / "hand.urdf"
    path.write_text(one_link_urdf(
        '<mass value="0.05"/><inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" '
        'izz="1e-3"/>', f"<collision>{sphere}</collision><visual>{sphere}</visual>"))
    findings, code = findings_of(path, "--fix")
    assert code == 0
    assert findings["density"]["status"] == "fail"
    assert findings["plausibility"]["status"] == "skip" and "fix" not in findings["plausibility"]


@pytest.mark.parametrize("origin, mass", [("1e160 0 0", "1"), ("1e10 0 0", "1e300")])
def test_an_overflowing_inertia_is_a_finding_not_a_crash(tmp_path, origin, mass):
    path = tmp_path / "far.urdf"
    path.write_text(one_link_urdf(f'<origin xyz="{origin}"/><mass value="{mass}"/><inertia '
                                  'ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'))
    result = subprocess.run([sys.executable, "-m", "treedyn.cli", "check-inertia",
                             str(path), "--format", "json"], capture_output=True, text=True)
    assert result.returncode == 1 and result.stderr == ""
    failed = [(f["check"], f["severity"]) for f in json.loads(result.stdout)["findings"]
              if f["status"] == "fail"]
    assert ("finite", "error") in failed


def test_a_moving_leaf_with_a_tensor_but_no_mass_is_still_a_mass_error(tmp_path):
    """A prismatic leaf moves only mass, so its rotational inertia gives the joint nothing:
    the mass check stays the error it was (not the zero-mass-with-tensor warning)."""
    path = tmp_path / "slide.urdf"
    path.write_text(one_link_urdf('<mass value="0"/><inertia ixx="0.01" ixy="0" ixz="0" '
                                  'iyy="0.01" iyz="0" izz="0.01"/>').replace(
                                      'type="revolute"', 'type="prismatic"'))
    findings, code = findings_of(path)
    assert code == 1 and findings["mass"]["severity"] == "error"
    assert "moving body without mass" in findings["mass"]["message"]


def test_a_merged_body_whose_masses_cancel_is_no_mass_distribution(tmp_path):
    """+1 kg and -1 kg welded 1 cm apart: mass 0 with a first moment, J indefinite."""
    path = tmp_path / "cancel.urdf"
    path.write_text(one_link_urdf('<origin xyz="0.1 0 0"/><mass value="1"/><inertia ixx="0.01" '
                                  'ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>').replace(
        "</robot>", '<link name="tool"><inertial><origin xyz="0.11 0 0"/><mass value="-1"/>'
        '<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>'
        '</link><joint name="w" type="fixed"><parent link="arm"/><child link="tool"/></joint>'
        '</robot>'))
    findings, _ = findings_of(path)
    merged = findings["merged-pseudo-inertia"]
    assert "zero mass" in merged["message"]
    # implied by the -1 kg link: the defect is reported once, as the tool's negative mass
    assert merged["status"] == "skip" and "implied by the mass finding of link tool" in \
        merged["message"]
    document = json.loads(dyn("check-inertia", path, "--format", "json").stdout)
    assert [(f["body"], f["check"]) for f in document["findings"]] == [("tool", "mass")]


@pytest.mark.skipif(not URDFS, reason="example-robot-data is not installed")
def test_meshes_not_found_are_said_and_ros_package_path_finds_them(tmp_path, monkeypatch):
    """A URDF copied away from its package (as xacro writes one into a build folder) used
    to pass the check silently, every geometry check skipped."""
    source = next(path for path in URDFS if path.endswith(os.path.join("urdf", "ur5_robot.urdf")))
    copy = tmp_path / "ur5_robot.urdf"
    copy.write_text(Path(source).read_text())
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    result = dyn("check-inertia", copy, "--format", "github")
    assert result.returncode == 0
    meshes = set(re.findall(r'filename="(package://[^"]+)"', copy.read_text()))
    assert f"{len(meshes)} mesh file(s) not found (package://example-robot-data/" in result.stderr
    assert result.stdout.startswith("::warning file=") and "meshes not found" in result.stdout
    share = Path(source).parents[3]  # .../share, holding example-robot-data/
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"/nonexistent{os.pathsep}{share}")
    found = dyn("check-inertia", copy, "--format", "github")
    assert found.returncode == 1 and "wrist_3_link" in found.stdout and found.stderr == ""


def consistent_inertia(rng: np.random.Generator) -> Inertia:
    """The inertia of a random cloud of point masses (consistent by construction)."""
    masses = rng.uniform(0.1, 1.0, size=8)
    points = rng.normal(size=(8, 3)) * rng.uniform(0.05, 0.5, size=3)
    mass = masses.sum()
    com = masses @ points / mass
    offsets = points - com
    inertia = sum(m * (p @ p * np.eye(3) - np.outer(p, p)) for m, p in zip(masses, offsets))
    return Inertia(mass, com, inertia)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_nearest_consistent_inertia_is_a_projection(seed):
    rng = np.random.default_rng(seed)
    R = random_rotation(rng)
    moments = rng.uniform(-0.2, 1.0, size=3)
    given_inertia = R @ np.diag(moments) @ R.T
    nearest = nearest_consistent(given_inertia, margin=1e-9)
    fixed = np.linalg.eigvalsh(nearest)
    assert fixed[0] > 0 and triangle_slack(fixed) >= 0
    distance = np.linalg.norm(nearest - given_inertia)
    for _ in range(5):  # no consistent inertia is closer
        other = consistent_inertia(rng).inertia
        assert distance <= np.linalg.norm(other - given_inertia) + 1e-9
    again = nearest_consistent(nearest, margin=1e-9)
    np.testing.assert_allclose(again, nearest, atol=1e-9)


# ----------------------------------------------------------------------------- references

@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_pseudo_inertia_is_the_sum_over_point_masses(seed):
    rng = np.random.default_rng(seed)
    masses = rng.uniform(0.1, 1.0, size=6)
    points = rng.normal(size=(6, 3))
    expected = sum(m * np.outer(np.append(p, 1), np.append(p, 1)) for m, p in zip(masses, points))
    mass = masses.sum()
    com = masses @ points / mass
    inertia = sum(m * ((p - com) @ (p - com) * np.eye(3) - np.outer(p - com, p - com))
                  for m, p in zip(masses, points))
    np.testing.assert_allclose(pseudo_inertia(mass, com, inertia), expected, atol=1e-12)
    axis = random_rotation(rng)[0]  # a rank-one addition may break the triangle inequality
    violated = inertia + rng.uniform(0.1, 1) * np.trace(inertia) * np.outer(axis, axis)
    strict = triangle_slack(np.linalg.eigvalsh(violated)) > 0
    assert (np.linalg.eigvalsh(pseudo_inertia(mass, com, violated))[0] > 0) == strict


def one_body(inertia: Inertia, shapes: tuple = ()) -> TreeDescription:
    return TreeDescription(
        "one", "urdf",
        [LinkSpec("base", Inertia.zero(), has_inertial=False),
         LinkSpec("body", inertia, geometry=shapes)],
        [JointSpec("hinge", "revolute", "base", "body", axis=np.array([0.0, 0.0, 1.0]))],
        "base")


def test_triangle_verdict_equals_mujocos_compiler():
    mujoco = pytest.importorskip("mujoco")
    rng = np.random.default_rng(7)
    for _ in range(30):
        a, b = (float(x) for x in rng.uniform(0.01, 1.0, size=2))
        c = (a + b) * float(rng.choice([0.9, 0.99, 0.999, 1.0001, 1.001, 1.03, 1.2]))
        xml = ('<mujoco><compiler balanceinertia="false"/><worldbody><body><joint/>'
               f'<inertial pos="0 0 0" mass="1" diaginertia="{a!r} {b!r} {c!r}"/>'
               '</body></worldbody></mujoco>')
        try:
            mujoco.MjModel.from_xml_string(xml)
            accepted = True
        except ValueError:
            accepted = False
        report = check_inertia(build_model(one_body(Inertia(1.0, np.zeros(3),
                                                            np.diag([a, b, c])))),
                               options=CheckOptions(tolerance=0.0))
        (finding,) = [f for f in report.findings if f.check == "triangle"]
        assert (finding.status == "pass") == accepted, (a, b, c)


@pytest.mark.parametrize("kind, size, mujoco_size", [
    ("box", [0.3, 0.2, 0.1], "0.15 0.1 0.05"),
    ("cylinder", [0.1, 0.4], "0.1 0.2"),
    ("sphere", [0.15], "0.15"),
    ("capsule", [0.05, 0.3], "0.05 0.15"),
])
def test_uniform_inertia_of_solids_equals_mujocos_geom_inertia(kind, size, mujoco_size):
    mujoco = pytest.importorskip("mujoco")
    model = mujoco.MjModel.from_xml_string(
        f'<mujoco><worldbody><body><joint/><geom type="{kind}" size="{mujoco_size}" '
        'density="1000"/></body></worldbody></mujoco>')
    volume, centroid, unit = solid_properties(Shape(kind, np.array(size)))
    assert volume * 1000 == pytest.approx(model.body_mass[1], rel=1e-9)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(unit * model.body_mass[1])),
                               np.sort(model.body_inertia[1]), rtol=1e-9)


# ----------------------------------------------------------------------------- meshes

def test_mesh_bounds_of_obj_and_collada(tmp_path):
    obj = tmp_path / "part.obj"
    obj.write_text("# part\nv 0 0 0\nv 1 2 3\nvn 0 0 1\nv -1 0.5 0\nf 1 2 3\n")
    low, high = mesh_bounds(str(obj))
    np.testing.assert_allclose([low, high], [[-1, 0, 0], [1, 2, 3]])
    dae = (
        '<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">'
        '<asset><unit meter="0.001"/><up_axis>Y_UP</up_axis></asset>'
        '<library_geometries><geometry id="g"><mesh><source id="p">'
        '<float_array id="pa" count="6">0 0 0 10 20 30</float_array>'
        '<technique_common><accessor source="#pa" count="2" stride="3"/></technique_common>'
        '</source><vertices id="v"><input semantic="POSITION" source="#p"/></vertices>'
        '</mesh></geometry></library_geometries>'
        '<library_visual_scenes><visual_scene id="s"><node id="n">'
        '<translate>100 0 0</translate><instance_geometry url="#g"/></node>'
        '</visual_scene></library_visual_scenes></COLLADA>')
    points = dae_points(dae.encode())
    # mm to m, translated by 100 mm in x, then y up turned to z up: (x, y, z) -> (x, -z, y)
    np.testing.assert_allclose(points, [[0.1, 0, 0], [0.11, -0.03, 0.02]], atol=1e-12)


@pytest.mark.skipif(not URDFS, reason="example-robot-data is not installed")
def test_stl_bounds_equal_the_mesh_reader_of_the_mjcf_parser():
    mesh = pytest.importorskip("treedyn.parsers.meshes")
    files = sorted(glob.glob(os.path.join(ROBOTS, "ur_description", "meshes", "ur5",
                                          "collision", "*.stl")))[:3]
    assert files
    for path in files:
        data = mesh.read_mesh_file(path)
        np.testing.assert_allclose(mesh_bounds(path), [data.vertices.min(axis=0),
                                                       data.vertices.max(axis=0)])


@pytest.mark.skipif(not URDFS, reason="example-robot-data is not installed")
def test_package_uris_resolve_inside_example_robot_data():
    path = os.path.join(ROBOTS, "ur_description", "urdf", "ur5_robot.urdf")
    description = load_model(path).description
    geometry = link_geometry(description, path)
    assert geometry["forearm_link"].role == "collision" and geometry["forearm_link"].solids
    uri = "package://example-robot-data/robots/ur_description/meshes/ur5/collision/base.stl"
    assert resolve_uri(uri, path, PackagePaths()) is not None
    assert resolve_uri("package://nowhere/x.stl", path, PackagePaths()) is None


URDF_BASE_AND_ARM = """<robot name="r">
  <link name="base">
    <inertial><mass value="1"/><inertia ixx="50" ixy="0" ixz="0" iyy="50" iyz="0" izz="50"/></inertial>
    <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="arm">
    <inertial><mass value="2"/><inertia ixx="0.0125" ixy="0" ixz="0" iyy="0.0125" iyz="0"
      izz="0.00333"/></inertial>
    <collision><geometry><sphere radius="0.001"/></geometry></collision>
    <visual><geometry><box size="0.1 0.1 0.25"/></geometry></visual>
  </link>
</robot>
"""


def test_geometry_checks_on_the_world_and_on_token_collision_shapes(tmp_path):
    """A base welded to the world moves nothing: its implausible inertia is a warning with
    a fixed base and an error once it floats; a 1 mm collision sphere beside a 25 cm
    visual box is a token, so the arm is judged against the box (and passes)."""
    path = tmp_path / "robot.urdf"
    path.write_text(URDF_BASE_AND_ARM)
    fixed, floating = (dyn("check-inertia", path, "--format", "json", *extra)
                       for extra in ((), ("--free-flyer",)))
    assert (fixed.returncode, floating.returncode) == (0, 1), (fixed.stdout, floating.stdout)
    fixed, floating = (dyn("check-inertia", path, "--format", "json", "--all", *extra)
                       for extra in ((), ("--free-flyer",)))
    for result, severity in ((fixed, "warning"), (floating, "error")):
        findings = every_finding(json.loads(result.stdout))
        base = [f for f in findings if f["body"] == "base" and f["check"] == "plausibility"]
        assert [f["severity"] for f in base] == [severity]
        arm = [f for f in findings if f["body"] == "arm" and f["check"] == "plausibility"]
        assert arm and arm[0]["severity"] == "info" and arm[0]["details"]["role"] == "visual"
    assert "welded to the world" in base_message(fixed)


def test_an_inertia_about_the_origin_is_caught_when_it_is_only_a_few_times_too_large(tmp_path):
    """A 0.1 x 0.1 x 0.4 m, 1 kg box whose tensor was written about the link origin, 0.2 m
    from its com: only 3.7x the uniform inertia read about the com (below the 10x of
    plausibility), but exactly the box's read about the origin: a warning with the fix."""
    box = (1.0 / 12) * np.array([0.1**2 + 0.4**2, 0.1**2 + 0.4**2, 0.1**2 + 0.1**2])
    about_origin = (box + np.array([0.2**2, 0.2**2, 0.0])).tolist()
    path = tmp_path / "arm.urdf"
    path.write_text(f"""<robot name="r"><link name="base"/>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="arm">
    <inertial><origin xyz="0 0 0.2"/><mass value="1"/>
      <inertia ixx="{about_origin[0]!r}" ixy="0" ixz="0" iyy="{about_origin[1]!r}" iyz="0"
        izz="{about_origin[2]!r}"/></inertial>
    <collision><origin xyz="0 0 0.2"/><geometry><box size="0.1 0.1 0.4"/></geometry></collision>
  </link></robot>""")
    result = dyn("check-inertia", path, "--format", "json", "--fix")
    findings = json.loads(result.stdout)["findings"]
    origin = next(f for f in findings if f["check"] == "about-origin")
    assert result.returncode == 0 and origin["severity"] == "warning", origin
    fixed = np.array(origin["fix"]["inertia"])
    np.testing.assert_allclose(np.diag(fixed), box, rtol=1e-9)


def base_message(result) -> str:
    return next(f["message"] for f in json.loads(result.stdout)["findings"]
                if f["body"] == "base" and f["check"] == "plausibility")


# ----------------------------------------------------------------------------- robots

@pytest.mark.skipif(not URDFS, reason="example-robot-data is not installed")
@pytest.mark.parametrize("path", URDFS, ids=[os.path.relpath(p, ROBOTS) for p in URDFS])
def test_every_robot_gets_a_verdict_and_passes_verify(path):
    from treedyn.parsers import ParseError

    try:
        model = load_model(path)
    except ParseError:
        pytest.skip("not a loadable URDF")
    report = check_inertia(model, link_geometry(model.description, path))
    assert report.findings and {f.check for f in report.findings} <= set(CHECKS)
    assert all(f.source.file == path for f in report.findings if f.source.line)
    for floating in (model, build_model(model.description.with_free_flyer())):
        results = verify(floating, VerifyOptions(samples=3)).results
        assert not [r for r in results if r.status == "fail"], results
    pin = pytest.importorskip("pinocchio")
    blocks = [f for f in report.findings if f.check == "articulated-inertia"]
    singular = any(f.severity == "error" for f in blocks)
    flagged = any(f.status == "fail" or "implied by the mass finding" in f.message
                  for f in blocks)
    pinmodel = pin.buildModelFromUrdf(path)
    data = pinmodel.createData()
    if pinmodel.nv:  # det M = product of det D_j: M singular iff a D-block is
        M = pin.crba(pinmodel, data, pin.neutral(pinmodel))
        eigenvalues = np.linalg.eigvalsh(np.triu(M) + np.triu(M, 1).T)
        pin_singular = eigenvalues[0] <= 1e-12 * eigenvalues[-1]
        assert (not singular or pin_singular) and (not pin_singular or flagged)




@pytest.mark.skipif(not URDFS, reason="example-robot-data is not installed")
def test_verify_allows_ill_conditioned_free_fall():
    """icub floating has cond(M) up to 1e11 at verify's default states: free fall is an
    ABA solve, held to 10 eps cond(M) like the other solves, not to a fixed 1e-9."""
    path = os.path.join(ROBOTS, "icub_description", "robots", "icub.urdf")
    if not os.path.exists(path):
        pytest.skip("icub.urdf is not in this example-robot-data")
    report = verify(build_model(load_model(path).description.with_free_flyer()),
                    VerifyOptions())
    free_fall = next(r for r in report.results if r.name == "free-fall")
    assert free_fall.status == "pass" and "cond(M) up to" in free_fall.note, free_fall


def test_verify_holds_aba_on_milligram_bodies_to_the_rounding_of_their_wrenches(tmp_path):
    """Unit external wrenches on an 8 mg chain make tau and h 1e4 times M a: ABA's a then
    carries rounding of eps |M^-1| max(|tau|, |h|), far above eps cond(M) (dm_control's
    fruit fly failed at 1.75e-9 against 1e-9, with cond(M) ~ 1e3)."""
    links = "".join(f'<body pos="0 0 -0.002"><joint type="hinge" axis="{i % 2} {1 - i % 2} 0"/>'
                    '<geom type="capsule" size="0.0002" fromto="0 0 0 0 0 -0.002"/>'
                    for i in range(12))
    path = tmp_path / "fly.xml"
    path.write_text(f'<mujoco><worldbody><body><freejoint/><geom type="sphere" size="0.001"/>'
                    f'{links}{"</body>" * 13}</worldbody></mujoco>')
    report = verify(load_model(str(path)), VerifyOptions(samples=5))
    assert report.ok, report.results
    aba_rnea = next(r for r in report.results if r.name == "aba-rnea")
    assert aba_rnea.residual > 1e-9 and aba_rnea.tolerance > aba_rnea.residual, aba_rnea


GYM = gymnasium_models()


MJCF_MODELS = GYM + dm_control_models()


@pytest.mark.skipif(not MJCF_MODELS, reason="neither gymnasium nor dm_control is installed")
@pytest.mark.parametrize("path", MJCF_MODELS, ids=lambda p: os.path.basename(p) if p in GYM
                         else dm_control_id(p))
def test_every_gymnasium_and_dm_control_model_passes_check_inertia_and_verify(path):
    """MuJoCo compiles these models, so its own checks (mass, A + B >= C) pass: ours too,
    and none of our other checks calls any of their bodies an error."""
    result = dyn("check-inertia", path, "--format", "json")
    document = json.loads(result.stdout)
    assert result.returncode == 0 and document["ok"]
    assert not [f for f in document["findings"] if f["check"] in ("mass", "triangle")
                and f["status"] == "fail"]
    report = verify(load_model(path), VerifyOptions(samples=3))
    assert report.ok, report.results


@pytest.mark.skipif(not GYM, reason="gymnasium is not installed")
def test_mass_ratios_pair_the_files_bodies_not_the_joints_of_one_body():
    """hopper's torso has three joints: its pairs are torso -> thigh and on, never a
    massless torso -> torso (which warned 'mass ratio inf' on 11 of 14 gymnasium models)."""
    path = next(p for p in GYM if os.path.basename(p) == "hopper.xml")
    result = dyn("condition", path, "--samples", "3", "--strict", "--format", "json")
    ratios = json.loads(result.stdout)["mass_ratios"]
    assert [(r["parent"], r["child"]) for r in ratios] == [
        ("leg", "foot"), ("thigh", "leg"), ("torso", "thigh")]
    assert ratios[-1]["parent_mass"] == pytest.approx(3.66519, rel=1e-5)
    assert result.returncode == 0


# ----------------------------------------------------------------------------- identities

TREES = trees(8)


@settings(max_examples=25, deadline=None)
@given(TREES)
def test_verify_passes_on_random_trees(tree):
    seed, size, floating = tree
    model = random_model(np.random.default_rng(seed), size, floating)
    report = verify(model, VerifyOptions(samples=3, seed=seed % 1000))
    assert report.ok, report.results
    statuses = {r.name: r.status for r in report.results}
    floating_checks = (statuses["free-fall"], statuses["zero-base-actuation"])
    assert floating_checks == (("pass", "pass") if floating else ("skip", "skip"))


@settings(max_examples=25, deadline=None)
@given(TREES)
def test_d_blocks_bound_the_conditioning_and_match_the_factor(tree):
    seed, size, floating = tree
    rng = np.random.default_rng(seed)
    model = random_model(rng, size, floating)
    q = model.random_configuration(rng, 3)
    M = crba(model, q)
    smallest = np.linalg.eigvalsh(M)[:, 0]
    _, D = ltdl(model.dof_parent, M)
    for j, block in enumerate(articulated_blocks(model, q)):
        dofs = slice(model.idx_v[j], model.idx_v[j] + model.nv_joint[j])
        assert np.all(np.linalg.eigvalsh(block)[:, 0] >= smallest * (1 - 1e-9))
        np.testing.assert_allclose(np.linalg.det(block), np.prod(D[:, dofs], axis=1),
                                   rtol=1e-8)
    report = analyze(model, q=q)
    for block in report.blocks:
        assert report.cond.max() >= (1 / block.ratio) * (1 - 1e-9)


def test_verify_catches_a_broken_engine(monkeypatch):
    import treedyn.engine.analysis.verify as module

    healthy = module.crba

    def broken_crba(model, q):
        M = np.array(healthy(model, q))
        M[..., 0, -1] += 1e-6
        return M

    monkeypatch.setattr(module, "crba", broken_crba)
    result = dyn("verify", ARM, "--format", "json")
    document = json.loads(result.stdout)
    failed = {r["name"] for r in document["identities"] if r["status"] == "fail"}
    assert result.returncode == 1 and not document["ok"]
    assert {"rnea-mass", "rnea-columns", "crba-jacobians"} <= failed


def test_verify_catches_wrong_velocity_terms_shared_by_rnea_and_aba(monkeypatch):
    """A velocity-product error in the forward sweep, which RNEA and ABA share, kept every
    other identity: RNEA is compared with itself at the same v, ABA inverts the same error.
    Only the power identity ties the velocity terms to CRBA."""
    aba_module, rnea_module = sys.modules["treedyn.engine.aba"], sys.modules["treedyn.engine.rnea"]
    healthy = rnea_module.forward_sweep

    def broken_sweep(plan, W, q, has_v, *args):
        generic = healthy(plan, W, q, has_v, *args)
        if has_v:
            W.F[1:] += 0.3 * W.V[1:] * np.abs(W.V[1:])  # quadratic in v, does work
        return generic

    tool_arm = ROOT / "tests" / "data" / "arm_with_tool.urdf"
    assert json.loads(dyn("verify", tool_arm, "--free-flyer", "--format", "json").stdout)["ok"]
    monkeypatch.setattr(rnea_module, "forward_sweep", broken_sweep)
    monkeypatch.setattr(aba_module, "forward_sweep", broken_sweep)
    result = dyn("verify", tool_arm, "--free-flyer", "--format", "json")
    failed = {r["name"] for r in json.loads(result.stdout)["identities"] if r["status"] == "fail"}
    assert result.returncode == 1 and failed == {"power"}


def test_verify_measures_differences_against_what_they_subtract():
    """external-force and armature compare a difference of two RNEA calls; at |q| ~ 1e6
    the calls' rounding (1e13 * eps) failed the armature identity on a healthy model."""
    document = json.loads(dyn("verify", ROOT / "tests" / "data" / "far_reach.urdf",
                              "--format", "json").stdout)
    statuses = {r["name"]: r["status"] for r in document["identities"]}
    assert document["ok"] and statuses["armature"] == statuses["external-force"] == "pass"


def test_verify_skips_the_solves_where_m_is_singular(tmp_path):
    """A floating joint in the URDF plus --free-flyer: M is singular everywhere. free-fall
    'passed' with residual 21 against an infinite tolerance and zero-base-actuation failed;
    both are ABA solves and are skipped, without numpy's overflow warnings."""
    import warnings

    path = tmp_path / "double_float.urdf"
    inertial = ('<inertial><origin xyz="0.1 0.02 -0.03" rpy="0.3 -0.2 0.1"/><mass value="1"/>'
                '<inertia ixx="0.02" ixy="0.001" ixz="-0.002" iyy="0.03" iyz="0.0015" '
                'izz="0.025"/></inertial>')
    path.write_text(f'<robot name="edge"><link name="world"/><link name="l1">{inertial}</link>'
                    f'<link name="l2">{inertial}</link><joint name="float" type="floating">'
                    '<parent link="world"/><child link="l1"/></joint><joint name="j2" '
                    'type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0.1 0.3"'
                    ' rpy="0.1 0.2 0.3"/><axis xyz="0 0 1"/><limit lower="-2" upper="2" '
                    'effort="10" velocity="1"/></joint></robot>')
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = dyn("verify", path, "--free-flyer", "--format", "json")
    document = json.loads(result.stdout)
    statuses = {r["name"]: r["status"] for r in document["identities"]}
    assert result.returncode == 0 and result.stderr == ""
    assert {statuses[name] for name in ("aba-rnea", "factor-aba", "free-fall",
                                        "zero-base-actuation")} == {"skip"}


def test_verify_free_flyer_runs_the_floating_base_identities():
    tool_arm = ROOT / "tests" / "data" / "arm_with_tool.urdf"  # the arm on a 2 kg base
    document = json.loads(dyn("verify", tool_arm, "--free-flyer", "--format", "json").stdout)
    statuses = {r["name"]: r["status"] for r in document["identities"]}
    assert document["ok"] and statuses["free-fall"] == statuses["zero-base-actuation"] == "pass"
    table = dyn("verify", ARM).stdout
    assert "rnea-mass" in table and "skip" in table
    assert table.rstrip().endswith("ok: 0 of 10 identities failed; 2 not checked (free-fall, "
                                   "zero-base-actuation)")  # an ok says what it did not check


# ----------------------------------------------------------------------------- CLI

def test_github_annotations_name_file_line_and_check():
    path = BROKEN / "negative_mass.urdf"
    result = dyn("check-inertia", path, "--format", "github")
    assert result.returncode == 1
    line = element_line(path, "payload", "inertial")
    pattern = re.compile(r"^::(error|warning) file=([^,]+),line=(\d+),title=(.+?)::(.+)$")
    parsed = [pattern.match(text) for text in result.stdout.splitlines()]
    assert all(parsed)
    assert any(m.group(1) == "error" and m.group(2) == str(path) and int(m.group(3)) == line
               and "mass" in m.group(4) for m in parsed)


def test_check_inertia_on_a_clean_model_exits_0_and_lists_all_with_all():
    result = dyn("check-inertia", ARM)
    assert result.returncode == 0 and "0 error(s)" in result.stdout
    assert "triangle" in dyn("check-inertia", ARM, "--all").stdout


@pytest.mark.parametrize("args", [
    ["check-inertia", ARM, "--tolerance", "-1"],
    ["check-inertia", "no/such/model.urdf"],
    ["verify", ARM, "--samples", "0"],
    ["condition", ARM, "--format", "github"],
    # NaN passes typer's min/max checks: every identity failed against a nan tolerance
    ["verify", ARM, "--rtol", "nan"],
    ["condition", ARM, "--max-cond", "nan"],
    ["check-inertia", ARM, "--tolerance", "nan"],
    ["bench", ARM, "--seconds", "inf"],
])
def test_bad_usage_exits_2_with_one_line(args):
    result = dyn(*args)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


def test_bench_without_a_writable_temporary_folder_says_so(monkeypatch):
    import tempfile

    def nowhere():
        raise FileNotFoundError("No usable temporary directory found")

    monkeypatch.setattr(tempfile, "gettempdir", nowhere)
    result = dyn("bench", ARM, "--seconds", "0.01")
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        "no writable temporary folder for the file rows: set TMPDIR to one, or skip them "
        "with --no-files"]
    assert dyn("bench", ARM, "--seconds", "0.01", "--no-files").returncode == 0


@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_condition_of_a_model_without_dofs_keeps_its_format(tmp_path, fmt):
    path = tmp_path / "still.urdf"
    path.write_text('<robot name="still"><link name="base"><inertial><mass value="1"/>'
                    '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
                    '</link></robot>')
    result = dyn("condition", path, "--format", fmt)
    assert result.returncode == 0
    if fmt == "json":
        document = json.loads(result.stdout)
        assert document["samples"] == 0 and document["cond"] is None and "no degrees" in \
            document["note"]
    elif fmt == "csv":
        assert result.stdout == "sample,cond,lambda_min,lambda_max\n"
    else:
        assert "no degrees of freedom" in result.stdout


def test_info_draws_the_tree_with_supports_and_subtrees():
    path = ROOT / "tests" / "data" / "arm_with_tool.urdf"
    document = json.loads(dyn("info", path, "--free-flyer", "--format", "json").stdout)
    model = load_model(str(path), free_flyer=True)
    for entry, joint in zip(document["tree"], document["joints"]):
        j = model.joint_index(entry["joint"])
        assert entry["subtree_dofs"][1] - entry["subtree_dofs"][0] == joint["nv_subtree"]
        assert entry["parent"] == joint["parent"] and entry["depth"] == (
            0 if joint["parent"] == "world"
            else document["tree"][model.joint_index(joint["parent"])]["depth"] + 1)
        assert entry["subtree_joints"] == [j, int(model.subtree_end[j])]
        first, end = entry["subtree_joints"]
        assert sum(document["joints"][k]["nv"] for k in range(first, end)) == \
            joint["nv_subtree"]
    table = dyn("info", path).stdout
    assert "`- joint1 (revolute) -> link1" in table and "   `- joint2" in table


def test_info_draws_a_chain_deeper_than_the_recursion_limit(tmp_path):
    depth = sys.getrecursionlimit() + 10
    links = "".join(f'<link name="l{k}"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" '
                    'ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>'
                    for k in range(depth + 1))
    joints = "".join(f'<joint name="j{k}" type="continuous"><parent link="l{k}"/>'
                     f'<child link="l{k + 1}"/><axis xyz="0 0 1"/></joint>' for k in range(depth))
    path = tmp_path / "deep.urdf"
    path.write_text(f'<robot name="deep">{links}{joints}</robot>')
    text = dyn("info", path).stdout
    lines = text.splitlines()
    start = lines.index("world") + 1
    drawn = 32  # levels indented; deeper lines say their depth and keep the indent
    for k, line in enumerate(lines[start:start + depth]):
        indent = " " * (3 * min(k, drawn - 1)) + (f"[{k}] " if k >= drawn else "")
        assert line.startswith(indent + f"`- j{k} (continuous) -> l{k + 1} [1 kg]"), line
    document = json.loads(dyn("info", path, "--format", "json").stdout)
    assert [entry["depth"] for entry in document["tree"]] == list(range(depth))
    assert document["tree"][-1]["subtree_joints"] == [depth - 1, depth]
    assert document["tree"][0]["children"] == ["j1"] and document["tree"][-1]["children"] == []
    # linear in the chain: about 330 bytes a joint over the four tables (an indent growing
    # with depth alone made 1.5 MB here, and 600 MB at 20 000 joints)
    assert len(text) < 400 * depth


def test_info_stays_linear_with_long_names(tmp_path):
    """Two 200 000-character names printed a 1 GB table (wrapped cells padded to width)."""
    long_link, long_joint = "a" * 200_000, "b" * 200_000
    inertial = ('<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" '
                'iyz="0" izz="0.1"/></inertial>')
    path = tmp_path / "long.urdf"
    path.write_text(
        f'<robot name="r"><link name="base"/><link name="{long_link}">{inertial}</link>'
        f'<joint name="{long_joint}" type="continuous"><parent link="base"/>'
        f'<child link="{long_link}"/><axis xyz="0 0 1"/></joint></robot>')
    table = dyn("info", path).stdout
    assert len(table) < 20_000 and "(200000 characters)" in table
    document = json.loads(dyn("info", path, "--format", "json").stdout)
    assert document["joints"][0]["name"] == long_joint  # JSON keeps names whole
    result = dyn("inverse", path, "--q", "x=1")
    assert result.returncode == 2 and len(result.stderr) < 1_000
    assert result.stderr.count("\n") == 1 and "(200000 characters)" in result.stderr


def test_mass_sparsity_reports_factor_fill_in_and_confirmation():
    path = ROOT / "tests" / "data" / "arm_with_tool.urdf"
    document = json.loads(dyn("mass", path, "--free-flyer", "--sparsity",
                              "--format", "json").stdout)
    sparsity = document["sparsity"]
    assert sparsity["confirmed"]["max_outside"] == 0.0
    assert sparsity["confirmed"]["solve_vs_aba"] < 1e-9
    assert sparsity["fill_in"]["tree_order"] == 0
    assert len(sparsity["factor"]["colind"]) == sparsity["nnz_factor"]
    table = dyn("mass", ARM, "--sparsity", "--format", "table").stdout
    assert "fill-in" in table and "confirmed on M(q)" in table


COAXIAL = """<robot name="coax"><link name="base"/>
<link name="a"><inertial><mass value="0"/>
<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
<link name="b"><inertial><origin xyz="0.1 0.2 0.3"/><mass value="1.3"/>
<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
<joint name="p1" type="prismatic"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
<joint name="p2" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


def test_mass_sparsity_of_a_singular_model_says_so_without_numpy_warnings(tmp_path):
    """Two coaxial slides, the first moving nothing: M is singular, the solve gives inf."""
    path = tmp_path / "coax.urdf"
    path.write_text(COAXIAL)
    result = subprocess.run([sys.executable, "-m", "treedyn.cli", "mass", str(path),
                             "--sparsity", "--format", "json"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stderr == ""
    assert json.loads(result.stdout)["sparsity"]["confirmed"]["solve_vs_aba"] is None


def test_start_up_stays_lean_with_the_diagnostics_registered():
    """The app's command table loads no command; a dynamics command loads no diagnostic
    (scipy) and no table printer (tabulate)."""
    heavy = "('numpy', 'lxml', 'scipy', 'tabulate', 'treedyn.parsers', 'treedyn.engine')"
    for module, loaded in (("treedyn.cli.app", "[]"),
                           ("treedyn.cli.commands.dynamics",
                            "['lxml', 'numpy', 'treedyn.engine', 'treedyn.parsers']")):
        probe = (f"import sys\nimport {module}\n"
                 f"print(sorted(m for m in {heavy} if m in sys.modules))\n")
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True)
        assert out.stdout.decode().strip() == loaded, module


def test_geometry_in_a_description_changes_no_dynamics():
    """Adding geometry to a description changes nothing in the dynamics."""
    rng = np.random.default_rng(5)
    description = random_description(rng, 4)
    shaped = dataclasses.replace(description, links=[
        dataclasses.replace(link, geometry=(Shape("sphere", np.array([0.1])),))
        for link in description.links])
    q = build_model(description).random_configuration(rng, 2)
    np.testing.assert_array_equal(crba(build_model(description), q),
                                  crba(build_model(shaped), q))


def test_an_mjcf_mesh_given_by_its_vertices_is_not_a_missing_file(tmp_path):
    path = tmp_path / "vertices.xml"
    path.write_text('<mujoco><asset><mesh name="tet" vertex="0 0 0 0.1 0 0 0 0.1 0 0 0 0.1"/>'
                    '</asset><worldbody><body><joint/><geom type="mesh" mesh="tet"/></body>'
                    '</worldbody></mujoco>')
    result = dyn("check-inertia", path, "--format", "github")
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
