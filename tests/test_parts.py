"""Large JSON Lines inputs split over worker processes (treedyn.pipeline.parts, run by
treedyn.cli.run.parts), and CSV inputs never split.

Every run here is a fresh ``dyn`` process (tests/forked.py) with small parts
(TREEDYN_PART_BYTES) and small streamed chunks (TREEDYN_STREAM_CHUNK), compared byte for
byte with the same command in one process (TREEDYN_PROCESSES=1): results, error lines,
exit codes and partial outputs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest

from forked import dyn_process
from test_cli import ARM, ROOT

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="parts need fork")

COUNT = 1000  # states: about 130 kB of JSON Lines, 30 parts of 3 kB
SPLIT = {"TREEDYN_PART_BYTES": "3000", "TREEDYN_STREAM_CHUNK": "32"}
TOOL_ARM = ROOT / "tests" / "data" / "arm_with_tool.urdf"


def run(args, processes: int, **env) -> subprocess.CompletedProcess:
    """``dyn ARGS`` in a fresh process (forked from one with dyn's libraries imported:
    tests/forked.py) with ``processes`` worker processes."""
    environment = {**os.environ, **SPLIT, "TREEDYN_PROCESSES": str(processes), **env}
    return dyn_process(args, cwd=ROOT, env=environment, timeout=120)


def both(args, tmp_path, output: str | None = None):
    """The run in one process and split over three, with their output files (if any: the
    output, else the partial file of a run that stopped)."""
    results = []
    for processes in (1, 3):
        target = tmp_path / f"p{processes}-{output}" if output else None
        done = run([*args, "-o", target] if target else args, processes)
        done.stderr = done.stderr.replace(b"/p3-", b"/p1-")  # messages name the output
        if target is not None and not target.exists():
            target = partial(target)
        results.append((done, target.read_bytes() if target and target.exists() else None))
    return results


def partial(path):
    """Where a run that did not finish leaves the states it completed: out.partial.EXT."""
    return path.with_name(f"{path.stem}.partial{path.suffix}")


def states(count: int = COUNT, seed: int = 3):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2, 2, size=(count, 6)).tolist()


def write_jsonl(path, rows, blank_every: int = 0, kinds=("q", "v", "a", "tau")) -> None:
    """One state per line (the vectors ``kinds``); with ``blank_every``, blank and whitespace
    lines in between."""
    lines = []
    for k, r in enumerate(rows):
        if blank_every and k % blank_every == 0:
            lines.append("   " if k % (2 * blank_every) else "")
        state = {"q": r[0:2], "v": r[2:4], "a": r[4:6], "tau": r[2:4]}
        lines.append(json.dumps({kind: state[kind] for kind in kinds}))
    path.write_text("\n".join(lines) + "\n")


def write_csv(path, rows, line_end: str = "\n", blank_every: int = 0) -> None:
    lines = ["q0,q1,v0,v1,a0,a1"]
    for k, r in enumerate(rows):
        if blank_every and k % blank_every == 0:
            lines.append("")
        lines.append(",".join(map(repr, r)))
    path.write_text(line_end.join(lines) + line_end, newline="")


@pytest.mark.parametrize("output", ["out.jsonl", "out.csv", "out.npz", None])
def test_split_runs_write_what_one_process_writes(tmp_path, output):
    path = tmp_path / "states.jsonl"
    write_jsonl(path, states(), blank_every=37)
    for command in ("inverse", "forward", "mass"):
        args = [command, ARM, "-i", path] + ([] if output else ["-f", "csv"])
        (one, one_file), (split, split_file) = both(args, tmp_path, output)
        assert one.returncode == split.returncode == 0, split.stderr
        assert split.stdout == one.stdout and split.stderr == one.stderr
        # the vectors this command does not read (the files hold q, v, a and tau or q, v, a)
        assert all(b"not read: this command reads" in line for line in one.stderr.splitlines())
        if output and output.endswith(".npz"):
            for key in ("tau", "a", "M", "dofs"):
                if key in np.load(tmp_path / f"p1-{output}"):
                    np.testing.assert_array_equal(np.load(tmp_path / f"p3-{output}")[key],
                                                  np.load(tmp_path / f"p1-{output}")[key])
        else:
            assert split_file == one_file
    assert not [name for name in os.listdir(tmp_path) if name.endswith((".part", ".parts"))]


@pytest.mark.parametrize("output", ["out.jsonl", "out.npz", None])
@pytest.mark.parametrize("bad_line", [5, 700, 1012])
def test_a_bad_line_in_a_later_part_stops_as_one_process_does(tmp_path, bad_line, output):
    """The same one-line error (line number, "stopped there", count) and the same states
    written before it; the line numbers count blank lines in earlier parts."""
    path = tmp_path / "states.jsonl"
    write_jsonl(path, states(), blank_every=41)
    lines = path.read_text().splitlines(keepends=True)
    assert lines[bad_line - 1].strip()
    lines[bad_line - 1] = '{"q": [0.1, 0.2, 0.3]}\n'
    path.write_text("".join(lines))
    args = ["inverse", ARM, "-i", path] + ([] if output else ["-f", "json"])
    (one, one_file), (split, split_file) = both(args, tmp_path, output)
    assert one.returncode == split.returncode == 2
    assert split.stderr == one.stderr and f"states.jsonl:{bad_line}:" in one.stderr.decode()
    assert split.stdout == one.stdout
    if output and output.endswith(".npz"):
        np.testing.assert_array_equal(np.load(partial(tmp_path / f"p3-{output}"))["tau"],
                                      np.load(partial(tmp_path / f"p1-{output}"))["tau"])
    else:
        assert split_file == one_file


@pytest.mark.parametrize("output", ["out.csv", "out.jsonl"])
@pytest.mark.parametrize("bad", [800, 832])  # 832: the first state of a chunk (26 x 32)
def test_non_finite_result_in_a_later_part(tmp_path, bad, output):
    """forward dynamics that turns singular mid-file (a NaN in tau is caught by the
    reader; a huge one overflows the engine) stops at the same state."""
    path = tmp_path / "states.jsonl"
    rows = states()
    write_jsonl(path, rows)
    lines = path.read_text().splitlines(keepends=True)
    lines[bad] = json.dumps({"q": rows[bad][0:2], "v": rows[bad][2:4],
                             "tau": [1e308, -1e308]}) + "\n"
    path.write_text("".join(lines))
    (one, one_file), (split, split_file) = both(["forward", ARM, "-i", path], tmp_path,
                                                output)
    assert one.returncode == split.returncode == 2
    assert split.stderr == one.stderr and split_file == one_file
    assert f"the {bad} states before it" in one.stderr.decode()


def test_carriage_returns_that_end_lines_alone_run_in_one_process(tmp_path):
    """Carriage returns that end lines on their own (text mode reads them as line ends):
    same results as one process, not a misparse."""
    path = tmp_path / "states.jsonl"
    write_jsonl(path, states())
    lines = path.read_text().splitlines()
    path.write_text("".join(line + ("\r" if k % 7 == 3 else "\n") for k, line in enumerate(lines)),
                    newline="")
    (one, one_file), (split, split_file) = both(["inverse", ARM, "-i", path], tmp_path,
                                                "out.csv")
    assert one.returncode == split.returncode == 0, split.stderr
    assert split_file == one_file and len(one_file.splitlines()) == 1 + COUNT


def test_a_csv_input_is_never_split(tmp_path, monkeypatch):
    """CSV is read by pyarrow's threads (or loadtxt) in one process, whatever the worker
    count: no worker is forked, and the output is the one process's."""
    from test_cli import dyn
    from treedyn.pipeline import csvfile, parts

    path = tmp_path / "states.csv"
    write_csv(path, states())
    monkeypatch.setattr(csvfile, "ARROW_BYTES", 0)
    monkeypatch.setattr(parts, "fork_pool", mock.Mock(side_effect=AssertionError("forked")))
    monkeypatch.setenv("TREEDYN_PART_BYTES", "3000")
    outputs = []
    for processes in ("1", "3"):
        monkeypatch.setenv("TREEDYN_PROCESSES", processes)
        target = tmp_path / f"p{processes}.csv"
        done = dyn("inverse", ARM, "-i", path, "-o", target, check=False)
        outputs.append((done.returncode, done.stderr, target.read_bytes()))
    assert outputs[0] == outputs[1] and outputs[0][0] == 0
    assert len(outputs[0][2].splitlines()) == 1 + COUNT and not parts.fork_pool.called


