"""The ``dyn`` command line against references: the engine, the seed's numbers, and itself.

Most tests run ``python -m treedyn.cli`` in a subprocess (stdout is a pipe, so the
default format is JSON). Numbers are compared with the engine called on the same inputs,
exactly where the CLI must be repr-exact.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys
import sysconfig
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from treedyn.engine import aba, crba, rnea
from treedyn.parsers import load_model

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
TOOL_ARM = ROOT / "tests" / "data" / "arm_with_tool.urdf"  # the arm plus welded tool/mount
FEATURES = ROOT / "fixtures" / "urdf" / "features.urdf"
ROBOTS = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix/share/example-robot-data/robots"
SOLO = ROBOTS / "solo_description" / "robots" / "solo12.urdf"

SEED_Q = [math.pi / 6, math.pi / 3]
SEED_V = [1.0, -0.5]
SEED_A = [0.4, -0.2]
SEED_TAU = [13.337760, 5.504846]  # the worked example of the seed document (see
# test_engine_identities.test_seed_two_link_worked_example), kept here as numbers


def dyn(*args, stdin: bytes | str | None = None, check: bool = True,
        fresh: bool = False) -> subprocess.CompletedProcess:
    """Run ``dyn ARGS`` (in this interpreter, or a fresh one); by default require exit 0."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    args = [str(arg) for arg in args]
    if fresh:
        result = subprocess.run([sys.executable, "-m", "treedyn.cli", *args],
                                input=data, capture_output=True, cwd=ROOT, timeout=60)
    else:
        result = run_here(args, data)
    if check:
        assert result.returncode == 0, result.stderr.decode()
    return result


def run_here(args: list[str], stdin: bytes | None) -> subprocess.CompletedProcess:
    """``treedyn.cli.app.run(args)`` with stdin, stdout and stderr redirected (quick)."""
    from treedyn.cli.app import run

    stdout, stderr = io.StringIO(), io.StringIO()
    reader = io.TextIOWrapper(io.BufferedReader(io.BytesIO(stdin or b"")), newline="")
    with (mock.patch.object(sys, "stdin", reader), contextlib.redirect_stdout(stdout),
          contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as exit_info):
        run(args)
    code = exit_info.value.code
    return subprocess.CompletedProcess(args, 0 if code is None else code,
                                       stdout.getvalue().encode(), stderr.getvalue().encode())


def dyn_json(*args, **kwargs):
    return json.loads(dyn(*args, **kwargs).stdout)


def json_lines(result: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in result.stdout.decode().splitlines()]


def numbers(values) -> str:
    """A vector as the CLI takes it, repr-exact."""
    return ",".join(repr(float(x)) for x in values)


