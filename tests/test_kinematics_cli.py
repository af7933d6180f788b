"""``dyn frames``, ``dyn jacobian`` and ``dyn com`` on the command line: one state against
Pinocchio (a free-flyer solo12) and the engine, many states through --input/--output in
every format equal to the same states one at a time, --degrees, the prefixes, and one
error line for a wrong name."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from test_cli import ARM, ROOT, SOLO, assert_usage_error, dyn, dyn_json, numbers
from treedyn.engine.named import center_of_mass, frame_jacobians, frame_set
from treedyn.parsers import load_model

TOL = 1e-12


def test_one_state_equals_pinocchio_on_a_free_flyer():
    pin = pytest.importorskip("pinocchio")
    if not SOLO.exists():
        pytest.skip("example-robot-data is not installed")
    from test_pinocchio import Mapping
    model = load_model(str(SOLO), free_flyer=True)
    pinmodel = pin.buildModelFromUrdf(str(SOLO), pin.JointModelFreeFlyer())
    data, mapping = pinmodel.createData(), Mapping(model, pinmodel)
    q = model.random_configuration(np.random.default_rng(7), 1)[0]
    pq = mapping.q(q)
    pin.framesForwardKinematics(pinmodel, data, pq)
    pin.computeJointJacobians(pinmodel, data, pq)
    out = dyn_json("frames", SOLO, "--free-flyer", "--q", numbers(q), "--frame", "FL_FOOT",
                   "--frame", "joint:FL_KFE")
    for k, name in enumerate(["FL_FOOT", "FL_KFE"]):
        frame = pinmodel.getFrameId(name)
        np.testing.assert_allclose(out["p"][k], data.oMf[frame].translation, atol=TOL)
        np.testing.assert_allclose(out["R"][k], data.oMf[frame].rotation, atol=TOL)
    for word, reference in (("local", pin.LOCAL), ("world", pin.WORLD),
                            ("aligned", pin.LOCAL_WORLD_ALIGNED)):
        out = dyn_json("jacobian", SOLO, "--free-flyer", "--q", numbers(q), "--frame",
                       "FL_FOOT", "--reference", word)
        expected = pin.getFrameJacobian(pinmodel, data, pinmodel.getFrameId("FL_FOOT"),
                                        reference)[:, mapping.v_index]
        np.testing.assert_allclose(out["J"], expected, atol=TOL)
        assert (out["frame"], out["reference"], len(out["dofs"])) == ("FL_FOOT", word, model.nv)
    out = dyn_json("com", SOLO, "--free-flyer", "--q", numbers(q))
    np.testing.assert_allclose(out["com"], pin.centerOfMass(pinmodel, data, pq), atol=TOL)
    np.testing.assert_allclose(out["Jcom"], pin.jacobianCenterOfMass(pinmodel, data, pq)
                               [:, mapping.v_index], atol=TOL)
    assert math.isclose(out["mass"], model.total_mass, rel_tol=1e-15)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".npz"])
def test_many_states_equal_each_state_alone(tmp_path, suffix):
    model = load_model(str(ARM))
    q = np.random.default_rng(2).normal(size=(5, 2))
    states = tmp_path / "states.jsonl"
    states.write_text("".join(json.dumps({"q": list(row)}) + "\n" for row in q))
    runs = {"frames": (["--frame", "link2", "--frame", "joint:joint1"], "T"),
            "jacobian": (["--frame", "link2", "--reference", "world"], "J"),
            "com": (["--subtree", "link2"], "com")}
    for command, (options, key) in runs.items():
        out = tmp_path / f"{command}{suffix}"
        dyn(command, ARM, *options, "--input", states, "--output", out)
        if suffix == ".npz":
            rows = np.load(out)[key]
        elif suffix == ".csv":
            rows = np.loadtxt(out, delimiter=",", skiprows=1).reshape(len(q), -1)
        else:
            rows = np.array([json.loads(line)[key] for line in out.read_text().splitlines()])
        for n in range(len(q)):
            one = dyn_json(command, ARM, *options, "--q", numbers(q[n]))
            if command == "frames":
                alone = np.concatenate([np.array(one["R"]), np.array(one["p"])[..., None]], 2)
            elif command == "jacobian":
                alone = np.array(one["J"])
            else:
                alone = np.column_stack([one["com"], one["Jcom"]])
            np.testing.assert_allclose(np.reshape(rows[n], alone.shape), alone, atol=1e-15)


def test_the_engine_is_what_the_commands_print():
    model = load_model(str(ARM))
    q = np.array([0.3, -1.2])
    frames = frame_set(model, ["link2"])
    J = dyn_json("jacobian", ARM, "--frame", "link2", "--reference", "aligned", "--q",
                 numbers(q))["J"]
    np.testing.assert_allclose(J, frame_jacobians(model, q[None], frames,
                                                  "LOCAL_WORLD_ALIGNED")[0, 0], atol=0)
    degrees = dyn_json("com", ARM, "--degrees", "--q", numbers(np.degrees(q)))
    _, c, Jcom = center_of_mass(model, q[None])
    np.testing.assert_allclose(degrees["com"], c[0], atol=1e-15)
    np.testing.assert_allclose(degrees["Jcom"], Jcom[0], atol=1e-15)


def test_a_wrong_frame_is_one_line_and_exit_2():
    result = dyn("jacobian", ARM, "--frame", "nope", check=False)
    assert result.returncode == 2
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "'nope'" in lines[0] and "two_link_arm.urdf" in lines[0]
    assert dyn("frames", ARM, "--frame", "joint:link2", check=False).returncode == 2


def test_many_states_as_a_table_is_one_usage_line(tmp_path):
    """A table is for one state: --input with --format table is refused in one line."""
    states = tmp_path / "states.jsonl"
    states.write_text('{"q": [0.1, 0.2]}\n')
    assert_usage_error(dyn("frames", ARM, "--frame", "link2", "-i", states, "-f", "table",
                           check=False), "many states are written as json or csv")


@pytest.mark.parametrize("args", [("jacobian", ARM, "--frame", "link2", "--q", "0,x"),
                                  ("frames", ARM, "--frame", "link2", "-i", "states.jsonl",
                                   "--q", "0,0")])
def test_a_refused_run_leaves_no_temporary_beside_the_output(tmp_path, args):
    """Bad input (a vector that is no number, --q beside --input) is refused before the
    output's temporary exists: the folder holds the previous output and nothing else."""
    (tmp_path / "states.jsonl").write_text('{"q": [0.1, 0.2]}\n')
    (tmp_path / "out.npz").write_bytes(b"previous")
    run = dyn(*[tmp_path / a if a == "states.jsonl" else a for a in args], "--output",
              tmp_path / "out.npz", check=False)
    assert run.returncode == 2, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npz", "states.jsonl"]
    assert (tmp_path / "out.npz").read_bytes() == b"previous"


