"""Batch pipelines of ``dyn``: chunked streaming, bounded memory, bad rows, progress, bench.

Chunked runs (several chunks and a remainder, by shrinking the chunk size) must give the
same numbers as single-state calls for every input kind; a bad row ends the output cleanly
after the states before it; the streaming path's peak RSS must not grow with the input.
"""
from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys

import numpy as np
import pytest

from treedyn.engine import aba, crba, rnea
from treedyn.parsers import load_model

from test_cli import ARM, ROOT, assert_usage_error, dyn, json_lines, numbers

COUNT = 23  # states in the small inputs: 3 chunks of 7 and a remainder of 2
CHUNK = 7


@pytest.fixture(scope="module")
def arm():
    return load_model(str(ARM))


@pytest.fixture(scope="module")
def states(arm):
    rng = np.random.default_rng(11)
    return (arm.random_configuration(rng, COUNT), rng.normal(size=(COUNT, 2)),
            rng.normal(size=(COUNT, 2)))


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of CHUNK states, so the small inputs span several chunks."""
    from treedyn.cli import main

    monkeypatch.setattr(main, "chunk_states", lambda command, layout: CHUNK)


def write_inputs(folder, q, v, a) -> dict:
    """The same states as JSON Lines, CSV, .npz and compressed .npz files."""
    jsonl = folder / "states.jsonl"
    jsonl.write_text("".join(json.dumps({"q": q[k].tolist(), "v": v[k].tolist(),
                                         "a": a[k].tolist()}) + "\n" for k in range(len(q))))
    csv = folder / "states.csv"
    csv.write_text("q0,q1,v0,v1,a0,a1\n" + "".join(
        numbers(np.concatenate([q[k], v[k], a[k]])) + "\n" for k in range(len(q))))
    npz, packed = folder / "states.npz", folder / "packed.npz"
    np.savez(npz, q=q, v=v, a=a)
    np.savez_compressed(packed, q=np.asfortranarray(q), v=v.astype(np.float32), a=a)
    return {"jsonl": jsonl, "csv": csv, "npz": npz, "packed": packed}


def single_taus(q, v, a) -> list:
    """tau of each state from its own single-state command."""
    return [json.loads(dyn("inverse", ARM, "--q", numbers(q[k]), "--v", numbers(v[k]),
                           "--a", numbers(a[k]), "-f", "json").stdout)["tau"]
            for k in range(len(q))]


# ----------------------------------------------------------------------------- streaming

def test_chunked_inputs_match_single_states(tmp_path, states, small_chunks):
    q, v, a = states
    files = write_inputs(tmp_path, q, v, a)
    expected = single_taus(q, v, a)
    for name in ("jsonl", "csv", "npz"):
        for source, stdin in ((files[name], None), ("-", files[name].read_bytes())):
            lines = json_lines(dyn("inverse", ARM, "-i", source, "-f", "json", stdin=stdin))
            assert [line["tau"] for line in lines] == expected, (name, source)
    packed = json_lines(dyn("inverse", ARM, "-i", files["packed"], "-f", "json"))
    np.testing.assert_array_equal([line["tau"] for line in packed],
                                  rnea(load_model(str(ARM)), q, v.astype(np.float32), a))


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".npz"])
def test_chunked_outputs_by_extension(tmp_path, arm, states, small_chunks, suffix):
    q, v, a = states
    files = write_inputs(tmp_path, q, v, a)
    target = tmp_path / f"tau{suffix}"
    assert dyn("inverse", ARM, "-i", files["npz"], "-o", target).stdout == b""
    np.testing.assert_array_equal(read_output(target, "tau"), rnea(arm, q, v, a))


def test_chunked_forward_and_mass_to_npz(tmp_path, arm, states, small_chunks):
    """ABA and CRBA in chunks of 7 against one batch of 23: equal to rounding (the engine's
    last bit can depend on the batch size, e.g. for a remainder chunk of 1 or 2 states)."""
    q, v, a = states
    source = tmp_path / "states.npz"
    np.savez(source, q=q, v=v, tau=a)
    dyn("forward", ARM, "-i", source, "-o", tmp_path / "a.npz")
    dyn("mass", ARM, "-i", source, "-o", tmp_path / "M.npz")
    with np.load(tmp_path / "a.npz") as saved:
        np.testing.assert_allclose(saved["a"], aba(arm, q, v, a), rtol=1e-13, atol=1e-13)
        assert saved["dofs"].tolist() == ["joint1", "joint2"]
    with np.load(tmp_path / "M.npz") as saved:
        np.testing.assert_allclose(saved["M"], crba(arm, q), rtol=1e-13, atol=1e-13)


def test_chunk_size_bounds_result_memory():
    """Chunks hold at most ~8 MB of results: fewer states for the mass matrices of big models."""
    from types import SimpleNamespace

    from treedyn.cli.inputs import CHUNK as LARGEST
    from treedyn.cli.main import chunk_states

    big = SimpleNamespace(model=SimpleNamespace(nv=40))
    assert chunk_states("inverse", big) == LARGEST
    assert 64 < chunk_states("mass", big) < LARGEST
    assert 8 * 40 * 40 * chunk_states("mass", big) <= 8 << 20


def read_output(path, key: str) -> np.ndarray:
    """The results in an output file of any format."""
    if path.suffix == ".npz":
        with np.load(path) as saved:
            return saved[key]
    text = path.read_text()
    assert text.endswith("\n")
    if path.suffix == ".csv":
        rows = text.splitlines()[1:]
        return np.array([[float(x) for x in row.split(",")] for row in rows])
    return np.array([json.loads(line)[key] for line in text.splitlines()])


def peak_rss_mb(args: list[str]) -> float:
    """Peak RSS (MB) of ``dyn ARGS`` run alone under a fresh wrapper process."""
    wrapper = ("import resource, subprocess, sys\n"
               "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
               "assert done.returncode == 0\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", wrapper, sys.executable, "-m",
                          "treedyn.cli.main", *args], capture_output=True, check=True,
                         cwd=ROOT, timeout=120)
    return int(out.stdout) / 1024  # ru_maxrss is in KB on Linux


def write_many_jsonl(path, count: int, seed: int = 5) -> None:
    """``count`` JSON lines of random states (1000 distinct lines, repeated)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(1000, 6)).tolist()
    block = "".join(f'{{"q": [{r[0]!r}, {r[1]!r}], "v": [{r[2]!r}, {r[3]!r}], '
                    f'"a": [{r[4]!r}, {r[5]!r}]}}\n' for r in x)
    with open(path, "w") as f:
        f.writelines(block for _ in range(count // 1000))


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss units and pty are Linux's")
def test_streaming_memory_does_not_grow_with_the_input(tmp_path):
    """600k states (85 MB of JSON, 29 MB as floats, far more as parsed objects) in the
    same peak RSS as 20k: nothing on the streaming path grows with the input."""
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    write_many_jsonl(small, 20_000)
    write_many_jsonl(large, 600_000)
    out = tmp_path / "tau.csv"
    base = peak_rss_mb(["inverse", str(ARM), "-i", str(small), "-o", str(out)])
    peak = peak_rss_mb(["inverse", str(ARM), "-i", str(large), "-o", str(out)])
    assert len(out.read_text().splitlines()) == 1 + 600_000
    assert peak < base + 16, (base, peak)
    assert peak < 200, peak


# ----------------------------------------------------------------------------- bad rows

@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".npz"])
def test_bad_jsonl_line_keeps_the_complete_output_before_it(tmp_path, arm, states,
                                                            small_chunks, suffix):
    q, v, a = states
    lines = [json.dumps({"q": q[k].tolist(), "v": v[k].tolist(), "a": a[k].tolist()})
             for k in range(COUNT)]
    lines[16] = '{"q": [0.1, 0.2, 0.3]}'  # line 17: in the third chunk
    source = tmp_path / "states.jsonl"
    source.write_text("\n".join(lines) + "\n")
    target = tmp_path / f"out{suffix}"
    message = assert_usage_error(dyn("inverse", ARM, "-i", source, "-o", target, check=False),
                                 "states.jsonl:17", "needs nq=2", "the 16 states before it",
                                 str(target))
    assert ("saved in" if suffix == ".npz" else "written to") in message
    np.testing.assert_array_equal(read_output(target, "tau"),
                                  rnea(arm, q[:16], v[:16], a[:16]))