def assert_usage_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit code 2, nothing on stdout, one stderr line (no traceback) holding ``fragments``."""
    stderr = result.stderr.decode()
    assert result.returncode == 2, (result.returncode, stderr)
    assert "Traceback" not in stderr and "internal error" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert result.stdout == b""
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def arm():
    return load_model(str(ARM))


@pytest.fixture(scope="module")
def tool_arm():
    return load_model(str(TOOL_ARM))


@pytest.fixture(scope="module")
def solo():
    if not SOLO.exists():
        pytest.skip("example-robot-data is not installed")
    return load_model(str(SOLO), free_flyer=True)


@pytest.fixture(scope="module")
def solo_state(solo):
    rng = np.random.default_rng(7)
    q = solo.random_configuration(rng, 1)[0]
    return q, rng.normal(size=solo.nv), rng.normal(size=solo.nv)


# ----------------------------------------------------------------------------- help

def test_no_arguments_prints_help_with_examples():
    out = dyn(fresh=True).stdout.decode()
    assert "Usage: dyn" in out
    assert "Examples:" in out
    assert ("dyn inverse fixtures/two_link_arm.urdf --q 0.5236,1.0472 --v 1,-0.5 "
            "--a 0.4,-0.2 --format json") in out
    for command in ("info", "inverse", "forward", "mass"):
        assert f"  {command} " in out


@pytest.mark.parametrize("command", ["info", "inverse", "forward", "mass"])
def test_command_help_has_examples(command):
    out = dyn(command, "--help").stdout.decode()
    assert f"Usage: dyn {command}" in out
    assert "Examples:" in out and f"dyn {command} " in out


def test_version():
    assert dyn("--version", fresh=True).stdout.decode().startswith("dyn (treedyn) ")


# ----------------------------------------------------------------------------- inverse

@pytest.mark.parametrize("model", [ARM, TOOL_ARM])
def test_inverse_matches_seed_numbers_and_engine(model):
    out = dyn_json("inverse", model, "--q", numbers(SEED_Q), "--v", numbers(SEED_V),
                   "--a", numbers(SEED_A), "--format", "json")
    np.testing.assert_allclose(out["tau"], SEED_TAU, atol=1e-6)
    engine = rnea(load_model(str(model)), np.array([SEED_Q]), np.array([SEED_V]),
                  np.array([SEED_A]))[0]
    assert out["tau"] == engine.tolist()  # repr-exact: not a digit lost
    assert out["dofs"] == ["joint1", "joint2"]


def test_default_format_is_json_off_a_terminal_and_a_table_on_one():
    out = dyn_json("inverse", ARM, "--q", numbers(SEED_Q))
    assert set(out) >= {"tau"}

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    from treedyn.cli.app import run

    terminal = Terminal()
    with contextlib.redirect_stdout(terminal), pytest.raises(SystemExit):
        run(["inverse", str(ARM), "--q", numbers(SEED_Q), "--v", numbers(SEED_V),
             "--a", numbers(SEED_A)])
    table = terminal.getvalue()
    assert "joint1" in table and "13.3378" in table and "N m" in table


def test_inverse_on_a_free_flyer_matches_engine(solo, solo_state):
    q, v, a = solo_state
    out = dyn_json("inverse", SOLO, "--free-flyer", "--q", numbers(q), "--v", numbers(v),
                   "--a", numbers(a))
    assert out["tau"] == rnea(solo, q[None], v[None], a[None])[0].tolist()
    assert out["dofs"][:7] == [f"root_joint:{k}" for k in range(6)] + ["FL_HAA"]


def test_gravity_override(arm):
    out = dyn_json("inverse", ARM, "--q", numbers(SEED_Q), "--gravity", "0,0,0")
    expected = rnea(arm, np.array([SEED_Q]), None, None, gravity=np.zeros(3))[0]
    assert out["tau"] == expected.tolist()


def test_named_values_equal_full_vectors():
    full = dyn_json("inverse", ARM, "--q", f"0,{SEED_Q[1]!r}", "--a", "0,0.25")
    named = dyn_json("inverse", ARM, "--q", f"joint2={SEED_Q[1]!r}", "--a", "joint2=0.25")
    assert named["tau"] == full["tau"]


def test_degrees_equal_radians():
    radians = dyn_json("inverse", ARM, "--q", numbers(SEED_Q), "--v", numbers(SEED_V),
                       "--a", numbers(SEED_A))
    degrees = dyn_json("inverse", ARM, "--degrees", "--q", "joint1=30,joint2=60",
                       "--v", numbers(np.degrees(SEED_V)), "--a", numbers(np.degrees(SEED_A)))
    np.testing.assert_allclose(degrees["tau"], radians["tau"], rtol=1e-14)


def test_forward_prints_degrees_with_degrees():
    tau = numbers(SEED_TAU)
    radians = dyn_json("forward", ARM, "--q", numbers(SEED_Q), "--v", numbers(SEED_V),
                       "--tau", tau)
    degrees = dyn_json("forward", ARM, "--degrees", "--q", "30,60",
                       "--v", numbers(np.degrees(SEED_V)), "--tau", tau)
    np.testing.assert_allclose(degrees["a"], np.degrees(radians["a"]), rtol=1e-13)


# ----------------------------------------------------------------------------- fext

def tool_wrench_on_link2(wrench: np.ndarray) -> np.ndarray:
    """The tool-frame wrench of arm_with_tool.urdf moved by hand onto link2's origin.

    The tool frame sits at (0, 0, -1) in link2, turned by pitch pi/2 (URDF rpy).
    """
    c, s = math.cos(math.pi / 2), math.sin(math.pi / 2)
    R = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    p = np.array([0.0, 0.0, -1.0])
    force = R @ wrench[:3]
    return np.concatenate([force, R @ wrench[3:] + np.cross(p, force)])


def test_fext_on_a_link_merged_by_a_fixed_joint(tool_arm):
    wrench = np.array([1.0, -2.0, 3.0, 0.5, -0.25, 0.75])
    out = dyn_json("inverse", TOOL_ARM, "--q", numbers(SEED_Q), "--v", numbers(SEED_V),
                   "--fext", f"tool={numbers(wrench)}")
    fext = np.zeros((1, 2, 6))
    fext[0, 1] = tool_wrench_on_link2(wrench)
    expected = rnea(tool_arm, np.array([SEED_Q]), np.array([SEED_V]), None, fext)[0]
    np.testing.assert_allclose(out["tau"], expected, rtol=1e-13, atol=1e-13)
    forward = dyn_json("forward", TOOL_ARM, "--q", numbers(SEED_Q), "--v", numbers(SEED_V),
                       "--fext", f"tool={numbers(wrench)}")
    np.testing.assert_allclose(
        forward["a"], aba(tool_arm, np.array([SEED_Q]), np.array([SEED_V]), None, fext)[0],
        rtol=1e-12, atol=1e-12)


def test_repeated_fext_adds_and_json_fext_matches():
    half = numbers([0.5, 0, -5, 0, 0.1, 0])
    twice = dyn_json("inverse", TOOL_ARM, "--fext", f"tool={half}", "--fext", f"tool={half}")
    once = dyn_json("inverse", TOOL_ARM, "--fext", f"tool={numbers([1, 0, -10, 0, 0.2, 0])}")
    np.testing.assert_allclose(twice["tau"], once["tau"], rtol=1e-15)
    line = json.dumps({"fext": {"tool": [1, 0, -10, 0, 0.2, 0]}})
    from_file = json_lines(dyn("inverse", TOOL_ARM, "--input", "-", stdin=line + "\n"))
    assert from_file[0]["tau"] == once["tau"]


def test_fext_on_a_link_welded_to_the_world_warns():
    result = dyn("inverse", TOOL_ARM, "--fext", "mount=1,2,3,4,5,6")
    assert "no effect" in result.stderr.decode()
    assert json.loads(result.stdout)["tau"] == [0.0, 0.0]


# ----------------------------------------------------------------------------- forward, mass

def test_forward_inverts_inverse(solo, solo_state):
    q, v, a = solo_state
    common = ["--free-flyer", "--q", numbers(q), "--v", numbers(v)]
    tau = dyn_json("inverse", SOLO, *common, "--a", numbers(a))["tau"]
    back = dyn_json("forward", SOLO, *common, "--tau", numbers(tau))["a"]
    np.testing.assert_allclose(back, a, rtol=1e-9, atol=1e-9)


def test_seed_forward_recovers_the_acceleration():
    tau = dyn_json("inverse", ARM, "--q", numbers(SEED_Q), "--v", numbers(SEED_V),
                   "--a", numbers(SEED_A))["tau"]
    a = dyn_json("forward", ARM, "--q", numbers(SEED_Q), "--v", numbers(SEED_V),
                 "--tau", numbers(tau))["a"]
    np.testing.assert_allclose(a, SEED_A, atol=1e-12)


def test_mass_matches_engine(arm):
    out = dyn_json("mass", ARM, "--q", numbers(SEED_Q))
    assert out["M"] == crba(arm, np.array([SEED_Q]))[0].tolist()
    assert "sparsity" not in out


def test_mass_sparsity_is_the_structure_of_m_on_a_branched_tree(solo, solo_state):
    q = solo_state[0]
    out = dyn_json("mass", SOLO, "--free-flyer", "--q", numbers(q), "--sparsity")
    M = np.array(out["M"])
    pattern = np.array(out["sparsity"]["pattern"])
    assert M.shape == pattern.shape == (18, 18)
    # every non-zero of M lies in the pattern (solo's aligned axes also make some pattern
    # entries exactly zero, in Pinocchio too), and the pattern is the tree's support relation
    assert np.all(pattern[np.abs(M) > 0] == 1)
    supports = np.eye(solo.nv, dtype=int)
    for i in range(solo.nv):
        j = solo.dof_parent[i]
        while j >= 0:
            supports[i, j] = supports[j, i] = 1
            j = solo.dof_parent[j]
    assert np.array_equal(pattern, supports)
    assert out["sparsity"]["nnz"] == pattern.sum() < 18 * 18
    ancestors = 0  # pairs (i, j) with j an ancestor-or-self dof of i, walked on the tree
    for i in range(solo.nv):
        j = i
        while j >= 0:
            ancestors += 1
            j = solo.dof_parent[j]
    assert out["sparsity"]["nnz_factor"] == ancestors


def test_mass_sparsity_table_draws_the_pattern():
    out = dyn("mass", ARM, "--sparsity", "--format", "table").stdout.decode()
    assert "joint1" in out and "##" in out and "nnz: 4" in out


# ----------------------------------------------------------------------------- info

def test_info_json_has_the_interface_keys(arm):
    info = dyn_json("info", ARM, "--format", "json")
    assert {"name", "format", "nq", "nv", "gravity", "total_mass", "joints",
            "bodies"} <= set(info)
    assert (info["name"], info["format"], info["nq"], info["nv"]) == ("two_link_arm", "urdf",
                                                                      2, 2)
    assert info["gravity"] == [0.0, 0.0, -9.81]
    assert info["total_mass"] == pytest.approx(2.0)
    assert [(j["name"], j["type"], j["parent"], j["idx_q"], j["nq"], j["idx_v"], j["nv"],
             j["nv_subtree"]) for j in info["joints"]] == [
        ("joint1", "revolute", "world", 0, 1, 0, 1, 2),
        ("joint2", "revolute", "joint1", 1, 1, 1, 1, 1)]


def test_info_lists_merged_links_mimic_and_free_flyer():
    info = dyn_json("info", TOOL_ARM, "--format", "json", "--free-flyer", "--gravity", "0,0,-1")
    assert info["joints"][0] == {"name": "root_joint", "type": "free", "parent": "world",
                                      "idx_q": 0, "nq": 7, "idx_v": 0, "nv": 6,
                                      "nv_subtree": 8, "body": "base"}
    assert info["gravity"] == [0.0, 0.0, -1.0]
    assert ["link2", "tool"] == next(b["links"] for b in info["bodies"] if b["name"] == "link2")
    if FEATURES.exists():
        features = dyn_json("info", FEATURES, "--format", "json")
        mimics = [j["mimic"] for j in features["joints"] if "mimic" in j]
        assert mimics and set(mimics[0]) == {"joint", "multiplier", "offset"}


def test_info_table_is_the_default():
    out = dyn("info", TOOL_ARM).stdout.decode()
    assert "joint2" in out and "nv_subtree" in out and "tool" in out and "total mass" in out


# ----------------------------------------------------------------------------- batches

STATES = [
    {"q": SEED_Q, "v": SEED_V, "a": SEED_A},
    {"q": [0.1, -0.7], "a": [1.5, 0.0]},
    {},
    {"q": {"joint2": 0.3}, "v": [0.25, 2.0]},
]


def single_results(states) -> list[list[float]]:
    results = []
    for state in states:
        args = []
        for kind in ("q", "v", "a"):
            if isinstance(state.get(kind), dict):
                args += [f"--{kind}", ",".join(f"{k}={v!r}" for k, v in state[kind].items())]
            elif kind in state:
                args += [f"--{kind}", numbers(state[kind])]
        results.append(dyn_json("inverse", ARM, *args)["tau"])
    return results


def full_arrays(states):
    q = np.zeros((len(states), 2))
    v, a = np.zeros_like(q), np.zeros_like(q)
    for row, state in enumerate(states):
        if isinstance(state.get("q"), dict):
            q[row, 1] = state["q"]["joint2"]
        elif "q" in state:
            q[row] = state["q"]
        v[row] = state.get("v", [0, 0])
        a[row] = state.get("a", [0, 0])
    return q, v, a


def test_jsonl_csv_npz_and_stdin_agree_with_single_states(tmp_path):
    expected = single_results(STATES)
    jsonl = tmp_path / "states.jsonl"
    jsonl.write_text("\n".join(json.dumps(s) for s in STATES) + "\n\n")
    q, v, a = full_arrays(STATES)
    csv_path = tmp_path / "states.csv"
    csv_path.write_text("time,q0,q1,v0,v1,a0,a1\n" + "".join(
        f"{k},{numbers(np.concatenate([q[k], v[k], a[k]]))}\n" for k in range(len(q))))
    npz = tmp_path / "states.npz"
    np.savez(npz, q=q, v=v, a=a)
    outputs = {
        "jsonl": json_lines(dyn("inverse", ARM, "--input", jsonl)),
        "csv": json_lines(dyn("inverse", ARM, "--input", csv_path)),
        "npz": json_lines(dyn("inverse", ARM, "-i", npz, "--format", "json")),
        "stdin jsonl": json_lines(dyn("inverse", ARM, "-i", "-", stdin=jsonl.read_bytes())),
        "stdin csv": json_lines(dyn("inverse", ARM, "-i", "-", stdin=csv_path.read_bytes())),
        "stdin npz": json_lines(dyn("inverse", ARM, "-i", "-", stdin=npz.read_bytes(),
                                    fresh=True)),
    }
    for name, lines in outputs.items():
        assert [line["tau"] for line in lines] == expected, name


def test_csv_with_joint_named_columns(tmp_path):
    path = tmp_path / "named.csv"
    path.write_text("v:joint1,q:joint2,note\n0.5,0.3,x\n")
    out = json_lines(dyn("inverse", ARM, "--input", path))
    assert out[0]["tau"] == dyn_json("inverse", ARM, "--q", "joint2=0.3", "--v", "0.5,0")["tau"]


def test_output_files_by_extension(tmp_path, arm):
    source = tmp_path / "states.jsonl"
    source.write_text("\n".join(json.dumps(s) for s in STATES) + "\n")
    q, v, a = full_arrays(STATES)
    expected = rnea(arm, q, v, a)
    for suffix in (".jsonl", ".csv", ".npz"):
        target = tmp_path / f"tau{suffix}"
        assert dyn("inverse", ARM, "-i", source, "-o", target).stdout == b""
        if suffix == ".npz":
            tau = np.load(target)["tau"]
        elif suffix == ".csv":
            lines = target.read_text().splitlines()
            assert lines[0] == "tau:joint1,tau:joint2"
            tau = np.array([[float(x) for x in line.split(",")] for line in lines[1:]])
        else:
            tau = np.array([json.loads(line)["tau"] for line in target.read_text().splitlines()])
        np.testing.assert_array_equal(tau, expected)


def test_mass_and_forward_batches(tmp_path, arm):
    q, v, _ = full_arrays(STATES)
    tau = np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 0.5], [0.0, 0.0]])
    source = tmp_path / "states.npz"
    np.savez(source, q=q, v=v, tau=tau)
    mass = tmp_path / "M.npz"
    dyn("mass", ARM, "-i", source, "-o", mass)
    np.testing.assert_array_equal(np.load(mass)["M"], crba(arm, q))
    forward = json_lines(dyn("forward", ARM, "-i", source))
    np.testing.assert_array_equal([line["a"] for line in forward], aba(arm, q, v, tau))
    csv = dyn("mass", ARM, "-i", source, "--format", "csv").stdout.decode().splitlines()
    assert csv[0] == "M:joint1|joint1,M:joint1|joint2,M:joint2|joint1,M:joint2|joint2"
    assert len(csv) == 1 + len(q)


def test_large_input_streams_in_chunks_with_one_engine_call_each(tmp_path, monkeypatch, capsys):
    from treedyn.cli import app
    from treedyn.session.environment import STREAM_CHUNK
    from treedyn.pipeline import compute

    count = STREAM_CHUNK + 5
    rng = np.random.default_rng(3)
    q, v = rng.normal(size=(count, 2)), rng.normal(size=(count, 2))
    path = tmp_path / "many.csv"
    path.write_text("q0,q1,v0,v1\n" + "".join(f"{numbers(np.concatenate(row))}\n"
                                              for row in zip(q, v)))
    calls = []

    def counting_rnea(model, q, *args, **kwargs):
        calls.append(len(q))
        return rnea(model, q, *args, **kwargs)

    monkeypatch.setattr(compute, "rnea", counting_rnea)
    with pytest.raises(SystemExit) as exit_info:
        app.run(["inverse", str(ARM), "--input", str(path), "--format", "json"])
    assert exit_info.value.code == 0
    assert calls == [STREAM_CHUNK, 5]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == count
    arm = load_model(str(ARM))
    np.testing.assert_array_equal([json.loads(lines[k])["tau"] for k in (0, count - 1)],
                                  rnea(arm, q[[0, -1]], v[[0, -1]]))


def test_start_up_does_not_import_heavy_modules():
    probe = ("import sys\n"
             "from treedyn.cli.app import run_app\n"
             "assert 'lxml' not in sys.modules and 'tabulate' not in sys.modules\n"
             f"sys.argv = ['dyn', 'inverse', {str(ARM)!r}, '--q', '0.1,0.2', '-f', 'json']\n"
             "try:\n    run_app(sys.argv[1:])\nexcept SystemExit as e:\n    assert e.code == 0\n"
             "print([m for m in ('scipy', 'tabulate') if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True)
    assert out.stdout.decode().strip().endswith("[]"), out.stdout


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("args, fragments", [
    (["inverse", ARM, "--q", "1,2,3"], ["--q has 3 numbers", "needs nq=2"]),
    (["forward", ARM, "--tau", "1"], ["--tau has 1 number,", "needs nv=2"]),
    (["inverse", ARM, "--v", "1,nan"], ["--v", "nan"]),
    (["inverse", ARM, "--a", "inf,0"], ["--a", "inf"]),
    (["inverse", ARM, "--q", "jiont1=0.5"], ["unknown joint 'jiont1'", "'joint1'"]),
    (["inverse", ARM, "--q", "0.5,abc"], ["'abc' is not a number"]),
    (["inverse", ARM, "--q", "1,,2"], ["--q: number 2 of 3 is missing"]),  # not (1, 2)
    (["inverse", ARM, "--q", "0.1,0.2,"], ["--q: number 3 of 3 is missing"]),
    (["inverse", ARM, "--q", "joint1=0.1,,joint2=0.2"], ["--q: an empty place between commas"]),
    (["inverse", ARM, "--q", "joint1=1 2"], ["--q joint1: has 2 numbers, a name=value pair"]),
    (["inverse", TOOL_ARM, "--fext", "tool=1,2,3,,5,6"], ["--fext tool: number 4 of 6 is missing"]),
    (["inverse", TOOL_ARM, "--fext", "tol=1,2,3,4,5,6"], ["unknown body 'tol'", "'tool'"]),
    (["inverse", TOOL_ARM, "--fext", "tool=1,2,3"], ["needs 6"]),
    (["inverse", ARM, "--gravity", "0,-9.81"], ["--gravity"]),
    (["inverse", "no/such/model.urdf"], ["no/such/model.urdf"]),
    (["inverse", ""], ["no model file given (the path is '')"]),
    (["inverse", ARM, "--input", "states.txt"], ["states.txt", "unknown input format"]),
    (["inverse", ARM, "--input", "missing.jsonl"], ["missing.jsonl"]),
    (["inverse", ARM, "--output", "tau.txt"], ["tau.txt", "unknown output format"]),
    (["inverse", ARM, "--output", "no/such/dir/tau.csv"], ["no/such/dir/tau.csv"]),
    (["inverse", ARM, "--q", "0,0", "--input", "-"], ["--input"]),
    (["inverse", ARM, "--output", "tau.csv", "--format", "json"], ["conflicts"]),
    (["inverse", ARM, "--bogus"], ["--bogus"]),
    (["inverse", ARM, "--format", "xml"], ["--format"]),
    (["frobnicate"], ["frobnicate"]),
    (["mass", ARM, "--sparsity", "--format", "csv"], ["--sparsity"]),
    (["info", ARM, "--mesh-path", "no/such/folder"], ["--mesh-path no/such/folder: no such "
                                                      "folder"]),
    (["diff", "-", "-"], ["stdin ('-') can give OLD or NEW, not both"]),
    (["identify", "-", "--input", "-"], ["stdin ('-') can give the model or the states"]),
    (["check-limits", ARM, "--input", ROOT / "fixtures/two_link_arm_limits_log.csv",
      "--baseline", "-"], ["--baseline -: give the previous output as a file"]),
    (["frames", ROOT / "fixtures/xacro/arm_description/urdf/arm.urdf.xacro", "--xacro-arg",
      "length"], ["--xacro-arg 'length': expected NAME:=VALUE"]),
    (["energy", ARM, "--input", ROOT / "fixtures/two_link_arm_log.csv", "--output",
      "no/such/e.h5", "--dataset-prefix", "x/../y"], ["--dataset-prefix 'x/../y'"]),
])
def test_usage_errors_exit_2_with_one_line(args, fragments):
    assert_usage_error(dyn(*args, check=False), *fragments)


@pytest.mark.parametrize("args", [
    ["inverse", ARM, "--q", "1,2,3"],
    ["inverse", ARM, "--bogus"],
    ["mass", ROOT / "no_such_model.urdf"],
])
def test_errors_in_a_fresh_process(args):
    assert_usage_error(dyn(*args, check=False, fresh=True))


@pytest.mark.parametrize("args, stdin, fragments", [
    (["--fext", "tool=1e308,0,0,0,0,0", "--fext", "tool=1e308,0,0,0,0,0"], None,
     ["--fext tool", "add up to more than a float holds"]),
    (["--input", "-", "--fext", "tool=1e308,0,0,0,0,0"],
     '{"fext": {"tool": [1e308, 0, 0, 0, 0, 0]}}\n', ["<stdin>:1", "not finite"]),
    (["--input", "-"], '{"fext": {"tool": [1%s, 0, 0, 0, 0, 0]}}\n' % ("0" * 400),
     ["<stdin>:1", '"fext" tool', "too large for a float"]),
], ids=["repeated-option", "json-plus-option", "huge-json-integer"])
def test_overflowing_wrenches_give_one_line(args, stdin, fragments):
    """In a fresh process, where numpy's overflow warnings would reach stderr."""
    result = dyn("inverse", TOOL_ARM, "--format", "json", *args, stdin=stdin, check=False,
                 fresh=True)
    assert_usage_error(result, *fragments)