def test_a_long_csv_header_over_an_existing_file(tmp_path):
    """A CSV header longer than the output's buffer (here 2 x 6000-character joint names)
    is written after an existing file is emptied, not flushed before: the split run's
    file equals one process's, from its first byte."""
    model = tmp_path / "long_names.urdf"
    text = ARM.read_text()
    for name in ("joint1", "joint2"):
        text = text.replace(f'name="{name}"', f'name="{name}{"x" * 6000}"')
    model.write_text(text)
    path = tmp_path / "states.jsonl"
    write_jsonl(path, states())
    outputs = []
    for processes in (1, 3):
        target = tmp_path / f"p{processes}.csv"
        target.write_bytes(b"old contents " * 10_000)
        done = run(["inverse", model, "-i", path, "-o", target], processes)
        assert done.returncode == 0, done.stderr
        outputs.append(target.read_bytes())
    assert outputs[0] == outputs[1] and outputs[0].startswith(b"tau:joint1xxx")


def test_warnings_are_printed_once(tmp_path):
    """A wrench on a body welded to the world warns once, not once per part."""
    path = tmp_path / "states.jsonl"
    path.write_text("".join(json.dumps({"q": r[0:2], "fext": {"mount": [1, 0, 0, 0, 0, 0]}})
                            + "\n" for r in states()))
    (one, one_file), (split, split_file) = both(["inverse", TOOL_ARM, "-i", path], tmp_path,
                                                "out.jsonl")
    assert split.returncode == 0 and split_file == one_file
    assert split.stderr == one.stderr and len(split.stderr.splitlines()) == 1


