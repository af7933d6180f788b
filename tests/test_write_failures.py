"""When the results cannot be written: a full disk (/dev/full) or a file size limit
(RLIMIT_FSIZE, which fails writes with EFBIG as a full quota fails them with EDQUOT).

dyn ends with one line on stderr and exit code 2; a JSON Lines or CSV output holds exactly
the states the line names -- byte for byte the first states of a run that could write --
and an .npz, unreadable unless complete, is removed. Runs are fresh processes with chunks of
32 states (test_parts.SPLIT), in one process and split over three.
"""
from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys

import numpy as np
import pytest

from test_cli import ARM, ROOT
from test_parts import SPLIT, states, write_jsonl

INVERSE = ("q", "v", "a")  # what inverse reads: the inputs hold nothing it would name

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="RLIMIT_FSIZE, SIGXFSZ and /dev/full as on Linux")


def dyn(args, processes: int = 1, limit: int | None = None, stdout=subprocess.PIPE,
        **env) -> subprocess.CompletedProcess:
    """``dyn ARGS`` in a fresh process; with ``limit``, no file it writes can pass that size."""
    def file_size_limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    environment = {**os.environ, **SPLIT, "TREEDYN_PROCESSES": str(processes), **env}
    return subprocess.run([sys.executable, "-m", "treedyn.cli", *map(str, args)],
                          stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT, env=environment,
                          timeout=120, preexec_fn=None if limit is None else file_size_limit)


@pytest.fixture
def inputs(tmp_path):
    path = tmp_path / "states.jsonl"
    write_jsonl(path, states(), kinds=INVERSE)
    return path


@pytest.fixture(params=["jsonl", "npz"])
def any_inputs(request, tmp_path):
    """States as JSON Lines (split over processes) or .npz (one process)."""
    path = tmp_path / f"states.{request.param}"
    if request.param == "jsonl":
        write_jsonl(path, states(), kinds=INVERSE)
    else:
        rows = np.array(states())
        np.savez(path, q=rows[:, 0:2], v=rows[:, 2:4], a=rows[:, 4:6])
    return path


@pytest.mark.parametrize("processes", [1, 3])
@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_a_text_output_keeps_the_whole_states_it_names(tmp_path, any_inputs, suffix,
                                                       processes):
    inputs = any_inputs
    whole, cut = tmp_path / f"whole.{suffix}", tmp_path / f"cut.{suffix}"
    assert dyn(["inverse", ARM, "-i", inputs, "-o", whole], processes).returncode == 0
    done = dyn(["inverse", ARM, "-i", inputs, "-o", cut], processes, limit=20_000)
    assert done.returncode == 2
    message = done.stderr.decode()
    partial = tmp_path / f"cut.partial.{suffix}"
    match = re.fullmatch(rf"{re.escape(str(cut))}: cannot write \(File too large\); "
                         rf"{re.escape(str(cut))} is not written, the first (\d+) states are "
                         rf"in {re.escape(str(partial))}\n", message)
    assert match, message
    count = int(match.group(1))
    assert not cut.exists()
    written, expected = partial.read_bytes(), whole.read_bytes()
    assert 0 < count < 1000 and count % 32 == 0  # whole chunks of the run
    assert expected.startswith(written)
    assert written.count(b"\n") == count + (suffix == "csv")  # and the CSV header


@pytest.mark.parametrize("processes", [1, 3])
def test_an_npz_that_cannot_be_finished_is_removed(tmp_path, inputs, processes):
    out = tmp_path / "out.npz"
    done = dyn(["inverse", ARM, "-i", inputs, "-o", out], processes, limit=10_000)
    assert done.returncode == 2 and not out.exists()
    assert done.stderr.decode() == (f"{out}: cannot write (File too large); {out} is not "
                                    "written (an unfinished .npz cannot be read: nothing is "
                                    "kept)\n")
    assert os.listdir(tmp_path) == [inputs.name]  # no spool or part left