def dyn_program(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close=(), env=None):
    """The dyn program in a fresh process, with the descriptors in ``close`` closed."""
    import os

    def closing() -> None:
        for descriptor in close:
            os.close(descriptor)

    script = "from treedyn.cli import run; run()"
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], stdout=stdout,
                          stderr=stderr, preexec_fn=closing, cwd=ROOT, timeout=60,
                          env=None if env is None else {**os.environ, **env})


@pytest.mark.parametrize("name", ["TREEDYN_THREADS", "TREEDYN_CHUNK", "TREEDYN_STREAM_CHUNK"])
@pytest.mark.parametrize("value", ["abc", "0", "\u00b2"])
def test_a_bad_setting_in_the_environment_is_one_line(name, value):
    result = dyn_program(["inverse", ARM], env={name: value})
    assert result.returncode == 2
    assert result.stderr.decode() == f"dyn: {name}={value!r} is not a positive whole number\n"


@pytest.mark.parametrize("args", [
    ["inverse", ARM, "--q", "1,2", "--format", "json"],
    ["info", ARM, "--format", "json"],
    ["check-inertia", ARM],
])
def test_a_closed_stdout_is_an_error_not_a_silent_success(args):
    result = dyn_program(args, stdout=None, close=(1,))
    assert result.returncode == 2
    assert result.stderr.decode().strip() in ("dyn: cannot write the results (stdout is closed)",
                                              "dyn: cannot write to stdout (stdout is closed)")


