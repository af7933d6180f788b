"""dyn on hostile inputs: every case of :mod:`hostile` (broken, lying, oversized,
malicious or absurd models, meshes and state files) and, as a property, any bytes --
random, or a valid file mangled -- given as a model, a mesh or a state file.

The promise held: exit 0, 1 or 2 within seconds, at most one line on stderr, and never a
traceback or an internal error. (Memory bounds under a resource limit are in
``test_bounds.py``.)
"""
from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostile

ROOT = hostile.ROOT
ARM = hostile.ARM
SECONDS = 30  # generous on a loaded 2-core machine (alone, the slowest case takes ~3 s)


def run(args: list[str], cwd: Path) -> tuple[int, str]:
    """``dyn ARGS`` in this interpreter from ``cwd``: exit code and stderr."""
    from treedyn.cli.app import run as dyn

    stdout, stderr = io.StringIO(), io.StringIO()
    with (mock.patch.object(sys, "stdin", io.StringIO("")), contextlib.redirect_stdout(stdout),
          contextlib.redirect_stderr(stderr), contextlib.chdir(cwd),
          pytest.raises(SystemExit) as exit_info):
        dyn([str(a) for a in args])
    code = exit_info.value.code
    return (0 if code is None else code), stderr.getvalue()


def check(args: list[str], cwd: Path) -> tuple[int, str]:
    began = time.monotonic()
    code, err = run(args, cwd)
    took = time.monotonic() - began
    assert code in (0, 1, 2), (args, code, err[-2000:])
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    assert err.count("\n") <= 1 and (not err or err.endswith("\n")), err[-2000:]
    assert took < SECONDS, (args, took)
    return code, err


def commands_for(case: hostile.Case, folder: Path) -> list[list[str]]:
    """The runs that read the case, its file written in ``folder``."""
    path = folder / case.file_name
    path.write_bytes(case.data)
    if case.kind == "model":
        return [["info", path], ["inverse", path], ["check-inertia", path, "--format", "json"]]
    if case.kind == "state":
        return [["inverse", ARM, "--input", path, "--output", folder / "out.jsonl"],
                ["forward", ARM, "--input", path, "--format", "csv"]]
    mesh = path.name
    model = folder / f"{path.stem}-model.xml"
    model.write_text(f'<mujoco><asset><mesh name="m" file="{mesh}"/></asset><worldbody>'
                     '<body><joint/><geom type="mesh" mesh="m"/></body></worldbody></mujoco>')
    robot = folder / f"{path.stem}-robot.urdf"
    robot.write_text(
        '<robot name="r"><link name="base"/><link name="a"><inertial><mass value="1"/>'
        '<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>'
        f'<visual><geometry><mesh filename="{mesh}"/></geometry></visual></link>'
        '<joint name="j" type="continuous"><parent link="base"/><child link="a"/>'
        '<axis xyz="0 0 1"/></joint></robot>')
    return [["info", model], ["inverse", model], ["check-inertia", robot]]


CORPUS = hostile.corpus()


@pytest.mark.parametrize("case", CORPUS, ids=[case.file_name for case in CORPUS])
def test_a_hostile_input_is_answered_in_one_line_at_most(case, tmp_path):
    for args in commands_for(case, tmp_path):
        check(args, tmp_path)


def test_the_corpus_script_writes_every_case(tmp_path):
    paths = hostile.write(tmp_path / "corpus")
    assert len(paths) == len(CORPUS) == len({p.name for p in paths})


VALID = {
    "model": [(".urdf", ARM.read_bytes()),
              (".xml", (ROOT / "fixtures" / "mjcf" / "defaults.xml").read_bytes())],
    "mesh": [(".stl", hostile.stl_binary(hostile.cube_triangles())),
             (".obj", (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\n"
                      b"f 2 3 4\n"))],
    "state": [(".jsonl", b'{"q": [0.1, 0.2], "v": [0, 1]}\n{"q": [0.3, 0.4]}\n'),
              (".csv", b"q:joint1,q:joint2,v:joint1\n0.1,0.2,1\n0.3,0.4,0\n"),
              (".npz", hostile.npz({"q": [[0.1, 0.2], [0.3, 0.4]], "v": [[0, 1], [1, 0]]}))],
}


@st.composite
def mangled(draw, kind: str):
    """(suffix, bytes): random bytes, or a valid file of ``kind`` with a few edits."""
    suffix, valid = draw(st.sampled_from(VALID[kind]))
    if draw(st.booleans()):
        return suffix, draw(st.binary(max_size=3000))
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        edit = draw(st.sampled_from(["delete", "insert", "flip", "repeat"]))
        if edit == "delete":
            del data[at:at + draw(st.integers(1, 40))]
        elif edit == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=20))
        elif edit == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        else:
            data[at:at] = data[at:at + draw(st.integers(1, 200))] * draw(st.integers(1, 5))
    return suffix, bytes(data)


@pytest.mark.parametrize("kind", ["model", "mesh", "state"])
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=st.data())
def test_any_bytes_end_in_exit_0_1_or_2_with_at_most_one_line(kind, data, tmp_path):
    suffix, content = data.draw(mangled(kind))
    case = hostile.Case(kind, f"drawn-{time.monotonic_ns()}", suffix, content)
    for args in commands_for(case, tmp_path):
        check(args, tmp_path)
