"""What reaches the terminal is safe, and an input without a state is said.

Names, file names, CSV headers and JSON keys are data from a file or the command line: a
control character in one (an ESC sequence that recolours the terminal or hides a hyperlink,
C1's one-byte CSI, a bidi override that reverses what follows) must reach no terminal raw,
in an error, a warning, a table or a GitHub annotation; it is shown escaped (``\\x1b``,
``\\u202e``). An empty input is bad input: exit 2, one line, an earlier output left as it
was. Each case runs ``dyn`` in a subprocess, with its arguments and file names as bytes.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
NEGATIVE_MASS = ROOT / "fixtures" / "broken" / "negative_mass.urdf"

ESC = "\x1b[31m"  # SGR: red from here on
OSC = "\x1b]8;;http://x\x07"  # a hyperlink that shows no address
CSI = "\x9b"  # C1's one-character CSI
RLO = "\u202e"  # right-to-left override


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def run(*args, stdin: bytes = b"", env: dict | None = None) -> subprocess.CompletedProcess:
    """``dyn ARGS`` in a fresh process (arguments may hold any character), bytes out; on a
    terminal of 400 columns, so that a table naming a long temporary path stays one block
    (what is tested is the escaping, not the fitting to the width)."""
    words = [os.fsencode(arg) if isinstance(arg, (str, Path)) else arg for arg in args]
    return subprocess.run([sys.executable, "-m", "treedyn.cli", *words], input=stdin,
                          capture_output=True, cwd=ROOT, timeout=120, preexec_fn=limited,
                          env={**os.environ, "COLUMNS": "400", **(env or {})})


def raw_controls(data: bytes) -> list[str]:
    """The characters of ``data`` no terminal should get raw: C0 controls but the line feed
    that ends a line, DEL, C1, format characters (bidi, zero-width), line separators, and
    bytes that are not UTF-8 (a lone 0x9b is an 8-bit CSI)."""
    text = data.decode("utf-8", errors="surrogateescape")
    return [char for char in text if char != "\n" and (
        unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs"))]


def safe(result: subprocess.CompletedProcess) -> tuple[str, str]:
    """stdout and stderr, checked to hold no raw control character and no traceback."""
    assert raw_controls(result.stdout) == [], result.stdout[-2000:]
    assert raw_controls(result.stderr) == [], result.stderr[-2000:]
    assert b"Traceback" not in result.stderr and b"internal error" not in result.stderr
    return result.stdout.decode(), result.stderr.decode()


def one_error_line(result: subprocess.CompletedProcess) -> str:
    out, err = safe(result)
    assert result.returncode == 2, (result.returncode, err)
    lines = err.splitlines()
    assert len(lines) == 1 and out == "", err
    return lines[0]


def urdf_named(tmp_path: Path, joint: str) -> Path:
    """The two-link arm with its first joint renamed (as XML character references)."""
    reference = "".join(f"&#{ord(c)};" if not c.isalnum() else c for c in joint)
    path = tmp_path / "named.urdf"
    path.write_text(ARM.read_text().replace('name="joint1"', f'name="{reference}"'))
    return path


MJCF = """<mujoco model="m">
  <worldbody>
    <body name="b">
      <joint name="h&#x9b;i&#x202e;&#9;j" axis="0 1 0"/>
      <geom type="sphere" size="0.05" mass="1"/>
    </body>
  </worldbody>
</mujoco>
"""


# ------------------------------------------------------------------ names from model files
def test_urdf_joint_names_are_escaped_in_tables_and_the_unknown_joint_error(tmp_path):
    """XML forbids ESC even as &#27;; C1, bidi, TAB and DEL it allows."""
    model = urdf_named(tmp_path, f"j{CSI}1{RLO}x\ty\x7f")
    shown = "j\\x9b1\\u202ex\\x09y\\x7f"
    out, _ = safe(run("info", model))
    assert f"`- {shown} (revolute)" in out and f"parent {shown}" not in out
    out, _ = safe(run("inverse", model, "--q", "0.1,0.2", "--format", "table"))
    assert out.splitlines()[2].startswith(shown)
    out, _ = safe(run("mass", model, "--sparsity", "--format", "table"))
    assert f"0 {shown}" in out
    line = one_error_line(run("inverse", model, "--q", "nope=1"))
    assert line == f"dyn: --q: unknown joint 'nope' in model two_link_arm; known: {shown}, joint2"


