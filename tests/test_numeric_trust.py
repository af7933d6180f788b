"""The numerical commands never end in an internal error nor print silent nonsense.

Each case runs ``dyn`` in a subprocess under a 2 GiB address-space limit and a timeout:
degenerate identification logs (zero, overflowing, one state, constant, too short, without
v or a) are one line on stderr naming the log and the problem, exit 2, and vanishing
torques are a report, not an internal error; a model whose M overflows is exit 2 in
``condition`` as in ``inverse``, and ``forward`` does not blame a mass there; two models
that share no joint and no body name say so (text and JSON) and fail a ``--fail-above``
gate, and without a dof in common no change of M is claimed; a ring on a massless floating
base (its joint and the free flyer's rotation about the same axis are one motion) has a
singular M: ``forward`` refuses it naming both joints, ``condition`` names the singularity
and the joints.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reference_models import robots_root

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
MEMORY = 2 << 30

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="rlimits")


def bounded():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run(*args):
    """(exit code, stdout, stderr lines) of ``dyn ARGS``."""
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", *map(str, args)], cwd=ROOT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, preexec_fn=bounded)
    return done.returncode, done.stdout, done.stderr.splitlines()


def refused(*args) -> str:
    """The one stderr line of a run that must end with exit 2 (no traceback)."""
    code, _, lines = run(*args)
    assert code == 2 and len(lines) == 1, (code, lines[-5:])
    assert "internal error" not in lines[0] and "Traceback" not in lines[0]
    return lines[0]


# ------------------------------------------------------------------------------ identify
def arm_log(path: Path, count: int = 60, seed: int = 0, **replace) -> Path:
    """A log of the two-link arm (q, v, a, tau as ``dyn inverse`` gives plus noise); keys
    in ``replace`` override an array (None: left out)."""
    from treedyn.engine import rnea
    from treedyn.parsers import load_model

    model = load_model(str(ARM))
    rng = np.random.default_rng(seed)
    q, v, a = (rng.uniform(-2, 2, size=(count, 2)) for _ in range(3))
    tau = rnea(model, q, v, a) + 0.01 * rng.normal(size=(count, 2))
    arrays = {"q": q, "v": v, "a": a, "tau": tau}
    arrays.update(replace)
    np.savez(path, **{k: x for k, x in arrays.items() if x is not None})
    return path


@pytest.mark.parametrize("case, replace, words", [
    ("zero", {"tau": np.zeros((60, 2))}, "the torques to fit are zero in all 60 states"),
    ("huge", {"tau": np.full((60, 2), 1e300)}, "too large"),
    ("huge-a", {"a": np.full((60, 2), 1e300)}, "too large"),
])
def test_degenerate_torques_are_one_line(tmp_path, case, replace, words):
    log = arm_log(tmp_path / f"{case}.npz", **replace)
    line = refused("identify", ARM, "--input", log, "--quiet")
    assert line.startswith(f"{log}: ") and words in line, line


@pytest.mark.parametrize("table", [False, True])
def test_huge_torques_are_refused_in_both_formats(tmp_path, table):
    log = arm_log(tmp_path / "huge.npz", tau=np.full((60, 2), 1e300))
    line = refused("identify", ARM, "--input", log, "--format", "table" if table else "json")
    assert line.startswith(f"{log}: ") and "overflow" in line, line


def test_a_single_state_is_too_short(tmp_path):
    log = arm_log(tmp_path / "one.npz", count=1)
    line = refused("identify", ARM, "--input", log, "--quiet")
    assert line.startswith(f"{log}: too short: 1 state for the 2 base parameters"), line


def test_fewer_states_than_base_parameters_is_too_short(tmp_path):
    log = arm_log(tmp_path / "three.npz", count=3)
    line = refused("identify", ARM, "--input", log, "--quiet")
    assert line.startswith(f"{log}: too short: 3 states for the 6 base parameters"), line


def test_a_constant_log_is_refused(tmp_path):
    state = {k: np.tile(np.array([[0.3, -0.2]]), (60, 1)) for k in ("q", "v", "a")}
    log = arm_log(tmp_path / "constant.npz", tau=np.tile([[1.5, 0.5]], (60, 1)), **state)
    line = refused("identify", ARM, "--input", log, "--quiet")
    assert line.startswith(f"{log}: all 60 states are the same"), line


@pytest.mark.parametrize("missing", ["v", "a"])
def test_a_log_without_v_or_a_is_refused(tmp_path, missing):
    """The same log with v and a is identified (the 6 base parameters of the arm, sigma
    near the noise); without one of them it is refused, not fitted as a static model."""
    code, out, _ = run("identify", ARM, "--input", arm_log(tmp_path / "log.npz"),
                       "--format", "json", "--quiet")
    document = json.loads(out)
    assert code == 0 and document["rank"] == 6 and document["sigma"] < 0.05
    log = arm_log(tmp_path / f"no_{missing}.npz", **{missing: None})
    line = refused("identify", ARM, "--input", log, "--quiet")
    assert line.startswith(f"{log}: the log has no {missing}:"), line


# ---------------------------------------------------------------------------------- diff
def unrelated_models() -> tuple[str, str]:
    root = robots_root()
    if not root:
        pytest.skip("example-robot-data is not installed")
    return (f"{root}/talos_data/robots/talos_reduced.urdf",
            f"{root}/panda_description/urdf/panda.urdf")


def test_diff_of_unrelated_models_says_they_share_nothing():
    talos, panda = unrelated_models()
    code, out, _ = run("diff", talos, panda)
    assert code == 0 and "the models share nothing" in out
    assert "of M 0 %" not in out  # no size of change is claimed
    code, out, _ = run("diff", talos, panda, "--format", "json")
    document = json.loads(out)
    assert code == 0 and document["shared"] == {"joints": 0, "bodies": 0, "nothing": True}


@pytest.mark.parametrize("fmt", ["table", "json", "github"])
def test_sharing_nothing_fails_any_fail_above_gate(fmt):
    talos, panda = unrelated_models()
    code, out, _ = run("diff", talos, panda, "--fail-above", "1000", "--format", fmt)
    assert code == 1, out[-500:]
    if fmt == "json":
        assert json.loads(out)["failed"] is True
    else:
        assert "share nothing" in out


def test_related_models_share_their_names():
    code, out, _ = run("diff", ARM, ROOT / "fixtures" / "two_link_arm_heavier.urdf",
                       "--format", "json")
    document = json.loads(out)
    assert code == 0 and document["shared"] == {"joints": 2, "bodies": 2, "nothing": False}


# ------------------------------------------------------------------ overflow and singular M
def overflowing_arm(tmp_path: Path) -> Path:
    """The two-link arm with its elbow 1e308 m away: M(q) overflows."""
    path = tmp_path / "overflow.urdf"
    path.write_text(ARM.read_text().replace('<origin xyz="0 0 -1" rpy="0 0 0"/>',
                                            '<origin xyz="1e308 0 0" rpy="0 0 0"/>'))
    return path


def test_condition_of_an_overflowing_model_is_exit_2(tmp_path):
    path = overflowing_arm(tmp_path)
    assert "overflows" in refused("inverse", path)  # as inverse does
    line = refused("condition", path, "--samples", "5")
    assert line.startswith(f"dyn: {path}: M(q) is not finite") and "overflows" in line, line


def test_forward_on_an_overflowing_model_blames_no_mass(tmp_path):
    line = refused("forward", overflowing_arm(tmp_path))
    assert "overflows" in line and "mass" not in line, line


RING = """<?xml version="1.0"?>
<robot name="ring_on_base">
  <link name="base"/>
  <joint name="spin" type="continuous">
    <parent link="base"/>
    <child link="ring"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.3 0.2 0.1"/>
    <axis xyz="0 0 1"/>
  </joint>
  <link name="ring">
    <inertial>
      <mass value="15.0"/>
      <inertia ixx="0.5" ixy="0" ixz="0" iyy="0.5" iyz="0" izz="1.0"/>
    </inertial>
  </link>