def test_a_closed_stdout_does_not_stop_a_run_that_writes_to_a_file(tmp_path):
    """The split over processes flushes stdout before it starts them: with stdout closed
    that flush must not fail when the results go to --output."""
    states = tmp_path / "states.jsonl"
    states.write_text("".join(f'{{"q": [{k / 100!r}, 0.5]}}\n' for k in range(400)))
    output = tmp_path / "tau.jsonl"
    result = dyn_program(["inverse", ARM, "-i", states, "-o", output], stdout=None, close=(1,),
                         env={"TREEDYN_PART_BYTES": "3000", "TREEDYN_STREAM_CHUNK": "32",
                              "TREEDYN_PROCESSES": "2"})
    assert result.returncode == 0, result.stderr
    assert len(output.read_text().splitlines()) == 400


def test_a_warning_that_cannot_be_printed_does_not_stop_the_run(tmp_path):
    states = tmp_path / "states.csv"
    states.write_text("q0,q1,fext_b\n0.1,0.2,3\n")
    result = dyn_program(["inverse", ARM, "-i", states, "--format", "csv"], stderr=None,
                         close=(2,))
    assert result.returncode == 0 and result.stdout.decode().startswith("tau:joint1,")


@pytest.mark.parametrize("close", [(2,), ()])
def test_a_bad_model_exits_2_even_when_stderr_cannot_be_written(close):
    """Exit 1 would tell a CI job that check-inertia found errors in a file it never read."""
    with open("/dev/full", "wb") as full:
        result = dyn_program(["check-inertia", "no/such/model.urdf"], stderr=None if close
                             else full, close=close)
    assert result.returncode == 2


