"""An interrupted or failed run never costs the previous output; concurrent runs never mix.

Every output file is written to a temporary of its run beside its name and renamed onto
the name only once complete. A run that does not finish (a signal, a bad row) leaves a
file of that name from before byte for byte as it was, and the states it completed in
``NAME.partial.EXT``, readable by dyn and by numpy, pandas, pyarrow and h5py, their exact
number on stderr. A temporary left by SIGKILL is removed by the next run to that output.
Models without dofs give valid output in every format, and CSV cells that a spreadsheet
would run as formulas are neutralised.

Signal runs read their states from a pipe that stays open, in chunks of 500: once dyn
sleeps reading the pipe (``/proc/PID/wchan``), it has written what it could and waits, so
the signal lands mid-run at a known point, without sleeping blindly.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from test_cli import ARM, ROOT, assert_usage_error, dyn

FORMATS = [".jsonl", ".csv", ".npz", ".parquet", ".h5"]
GIVEN = 3000  # states written to the pipe
CHUNK = "500"  # TREEDYN_STREAM_CHUNK of the subprocess runs
NO_DOFS = """<robot name="plate"><link name="plate"><inertial><mass value="2"/>
<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial></link></robot>
"""
OLD = b"the results of yesterday\n" * 1000

linux = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals, /proc")


def partial(path: Path) -> Path:
    return path.with_name(f"{path.stem}.partial{path.suffix}")


def state_lines(count: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    q, v = rng.normal(size=(count, 2)), rng.normal(size=(count, 2))
    return "".join(json.dumps({"q": q[k].tolist(), "v": v[k].tolist()}) + "\n"
                   for k in range(count)).encode()


def start(args, **extra) -> subprocess.Popen:
    """``dyn ARGS`` in a subprocess reading a pipe, chunks of CHUNK states, one process."""
    return subprocess.Popen([sys.executable, "-m", "treedyn.cli", *map(str, args)], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE,
                            env={**os.environ, "TREEDYN_PROCESSES": "1",
                                 "TREEDYN_STREAM_CHUNK": CHUNK, **extra})


def writing(out: Path, lines: bytes) -> subprocess.Popen:
    """``dyn inverse`` writing ``out`` from the states ``lines`` on its stdin, once it has
    read them all and waits for more (its stdin stays open)."""
    process = start(["inverse", ARM, "--input", "-", "--output", out, "--quiet"])
    try:
        process.stdin.write(lines)
        process.stdin.flush()
        wait_reading(process)
    except BaseException:
        process.kill()
        raise
    return process


def wait_reading(process: subprocess.Popen, timeout: float = 60) -> None:
    """Until dyn's main thread sleeps reading its stdin pipe (all it was given is read)."""
    deadline = time.time() + timeout
    while True:
        assert process.poll() is None, process.stderr.read().decode()
        try:
            state = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            wchan = Path(f"/proc/{process.pid}/wchan").read_text()
        except OSError:
            state, wchan = "", ""
        if state == "S" and "pipe" in wchan:
            return
        assert time.time() < deadline, "dyn never waited on its input"
        time.sleep(0.02)


def temporaries(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if name.endswith((".part", ".parts"))]


def rows(path: Path, key: str = "tau") -> np.ndarray:
    """The results of an output file, read by the format's own library."""
    if path.suffix == ".npz":
        with np.load(path) as saved:
            return saved[key]
    if path.suffix == ".parquet":
        import pandas as pd

        return np.stack(pd.read_parquet(path)[key]) if len(pd.read_parquet(path)) else \
            np.zeros((0, 2))
    if path.suffix == ".h5":
        import h5py

        with h5py.File(path) as file:
            return file[key][:]
    import pandas as pd

    if path.suffix == ".csv":
        return pd.read_csv(path).to_numpy()
    return np.array(pd.read_json(path, lines=True)[key].tolist())


def read_by_dyn(path: Path) -> int:
    """States dyn itself reads from ``path`` (its tau as the input of forward)."""
    done = dyn("forward", ARM, "-i", path, "-f", "json", "--quiet")
    return len(done.stdout.splitlines())


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """tau of every state of the pipe runs, in each format, by a run that completes."""
    folder = tmp_path_factory.mktemp("reference")
    source = folder / "states.jsonl"
    source.write_bytes(state_lines(GIVEN))
    found = {}
    for suffix in FORMATS:
        target = folder / f"all{suffix}"
        dyn("inverse", ARM, "-i", source, "-o", target)
        found[suffix] = rows(target)
    return found


