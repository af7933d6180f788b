"""Inputs that would block, read forever or fill memory end in one line, at once.

A model path that names a FIFO, or links to /dev/zero; a model file of 300 MB; an MJCF
include or a mesh that is a device; states from /dev/zero or one endless line. Each run
gets a 1 GiB address-space limit and 30 s: dyn must answer exit 2 with one line naming
the file, within them.
"""
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
MEMORY = 1 << 30

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="FIFOs, /dev/zero, rlimits")


def bounded():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY + (512 << 20), MEMORY + (512 << 20)))


def dyn(args, stdin=subprocess.DEVNULL):
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", *map(str, args)], cwd=ROOT,
                          stdin=stdin, capture_output=True, text=True, timeout=30,
                          preexec_fn=bounded)
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, \
        done.stderr[-2000:]
    return lines[0]


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "robot.urdf"
    os.mkfifo(path)
    return path


def test_a_fifo_model_is_refused_without_waiting(fifo):
    assert dyn(["info", fifo]) == f"{fifo}: cannot read file (a FIFO, not a regular file)"


@pytest.mark.parametrize("suffix", [".urdf", ".xml"])
def test_a_model_linked_to_dev_zero_is_refused(tmp_path, suffix):
    path = tmp_path / f"robot{suffix}"
    path.symlink_to("/dev/zero")
    assert dyn(["info", path]) == (f"{path}: cannot read file (a character device, not a "
                                   "regular file)")


def test_a_model_file_larger_than_the_limit_is_refused_unread(tmp_path):
    path = tmp_path / "robot.urdf"
    with open(path, "wb") as stream:
        stream.truncate(300 << 20)  # sparse: 300 MB that takes no disk
    assert dyn(["info", path]) == (f"{path}: cannot read file (300 MiB, larger than the 256 MiB "
                                   "dyn reads)")


def test_an_include_that_is_a_fifo_names_the_including_file(tmp_path):
    os.mkfifo(tmp_path / "part.xml")
    model = tmp_path / "scene.xml"
    model.write_text('<mujoco>\n  <include file="part.xml"/>\n  <worldbody/>\n</mujoco>\n')
    assert dyn(["info", model]) == (f'{model}:2: <include>: included file "part.xml" is a '
                                    f"FIFO, not a file ({tmp_path / 'part.xml'})")


def test_a_mesh_linked_to_dev_zero_is_refused(tmp_path):
    (tmp_path / "part.stl").symlink_to("/dev/zero")
    model = tmp_path / "scene.xml"
    model.write_text('<mujoco>\n  <asset><mesh name="m" file="part.stl"/></asset>\n'
                     '  <worldbody><body><freejoint/><geom type="mesh" mesh="m"/></body>'
                     '</worldbody>\n</mujoco>\n')
    assert dyn(["info", model]) == (f'{model}:2: <mesh name="m">: mesh file "part.stl" is a '
                                    f"character device, not a file (looked for "
                                    f"{tmp_path / 'part.stl'})")


def test_states_from_dev_zero_end_at_the_first_line():
    with open("/dev/zero", "rb") as zeros:
        line = dyn(["inverse", ARM, "--input", "-"], stdin=zeros)
    assert line == "<stdin>:1: holds NUL bytes (UTF-16 text? dyn reads UTF-8)"


def test_an_endless_line_is_refused_within_bounded_memory(tmp_path):
    path = tmp_path / "states.csv"
    path.write_text("1" * (40 << 20))  # 40 MB without a line end
    assert dyn(["inverse", ARM, "--input", path]) == (
        f"{path}:1: a line longer than 16 M characters, far more than a state holds: not "
        "JSON Lines or CSV text?")


@pytest.mark.parametrize("command,option", [("condition", "--samples"), ("verify", "--samples"),
                                            ("check-inertia", "--samples"),
                                            ("bench", "--states")])
def test_a_count_past_memory_is_refused_before_anything_is_held(command, option):
    """The diagnostics hold all their samples at once, bench its batch: 10^9 of them is one
    line naming the largest count that fits, not an out-of-memory kill."""
    line = dyn([command, ARM, option, "1000000000"])
    assert line.startswith(f"dyn: {option} 1000000000 would hold about "), line
    most = int(line.rsplit("at most ", 1)[1].split()[0])
    assert 100_000 < most < 1_000_000_000  # the arm's samples are small: a large count fits


def mjcf(tmp_path, body: str) -> Path:
    path = tmp_path / "extreme.xml"
    path.write_text(f'<mujoco>\n<worldbody>\n<body name="b">\n<joint type="hinge"/>\n{body}\n'
                    '</body>\n</worldbody>\n</mujoco>\n')
    return path


@pytest.mark.parametrize("command", ["info", "inverse", "forward", "mass", "condition",
                                     "verify"])
def test_numbers_that_overflow_once_compiled_are_one_line_naming_the_element(tmp_path,
                                                                           command):
    """A sphere of size 1e200 has an infinite volume and mass: no numpy warning, one line
    naming the body, exit 2 (condition used to exit 0 printing cond(M) inf)."""
    path = mjcf(tmp_path, '<geom type="sphere" size="1e200"/>')
    assert dyn([command, path]) == (f"{path}:3: <body name=\"b\">: the mass and inertia of "
                                    "link 'b' overflow a double once compiled (values this "
                                    "large cannot be computed with)")