def test_a_singular_state_on_the_command_line_names_the_model():
    line = assert_usage_error(dyn("forward", ROOT / "fixtures" / "urdf" / "features.urdf",
                                  "--format", "json", check=False), "singular")
    assert line.startswith("dyn: ") and "features.urdf: at the state given on the command" in line


def test_invalid_model_reports_file_and_line(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="r">\n  <link name="a"/>\n  <joint name="j" type="revolute">\n'
                   '    <parent link="a"/>\n  </joint>\n</robot>\n')
    line = assert_usage_error(dyn("info", bad, check=False), str(bad))
    assert f"{bad}:3" in line


@pytest.mark.parametrize("suffix, content, fragments", [
    (".jsonl", '{"q": [0, 0]}\n{"q": [0, 0, 0]}\n', ["states.jsonl:2", "needs nq=2"]),
    (".jsonl", '{"q": [0, 0]}\n\n{"q": [0, 0\n', ["states.jsonl:3", "not valid JSON"]),
    (".jsonl", '{"q": [0, NaN]}\n', ["states.jsonl:1", "nan"]),
    (".jsonl", '{"q": {"joint7": 1}}\n', ["states.jsonl:1", "unknown joint 'joint7'"]),
    (".jsonl", '{"fext": {"tol": [0, 0, 0, 0, 0, 0]}}\n', ["states.jsonl:1", "'tool'"]),
    (".jsonl", '[0, 0]\n', ["states.jsonl:1", "JSON object"]),

    (".csv", "q0,q1\n0,0\n0,x\n", ["states.csv:3", "'q1'", "'x'"]),
    (".csv", "q0,q1\n0,0\n0\n", ["states.csv:3", "1 field, the header has 2"]),
    (".csv", "q0\n0\n", ["states.csv:1", "needs nq=2"]),
    (".csv", "q:joint1,q:jiont2\n0,0\n", ["states.csv:1", "unknown joint 'jiont2'"]),
])
def test_bad_input_rows_name_the_line(tmp_path, suffix, content, fragments):
    """The states before the bad row are written (and said so); with none, no file is left."""
    path = tmp_path / f"states{suffix}"
    path.write_text(content)
    output = tmp_path / "out.jsonl"
    line = assert_usage_error(dyn("inverse", TOOL_ARM, "-i", path, "-o", output, check=False),
                              *fragments)
    if "the 1 state before it is written to" in line:
        assert len(output.read_text().splitlines()) == 1
    else:
        assert not output.exists()