</robot>
"""


def ring(tmp_path: Path, scale: float = 1.0) -> Path:
    """A massless root link carrying a ring on a continuous joint about its axis: with a
    free flyer, the base's rotation about that axis and the ring's joint are one motion
    (M singular up to rounding). ``scale`` multiplies the mass and inertia (units)."""
    path = tmp_path / "ring.urdf"
    text = RING
    for number in ("15.0", "0.5", "1.0"):
        text = text.replace(f'"{number}"', f'"{float(number) * scale!r}"')
    path.write_text(text)
    return path


@pytest.mark.parametrize("scale", [1.0, 1e-6, 1e6])
def test_forward_refuses_a_singular_mass_matrix_naming_both_joints(tmp_path, scale):
    """On a fixed base the ring is regular (a = tau / Izz); floating, M is singular,
    whatever the units' scale."""
    path = ring(tmp_path, scale)
    code, out, _ = run("forward", path, "--tau", repr(2 * scale), "--format", "json")
    assert code == 0 and json.loads(out)["a"] == pytest.approx([2.0])
    line = refused("forward", path, "--free-flyer")
    assert "singular" in line and "spin" in line and "root_joint" in line, line


def test_forward_refuses_the_singular_state_of_a_file(tmp_path):
    states = tmp_path / "states.jsonl"
    states.write_text("".join(json.dumps({"q": [0, 0, 0, 0, 0, 0, 1, k / 10]}) + "\n"
                              for k in range(5)))
    line = refused("forward", ring(tmp_path), "--free-flyer", "--input", states)
    assert line.startswith(f"{states}:1: ") and "spin" in line and "root_joint" in line, line