@pytest.mark.parametrize("body", ['<geom type="sphere" size="0.1" mass="1e308"/>',
                                  '<inertial pos="0 0 0" mass="1" '
                                  'diaginertia="1e308 1e308 1e308"/>'])
def test_large_finite_numbers_print_no_numpy_warning(tmp_path, body):
    """Finite once compiled (the density 1e308 / volume overflows on the way, the triangle
    test sums 1e308s): the run goes on without the warnings numpy prints."""
    path = mjcf(tmp_path, body)
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", "info", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_check_inertia_reports_the_overflow_as_its_finding(tmp_path):
    path = mjcf(tmp_path, '<geom type="sphere" size="1e200"/>')
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", "check-inertia", str(path),
                           "--format", "json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 1 and done.stderr == "", done.stderr
    assert any(f["check"] == "finite" and f["severity"] == "error"
               for f in json.loads(done.stdout)["findings"])


def test_a_process_count_below_one_is_refused(tmp_path):
    """TREEDYN_PROCESSES=-1 used to run as 1 without a word; 1_0 and +2 (which int() reads)
    are refused as the other counts refuse them."""
    path = tmp_path / "s.jsonl"
    path.write_text('{"q": [0.1, 0.2]}\n' * 10)
    for value in ("-1", "0", "1_0", "+2", "\u0663"):
        done = subprocess.run([sys.executable, "-m", "treedyn.cli", "inverse", str(ARM), "-i",
                               str(path), "-o", str(tmp_path / "out.csv")], cwd=ROOT,
                              capture_output=True, text=True, timeout=30,
                              env={**os.environ, "TREEDYN_PROCESSES": value})
        assert done.returncode == 2 and done.stderr == (
            f"dyn: TREEDYN_PROCESSES='{value}' is not a positive whole number\n")


def test_a_zero_quaternion_is_named():
    """The identity it is taken as is the least likely reading of what was meant."""
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", "inverse", str(ARM),
                           "--free-flyer", "--q", "0,0,0,0,0,0,0,0.1,0.2", "-f", "json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stderr == (
        "dyn: warning: root_joint: its quaternion (x, y, z, w) is all zeros, no orientation "
        "at all; it is taken as the identity (0, 0, 0, 1)\n")


@pytest.mark.parametrize("word", ["1_000", "\uff11", "\u0661"])
def test_command_line_numbers_are_plain_decimals_as_in_files(word):
    """Python's float() reads 1_000 and other scripts' digits; JSON files do not: the
    command line reads what the files read."""
    assert dyn(["inverse", ARM, "--q", f"{word},0"]) == f"dyn: --q: '{word}' is not a number"


@pytest.mark.parametrize("word", ["1_000", "\uff11", "\u0661"])
@pytest.mark.parametrize("quoted", [False, True])
def test_csv_numbers_are_plain_decimals_as_on_the_command_line(tmp_path, word, quoted):
    """CSV cells went through float() (quoted ones, or a block numpy's parser refused) and
    so read '1_000' and other scripts' digits, which JSON and --q refuse."""
    cell = f'"{word}"' if quoted else word
    path = tmp_path / "states.csv"
    path.write_text(f"q:joint1,q:joint2\n0.1,0.2\n{cell},0\n", encoding="utf-8")
    line = dyn(["inverse", ARM, "--input", path])
    assert line.startswith(f"{path}:3: column 'q:joint1': '{word}' is not a finite number")


def test_an_include_that_is_not_xml_names_the_including_file(tmp_path):
    (tmp_path / "notes.txt").write_text("root:x:0:0:root:/root:/bin/sh\n")
    model = tmp_path / "scene.xml"
    model.write_text('<mujoco>\n  <include file="notes.txt"/>\n  <worldbody/>\n</mujoco>\n')
    assert dyn(["info", model]).startswith(
        f'{model}:2: <include>: included file "{tmp_path / "notes.txt"}" is not well-formed XML '
        "(its line 1: ")


def test_a_mesh_with_a_nan_vertex_says_so(tmp_path):
    """MuJoCo refuses it ("vertex coordinate ... is not finite"); dyn called the mesh
    colocated, or failed with an internal error."""
    import struct

    import numpy as np

    triangle = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype="<f4")
    faces = [triangle, triangle + [0, 0, 1], np.array([[0, 0, 0], [np.nan, 0, 1], [0, 1, 1]],
                                                       dtype="<f4"), triangle + [1, 1, 0]]
    (tmp_path / "part.stl").write_bytes(
        b"\0" * 80 + struct.pack("<i", len(faces))
        + b"".join(b"\0" * 12 + face.astype("<f4").tobytes() + b"\0\0" for face in faces))
    model = tmp_path / "scene.xml"
    model.write_text('<mujoco>\n  <asset><mesh name="m" file="part.stl"/></asset>\n'
                     '  <worldbody><body><freejoint/><geom type="mesh" mesh="m"/></body>'
                     '</worldbody>\n</mujoco>\n')
    assert dyn(["info", model]) == (f'{model}:2: <mesh name="m">: mesh file '
                                    f'"{tmp_path / "part.stl"}": a vertex coordinate is not '
                                    "finite (NaN or infinity)")