# ------------------------------------------------------------------------------ signals
@linux
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("suffix", FORMATS)
def test_a_signal_keeps_the_previous_file_and_the_states_done(tmp_path, reference, suffix,
                                                             number):
    out = tmp_path / f"out{suffix}"
    out.write_bytes(OLD)
    process = writing(out, state_lines(GIVEN))
    try:
        assert out.read_bytes() == OLD and len(temporaries(tmp_path)) == 1
        process.send_signal(number)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == (130 if number == signal.SIGINT else -number), err
    how = "interrupted" if number == signal.SIGINT else "ended by a signal"
    last = err.decode().splitlines()[-1]
    match = re.fullmatch(rf"dyn: {how}; {re.escape(str(out))} is unchanged, the first "
                         rf"(\d+) states are in {re.escape(str(partial(out)))}", last)
    assert match, last
    count = int(match.group(1))
    assert 0 < count <= GIVEN and count % int(CHUNK) == 0  # whole chunks were written
    assert out.read_bytes() == OLD
    np.testing.assert_array_equal(rows(partial(out)), reference[suffix][:count])
    assert read_by_dyn(partial(out)) == count
    assert sorted(os.listdir(tmp_path)) == sorted([out.name, partial(out).name])


@linux
def test_a_signal_before_any_state_leaves_no_partial_file(tmp_path):
    out = tmp_path / "out.npz"
    out.write_bytes(OLD)
    process = writing(out, b'{"q": [0.1, 0.2]}\n')  # one state: less than a chunk
    try:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGTERM
    assert err.decode().splitlines()[-1] == (f"dyn: ended by a signal; {out} is unchanged, "
                                             "no state was completed")
    assert out.read_bytes() == OLD and os.listdir(tmp_path) == [out.name]


# ----------------------------------------------------------------------------- bad rows
@pytest.mark.parametrize("suffix", FORMATS)
def test_a_bad_row_keeps_the_previous_file_and_the_states_before_it(tmp_path, monkeypatch,
                                                                   suffix):
    from treedyn.cli.run import request

    monkeypatch.setattr(request, "chunk_states", lambda command, layout: 64)
    bad = 150  # in the third chunk
    lines = state_lines(400).splitlines(keepends=True)
    lines[bad] = b'{"q": [0.1, 0.2, 0.3]}\n'
    source = tmp_path / "states.jsonl"
    source.write_bytes(b"".join(lines))
    whole = tmp_path / f"whole{suffix}"
    good = tmp_path / "good.jsonl"
    good.write_bytes(b"".join(lines[:bad]))
    dyn("inverse", ARM, "-i", good, "-o", whole)
    out = tmp_path / f"out{suffix}"
    out.write_bytes(OLD)
    assert_usage_error(dyn("inverse", ARM, "-i", source, "-o", out, check=False),
                       f"states.jsonl:{bad + 1}: \"q\" has 3 numbers",
                       f"stopped there: the {bad} states before it are in {partial(out)}; "
                       f"{out} is unchanged")
    assert out.read_bytes() == OLD
    np.testing.assert_array_equal(rows(partial(out)), rows(whole))
    assert read_by_dyn(partial(out)) == bad
    assert not temporaries(tmp_path)


def test_the_regressor_keeps_the_previous_file_after_a_bad_row(tmp_path):
    lines = state_lines(40).splitlines(keepends=True)
    lines[30] = b'{"q": [0.1]}\n'
    source = tmp_path / "states.jsonl"
    source.write_bytes(b"".join(lines))
    for suffix in (".npz", ".jsonl"):
        out = tmp_path / f"Y{suffix}"
        out.write_bytes(OLD)
        assert_usage_error(dyn("regressor", ARM, "-i", source, "-o", out, check=False),
                           f"the 30 states before it are in {partial(out)}; {out} is "
                           "unchanged")
        assert out.read_bytes() == OLD
        assert len(rows(partial(out), "Y")) == 30
    assert not temporaries(tmp_path)