def test_a_worker_that_cannot_write_its_part_names_the_output(tmp_path, inputs):
    whole, out = tmp_path / "whole.jsonl", tmp_path / "out.jsonl"
    assert dyn(["inverse", ARM, "-i", inputs, "-o", whole]).returncode == 0
    done = dyn(["inverse", ARM, "-i", inputs, "-o", out], 3, limit=8_000,
               TREEDYN_PART_BYTES="60000")
    assert done.returncode == 2
    message = done.stderr.decode()
    partial = tmp_path / "out.partial.jsonl"
    match = re.fullmatch(rf"dyn: cannot write a temporary part of {re.escape(str(out))} next "
                         r"to it \(File too large\)(; stopped there: the (\d+) states before "
                         rf"it are in {re.escape(str(partial))}; {re.escape(str(out))} is not "
                         r"written)?\n", message)
    assert match, message
    count = int(match.group(2) or 0)
    assert not out.exists() and partial.exists() == (count > 0)
    if count:
        written = partial.read_bytes()
        assert whole.read_bytes().startswith(written) and written.count(b"\n") == count
    assert sorted(os.listdir(tmp_path)) == sorted({inputs.name, whole.name} | (
        {partial.name} if count else set()))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args, line", [
    (["inverse", ARM, "--q", "0.1,0.2"], "dyn: cannot write to stdout (No space left on device)"),
    (["mass", ARM, "--q", "0.1,0.2", "-f", "csv"],
     "dyn: cannot write to stdout (No space left on device)"),
    (["info", ARM], "dyn: cannot write the output (No space left on device)"),
    (["check-inertia", ARM], "dyn: cannot write the output (No space left on device)"),
])
def test_a_full_stdout_is_one_line(args, line):
    with open("/dev/full", "w") as full:
        done = dyn(args, stdout=full)
    assert done.returncode == 2 and done.stderr.decode() == line + "\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_stream_to_a_full_stdout_is_one_line(tmp_path):
    inputs = tmp_path / "states.jsonl"
    write_jsonl(inputs, states(), kinds=("q", "v", "tau"))
    with open("/dev/full", "w") as full:
        done = dyn(["forward", ARM, "-i", inputs, "-f", "json"], stdout=full)
    assert done.returncode == 2
    assert done.stderr.decode() == "dyn: cannot write to stdout (No space left on device)\n"


@pytest.mark.parametrize("processes", [1, 3])
@pytest.mark.parametrize("source", ["jsonl", "npz"])
def test_a_reader_that_goes_away_ends_dyn_quietly(tmp_path, source, processes):
    """`dyn ... | head`: SIGPIPE ends dyn without a word, as it ends other Unix tools --
    also when the input is split over processes, or its text made in them."""
    path = tmp_path / f"states.{source}"
    rows = states(5000)
    if source == "jsonl":
        write_jsonl(path, rows, kinds=INVERSE)
    else:
        rows = np.array(rows)
        np.savez(path, q=rows[:, 0:2], v=rows[:, 2:4], a=rows[:, 4:6])
    environment = {**os.environ, **SPLIT, "TREEDYN_PROCESSES": str(processes)}
    process = subprocess.Popen([sys.executable, "-m", "treedyn.cli", "inverse", str(ARM),
                                "-i", str(path), "-f", "json"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=ROOT, env=environment)
    assert process.stdout.read(100)
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == -signal.SIGPIPE and stderr == b""


def test_a_closed_stdout_is_an_error_for_reports_too():
    """`dyn info MODEL >&-`: Python has no sys.stdout then; the report cannot be written,
    which is an error (exit 2, one line), as for ls or cat, not a silent success."""
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", "info", str(ARM)],
                          stderr=subprocess.PIPE, cwd=ROOT, timeout=120,
                          preexec_fn=lambda: os.close(1))
    assert done.returncode == 2
    assert done.stderr.decode().startswith("dyn: cannot write") and done.stderr.count(b"\n") == 1