def test_bad_csv_cell_and_non_finite_number(tmp_path, arm, states, small_chunks):
    q, v, a = states
    rows = [numbers(np.concatenate([q[k], v[k], a[k]])) for k in range(COUNT)]
    rows[9] = rows[9].replace(rows[9].split(",")[3], "oops", 1)  # line 11 (after the header)
    source = tmp_path / "states.csv"
    source.write_text("q0,q1,v0,v1,a0,a1\n" + "\n".join(rows) + "\n")
    target = tmp_path / "out.csv"
    assert_usage_error(dyn("inverse", ARM, "-i", source, "-o", target, check=False),
                       "states.csv:11", "'v1'", "'oops'", "the 9 states before it")
    np.testing.assert_array_equal(read_output(target, "tau"), rnea(arm, q[:9], v[:9], a[:9]))
    jsonl = tmp_path / "states.jsonl"
    jsonl.write_text('{"q": [0, 0]}\n' * 3 + '{"q": [0, 1e400]}\n' + '{"q": [0, 0]}\n')
    assert_usage_error(dyn("inverse", ARM, "-i", jsonl, "-o", target, check=False),
                       "states.jsonl:4", "inf", "the 3 states before it")


def test_error_in_the_first_row_leaves_no_file(tmp_path):
    source = tmp_path / "states.jsonl"
    source.write_text('{"q": [0]}\n{"q": [0, 0]}\n')
    target = tmp_path / "out.csv"
    line = assert_usage_error(dyn("inverse", ARM, "-i", source, "-o", target, check=False),
                              "states.jsonl:1")
    assert "stopped" not in line
    assert not target.exists()


