"""SIGTERM, SIGHUP and Ctrl-C in the middle of a run: the output is whole, and dyn says so.

Batch schedulers, ``timeout`` and a closed terminal send these. Every output is written
beside its name and renamed once complete, so a stopped run leaves the states computed in
``out.partial.EXT``, ended at whole states (never a half-written file under the final
name). The last line on stderr says how many states that file holds, and dyn ends by the
signal (exit 130 for Ctrl-C).

The states come through a pipe that stays open, in chunks of 500 states, so the moment of
the signal is known: dyn has written what it was given (but the chunk it still reads)
and waits for more.
"""
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_data_safety import wait_reading

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
GIVEN = 3000
LAST_LINE = re.compile(r"dyn: (ended by a signal|interrupted); (.*) is not written, the first "
                       r"(\d+) states are in (.*)")

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals, /proc")


def start(out: Path, command: str = "inverse") -> subprocess.Popen:
    """``dyn COMMAND ARM --input - --output OUT`` reading a pipe the test writes."""
    return subprocess.Popen(
        [sys.executable, "-m", "treedyn.cli", command, str(ARM), "--input", "-",
         "--output", str(out), "--quiet"], cwd=ROOT, stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "TREEDYN_PROCESSES": "1", "TREEDYN_STREAM_CHUNK": "500"})


def stopped_by(process: subprocess.Popen, number: int, lines: str) -> bytes:
    """Its stderr, once ``process`` has computed ``lines`` (states), waits on the open pipe
    for more, and has ended by the signal ``number`` (killed if it hangs)."""
    try:
        process.stdin.write(lines.encode())
        process.stdin.flush()
        wait_reading(process)  # the states given are computed; dyn waits on the open pipe
        process.send_signal(number)
        return process.communicate(timeout=60)[1]
    finally:
        if process.poll() is None:
            process.kill()


def held(path: Path) -> int:
    """States in a complete output file (raises if it is not complete)."""
    if path.suffix == ".npz":
        with np.load(path) as archive:
            return len(archive["tau"])
    text = path.read_text()
    assert text.endswith("\n")
    lines = text.splitlines()
    if path.suffix == ".jsonl":
        assert all(len(json.loads(line)["tau"]) == 2 for line in lines)
        return len(lines)
    assert lines[0] == "tau:joint1,tau:joint2"
    assert all(len(line.split(",")) == 2 for line in lines[1:])
    return len(lines) - 1


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.parametrize("suffix", [".npz", ".jsonl", ".csv"])
def test_a_stopped_run_leaves_a_whole_file_and_says_what_it_holds(tmp_path, suffix, number):
    out = tmp_path / f"out{suffix}"
    rng = np.random.default_rng(int(number))
    process = start(out)
    err = stopped_by(process, number, "".join(
        json.dumps({"q": rng.normal(size=2).tolist(), "v": rng.normal(size=2).tolist()})
        + "\n" for _ in range(GIVEN)))
    expected = 130 if number == signal.SIGINT else -number
    assert process.returncode == expected, err
    last = err.decode().splitlines()[-1]
    match = LAST_LINE.fullmatch(last)
    assert match, last
    assert match.group(1) == ("interrupted" if number == signal.SIGINT else "ended by a signal")
    partial = out.with_name(f"out.partial{suffix}")
    assert match.group(2) == str(out) and match.group(4) == str(partial)
    assert held(partial) == int(match.group(3)) and GIVEN - 1000 <= held(partial) <= GIVEN
    assert sorted(os.listdir(tmp_path)) == [partial.name]  # nothing left beside it


@pytest.mark.parametrize("command,key,suffix", [
    ("com", "com", ".npz"), ("energy", "energy", ".npz"), ("regressor", "Y", ".npz"),
    ("check-limits", "states", ".json")])
def test_every_streamed_command_stopped_by_sigterm_ends_as_the_dynamics_do(
        tmp_path, command, key, suffix):
    """The state commands, the regressor and check-limits stream their --input too: SIGTERM
    leaves the states computed in out.partial.EXT, says so, and no temporary beside it (a
    .part temporary and no line, before)."""
    out = tmp_path / f"out{suffix}"
    process = start(out, command)
    err = stopped_by(process, signal.SIGTERM, "".join(
        json.dumps({"q": [0.1 * k, 0.2]}) + "\n" for k in range(GIVEN)))
    assert process.returncode == -signal.SIGTERM, err
    match = LAST_LINE.fullmatch(err.decode().splitlines()[-1])
    assert match and match.group(1) == "ended by a signal", err
    partial = tmp_path / f"out.partial{suffix}"
    if suffix == ".json":  # check-limits' summary of the states read
        held = json.loads(partial.read_text())[key]
    else:
        with np.load(partial) as archive:
            held = len(archive[key])
    assert held == int(match.group(3)) >= GIVEN - 1000
    assert sorted(os.listdir(tmp_path)) == [partial.name]


def test_an_npz_appears_only_once_complete(tmp_path):
    """While the run goes on, the archive is written beside its name: a file that was
    there before keeps its contents until the new one replaces it."""
    out = tmp_path / "out.npz"
    out.write_bytes(b"the results of yesterday")
    process = start(out)
    try:
        process.stdin.write(b'{"q": [0.1, 0.2]}\n' * 1100)
        process.stdin.flush()
        wait_reading(process)
        assert out.read_bytes() == b"the results of yesterday"
        beside = [name for name in os.listdir(tmp_path) if name.endswith(".part")]
        assert len(beside) == 1 and beside[0].startswith(".out.npz.")
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert held(out) == 1100 and sorted(os.listdir(tmp_path)) == ["out.npz"]