def test_columns_and_keys_dyn_does_not_read_are_warned_about_once():
    """Logs name velocities qd or dq: read as nothing, v would silently be zero."""
    csv_result = dyn("inverse", ARM, "-i", "-", "-f", "csv",
                     stdin="time,q0,q1,qd0,qd1\n0,0.1,0.2,1,2\n1,0.1,0.2,1,2\n")
    assert csv_result.stderr.decode() == (
        "dyn: warning: <stdin>:1: columns 'time', 'qd0', 'qd1' not read: dyn reads the "
        "columns q0.., v0.., a0.., tau0.. or q:<joint>, v:<joint>, ...\n")
    lines = ('{"q": [0.1, 0.2], "qd": [1, 2]}\n' * 3 + '{"q": [0, 0], "time": 3}\n'
             + '{"q": [0, 0], "t": 4}\n')  # t: the time dyn excite writes, not warned about
    json_result = dyn("inverse", ARM, "-i", "-", "-f", "json", stdin=lines)
    assert json_result.stderr.decode().splitlines() == [
        'dyn: warning: <stdin>: key "qd" not read: dyn reads "q", "v", "a", "tau" and "fext"',
        'dyn: warning: <stdin>: key "time" not read: dyn reads "q", "v", "a", "tau" and "fext"']
    assert len(json_lines(json_result)) == 5


def test_likely_mistakes_in_a_command_line_q_are_warned_about():
    """Degrees without --degrees, and the identity quaternion in the other order: the run
    goes on (the numbers are valid), with a warning naming the likely mistake."""
    degrees = dyn("inverse", ARM, "--q", "joint1=3,joint2=720", "-f", "json")
    assert degrees.stderr.decode() == ("dyn: warning: q beyond 2 pi and the joint limits: "
                                       "joint2 = 720 (radians); degrees? --degrees reads them\n")
    assert dyn("inverse", ARM, "--q", "joint1=3,joint2=720", "--degrees").stderr == b""
    wxyz = dyn("inverse", ARM, "--free-flyer", "--q", "0,0,1,1,0,0,0,0.1,0.2", "-f", "json")
    assert "root_joint: its quaternion (x, y, z, w) = (1, 0, 0, 0) is a half turn" in (
        wxyz.stderr.decode())
    assert dyn("inverse", ARM, "--free-flyer", "--q", "0,0,1,0,0,0,1,0.1,0.2").stderr == b""


def test_entries_named_as_dyn_info_prints_them_are_inputs_too():
    """dyn info's layout names root_joint.z, root_joint.qw, root_joint.wx: --q, --v and CSV
    headers take them, as they take root_joint:2 and the like."""
    by_index = dyn_json("inverse", ARM, "--free-flyer", "--q", "root_joint:2=1,root_joint:6=1",
                        "--v", "root_joint:3=0.5")
    by_part = dyn_json("inverse", ARM, "--free-flyer", "--q", "root_joint.z=1,root_joint.qw=1",
                       "--v", "root_joint.wx=0.5")
    assert by_part == by_index
    rows = dyn("inverse", ARM, "--free-flyer", "-i", "-", "-f", "json",
               stdin="q:root_joint.z,q:root_joint.qw,v:root_joint.wx\n1,1,0.5\n")
    assert json_lines(rows)[0]["tau"] == by_index["tau"]
    assert_usage_error(dyn("inverse", ARM, "--free-flyer", "--q", "root_joint.w=1", check=False),
                       "joint 'root_joint' has no q entry 'w' (it has x, y, z, qx, qy, qz, qw)")