def test_mjcf_joint_names_are_escaped(tmp_path):
    model = tmp_path / "m.xml"
    model.write_text(MJCF)
    out, _ = safe(run("inverse", model, "--format", "table"))
    assert "h\\x9bi\\u202e\\x09j" in out
    line = one_error_line(run("mass", model, "--q", "nope=1"))
    assert line.endswith("known: h\\x9bi\\u202e\\x09j")


# ------------------------------------------------------------ names typed or read from inputs
@pytest.mark.parametrize("name, shown", [
    (ESC + "foo", "\\x1b[31mfoo"), (OSC, "\\x1b]8;;http://x\\x07"), (CSI + "2J", "\\x9b2J"),
    ("a" + RLO + "b", "a\\u202eb")])
def test_a_name_typed_in_q_is_escaped_in_the_unknown_joint_error(name, shown):
    line = one_error_line(run("inverse", ARM, "--q", f"joint1=1,{name}=2"))
    assert line == f"dyn: --q: unknown joint '{shown}' in model two_link_arm; known: joint1, joint2"


def test_a_csv_header_key_is_escaped(tmp_path):
    path = tmp_path / "states.csv"
    path.write_bytes(f"q:joint1,q:joint2,tau:{ESC}X\n0.1,0.2,3\n".encode())
    line = one_error_line(run("forward", ARM, "--input", path))
    assert line == (f"{path}:1: column 'tau:\\x1b[31mX': unknown joint '\\x1b[31mX' in model "
                    "two_link_arm; known: joint1, joint2")


def test_a_json_lines_key_is_escaped(tmp_path):
    path = tmp_path / "states.jsonl"
    path.write_text(json.dumps({"q": {"joint1": 0.1, OSC: 0.2}}) + "\n")
    line = one_error_line(run("inverse", ARM, "--input", path))
    assert "unknown joint '\\x1b]8;;http://x\\x07' in model two_link_arm" in line


def test_a_file_name_is_escaped_in_errors_and_in_the_info_table(tmp_path):
    folder = tmp_path / f"r\x1bc{RLO}"  # ESC c resets the terminal ('[' would be a pattern)
    folder.mkdir()
    model = folder / f"arm{CSI}.urdf"
    model.write_text(ARM.read_text())
    out, _ = safe(run("info", model))
    assert f"{tmp_path}/r\\x1bc\\u202e/arm\\x9b.urdf" in out.splitlines()[0]
    line = one_error_line(run("inverse", model, "--input", folder / "missing.csv"))
    assert line.startswith(f"{tmp_path}/r\\x1bc\\u202e/missing.csv: cannot read")


def test_a_file_name_that_is_not_utf8_is_escaped(tmp_path):
    """A lone byte 0x9b in a file name (a CSI on an 8-bit terminal) is shown by its code."""
    model = os.path.join(os.fsencode(tmp_path), b"arm\x9b.urdf")
    with open(model, "wb") as stream:
        stream.write(ARM.read_bytes())
    out, _ = safe(run("info", model))
    assert f"{tmp_path}/arm\\udc9b.urdf" in out.splitlines()[0]


@pytest.mark.parametrize("suffix, first", [(".csv", ":2"), (".jsonl", ":1"),
                                           (".npz", ": state 0")])
def test_an_input_file_name_is_escaped_in_the_tables_of_states(tmp_path, suffix, first):
    path = tmp_path / f"s\x1bc{CSI}{suffix}"  # ESC c resets the terminal
    if suffix == ".npz":
        np.savez(path, q=[[0.1, 0.2]])
    else:
        path.write_text('q:joint1,q:joint2\n0.1,0.2\n' if suffix == ".csv" else
                        '{"q": [0.1, 0.2]}\n')
    shown = f"{tmp_path}/s\\x1bc\\x9b{suffix}{first}"
    out, _ = safe(run("mass", ARM, "--input", path, "--format", "table"))
    assert out.startswith(f"state {shown}\n"), out
    out, _ = safe(run("inverse", ARM, "--input", path, "--format", "table"))
    assert out.splitlines()[2].startswith(shown), out


def test_a_warning_is_escaped(tmp_path):
    """The warning on a column dyn does not read names the file (a zero-width space and
    C1's CSI in its name) and the column (a bidi isolate)."""
    path = tmp_path / "st\u200bates\x9b.csv"
    path.write_bytes("q:joint1,q:joint2,t\u2066\n0.1,0.2,3\n".encode())
    result = run("inverse", ARM, "--input", path, "--format", "json")
    _, err = safe(result)
    assert result.returncode == 0
    assert err.startswith(f"dyn: warning: {tmp_path}/st\\u200bates\\x9b.csv:1: column "
                          "'t\\u2066' not read"), err


@pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals")
def test_the_line_of_a_run_ended_by_a_signal_names_the_output_escaped(tmp_path):
    """SIGTERM while dyn waits on stdin: its last line says what it left in the output."""
    folder = tmp_path / f"o\x1bc{RLO}"
    folder.mkdir()
    out = folder / "tau.csv"
    process = subprocess.Popen(
        [sys.executable, "-m", "treedyn.cli", "inverse", str(ARM), "--input", "-",
         "--output", os.fsencode(out), "--quiet"], cwd=ROOT, stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=limited,
        env={**os.environ, "TREEDYN_PROCESSES": "1"})
    try:
        process.stdin.write(b'{"q": [0.1, 0.2]}\n')
        process.stdin.flush()
        for _ in range(600):  # its temporary is opened once the signals are handled
            if any(folder.iterdir()) or process.poll() is not None:
                break
            time.sleep(0.05)
        time.sleep(0.3)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGTERM, err
    assert raw_controls(err) == []
    assert f"{tmp_path}/o\\x1bc\\u202e/tau.csv" in err.decode().splitlines()[-1], err


def test_github_annotations_escape_names_and_file_names(tmp_path):
    """Workflow commands: '%', CR and LF percent-encoded (':' and ',' too in properties);
    other controls cannot reach the log raw."""
    model = tmp_path / f"neg{ESC},m:%.urdf"
    model.write_text(NEGATIVE_MASS.read_text().replace(
        '"payload"', '"pay&#x9b;l&#x202e;o&#10;a,d:x%"'))
    result = run("check-inertia", model, "--format", "github")
    out, _ = safe(result)
    assert result.returncode == 1
    [line] = out.splitlines()
    assert line.startswith(f"::error file={tmp_path}/neg\\x1b[31m%2Cm%3A%25.urdf,line=23,"
                           "title=dyn check-inertia%3A mass (pay\\x9bl\\u202eo%0Aa%2Cd%3Ax%25)::")
    assert line.endswith("::pay\\x9bl\\u202eo%0Aa,d:x%25: negative mass -0.5 kg")


def test_an_error_line_is_cut_to_a_sane_length(tmp_path):
    path = tmp_path / ("x" * 3000 + ".csv")  # too long a name for the file system
    line = one_error_line(run("inverse", ARM, "--input", path))
    assert len(line) <= 1000 and "characters left out" in line
    assert line.startswith(str(tmp_path)) and line.endswith("(File name too long)")


def test_printable_escapes_controls_and_keeps_other_text():
    from treedyn.cli.console import printable

    assert printable("é 日本 a b\u00a0c") == "é 日本 a b\u00a0c"
    assert printable("\x00\t\n\x1b\x7f\x85\x9b") == "\\x00\\x09\\x0a\\x1b\\x7f\\x85\\x9b"
    assert printable("\u061c\u200b\u200e\u200f\u2028\u2029\u202a\u202e\u2066\u2069\ufeff") == (
        "\\u061c\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a\\u202e\\u2066\\u2069\\ufeff")
    assert printable("\U000e0041\udcff") == "\\U000e0041\\udcff"  # a tag; a byte not UTF-8
    assert printable(printable("a\x1bb")) == "a\\x1bb"


# ----------------------------------------------------------------------------- empty inputs
def write_parquet(path: Path, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"q": pa.array([[0.1, 0.2]] * rows, pa.list_(pa.float64()))}),
                   path)


def write_h5(path: Path, rows: int) -> None:
    import h5py

    with h5py.File(path, "w") as file:
        file["q"] = np.zeros((rows, 2))