def test_bad_npz_row_with_npz_output(tmp_path, arm, states, small_chunks):
    q, v, a = (x.copy() for x in states)
    v[10, 1] = np.inf
    source = tmp_path / "states.npz"
    np.savez(source, q=q, v=v, a=a)
    target = tmp_path / "tau.npz"
    assert_usage_error(dyn("inverse", ARM, "-i", source, "-o", target, check=False),
                       "v[10]", "the 10 states before it are saved in")
    np.testing.assert_array_equal(read_output(target, "tau"), rnea(arm, q[:10], v[:10], a[:10]))


# ----------------------------------------------------------------------------- progress

def run_on_terminal(args: list[str], delay: str = "0") -> tuple[int, str]:
    """Run ``dyn ARGS`` with stderr on a pseudo-terminal (stdout discarded): exit, stderr."""
    master, slave = pty.openpty()
    env = {**os.environ, "DYN_PROGRESS_DELAY": delay, "COLUMNS": "100"}
    process = subprocess.Popen([sys.executable, "-m", "treedyn.cli.main", *args], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        seen += data
    os.close(master)
    return process.wait(timeout=60), seen.decode(errors="replace")


@pytest.mark.skipif(sys.platform != "linux", reason="pty")
def test_progress_bar_on_a_terminal_only(tmp_path):
    source = tmp_path / "many.jsonl"
    write_many_jsonl(source, 40_000)
    args = ["inverse", str(ARM), "-i", str(source), "-o", str(tmp_path / "tau.csv")]
    code, shown = run_on_terminal(args)
    assert code == 0 and "states/s" in shown and "40,000 states" in shown, shown
    code, quiet = run_on_terminal(args + ["--quiet"])
    assert code == 0 and quiet == "", quiet
    code, short = run_on_terminal(args, delay="60")  # a batch shorter than the delay
    assert code == 0 and short == "", short
    piped = subprocess.run([sys.executable, "-m", "treedyn.cli.main", *args], cwd=ROOT,
                           capture_output=True, check=False,
                           env={**os.environ, "DYN_PROGRESS_DELAY": "0"})
    assert piped.returncode == 0 and piped.stderr == b""


def test_quiet_silences_warnings_but_not_errors():
    tool_arm = ROOT / "tests" / "data" / "arm_with_tool.urdf"
    noisy = dyn("inverse", tool_arm, "--fext", "mount=1,0,0,0,0,0", "-f", "json", "-i", "-",
                stdin='{"q": [0, 0]}\n')
    assert b"warning" in noisy.stderr
    quiet = dyn("inverse", tool_arm, "--fext", "mount=1,0,0,0,0,0", "-f", "json", "-i", "-",
                "--quiet", stdin='{"q": [0, 0]}\n')
    assert quiet.stderr == b"" and quiet.stdout == noisy.stdout
    assert_usage_error(dyn("inverse", ARM, "--q", "1", "--quiet", check=False), "--q")


def test_single_state_does_not_import_rich_or_the_pipeline_modules():
    probe = ("import sys\n"
             "from treedyn.cli.main import run\n"
             f"sys.argv = ['dyn', 'inverse', {str(ARM)!r}, '--q', '0.1,0.2', '-f', 'json']\n"
             "try:\n    run()\nexcept SystemExit as e:\n    assert e.code == 0\n"
             "print([m for m in sys.modules if m.split('.')[0] in ('rich', 'scipy')\n"
             "       or m in ('treedyn.cli.progress', 'treedyn.cli.bench')])\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True)
    assert out.stdout.decode().strip().endswith("[]"), out.stdout


# ----------------------------------------------------------------------------- bench

def test_bench_prints_a_throughput_table():
    table = dyn("bench", ARM, "--states", "64", "--seconds", "0.01").stdout.decode()
    assert "states/s" in table and "us/state" in table
    document = json.loads(dyn("bench", ARM, "--states", "64", "--seconds", "0.01",
                              "-f", "json").stdout)
    rows = document["rows"]
    assert [(r["command"], r["states"], r["threads"]) for r in rows] == [
        (command, n, threads) for command in ("inverse", "forward", "mass")
        for n, threads in ((1, 1), (64, 1), (64, 2))]
    assert all(r["states_per_s"] > 0 and r["us_per_state"] > 0 for r in rows)


def test_stdin_npz_is_streamed_from_a_spool(states, small_chunks):
    q, v, a = states
    buffer = io.BytesIO()
    np.savez(buffer, q=q, v=v, a=a)
    lines = json_lines(dyn("inverse", ARM, "-i", "-", "-f", "json", stdin=buffer.getvalue()))
    np.testing.assert_array_equal([line["tau"] for line in lines],
                                  rnea(load_model(str(ARM)), q, v, a))