def test_a_joint_named_like_an_entry_of_another_is_ambiguous(tmp_path):
    path = tmp_path / "dots.urdf"
    path.write_text(ARM.read_text().replace('name="joint2"', 'name="root_joint.x"'))
    assert_usage_error(dyn("inverse", path, "--free-flyer", "--q", "root_joint.x=1", check=False),
                       "'root_joint.x' is both a joint and an entry of joint 'root_joint'")


def test_split_runs_and_pandas_files_warn_as_one_process_does(tmp_path):
    """A key first met beside another in one part was warned about again in a second
    wording; pandas' unnamed index column is no column to warn about."""
    import os

    path = tmp_path / "keys.jsonl"
    path.write_text("".join(json.dumps({"q": [k / 100, 0.5], "time": k, **(
        {"qd": [0, 0]} if k >= 200 else {})}) + "\n" for k in range(400)))
    split = dyn_program(["inverse", ARM, "-i", path, "-o", tmp_path / "out.jsonl"], env={
        "TREEDYN_PART_BYTES": "3000", "TREEDYN_STREAM_CHUNK": "32", "TREEDYN_PROCESSES": "2"})
    one = dyn_program(["inverse", ARM, "-i", path, "-o", tmp_path / "one.jsonl"],
                      env={"TREEDYN_PROCESSES": "1"})
    assert split.returncode == one.returncode == 0
    assert sorted(split.stderr.decode().splitlines()) == sorted(one.stderr.decode().splitlines())
    assert len(one.stderr.decode().splitlines()) == 2
    assert os.path.getsize(tmp_path / "out.jsonl") == os.path.getsize(tmp_path / "one.jsonl")
    pandas = dyn("inverse", ARM, "-i", "-", "-f", "json", stdin=",q0,q1\n0,0.1,0.2\n")
    assert pandas.stderr == b""


def test_an_exactly_singular_mass_matrix_is_called_singular(tmp_path):
    """Coaxial hinges with a massless link between: Cholesky may pass on M by rounding,
    the message named an overflow; the D-block of the first joint is exactly zero."""
    path = tmp_path / "coaxial.urdf"
    path.write_text(ARM.read_text().replace('<mass value="1.0"/>', '<mass value="0"/>', 1)
                    .replace('ixx="0.0841666666666667" ixy="0" ixz="0"\n               '
                             'iyy="0.0841666666666667" iyz="0" izz="0.00166666666666667"',
                             'ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"', 1)
                    .replace('<origin xyz="0 0 -1" rpy="0 0 0"/>', '<origin xyz="0 0 0"/>'))
    line = assert_usage_error(dyn("forward", path, "--q", "0.1,0.2", check=False), "singular")
    assert "joints joint1, joint2 coincide" in line  # joint2 turns its link as joint1 does


def test_a_pinocchio_cos_sin_q_gets_a_hint(tmp_path):
    path = tmp_path / "wheel.urdf"
    path.write_text(ARM.read_text().replace('type="revolute"', 'type="continuous"'))
    assert_usage_error(dyn("inverse", path, "--q", "1,0,1,0", check=False),
                       "needs nq=2 (Pinocchio's layout, with cos and sin for each of the 2 "
                       "continuous joints? dyn takes one angle for each: atan2(sin, cos))")
    with pytest.raises(ValueError, match=r"Pinocchio's layout, with cos and sin for each of the 2"):
        rnea(load_model(str(path)), np.zeros((5, 4)))


def test_many_states_are_not_written_to_a_json_file(tmp_path):
    """JSON Lines in a .json file is not one JSON document (json.load fails): refused,
    before any file is made; one state is one object, which a .json file holds."""
    target = tmp_path / "out.json"
    assert_usage_error(dyn("inverse", ARM, "-i", "-", "-o", target, stdin='{"q": [0, 0]}\n',
                           check=False), "out.json", "name the file .jsonl")
    assert not target.exists()
    dyn("inverse", ARM, "--q", "0.1,0.2", "-o", target)
    assert json.loads(target.read_text())["tau"]


def test_a_huge_integer_given_by_joint_name_names_its_line(tmp_path):
    path = tmp_path / "huge.jsonl"
    path.write_text('{"q": {"joint1": 1%s}}\n' % ("0" * 400))
    assert_usage_error(dyn("inverse", ARM, "-i", path, check=False), "huge.jsonl:1",
                       "joint1 is a number too large for a float")


def test_a_json_line_nested_too_deeply_names_its_line(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"q": %s}\n' % ("[" * 100000 + "]" * 100000))
    assert_usage_error(dyn("inverse", ARM, "-i", path, check=False), "deep.jsonl:1",
                       "nested too deeply")


def test_bad_npz_inputs(tmp_path):
    path = tmp_path / "states.npz"
    np.savez(path, q=np.zeros((3, 5)))
    assert_usage_error(dyn("mass", ARM, "-i", path, check=False), "states.npz", "nq=2")
    q = np.zeros((3, 2))
    q[1, 0] = np.nan
    np.savez(path, q=q)
    result = dyn("mass", ARM, "-i", path, check=False)
    assert len(result.stdout.splitlines()) == 1  # state 0, before the bad one
    result.stdout = b""
    assert_usage_error(result, "states.npz", "q[1]", "the 1 state before it is written to stdout")
    path.write_bytes(b"not a zip")
    assert_usage_error(dyn("mass", ARM, "-i", path, check=False), "states.npz")
    buffer = io.BytesIO()
    np.savez(buffer, v=np.zeros((2, 2)), a=np.zeros((3, 2)))
    assert_usage_error(dyn("inverse", ARM, "-i", "-", stdin=buffer.getvalue(), check=False),
                       "different numbers of states")