EMPTY = {  # name -> (suffix, writer of the file, why it has no states)
    "empty jsonl": (".jsonl", lambda p: p.write_bytes(b""), "the file is empty"),
    "blank jsonl": (".jsonl", lambda p: p.write_bytes(b"\n  \n\r\n"),
                    "the file has blank lines only"),
    "empty csv": (".csv", lambda p: p.write_bytes(b""), "the file is empty"),
    "csv header": (".csv", lambda p: p.write_bytes(b"q:joint1,q:joint2\n"),
                   "a header and no rows"),
    "csv header, blank lines": (".csv", lambda p: p.write_bytes(b"\nq0,q1\n\n\n"),
                                "a header and no rows"),
    "npz of 0 rows": (".npz", lambda p: np.savez(p, q=np.zeros((0, 2))),
                      "its arrays have no rows"),
    "parquet of 0 rows": (".parquet", lambda p: write_parquet(p, 0), "the file has no rows"),
    "hdf5 of length 0": (".h5", lambda p: write_h5(p, 0), "its datasets have length 0"),
}


@pytest.mark.parametrize("case", EMPTY)
def test_an_input_without_states_is_one_line_and_leaves_the_output(tmp_path, case):
    suffix, write, why = EMPTY[case]
    path = tmp_path / f"states{suffix}"
    write(path)
    output = tmp_path / "tau.csv"
    output.write_text("earlier results\n")
    line = one_error_line(run("inverse", ARM, "--input", path, "--output", output))
    assert line == f"{path}: no states ({why})"
    assert output.read_text() == "earlier results\n"


@pytest.mark.parametrize("case", ["empty jsonl", "csv header", "npz of 0 rows"])
def test_an_input_without_states_on_stdin_or_to_stdout(tmp_path, case):
    suffix, write, why = EMPTY[case]
    path = tmp_path / f"states{suffix}"
    write(path)
    piped = "stdin is empty" if case == "empty jsonl" else why
    assert one_error_line(run("mass", ARM, "--input", "-", stdin=path.read_bytes())) == \
        f"<stdin>: no states ({piped})"
    assert one_error_line(run("forward", ARM, "--input", path)) == f"{path}: no states ({why})"


@pytest.mark.parametrize("command", ["regressor", "identify"])
def test_regressor_and_identify_say_an_empty_log(tmp_path, command):
    path = tmp_path / "log.csv"
    path.write_text("q:joint1,q:joint2,v:joint1,v:joint2,a:joint1,a:joint2"
                    + (",tau:joint1,tau:joint2\n" if command == "identify" else "\n"))
    output = tmp_path / "Y.npz"
    output.write_bytes(b"earlier")
    more = ["--output", output] if command == "regressor" else []
    line = one_error_line(run(command, ARM, "--input", path, *more))
    assert line == f"{path}: no states (a header and no rows)"
    assert output.read_bytes() == b"earlier"


def test_blank_lines_split_over_processes_say_no_states(tmp_path):
    """A text file large enough to be split into parts (parts of 4 kB here) reaches the
    one-process message."""
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n" * 20_000)
    line = one_error_line(run("inverse", ARM, "--input", path, "--format", "json",
                              env={"TREEDYN_PART_BYTES": "4096", "TREEDYN_PROCESSES": "2"}))
    assert line == f"{path}: no states (the file has blank lines only)"


@pytest.mark.parametrize("scheduler", [[], ["--scheduler", "local"]])
def test_many_files_with_an_empty_one_say_which(tmp_path, scheduler):
    """Files of a pattern are checked before anything runs, here or on a Dask cluster."""
    if scheduler:
        pytest.importorskip("distributed")
    folder = tmp_path / "logs"
    folder.mkdir()
    np.savez(folder / "a.npz", q=np.zeros((3, 2)))
    np.savez(folder / "b.npz", q=np.zeros((0, 2)))
    line = one_error_line(run("inverse", ARM, "--input", f"{folder}/*.npz",
                              "--output", f"{tmp_path}/out/", *scheduler))
    assert line == f"{folder}/b.npz: no states (its arrays have no rows); nothing was written"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [
    ["info"], ["check-inertia"], ["verify", "--samples", "2"], ["condition", "--samples", "3"],
    ["regressor", "--format", "table"], ["mass", "--format", "table"],
])
def test_text_reports_on_stdout_show_names_escaped(tmp_path, command):
    """Every human report (not only tables) shows the model's names and its file name
    escaped: the model name, the robot's path and the joint names are data."""
    folder = tmp_path / f"d{CSI}{RLO}"
    folder.mkdir()
    model = folder / "named.urdf"
    model.write_bytes(urdf_named(tmp_path, f"j{CSI}{RLO}").read_bytes().replace(
        b'<robot name="', "<robot name=\"\u202e".encode()))
    out, _ = safe(run(command[0], model, *command[1:]))
    assert "\\u202e" in out or "\\x9b" in out, out