def test_plan_keeps_every_state_in_its_chunk(tmp_path, monkeypatch):
    """Parts are whole chunks of the one-process run, found from byte ranges that cut the
    file anywhere (here: inside runs of blank lines too)."""
    from treedyn.pipeline.parts import plan, split, survey

    path = tmp_path / "states.jsonl"
    write_jsonl(path, states(), blank_every=3)
    size = path.stat().st_size
    bounds = split(str(path), 0, size, 2000)
    surveys = [survey(str(path), a, b) for a, b in bounds]
    assert sum(data for _, data, _ in surveys) == COUNT
    assert sum(lines for lines, _, _ in surveys) == len(path.read_text().splitlines())
    parts = plan(surveys, [a for a, _ in bounds], 1, 32, size, 3000)
    assert [take for *_, take in parts[:-1]] == [parts[0][-1]] * (len(parts) - 1)
    assert parts[0][-1] % 32 == 0 and sum(take for *_, take in parts) == COUNT
    text = path.read_text().splitlines()
    data_lines = [number for number, line in enumerate(text, 1) if line.strip()]
    begin = 0
    raw = path.read_bytes()
    for start, first, skip, take in parts:  # each part's first state, from its own window
        assert start == 0 or raw[start - 1:start] == b"\n"  # a line begins there
        assert raw[:start].count(b"\n") == first - 1
        ahead = [n for n in data_lines if n >= first]
        assert ahead[skip] == data_lines[begin]
        begin += take


def test_carriage_returns_before_the_rows_keep_the_line_numbers(tmp_path):
    """A lone carriage return before the rows is a line end in text mode."""
    path = tmp_path / "states.jsonl"
    write_jsonl(path, states())
    lines = path.read_text().splitlines()
    lines[700] = '{"q": [1, 2, 3]}'
    path.write_bytes(("\r\r\n" + "\n".join(lines) + "\n").encode())
    (one, one_file), (split, split_file) = both(["inverse", ARM, "-i", path], tmp_path,
                                                "out.csv")
    assert one.returncode == split.returncode == 2
    assert split.stderr == one.stderr and split_file == one_file