def test_singular_forward_dynamics_is_an_error_not_nan():
    if not FEATURES.exists():
        pytest.skip("fixtures/urdf/features.urdf is missing")
    assert_usage_error(dyn("forward", FEATURES, check=False), "singular here: joints left, "
                       "table move no positive mass or inertia")


def test_an_overflow_is_not_called_singular():
    """Joint forces near the largest double overflow the accelerations of a regular M:
    the error says so instead of blaming the model."""
    line = assert_usage_error(dyn("forward", ARM, "--q", "0.1,0.2", "--tau", "1e308,-1e308",
                                  check=False), "not finite (it overflows)")
    assert "singular" not in line


def test_ctrl_c_while_dyn_starts_is_exit_130_without_a_traceback():
    """The dyn program (treedyn.cli.run) loads numpy, typer and the engine first; a Ctrl-C
    then (here: a SIGINT sent when numpy is imported, and when the command's options are
    built) ends it as a Ctrl-C at any other time."""
    for module in ("numpy", "typer.main", "inspect"):
        probe = ("import os, signal, sys\n"
                 "class Interrupt:\n"
                 "    def find_spec(self, name, path=None, target=None):\n"
                 f"        if name == {module!r}:\n"
                 "            os.kill(os.getpid(), signal.SIGINT)\n"
                 "sys.meta_path.insert(0, Interrupt())\n"
                 "from treedyn.cli import run\n"
                 f"sys.argv = ['dyn', 'info', {str(ARM)!r}]\n"
                 "run()\n")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60)
        assert done.returncode == 130 and done.stdout == done.stderr == b"", (module, done)


def test_version_and_help_load_no_numpy():
    """`dyn --version` and `dyn --help` read the command table only: no numpy, no engine."""
    for flag in ("--version", "--help"):
        probe = ("import sys\nimport treedyn.cli.app as app\n"
                 "app.leave = lambda code: None  # return here instead of os._exit\n"
                 f"sys.argv = ['dyn', {flag!r}]\n"
                 "app.run()\n"
                 "heavy = ('numpy', 'treedyn.engine', 'lxml', 'treedyn.cli.commands')\n"
                 "sys.stderr.write(repr(sorted(m for m in heavy if m in sys.modules)))\n")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60)
        assert done.returncode == 0 and done.stderr == b"[]", (flag, done)


def test_an_ignored_sigint_stays_ignored():
    """`dyn ... &` in a script: the shell has SIGINT ignored, and dyn keeps it so."""
    probe = ("import os, signal, sys\n"
             "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
             "from treedyn.cli import run\n"
             "os.kill(os.getpid(), signal.SIGINT)\n"
             f"sys.argv = ['dyn', 'inverse', {str(ARM)!r}, '--q', '0.1,0.2', '-f', 'json']\n"
             "run()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60)
    assert done.returncode == 0 and b'"tau"' in done.stdout, done


ODD = ROOT / "tests" / "data" / "odd_names.urdf"  # joints "wrist, left", "a=b", 'q"t'


def test_names_with_commas_equals_and_quotes_are_addressable():
    """A name holding ',', '=' or '"' goes in double quotes in --q; --fext reads up to the
    last '='. The result is the one of giving every number in order."""
    quoted = dyn_json("inverse", ODD, "--q", '"wrist, left"=0.3,"a=b"=0.2,"q\\"t"=-1')
    plain = dyn_json("inverse", ODD, "--q", "0.3,0.2,-1")
    assert quoted == plain and quoted["dofs"] == ["wrist, left", "a=b", 'q"t']
    wrench = dyn_json("inverse", ODD, "--fext", "l, 1=x=0,0,0,1,0,0")
    assert wrench == dyn_json("inverse", ODD, "--fext", '"l, 1=x"=0,0,0,1,0,0')
    assert wrench["tau"][0] == pytest.approx(-1.0)  # 1 N m about the joints' shared x axis
    assert wrench["tau"][1] == pytest.approx(0.0, abs=1e-12)


def test_suggested_names_are_typable():
    line = assert_usage_error(dyn("inverse", ODD, "--q", "wrist=1", check=False),
                              "unknown joint 'wrist'")
    assert """did you mean '"wrist, left"'?""" in line
    line = assert_usage_error(dyn("inverse", ODD, "--q", "zzz=1", check=False))
    assert line.endswith('''known: "wrist, left", "a=b", "q\\"t"''')
    assert_usage_error(dyn("inverse", ODD, "--q", '"wrist=1', check=False),
                       "a double quote is not closed")


def test_condition_table_shows_cond_d_only_where_a_joint_has_several_dofs():
    """A 1-dof joint's D-block is a number, its cond(D) always 1: the column is left out
    for such models, and kept where a joint (a free-flyer) has several dofs."""
    arm = ROOT / "fixtures" / "two_link_arm.urdf"
    plain = dyn("condition", arm, "--format", "table").stdout.decode()
    assert "lambda_min(D)" in plain and "cond(D)" not in plain
    floating = dyn("condition", ROOT / "fixtures" / "two_link_arm_wrist.urdf", "--free-flyer",
                   "--format", "table").stdout.decode()
    assert "cond(D)" in floating


def test_condition_worst_configuration_wraps_to_the_terminal(monkeypatch):
    """The worst configuration, one "name=value" per coordinate, is wrapped to the
    terminal's width (38 dofs made a line of ~1 000 characters), never cut."""
    monkeypatch.setenv("COLUMNS", "60")
    text = dyn("condition", ROOT / "fixtures" / "two_link_arm_wrist.urdf", "--free-flyer",
               "--format", "table").stdout.decode()
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("worst configuration"))
    end = next(k for k in range(start + 1, len(lines)) if not lines[k].startswith("  "))
    block = lines[start:end]  # the first line and its indented continuations
    assert len(block) > 1 and all(len(line) <= 60 for line in block)
    assert " ".join(line.strip() for line in block).count("=") == 10  # 7 + 3 coordinates