def test_condition_names_the_singularity_and_the_joints(tmp_path):
    path = ring(tmp_path)
    code, out, _ = run("condition", path, "--free-flyer", "--samples", "5")
    assert code == 0 and "M is singular at 5 of 5 configurations" in out
    assert "the motions of joints spin, root_joint coincide" in out
    code, out, _ = run("condition", path, "--free-flyer", "--samples", "5", "--format", "json")
    document = json.loads(out)
    assert document["singular"] == {"samples": 5, "joints": ["spin", "root_joint"]}
    code, _, _ = run("condition", path, "--free-flyer", "--samples", "5", "--strict")
    assert code == 1


def test_diff_without_common_dofs_claims_no_change_of_m(tmp_path):
    """Joints renamed, bodies kept: the bodies are compared, M is not (no dof in common),
    and the verdict says so instead of a 0 % change of M."""
    renamed = tmp_path / "renamed.urdf"
    renamed.write_text(ARM.read_text().replace('"joint1"', '"hinge1"')
                       .replace('"joint2"', '"hinge2"'))
    code, out, _ = run("diff", ARM, renamed)
    assert code == 0 and "of M not compared (no dofs in common)" in out, out[-400:]
    assert "share nothing" not in out


def test_vanishing_torques_are_no_internal_error(tmp_path):
    """Torques of 1e-300 N m (the arm's times 1e-300) overflowed the consistent fit's cost:
    now a report (exit 0) whose fit says whether it converged."""
    log = arm_log(tmp_path / "tiny.npz")
    with np.load(log) as data:
        arrays = {key: data[key] for key in data.files}
    arrays["tau"] = arrays["tau"] * 1e-300
    np.savez(log, **arrays)
    code, out, err = run("identify", ARM, "--input", log, "--format", "json", "--quiet")
    assert code == 0 and not err, err
    assert isinstance(json.loads(out)["fit"]["converged"], bool)