def test_sigterm_removes_the_parts_and_ends_the_workers(tmp_path):
    """SIGTERM ends dyn as ever (killed by it) once the parts are removed; the workers
    end with it, so a reader of dyn's stderr is not left waiting for them."""
    import signal
    import time

    path = tmp_path / "states.jsonl"
    write_jsonl(path, states(300_000))
    environment = {**os.environ, "TREEDYN_PROCESSES": "2", "TREEDYN_PART_BYTES": "200000"}
    process = subprocess.Popen([sys.executable, "-m", "treedyn.cli", "inverse", str(ARM),
                                "-i", str(path), "-o", str(tmp_path / "out.csv")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                               env=environment)
    deadline = time.time() + 60
    output = tmp_path / "out.csv"  # parts are joined into its temporary once the first is done
    while not any(name.startswith(".out.csv.") and name.endswith(".part")
                  and os.path.getsize(tmp_path / name) for name in os.listdir(tmp_path)):
        assert time.time() < deadline and process.poll() is None
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)  # would hang on a live worker's stderr
    assert process.returncode == -signal.SIGTERM, err
    *warnings, last = err.decode().splitlines()
    assert all("not read: this command reads" in line for line in warnings), err
    # the output holds the parts joined before the signal, and the last line says so
    assert last.startswith("dyn: ended by a signal; ") and str(tmp_path / "out.csv") in last
    assert sorted(os.listdir(tmp_path)) == ["out.partial.csv", "states.jsonl"]  # no parts


def test_a_bad_setting_is_a_usage_error(tmp_path):
    path = tmp_path / "states.jsonl"
    write_jsonl(path, states(10))
    done = run(["inverse", ARM, "-i", path], 2, TREEDYN_PART_BYTES="16M")
    assert done.returncode == 2 and done.stderr.decode().strip() == (
        "dyn: TREEDYN_PART_BYTES='16M' is not a positive whole number")


@pytest.mark.parametrize("text", [
    "a\nb\nc\n", "a\nb\nc", "\na\n\nb\n", "a\n   \nb\n", "a\n\t\n", "a\n\u3000\nb\n",
    "a\n\u0085\n", "\ufeff\na\n", "\ufeffa\nb\n", "a\r\n\r\nb\r\n", "a\r\n  \r\nb",
    "  a\nb\n", "a\n\x1c\n", "", "\n", "a\n \n", "é\n\n", "x" * 3000 + "\n\n" + "y\n",
])
def test_the_survey_counts_lines_and_data_lines_as_the_reader_does(tmp_path, text):
    """The survey's shortcut (no line that may be blank: count the line ends) and its line by
    line count give what reading the file gives, blank lines of every kind included."""
    from treedyn.pipeline.text import is_data, text_lines
    from treedyn.pipeline import parts

    path = tmp_path / "s.jsonl"
    path.write_bytes(text.encode())
    with open(path, "rb") as stream:
        read = list(text_lines(stream, str(path)))
    expected = (len(read), sum(is_data(line, "jsonl") for _, line in read), True)
    for scan in (1 << 20, 7):  # whole, and lines cut across the blocks read
        with mock.patch.object(parts, "SCAN", scan):
            assert tuple(parts.survey(str(path), 0, len(text.encode()))) == expected