# -------------------------------------------------------------------- killed, concurrent
@linux
def test_a_temporary_left_by_sigkill_is_removed_by_the_next_run(tmp_path):
    out = tmp_path / "out.csv"
    out.write_bytes(OLD)
    process = writing(out, state_lines(GIVEN))
    try:
        process.kill()
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    left = temporaries(tmp_path)
    assert len(left) == 1 and left[0].startswith(f".out.csv.{process.pid}-")
    assert os.path.getsize(tmp_path / left[0]) > 0 and out.read_bytes() == OLD
    # a live run's temporary (this process's pid) and another output's are not touched
    live = re.sub(r"\.\d+-", f".{os.getpid()}-", left[0], count=1)
    (tmp_path / live).write_bytes(b"in use")
    other = left[0].replace(".out.csv.", ".other.csv.", 1)
    (tmp_path / left[0]).rename(tmp_path / other)
    (tmp_path / left[0]).write_bytes(b"stale")
    parts = re.sub(r"\.part$", ".parts", left[0])  # a split run's parts, killed too
    (tmp_path / parts).mkdir()
    (tmp_path / parts / "part000000").write_bytes(b"rows")
    source = tmp_path / "states.jsonl"
    source.write_bytes(state_lines(5))
    dyn("inverse", ARM, "-i", source, "-o", out, fresh=True)
    assert sorted(temporaries(tmp_path)) == sorted([live, other])
    assert len(rows(out)) == 5


@linux
@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".npz"])
def test_concurrent_runs_to_one_output_never_mix(tmp_path, suffix):
    sources, expected = [], []
    for k in range(3):
        source = tmp_path / f"states{k}.jsonl"
        source.write_bytes(state_lines(20_000 + k, seed=k))
        sources.append(source)
        alone = tmp_path / f"alone{k}{suffix}"
        dyn("inverse", ARM, "-i", source, "-o", alone)
        expected.append(alone.read_bytes() if suffix != ".npz" else rows(alone))
    out = tmp_path / f"out{suffix}"
    runs = [subprocess.Popen([sys.executable, "-m", "treedyn.cli", "inverse", str(ARM), "-i",
                              str(source), "-o", str(out), "--quiet"], cwd=ROOT,
                             stderr=subprocess.PIPE,
                             env={**os.environ, "TREEDYN_PROCESSES": "1",
                                  "TREEDYN_STREAM_CHUNK": "1000"})
            for source in sources]
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0 and err == b"", err
    if suffix == ".npz":
        got = rows(out)
        assert any(got.shape == e.shape and np.array_equal(got, e) for e in expected)
    else:
        assert out.read_bytes() in expected
    assert not temporaries(tmp_path)


@linux
def test_identify_write_that_fails_keeps_the_previous_file(tmp_path):
    """The new model cannot be written (a file size limit, as a full quota): a file of that
    name from before is untouched, and no temporary is left."""
    import resource

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (600, 600))

    target = tmp_path / "fit.urdf"
    target.write_bytes(OLD)
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", "identify", str(ARM), "--input",
                           "fixtures/two_link_arm_log.csv", "--write", str(target)],
                          cwd=ROOT, capture_output=True, timeout=120, preexec_fn=limited)
    assert_usage_error(done, f"{target}: cannot write (File too large)")
    assert target.read_bytes() == OLD and os.listdir(tmp_path) == [target.name]


# ------------------------------------------------------------------------------ no dofs
def no_dof_model(folder: Path) -> Path:
    path = folder / "plate.urdf"
    path.write_text(NO_DOFS)
    return path


@pytest.mark.parametrize("count", [1, 2, 40])
@pytest.mark.parametrize("command, key, shape", [("inverse", "tau", (0,)),
                                                 ("forward", "a", (0,)),
                                                 ("mass", "M", (0, 0))])
def test_a_model_without_dofs_gives_valid_output_in_every_format(tmp_path, monkeypatch,
                                                                 command, key, shape, count):
    from treedyn.cli.run import request

    monkeypatch.setattr(request, "chunk_states", lambda command, layout: 16)
    model = no_dof_model(tmp_path)
    source = tmp_path / "states.jsonl"
    source.write_text('{"q": []}\n' * count)
    lines = dyn(command, model, "-i", source, "-f", "json").stdout.decode().splitlines()
    assert [json.loads(line) for line in lines] == [{key: []}] * count
    out = tmp_path / "out.jsonl"
    dyn(command, model, "-i", source, "-o", out)
    assert [json.loads(line) for line in out.read_text().splitlines()] == [{key: []}] * count
    table = dyn(command, model, "-i", source, "-f", "table").stdout.decode()
    assert table.count("states.jsonl:") == count
    text = dyn(command, model, "-i", source, "-f", "csv").stdout.decode()
    assert list(csv.reader(io.StringIO(text))) == [[]] * (count + 1)  # header, then states
    for suffix in (".npz", ".parquet", ".h5"):
        out = tmp_path / f"out{suffix}"
        dyn(command, model, "-i", source, "-o", out)
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            assert pq.read_table(out).column(key).to_pylist() == [[]] * count
        else:
            assert rows(out, key).shape == (count, *shape)


