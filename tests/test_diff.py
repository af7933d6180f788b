"""``dyn diff OLD NEW``: planted changes are reported, each one and nothing else; a model
against itself and against a faithful conversion (MuJoCo's own URDF import, a hand-written
MJCF with turned body frames) reports nothing; M(q) against CRBA at the same
configurations; --fail-above exit codes; the JSON and GitHub outputs."""
from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

from treedyn.engine import crba
from treedyn.engine.analysis.diff import KINDS, NOTE_KINDS, DiffOptions, diff
from treedyn.parsers import load_model

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
HEAVIER = ROOT / "fixtures" / "two_link_arm_heavier.urdf"
ARM_TEXT = ARM.read_text()

JOINT3 = """
  <joint name="joint3" type="revolute">
    <parent link="link2"/>
    <child link="link3"/>
    <origin xyz="0 0 -1" rpy="0 0 0"/>
    <axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="10"/>
  </joint>
  <link name="link3">
    <inertial>
      <origin xyz="0 0 -0.05"/>
      <mass value="0.2"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/>
    </inertial>
  </link>
</robot>"""

WRIST = """  <joint name="wrist" type="revolute">
    <parent link="link1"/>
    <child link="wrist_link"/>
    <origin xyz="0 0 -1"/>
    <axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="10"/>
  </joint>
  <link name="wrist_link">
    <inertial><mass value="0.1"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
  </link>
  <joint name="joint2" type="revolute">
    <parent link="wrist_link"/>
    <child link="link2"/>
    <origin xyz="0 0 0" rpy="0 0 0"/>"""

JOINT2_HEAD = """  <joint name="joint2" type="revolute">
    <parent link="link1"/>
    <child link="link2"/>
    <origin xyz="0 0 -1" rpy="0 0 0"/>"""


def after_link2(text: str, old: str, new: str) -> str:
    """``text`` with ``old`` replaced by ``new`` in link2's element only."""
    start = text.index('<link name="link2">')
    assert old in text[start:]
    return text[:start] + text[start:].replace(old, new, 1)


PLANTED = {
    # link2 is 10 % heavier, its inertia about the com unchanged: mass and total mass only
    "heavier": (after_link2(ARM_TEXT, '<mass value="1.0"/>', '<mass value="1.1"/>'),
                {("mass", "link2"), ("total-mass", "")}),
    "moved": (ARM_TEXT.replace('<origin xyz="0 0 -1" rpy="0 0 0"/>',
                               '<origin xyz="0 0 -1.1" rpy="0 0 0"/>'),
              {("placement", "joint2")}),
    "added": (ARM_TEXT.replace("</robot>", JOINT3),
              {("joint-added", "joint3"), ("body-added", "link3"), ("total-mass", "")}),
    "flipped": (ARM_TEXT.replace('<axis xyz="0 -1 0"/>', '<axis xyz="0 1 0"/>', 1),
                {("axis", "joint1")}),
    "inserted": (ARM_TEXT.replace(JOINT2_HEAD, WRIST),
                 {("joint-added", "wrist"), ("body-added", "wrist_link"), ("total-mass", ""),
                  ("parent", "joint2"), ("coordinates", "joint2")}),
}


