"""JSON Lines and CSV results of a run in one process (an .npz input, stdin, a text file
that cannot be split), formatted in worker processes (treedyn.cli.run.textpool).

Fresh ``dyn`` processes with chunks of 32 states (test_parts.SPLIT), compared byte for
byte with TREEDYN_PROCESSES=1: results, error lines, exit codes and the states written
before an error.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from test_cli import ARM, ROOT
from test_parts import SPLIT, run, states, write_jsonl

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="text is formatted in forked workers on Linux only")


def write_npz(path, rows) -> None:
    rows = np.array(rows)
    np.savez(path, q=rows[:, 0:2], v=rows[:, 2:4], a=rows[:, 4:6], tau=rows[:, 2:4])


def write_quoted_csv(path, rows) -> None:
    """CSV with quoted cells: parts.py does not split it."""
    path.write_text("q0,q1,v0,v1,a0,a1\n" + "".join(
        f'"{r[0]!r}",' + ",".join(map(repr, r[1:6])) + "\n" for r in rows))


def run_with_stdin(args, processes: int, stdin) -> subprocess.CompletedProcess:
    """``dyn ARGS`` with ``stdin`` (a file, or bytes through a pipe)."""
    feed = {"input": stdin} if isinstance(stdin, bytes) else {"stdin": stdin}
    return subprocess.run([sys.executable, "-m", "treedyn.cli", *map(str, args)],
                          capture_output=True, cwd=ROOT, timeout=120, **feed,
                          env={**os.environ, **SPLIT, "TREEDYN_PROCESSES": str(processes)})


def both(args, tmp_path, output: str | None, stdin_file=None):
    """(stdout, stderr, exit code, output file bytes) in one process and with three workers."""
    results = []
    for processes in (1, 3):
        target = tmp_path / f"p{processes}-{output}" if output else None
        arguments = [*args, "-o", target] if target else args
        if stdin_file is None:
            done = run(arguments, processes)
        else:
            with open(stdin_file, "rb") as stdin:
                done = run_with_stdin(arguments, processes, stdin)
        stderr = done.stderr.replace(b"/p3-", b"/p1-")  # messages name the output
        written = target.read_bytes() if target and target.exists() else None
        results.append((done.stdout, stderr, done.returncode, written))
    return results


@pytest.mark.parametrize("output", ["out.jsonl", "out.csv", "json", "csv"])
@pytest.mark.parametrize("source", ["npz", "stdin", "quoted csv"])
def test_the_text_is_what_one_process_writes(tmp_path, source, output):
    stdin = None
    if source == "npz":
        path = tmp_path / "states.npz"
        write_npz(path, states())
    elif source == "stdin":  # a file on stdin
        stdin = tmp_path / "states.jsonl"
        write_jsonl(stdin, states())
        path = "-"
    else:
        path = tmp_path / "states.csv"
        write_quoted_csv(path, states())
    for command in ("inverse", "forward", "mass"):
        args = [command, ARM, "-i", path] + ([] if "." in output else ["-f", output])
        one, split = both(args, tmp_path, output if "." in output else None, stdin)
        assert one == split
        assert one[2] == 0 and one[1] == b"" and (one[0] or one[3])


@pytest.mark.parametrize("output", ["out.jsonl", "out.csv", "csv"])
@pytest.mark.parametrize("bad", [700, 832])  # 832: the first state of a chunk (26 x 32)
def test_a_bad_state_stops_as_in_one_process(tmp_path, output, bad):
    """A NaN the reader rejects, and a huge tau that makes forward dynamics non-finite in
    the engine: the same line, and the same states written before it."""
    rows = states()
    for kind in ("nan", "huge"):
        path = tmp_path / f"{kind}.npz"
        broken = [list(row) for row in rows]
        broken[bad][2:4] = [np.nan, 0.0] if kind == "nan" else [1e308, -1e308]
        write_npz(path, broken)
        args = ["forward", ARM, "-i", path] + ([] if "." in output else ["-f", output])
        one, split = both(args, tmp_path, output if "." in output else None)
        assert one == split
        assert one[2] == 2 and f"the {bad} states before it".encode() in one[1]


@pytest.mark.parametrize("source, used", [("npz", True), ("csv", True), ("pipe", False)])
def test_the_workers_format_the_text(tmp_path, source, used):
    """The comparisons above are not between two one-process runs: with workers allowed,
    every chunk's text comes from them; with TREEDYN_PROCESSES=1, none. A pipe on stdin
    keeps the text in one process: its producer may pause, and one process writes each
    chunk as soon as the next arrives."""
    path = tmp_path / f"states.{'jsonl' if source == 'pipe' else source}"
    {"npz": write_npz, "csv": write_quoted_csv, "pipe": write_jsonl}[source](path, states())
    probe = ("import sys\n"
             "from treedyn.cli.run import textpool as formatting\n"
             "from treedyn.cli.app import run_app\n"
             "calls = []\n"
             "put = formatting.Ahead.put\n"
             "formatting.Ahead.put = lambda self, *a: (calls.append(1), put(self, *a))[1]\n"
             "try:\n    run_app(sys.argv[1:])\nexcept SystemExit as e:\n    assert e.code == 0\n"
             "print(len(calls), file=sys.stderr)\n")
    for processes in (3, 1):
        args = ["inverse", str(ARM), "-i", "-" if source == "pipe" else str(path),
                "-o", str(tmp_path / "out.csv")]
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True,
                              cwd=ROOT, timeout=120, env={**os.environ, **SPLIT,
                                                          "TREEDYN_PROCESSES": str(processes)},
                              input=path.read_bytes() if source == "pipe" else None)
        assert done.returncode == 0, done.stderr
        assert (int(done.stderr.decode().strip()) > 0) == (used and processes > 1)


def test_a_worker_that_dies_leaves_no_gap(tmp_path):
    """A worker killed while it makes a chunk's text, after the other workers made later
    ones: the output holds the states before that chunk, in order, and the error line
    counts them (the later texts are not written)."""
    path = tmp_path / "states.npz"
    write_npz(path, states())
    whole, out = tmp_path / "whole.jsonl", tmp_path / "out.jsonl"
    assert run(["inverse", ARM, "-i", path, "-o", whole], 1).returncode == 0
    probe = ("import multiprocessing, os, signal, sys, time\n"
             "from treedyn.cli.run import textpool as formatting\n"
             "from treedyn.cli.app import run_app\n"
             "calls = multiprocessing.Value('i', 0)\n"  # shared with the forked workers
             "text = formatting._text\n"
             "def dying(result):\n"
             "    with calls.get_lock():\n"
             "        calls.value += 1\n"
             "        call = calls.value\n"
             "    if call == 3:\n"
             "        time.sleep(1.0)\n"  # the other workers go on meanwhile
             "        os.kill(os.getpid(), signal.SIGKILL)\n"
             "    return text(result)\n"
             "formatting._text = dying\n"
             "try:\n    run_app(sys.argv[1:])\nexcept SystemExit as e:\n    sys.exit(e.code)\n")
    done = subprocess.run([sys.executable, "-c", probe, "inverse", str(ARM), "-i", str(path),
                           "-o", str(out)], capture_output=True, cwd=ROOT, timeout=120,
                          env={**os.environ, **SPLIT, "TREEDYN_PROCESSES": "3"})
    message = done.stderr.decode()
    assert done.returncode == 2 and "a worker process ended abruptly" in message, message
    written = out.read_bytes() if out.exists() else b""
    assert whole.read_bytes().startswith(written)
    count = written.count(b"\n")
    assert count < 1000 and count % int(SPLIT["TREEDYN_STREAM_CHUNK"]) == 0
    assert (f"the {count} states before it" in message) == (count > 0)


def test_a_bad_setting_is_reported_before_the_output_is_created(tmp_path):
    path = tmp_path / "states.npz"
    write_npz(path, states())
    out = tmp_path / "out.csv"
    done = run(["inverse", ARM, "-i", path, "-o", out], 3, TREEDYN_PROCESSES="abc")
    assert done.returncode == 2 and not out.exists()
    assert done.stderr == b"dyn: TREEDYN_PROCESSES='abc' is not a whole number\n"