def test_a_huge_quaternion_is_its_direction_on_the_command_line_and_in_a_file(tmp_path):
    """A quaternion past 1.3e154 (its squares overflow) is the rotation of its direction
    -- here a half turn about (1, 1, 0) -- not the identity it once silently was: --q,
    --input, a free flyer and MJCF ball joints."""
    half_turn = [0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    huge = [0.0, 0.0, 0.0, 1e200, 1e200, 0.0, 0.0, 0.0, 0.0]
    unit = dyn_json("frames", ARM, "--free-flyer", "--q", numbers(half_turn),
                    "--frame", "link2")
    assert np.allclose(unit["R"][0], [[0, 1, 0], [1, 0, 0], [0, 0, -1]], atol=1e-15)
    given = dyn_json("frames", ARM, "--free-flyer", "--q", numbers(huge), "--frame", "link2")
    np.testing.assert_allclose(given["R"], unit["R"], rtol=0, atol=1e-15)
    np.testing.assert_allclose(given["p"], unit["p"], rtol=0, atol=1e-15)
    states = tmp_path / "states.jsonl"
    states.write_text(json.dumps({"q": huge}) + "\n")
    out = tmp_path / "frames.jsonl"
    dyn("frames", ARM, "--free-flyer", "--frame", "link2", "--input", states, "--output", out)
    T = np.array(json.loads(out.read_text())["T"])[0]
    np.testing.assert_allclose(T[:, :3], unit["R"][0], rtol=0, atol=1e-15)
    mjcf = ROOT / "fixtures" / "mjcf" / "multijoint.xml"
    ball = {scale: dyn_json("inverse", mjcf, "--q", f"ball:0=0,ball:1={scale},ball:2=0,"
                            f"ball:3={-scale},tip_ball:0={scale},tip_ball:1=0,"
                            f"tip_ball:2={scale},tip_ball:3=0") for scale in (1, 1e300)}
    np.testing.assert_allclose(ball[1e300]["tau"], ball[1]["tau"], rtol=0, atol=1e-12)


def test_a_result_past_the_cap_is_refused_before_it_is_computed(monkeypatch):
    """One state's C of a model past the cap (here lowered to 3 numbers) is refused before
    the engine builds it: on a large model, computing first took seconds and memory."""
    from treedyn.cli.run import kinematics as run_kinematics
    from treedyn.pipeline import batch

    monkeypatch.setattr(batch, "MASS_CAP", 3)
    monkeypatch.setattr(run_kinematics, "compute", lambda *args: pytest.fail("computed"))
    assert_usage_error(dyn("coriolis", ARM, "--q", "0.1,0.2", "--v", "1,0", check=False),
                       "one state's C of this model holds 4 numbers")