def test_a_model_without_dofs_one_state_and_the_regressor(tmp_path):
    model = no_dof_model(tmp_path)
    assert json.loads(dyn("mass", model, "-f", "json").stdout) == {"schema": "treedyn.mass/1",
                                                                  "M": [], "dofs": []}
    source = tmp_path / "states.jsonl"
    source.write_text('{"q": []}\n' * 3)
    lines = dyn("regressor", model, "-i", source).stdout.decode().splitlines()
    assert [json.loads(line) for line in lines] == [{"Y": []}] * 3
    dyn("regressor", model, "-i", source, "-o", tmp_path / "Y.npz")
    assert rows(tmp_path / "Y.npz", "Y").shape[:2] == (3, 0)  # (no body moves: no columns)


@pytest.mark.parametrize("args", [
    ["info"], ["check-inertia"], ["condition", "--samples", "3"], ["verify", "--samples", "2"],
    ["bench", "--states", "8", "--seconds", "0.01"], ["diff", "MODEL"], ["mass", "--sparsity"],
    ["inverse"], ["forward"], ["regressor"],
])
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_every_command_reads_a_model_without_dofs(tmp_path, args, fmt):
    """A sensor, table or plate description (no joint moves): every command answers, in
    JSON that parses and in a table, with no internal error."""
    model = no_dof_model(tmp_path)
    words = [str(model) if word == "MODEL" else word for word in args[1:]]
    done = dyn(args[0], model, *words, "--format", fmt)
    assert b"internal error" not in done.stderr and b"Traceback" not in done.stderr
    if fmt == "json":
        json.loads(done.stdout)


# ----------------------------------------------------------------------------- formulas
FORMULA_URDF = """<robot name="sheet">
  <link name="=HYPERLINK(&quot;http://x&quot;)"><inertial><mass value="1"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="-2+3"><inertial><mass value="1"/><origin xyz="0 0 0.5"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="@SUM(1+1)" type="revolute"><parent link="=HYPERLINK(&quot;http://x&quot;)"/>
    <child link="-2+3"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


def test_csv_cells_that_would_run_as_formulas_are_neutralised(tmp_path):
    model = tmp_path / "sheet.urdf"
    model.write_text(FORMULA_URDF)
    cells = [cell for row in csv.reader(io.StringIO(
        dyn("info", model, "-f", "csv").stdout.decode())) for cell in row]
    assert "'@SUM(1+1)" in cells and "'-2+3" in cells  # (the root link is no body)
    assert not [cell for cell in cells if cell[:1] in ("=", "+", "@")]
    for args in (["condition", model, "--samples", "3"], ["verify", model]):
        text = dyn(*args, "-f", "csv", check=False).stdout.decode()
        starts = [cell[:1] for row in csv.reader(io.StringIO(text)) for cell in row]
        assert text and "=" not in starts and "@" not in starts
    taus = []
    for q in ("-0.5", "0.5"):
        lines = dyn("inverse", model, "--q", q, "-f", "csv").stdout.decode().splitlines()
        assert lines[0] == "tau:@SUM(1+1)"  # (starts with tau:, not a formula)
        taus.append(float(lines[1]))
    assert min(taus) < 0  # numbers stay numbers, a minus sign too


def test_check_inertia_csv_neutralises_names(tmp_path):
    model = tmp_path / "sheet.urdf"
    model.write_text(FORMULA_URDF.replace('<mass value="1"/><origin', '<mass value="-1"/>'
                                          '<origin'))
    text = dyn("check-inertia", model, "-f", "csv", check=False).stdout.decode()
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    assert "'-2+3" in cells and not [c for c in cells if c[:1] in ("=", "@", "+")]


def test_the_temporary_of_a_killed_process_not_yet_reaped_is_stale(tmp_path):
    """A Dask worker killed on a machine where nothing reaps orphans stays a zombie: its
    temporary beside an output is still removed by the next run to that output."""
    from treedyn.pipeline.paths import remove_stale, temporary_name

    target = str(tmp_path / "out.npz")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # exited, not reaped: a zombie
            state = Path(f"/proc/{child.pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
            if state == b"Z":
                break
            time.sleep(0.05)
        left = Path(temporary_name(target).replace(f".{os.getpid()}-", f".{child.pid}-"))
        left.write_bytes(b"half an archive")
        assert remove_stale(target) == [left.name]
    finally:
        child.wait()