def test_sigterm_while_the_workers_are_forked_still_ends_dyn(tmp_path):
    """A SIGTERM that arrives in the callbacks Python runs after a fork (logging's lock
    release) was raised there and ignored: the run went on and exited 0 with a traceback.
    It is held while the workers start, then ends dyn by it, saying nothing was written."""
    import signal

    path = tmp_path / "states.jsonl"
    write_jsonl(path, states(20_000))
    output = tmp_path / "out.csv"
    script = ("import os, runpy, signal, sys\n"
              "os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), "
              "signal.SIGTERM))\n"
              f"sys.argv = ['dyn', 'inverse', {str(ARM)!r}, '-i', {str(path)!r}, '-o', "
              f"{str(output)!r}]\n"
              "runpy.run_module('treedyn.cli', run_name='__main__')\n")
    environment = {**os.environ, "TREEDYN_PROCESSES": "2", "TREEDYN_PART_BYTES": "200000"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=ROOT,
                          env=environment, timeout=120)
    assert done.returncode == -signal.SIGTERM, done.stderr
    *warnings, last = done.stderr.decode().splitlines()
    assert all("not read: this command reads" in line for line in warnings), done.stderr
    assert last == f"dyn: ended by a signal; {output} is not written, no state was completed"
    assert not output.exists()
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".part", ".parts"))]


def test_the_split_is_a_library_call_that_writes_what_one_process_writes(tmp_path):
    """treedyn.pipeline.parts.run_parts, called from Python with its worker count, writes
    the bytes treedyn.pipeline.run writes in one process (and reads no environment)."""
    path = tmp_path / "states.jsonl"
    write_jsonl(path, states(), blank_every=7)
    script = (
        "import sys\n"
        "from treedyn.parsers import load_model\n"
        "from treedyn.pipeline import run\n"
        "from treedyn.pipeline.layout import Layout\n"
        "from treedyn.pipeline.outputs import open_sink\n"
        "from treedyn.pipeline.parts import run_parts\n"
        "source, one, split = sys.argv[1:4]\n"
        "layout = Layout.of(load_model(sys.argv[4]))\n"
        "run(layout, 'inverse', source, one, chunk=32)\n"
        "sink = run_parts(layout, 'inverse', source,\n"
        "                 lambda: open_sink(split, 'tau', (2,), layout.v_labels), split,\n"
        "                 'json' if split.endswith('.jsonl') else 'csv', 3, part_bytes=3000,\n"
        "                 chunk=32)\n"
        "print(sink.count)\n")
    for suffix in (".jsonl", ".csv"):
        one, split = tmp_path / f"one{suffix}", tmp_path / f"split{suffix}"
        done = subprocess.run(
            [sys.executable, "-c", script, str(path),
             str(one), str(split), str(ARM)], capture_output=True, cwd=ROOT, timeout=120,
            env={k: v for k, v in os.environ.items() if not k.startswith("TREEDYN_")})
        assert done.returncode == 0 and done.stdout.decode().strip() == str(COUNT), done.stderr
        assert split.read_bytes() == one.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["one.csv", "one.jsonl", "split.csv",
                                            "split.jsonl", "states.jsonl"]  # no parts left


def test_workers_end_when_dyn_is_killed(tmp_path):
    """SIGKILL leaves dyn no time to stop its workers: they end by themselves, as soon as
    their parent is gone (nothing is left computing, or holding dyn's stderr open)."""
    import signal
    import time

    path = tmp_path / "states.jsonl"
    write_jsonl(path, states(300_000))
    environment = {**os.environ, "TREEDYN_PROCESSES": "2", "TREEDYN_PART_BYTES": "200000"}
    process = subprocess.Popen([sys.executable, "-m", "treedyn.cli", "inverse", str(ARM),
                                "-i", str(path), "-o", str(tmp_path / "out.csv")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT,
                               env=environment)
    children = f"/proc/{process.pid}/task/{process.pid}/children"
    deadline = time.time() + 60
    workers: list[int] = []
    while len(workers) < 2:  # both forked (the pool starts them all at once)
        assert time.time() < deadline and process.poll() is None
        with open(children) as listing:
            workers = [int(pid) for pid in listing.read().split()]
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    deadline = time.time() + 30
    while any(os.path.exists(f"/proc/{pid}") and not zombie(pid) for pid in workers):
        assert time.time() < deadline, "a worker outlived dyn"
        time.sleep(0.05)
    process.stderr.read()  # every writer of the pipe is gone: no wait here


def zombie(pid: int) -> bool:
    """Whether process ``pid`` has ended and waits for its parent to collect it."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