def run_dyn(*args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``dyn ARGS`` run in this process."""
    from treedyn.cli.app import run

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), \
            pytest.raises(SystemExit) as ending:
        run([str(arg) for arg in args])
    code = ending.value.code
    return (0 if code is None else code), stdout.getvalue(), stderr.getvalue()


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def kinds(report) -> set[tuple[str, str]]:
    assert {change.kind for change in report.changes} <= set(KINDS)
    assert {note.kind for note in report.notes} <= set(NOTE_KINDS)
    return {(change.kind, change.subject) for change in report.changes}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_planted_change_is_reported_and_nothing_else(tmp_path, name):
    text, expected = PLANTED[name]
    report = diff(load_model(ARM), load_model(write(tmp_path, f"{name}.urdf", text)))
    assert kinds(report) == expected
    assert report.matrix is not None and report.matrix.worst > 1e-3  # each one changes M
    assert not report.notes


def test_the_sizes_of_planted_changes(tmp_path):
    report = diff(load_model(ARM), load_model(write(tmp_path, "a.urdf", PLANTED["heavier"][0])))
    by_kind = {change.kind: change for change in report.changes}
    assert by_kind["mass"].change == pytest.approx(0.1, rel=1e-12)
    assert by_kind["total-mass"].change == pytest.approx(0.05, rel=1e-12)
    assert report.max_mass_change == pytest.approx(0.1, rel=1e-12)
    report = diff(load_model(ARM), load_model(write(tmp_path, "b.urdf", PLANTED["moved"][0])))
    (moved,) = report.changes
    assert moved.old == [0, 0, -1] and moved.new == pytest.approx([0, 0, -1.1])
    assert moved.change == pytest.approx(0.1) and moved.detail == "parent"
    report = diff(load_model(ARM), load_model(write(tmp_path, "c.urdf", PLANTED["flipped"][0])))
    (flipped,) = report.changes
    assert flipped.change == pytest.approx(math.pi) and flipped.new == pytest.approx([0, 1, 0])


def test_inserted_joint_moves_the_coordinates_after_it(tmp_path):
    old, new = load_model(ARM), load_model(write(tmp_path, "i.urdf", PLANTED["inserted"][0]))
    report = diff(old, new)
    (moved,) = [c for c in report.changes if c.kind == "coordinates"]
    assert moved.old == {"idx_q": 1, "idx_v": 1} and moved.new == {"idx_q": 2, "idx_v": 2}
    # joint2's origin is where it was in the world: reparented, not moved
    assert not [c for c in report.changes if c.kind == "placement"]
    # M compared by names: the old (joint1, joint2) entry against the new one at v[0], v[2]
    assert {(p.old_dofs, p.new_dofs) for p in report.matrix.pairs} <= {
        ((0, 0), (0, 0)), ((0, 1), (0, 2)), ((1, 1), (2, 2))}


def test_the_mass_matrix_is_crba_at_the_same_configurations(tmp_path):
    """Every reported entry is |M_new - M_old| / sqrt(M_ii M_jj) of CRBA at the sampled q."""
    old, new = load_model(ARM), load_model(write(tmp_path, "m.urdf", PLANTED["moved"][0]))
    report = diff(old, new, DiffOptions(samples=7, seed=3))
    matrix = report.matrix
    assert matrix.q_old.shape == (7, 2) and np.array_equal(matrix.q_old[0], old.q_neutral)
    np.testing.assert_array_equal(matrix.q_new, matrix.q_old)  # same joints, same order
    A, B = crba(old, matrix.q_old), crba(new, matrix.q_new)
    d = np.sqrt(np.einsum("nii->ni", A))
    expected = (np.abs(B - A) / (d[:, :, None] * d[:, None, :])).max(axis=0)
    assert matrix.worst == pytest.approx(expected.max(), rel=1e-12)
    for pair in matrix.pairs:
        assert pair.change == pytest.approx(expected[pair.old_dofs], rel=1e-12)
        assert pair.old == A[pair.sample][pair.old_dofs]


def test_heavier_link_scales_its_own_entry_by_exactly_ten_percent():
    """link2 with mass and inertia times 1.1: its joint's diagonal entry of M is 1.1 times
    the old one at every configuration; the entry is the largest change."""
    report = diff(load_model(ARM), load_model(HEAVIER))
    worst = report.matrix.pairs[0]
    assert worst.old_dofs == (1, 1) and worst.change == pytest.approx(0.1, rel=1e-12)
    assert kinds(report) == {("mass", "link2"), ("inertia", "link2"), ("total-mass", "")}


def test_a_model_against_itself_reports_nothing():
    for path in (ARM, ROOT / "fixtures" / "mjcf" / "multijoint.xml",
                 ROOT / "fixtures" / "broken" / "triangle_violation.urdf"):
        report = diff(load_model(path), load_model(path))
        assert not report.changes and not report.notes and report.matrix.worst == 0.0
    code, out, err = run_dyn("diff", ARM, ARM, "--fail-above", "0")
    assert code == 0 and "no change beyond the tolerance" in out and not err


def test_limits_and_armature(tmp_path):
    """A narrower limit, a limit dropped (revolute to continuous) and armature: the
    joint's own changes; M changes by the armature alone."""
    limited = ARM_TEXT.replace('lower="-3.14159265358979" upper="3.14159265358979"',
                               'lower="-1" upper="3.14159265358979"', 1)
    report = diff(load_model(ARM), load_model(write(tmp_path, "l.urdf", limited)))
    (change,) = report.changes
    assert (change.kind, change.subject, change.detail) == ("limits", "joint1", "lower")
    assert change.new == -1.0 and change.unit == "rad"
    free = ARM_TEXT.replace('<joint name="joint2" type="revolute">',
                            '<joint name="joint2" type="continuous">')
    report = diff(load_model(ARM), load_model(write(tmp_path, "c.urdf", free)))
    assert kinds(report) == {("type", "joint2"), ("limits", "joint2")}
    assert {c.new for c in report.changes if c.kind == "limits"} == {-math.inf, math.inf}
    assert report.matrix.worst == 0.0
    geared = TURNED_MJCF.replace('<joint name="joint2" axis="0 0 1"',
                                 '<joint name="joint2" armature="0.05" axis="0 0 1"')
    mjcf = write(tmp_path, "a.xml", geared)
    report = diff(load_model(write(tmp_path, "t.xml", TURNED_MJCF)), load_model(mjcf))
    (change,) = report.changes
    assert (change.kind, change.subject, change.old, change.new) == ("armature", "joint2",
                                                                    [0.0], [0.05])
    assert report.matrix.pairs[0].new - report.matrix.pairs[0].old == pytest.approx(0.05)


def test_a_flipped_consistency_check_is_reported(tmp_path):
    bad = after_link2(ARM_TEXT, 'izz="0.00166666666666667"', 'izz="0.2"')
    report = diff(load_model(ARM), load_model(write(tmp_path, "bad.urdf", bad)))
    flipped = {(c.detail, c.old, c.new) for c in report.changes if c.kind == "consistency"}
    assert ("triangle", "ok", "error") in flipped
    assert {c.subject for c in report.changes} == {"link2"}


def test_fail_above_exit_codes():
    assert run_dyn("diff", ARM, HEAVIER)[0] == 0  # a report, not a check
    assert run_dyn("diff", ARM, HEAVIER, "--fail-above", "0.2")[0] == 0
    assert run_dyn("diff", ARM, HEAVIER, "--fail-above", "0.05")[0] == 1
    code, out, _ = run_dyn("diff", ARM, HEAVIER, "--fail-above", "0.05", "--format", "json")
    assert code == 1 and json.loads(out)["failed"] is True
    code, _, err = run_dyn("diff", ARM, ROOT / "fixtures" / "missing.urdf")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "missing.urdf" in err
    code, _, err = run_dyn("diff", ARM, HEAVIER, "--fail-above", "nan")
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_json_document():
    code, out, _ = run_dyn("diff", ARM, HEAVIER, "--format", "json", "--samples", "4")
    document = json.loads(out)
    assert code == 0
    assert {"old", "new", "changed", "changes", "notes", "mass_matrix", "max_mass_change",
            "max_mass_matrix_change", "tolerance", "size", "fail_above", "failed"} <= set(document)
    assert document["old"] == {"model": "two_link_arm", "format": "urdf", "source": str(ARM)}
    mass = next(c for c in document["changes"] if c["kind"] == "mass")
    assert mass["subject"] == "link2" and mass["old"] == 1.0 and mass["new"] == 1.1
    assert mass["unit"] == "relative" and "+10 %" in mass["message"]
    matrix = document["mass_matrix"]
    assert matrix["samples"] == 4 and matrix["dofs"] == 2
    assert matrix["pairs"][0]["dofs"] == ["joint2", "joint2"]
    assert matrix["max_change"] == pytest.approx(0.1, rel=1e-12)
    assert document["changed"] is True and document["failed"] is False


def test_github_annotations_escape_and_fail(tmp_path):
    code, out, _ = run_dyn("diff", ARM, HEAVIER, "--format", "github", "--fail-above", "0.05")
    lines = out.splitlines()
    assert code == 1 and all(line.startswith(("::warning ", "::error ")) for line in lines)
    mass = next(line for line in lines if "mass (link2)" in line)
    assert mass.startswith(f"::error file={HEAVIER},line=") and "+10 %25" in mass
    assert any(line.startswith("::error") and "M(q)" in line for line in lines)
    code, out, _ = run_dyn("diff", ARM, ARM, "--format", "github")
    assert code == 0 and out == ""


def mujoco_conversion(urdf: Path, out: Path) -> Path:
    mujoco = pytest.importorskip("mujoco")
    model = mujoco.MjModel.from_xml_path(str(urdf))
    mujoco.mj_saveLastXML(str(out), model)
    return out


def test_mujocos_conversion_of_a_urdf_reports_nothing(tmp_path):
    """MuJoCo's URDF import, saved as MJCF (6 significant digits): nothing beyond 1e-5."""
    for name, text in (("arm", ARM_TEXT), ("added", PLANTED["added"][0])):
        urdf = write(tmp_path, f"{name}.urdf", text)
        mjcf = mujoco_conversion(urdf, tmp_path / f"{name}.xml")
        old, new = load_model(urdf), load_model(mjcf)
        assert new.format == "mjcf"
        report = diff(old, new)
        assert not report.changes and not report.notes
        assert 0 < report.matrix.worst < 1e-5  # the printed digits, well below the tolerance
        assert run_dyn("diff", urdf, mjcf, "--fail-above", "0")[0] == 0  # none reported
        planted = diff(load_model(HEAVIER), new) if name == "arm" else None
        if planted is not None:  # and across formats a real change still shows
            assert ("mass", "link2") in kinds(planted)


# The two-link arm written by hand in MJCF with every body frame turned 90 degrees about x
# against the URDF link frames (axes, com, inertia and child positions turned with it):
# the same physics in other frames, so nothing to report.
TURNED_MJCF = """<mujoco model="two_link_arm">
  <compiler angle="radian"/>
  <worldbody>
    <body name="link1" quat="0.7071067811865476 0.7071067811865476 0 0">
      <inertial pos="0 -0.5 0" mass="1" fullinertia="0.0841666666666667 0.00166666666666667
                0.0841666666666667 0 0 0"/>
      <joint name="joint1" axis="0 0 1" range="-3.14159265358979 3.14159265358979"/>
      <body name="link2" pos="0 -1 0">
        <inertial pos="0 -0.5 0" mass="1" fullinertia="0.0841666666666667 0.00166666666666667
                  0.0841666666666667 0 0 0"/>
        <joint name="joint2" axis="0 0 1" range="-3.14159265358979 3.14159265358979"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_other_frame_conventions_across_formats_report_nothing(tmp_path):
    mjcf = write(tmp_path, "turned.xml", TURNED_MJCF)
    report = diff(load_model(ARM), load_model(mjcf))
    assert not report.changes and report.matrix.worst < 1e-12
    code, out, _ = run_dyn("diff", ARM, mjcf)
    assert code == 0 and "no change beyond the tolerance" in out
    # a moved joint in the URDF is still one change, given world-aligned
    moved = diff(load_model(write(tmp_path, "moved.urdf", PLANTED["moved"][0])),
                 load_model(mjcf))
    (change,) = moved.changes
    assert (change.kind, change.subject, change.detail) == ("placement", "joint2",
                                                            "world-aligned")
    assert change.old == pytest.approx([0, 0, -1.1]) and change.new == pytest.approx([0, 0, -1])


FLOATING_URDF = ARM_TEXT.replace('<link name="base"/>', """<link name="base">
    <inertial><origin xyz="0.1 0 0"/><mass value="2"/>
      <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial>
  </link>""")

FLOATING_MJCF = """<mujoco model="two_link_arm">
  <compiler angle="radian"/>
  <worldbody>
    <body name="base" pos="0.3 0.2 1" quat="0.9 0.1 0.3 0.2">
      <freejoint name="floating"/>
      <inertial pos="0.1 0 0" mass="2" fullinertia="0.02 0.03 0.04 0 0 0"/>
      <body name="link1">
        <inertial pos="0 0 -0.5" mass="1" fullinertia="0.0841666666666667 0.0841666666666667
                  0.00166666666666667 0 0 0"/>
        <joint name="joint1" axis="0 -1 0" range="-3.14159265358979 3.14159265358979"/>
        <body name="link2" pos="0 0 -1">
          <inertial pos="0 0 -0.5" mass="1" fullinertia="0.0841666666666667
                    0.0841666666666667 0.00166666666666667 0 0 0"/>
          <joint name="joint2" axis="0 -1 0" range="-3.14159265358979 3.14159265358979"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_free_flyer_against_a_freejoint(tmp_path):
    """--free-flyer floats the URDF only; the floating roots are matched although their
    names differ, their coordinate conventions are noted, and M agrees once the MJCF's
    world-frame linear velocity is carried into Pinocchio's body frame."""
    urdf, mjcf = write(tmp_path, "f.urdf", FLOATING_URDF), write(tmp_path, "f.xml", FLOATING_MJCF)
    old = load_model(urdf, free_flyer=True)
    new = load_model(mjcf, free_flyer=True, urdf_only=True)
    report = diff(old, new)
    assert not report.changes
    assert {(n.kind, n.subject) for n in report.notes} == {("matched", "root_joint"),
                                                           ("layout", "root_joint")}
    assert report.matrix.dofs == 8 and report.matrix.worst < 1e-12
    # the configurations are the same ones: MuJoCo's quaternion is scalar first
    np.testing.assert_array_equal(report.matrix.q_new[:, 3:7],
                                  np.roll(report.matrix.q_old[:, 3:7], 1, axis=1))
    # without the change of basis the entries coupling the linear dofs would differ
    A, B = crba(old, report.matrix.q_old), crba(new, report.matrix.q_new)
    assert np.abs(A - B).max() > 1e-3
    code, out, _ = run_dyn("diff", urdf, mjcf, "--free-flyer", "--format", "json")
    assert code == 0 and json.loads(out)["changes"] == []


def test_long_names_are_shortened_in_tables_and_whole_in_json(tmp_path):
    """A 200 000-character joint name: the table and the annotations stay short, JSON
    keeps it whole."""
    name = "j" * 200_000
    long = ARM_TEXT.replace('name="joint2"', f'name="{name}"')
    old = write(tmp_path, "old.urdf", long)
    new = write(tmp_path, "new.urdf", long.replace('<origin xyz="0 0 -1" rpy="0 0 0"/>',
                                                   '<origin xyz="0 0 -1.1" rpy="0 0 0"/>'))
    code, table, _ = run_dyn("diff", old, new)
    assert code == 0 and len(table) < 5_000 and "(200000 characters)" in table
    code, annotations, _ = run_dyn("diff", old, new, "--format", "github")
    assert code == 0 and len(annotations) < 5_000
    code, out, _ = run_dyn("diff", old, new, "--format", "json")
    assert json.loads(out)["changes"][0]["subject"] == name
