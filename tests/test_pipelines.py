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
import stat
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
    from treedyn.cli.run import request

    monkeypatch.setattr(request, "chunk_states", lambda command, layout: CHUNK)


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

    from treedyn.session.environment import STREAM_CHUNK as LARGEST
    from treedyn.cli.run.request import chunk_states

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


def partial(path):
    """Where a run that did not finish leaves the states it completed: out.partial.EXT."""
    return path.with_name(f"{path.stem}.partial{path.suffix}")


def peak_rss_mb(args: list[str]) -> float:
    """Peak RSS (MB) of ``dyn ARGS`` run alone under a fresh wrapper process."""
    wrapper = ("import resource, subprocess, sys\n"
               "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
               "assert done.returncode == 0\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", wrapper, sys.executable, "-m",
                          "treedyn.cli", *args], capture_output=True, check=True,
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
    assert_usage_error(dyn("inverse", ARM, "-i", source, "-o", target, check=False),
                       "states.jsonl:17", "needs nq=2",
                       f"the 16 states before it are in {partial(target)}; {target} is not "
                       "written")
    assert not target.exists()
    np.testing.assert_array_equal(read_output(partial(target), "tau"),
                                  rnea(arm, q[:16], v[:16], a[:16]))


def test_bad_csv_cell_and_non_finite_number(tmp_path, arm, states, small_chunks):
    q, v, a = states
    rows = [numbers(np.concatenate([q[k], v[k], a[k]])) for k in range(COUNT)]
    rows[9] = rows[9].replace(rows[9].split(",")[3], "oops", 1)  # line 11 (after the header)
    source = tmp_path / "states.csv"
    source.write_text("q0,q1,v0,v1,a0,a1\n" + "\n".join(rows) + "\n")
    target = tmp_path / "out.csv"
    assert_usage_error(dyn("inverse", ARM, "-i", source, "-o", target, check=False),
                       "states.csv:11", "'v1'", "'oops'", "the 9 states before it are in")
    np.testing.assert_array_equal(read_output(partial(target), "tau"),
                                  rnea(arm, q[:9], v[:9], a[:9]))
    jsonl = tmp_path / "states.jsonl"
    jsonl.write_text('{"q": [0, 0]}\n' * 3 + '{"q": [0, 1e400]}\n' + '{"q": [0, 0]}\n')
    assert_usage_error(dyn("inverse", ARM, "-i", jsonl, "-o", target, check=False),
                       "states.jsonl:4", "inf", "the 3 states before it")


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".npz"])
def test_an_existing_output_is_kept_until_the_first_state(tmp_path, arm, states, suffix):
    """--output names a file that already exists: a run that fails before its first state
    leaves it as it was; one that succeeds, or fails later, replaces all of it (no tail of
    the longer old contents is left behind)."""
    q, v, a = states
    files = write_inputs(tmp_path, q, v, a)
    target = tmp_path / f"out{suffix}"
    old = b"PRECIOUS" * 100_000
    bad_header = tmp_path / "bad_header.csv"
    bad_header.write_text("q0,q9\n0.1,0.2\n")
    first_bad = tmp_path / "first_bad.jsonl"
    first_bad.write_text('{"q": [0.1]}\n' + files["jsonl"].read_text())
    for source, fragment in ((bad_header, "bad_header.csv:1"), (first_bad, "first_bad.jsonl:1")):
        target.write_bytes(old)
        line = assert_usage_error(dyn("inverse", ARM, "-i", source, "-o", target, check=False),
                                  fragment)
        assert "stopped" not in line
        assert target.read_bytes() == old
    target.write_bytes(old)
    dyn("inverse", ARM, "-i", files["jsonl"], "-o", target)
    np.testing.assert_array_equal(read_output(target, "tau"), rnea(arm, q, v, a))
    target.write_bytes(old)
    last_bad = tmp_path / "last_bad.jsonl"
    last_bad.write_text(files["jsonl"].read_text() + '{"q": [0.1]}\n')
    assert_usage_error(dyn("inverse", ARM, "-i", last_bad, "-o", target, check=False),
                       f"the {COUNT} states before it are in {partial(target)}; {target} is "
                       "unchanged")
    assert target.read_bytes() == old
    np.testing.assert_array_equal(read_output(partial(target), "tau"), rnea(arm, q, v, a))


def test_an_output_through_a_link_to_nothing(tmp_path, arm, states):
    """--output names a symbolic link to a file that does not exist yet: dyn creates that
    file with the usual permissions (0666 less the umask, as open() would), and removes
    it again when the run fails before its first state."""
    q, v, a = states
    files = write_inputs(tmp_path, q, v, a)
    target, link = tmp_path / "target.csv", tmp_path / "link.csv"
    link.symlink_to(target.name)
    bad_header = tmp_path / "bad_header.csv"
    bad_header.write_text("q0,q9\n0.1,0.2\n")
    assert_usage_error(dyn("inverse", ARM, "-i", bad_header, "-o", link, check=False),
                       "bad_header.csv:1")
    assert link.is_symlink() and not target.exists()
    dyn("inverse", ARM, "-i", files["jsonl"], "-o", link)
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    np.testing.assert_array_equal(read_output(link, "tau"), rnea(arm, q, v, a))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_an_output_that_is_a_named_pipe(tmp_path, arm, states):
    """--output names a FIFO read by another process: the results stream through it (no
    seek, no truncation), and a bad row ends them with the usual line; the FIFO stays."""
    import threading

    q, v, a = states
    files = write_inputs(tmp_path, q, v, a)
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    for source, code in ((files["jsonl"], 0), (tmp_path / "bad.jsonl", 2)):
        if code:
            source.write_text(files["jsonl"].read_text() + '{"q": [1]}\n')
        received = []
        reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
        reader.start()
        result = dyn("inverse", ARM, "-i", source, "-o", fifo, check=False)
        reader.join(timeout=60)
        assert result.returncode == code, result.stderr
        tau = [json.loads(line)["tau"] for line in received[0].decode().splitlines()]
        np.testing.assert_array_equal(tau, rnea(arm, q, v, a))
        assert fifo.exists() and stat.S_ISFIFO(fifo.stat().st_mode)


def test_forces_in_csv_columns_or_npz_arrays_are_not_silently_dropped(tmp_path, arm, states):
    """Only --fext and JSON Lines' "fext" objects apply external forces: columns or arrays
    named fext... give the same numbers as without them, and one warning saying so (also
    with --quiet off only; --quiet silences it)."""
    q, v, a = states
    csv_path = tmp_path / "forces.csv"
    csv_path.write_text("\nq0,q1,fext:link2:0,Fext_b,fextra,fext4\n" + "".join(
        f"{x!r},{y!r},1.5,2,3,4\n" for x, y in q.tolist()))
    npz_path = tmp_path / "forces.npz"
    np.savez(npz_path, q=q, fext=np.ones((len(q), 3, 6)), time=np.arange(len(q)))
    expected = rnea(arm, q, None, None)
    for path, fragment, other in (
            (csv_path, "forces.csv:2: columns 'fext:link2:0', 'Fext_b', 'fext4' ignored",
             "forces.csv:2: column 'fextra' not read"),
            (npz_path, "forces.npz: array 'fext' ignored", "forces.npz: array 'time' not read")):
        result = dyn("inverse", ARM, "-i", path, "-f", "json")
        lines = result.stderr.decode().splitlines()
        assert len(lines) == 2 and fragment in lines[0] and "--fext" in lines[0], lines
        assert other in lines[1], lines
        np.testing.assert_array_equal([r["tau"] for r in json_lines(result)], expected)
        assert dyn("inverse", ARM, "-i", path, "-f", "json", "--quiet").stderr == b""


def test_csv_errors_name_the_line_a_record_starts_on(tmp_path):
    """A quoted cell may hold line ends, and blank lines may come before the header: the
    error names the line the bad record (or the header) starts on, where an editor should
    go, not the line csv.reader ended on."""
    spanning = tmp_path / "spanning.csv"
    spanning.write_text('q0,q1\n0.1,0.2\n"0.3\n\n",oops\n0.5,1\n')
    target = tmp_path / "out.jsonl"
    assert_usage_error(dyn("inverse", ARM, "-i", spanning, "-o", target, check=False),
                       "spanning.csv:3: column 'q1': 'oops'", "the 1 state before it is in")
    unclosed = tmp_path / "unclosed.csv"
    unclosed.write_text('q0,q1\n0.1,0.2\n"0.3\n\n,0.4\n0.5,1\n')
    line = assert_usage_error(dyn("inverse", ARM, "-i", unclosed, "-o", target, check=False),
                              "unclosed.csv:3: 1 field, the header has 2")
    assert "1 fields" not in line
    late_header = tmp_path / "late_header.csv"
    late_header.write_text("\n\nq0,q7\n0.1,0.2\n")
    assert_usage_error(dyn("inverse", ARM, "-i", late_header, "-f", "json", check=False),
                       "late_header.csv:3: column 'q7': out of range")


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
                       "v[10]", "the 10 states before it are in")
    np.testing.assert_array_equal(read_output(partial(target), "tau"),
                                  rnea(arm, q[:10], v[:10], a[:10]))


# ----------------------------------------------------------------------------- progress

def run_on_terminal(args: list[str], delay: str = "0",
                    stdout_too: bool = False) -> tuple[int, str]:
    """Run ``dyn ARGS`` with stderr (and stdout if ``stdout_too``, else discarded) on a
    pseudo-terminal: exit code, what the terminal showed."""
    master, slave = pty.openpty()
    env = {**os.environ, "DYN_PROGRESS_DELAY": delay, "COLUMNS": "100"}
    process = subprocess.Popen([sys.executable, "-m", "treedyn.cli", *args], cwd=ROOT,
                               stdout=slave if stdout_too else subprocess.DEVNULL,
                               stderr=slave, env=env)
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
    assert "100% 40,000 states" in shown and "ETA 0:00" in shown, shown  # a file: its share
    code, quiet = run_on_terminal(args + ["--quiet"])
    assert code == 0 and quiet == "", quiet
    code, short = run_on_terminal(args, delay="60")  # a batch shorter than the delay
    assert code == 0 and short == "", short
    piped = subprocess.run([sys.executable, "-m", "treedyn.cli", *args], cwd=ROOT,
                           capture_output=True, check=False,
                           env={**os.environ, "DYN_PROGRESS_DELAY": "0"})
    assert piped.returncode == 0 and piped.stderr == b""
    # typed at a terminal with --output: stdout is the terminal too, but holds no results
    code, typed = run_on_terminal(args, stdout_too=True)
    assert code == 0 and "40,000 states" in typed, typed
    code, printed = run_on_terminal(args[:-2] + ["-f", "csv"], stdout_too=True)
    assert code == 0 and "states/s" not in printed  # results on the terminal: no bar


@pytest.mark.skipif(sys.platform != "linux", reason="pty")
def test_the_state_commands_show_the_same_bar(tmp_path):
    source = tmp_path / "many.jsonl"
    write_many_jsonl(source, 40_000)
    code, shown = run_on_terminal(["com", str(ARM), "-i", str(source), "-o",
                                   str(tmp_path / "com.npz")])
    assert code == 0 and "100% 40,000 states" in shown, shown


def test_the_bar_never_starts_at_zero_states(monkeypatch):
    """Text made by formatting workers reaches the output after the chunk that produced it:
    the first advances count 0 states, which drew a '0% 0 states 0 states/s' frame."""
    from treedyn.cli.run.progress import Progress

    progress = Progress(True, delay=0.0)
    frames = []
    monkeypatch.setattr(Progress, "show", lambda self, fields: frames.append(fields["states"]))
    progress.advance(0, 100)
    progress.advance(0, 100)
    assert frames == [] and progress.bar is None
    progress.advance(30, 100)
    assert frames == [30]


def test_share_of_a_text_input_read_is_known_for_files_only(tmp_path, arm):
    """The progress bar's share done: bytes read of a text file (also on stdin), none for
    a pipe, whose size is unknown."""
    from treedyn.pipeline.layout import Layout
    from treedyn.pipeline.source import Input

    source = tmp_path / "many.jsonl"
    write_many_jsonl(source, 5000)
    text = Input.open(str(source))
    shares = [text.consumed() for _ in text.chunks(Layout.of(arm), ("q", "v", "a"), {}, 1000)]
    assert len(shares) == 5 and shares == sorted(shares) and shares[-1] == 1.0, shares
    assert 0.15 < shares[0] < 0.3, shares  # a fifth of the lines, and the read-ahead
    reader, writer = os.pipe()
    with open(reader, "rb") as pipe, open(writer, "wb") as end:
        end.write(source.read_bytes()[:4096])
        end.close()
        piped = Input("-", "jsonl", pipe)
        assert piped.size == 0 and piped.consumed() is None


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
             "from treedyn.cli.app import run_app\n"
             f"sys.argv = ['dyn', 'inverse', {str(ARM)!r}, '--q', '0.1,0.2', '-f', 'json']\n"
             "try:\n    run_app(sys.argv[1:])\nexcept SystemExit as e:\n    assert e.code == 0\n"
             "print([m for m in sys.modules if m.split('.')[0] in ('rich', 'scipy')\n"
             "       or m in ('treedyn.cli.run.progress', 'treedyn.pipeline.bench')])\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True)
    assert out.stdout.decode().strip().endswith("[]"), out.stdout


# ----------------------------------------------------------------------------- input hygiene

# every command that reads states and writes a file (a state command's own options after)
READING_STATES = [["inverse"], ["forward"], ["mass"], ["regressor"], ["frames"],
                  ["jacobian", "--frame", "link2"], ["com"], ["coriolis"], ["centroidal"],
                  ["energy"]]


@pytest.mark.parametrize("command", READING_STATES, ids=lambda c: c[0])
def test_an_output_that_is_the_input_is_refused(tmp_path, states, command):
    """Opening the output first would empty the input: refused before anything is opened,
    also through another spelling of the path or a link, by every command that reads
    states into a file (the state commands once replaced the input with their results)."""
    files = write_inputs(tmp_path, *states)
    for name in ("npz", "jsonl", "csv"):
        source = files[name]
        before = source.read_bytes()
        link = tmp_path / f"link.{source.suffix[1:]}"
        link.symlink_to(source)
        for output in (source, tmp_path / "." / source.name, link):
            assert_usage_error(dyn(command[0], ARM, *command[1:], "-i", source, "-o", output,
                                   check=False), f"--output {output} is the input file")
        with open(source, "rb") as stdin:  # `dyn ... -i - -o FILE < FILE`
            redirected = subprocess.run([sys.executable, "-m", "treedyn.cli", command[0],
                                         str(ARM), *command[1:], "-i", "-", "-o", str(link)],
                                        stdin=stdin, capture_output=True, cwd=ROOT, timeout=60)
        assert_usage_error(redirected, f"--output {link} is the input file (on stdin)")
        assert source.read_bytes() == before
        assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
            [path.name for path in files.values()] + [link.name])  # (no temporary left)
        link.unlink()


def test_check_limits_refuses_an_output_that_is_its_input(tmp_path):
    source = tmp_path / "log.csv"
    source.write_bytes((ROOT / "fixtures" / "two_link_arm_limits_log.csv").read_bytes())
    link = tmp_path / "summary.json"
    link.symlink_to(source)
    assert_usage_error(dyn("check-limits", ARM, "-i", source, "-o", link, check=False),
                       f"--output {link} is the input file")
    assert source.read_bytes() == (ROOT / "fixtures" / "two_link_arm_limits_log.csv"
                                   ).read_bytes()


@pytest.mark.parametrize("command", [c for c in READING_STATES if c[0] not in ("regressor",)],
                         ids=lambda c: c[0])
def test_a_dataset_prefix_needs_an_hdf5_file(tmp_path, states, command):
    """--dataset-prefix without an HDF5 input or output is refused, not ignored."""
    source = write_inputs(tmp_path, *states)["npz"]
    for where in (["--q", "0.1,0.2"], ["-i", str(source)]):
        assert_usage_error(dyn(command[0], ARM, *command[1:], *where, "--dataset-prefix",
                               "data", "-f", "json", check=False),
                           "--dataset-prefix names the group of an .h5/.hdf5")


def test_a_byte_order_mark_is_skipped(tmp_path, states):
    """Spreadsheet programs start UTF-8 text with a BOM: the first column and stdin's
    format detection must not see it."""
    q, v, a = states
    files = write_inputs(tmp_path, q, v, a)
    expected = json_lines(dyn("inverse", ARM, "-i", files["jsonl"], "-f", "json"))
    for name in ("jsonl", "csv"):
        marked = tmp_path / f"marked.{name}"
        marked.write_bytes(b"\xef\xbb\xbf" + files[name].read_bytes())
        assert json_lines(dyn("inverse", ARM, "-i", marked, "-f", "json")) == expected, name
        piped = dyn("inverse", ARM, "-i", "-", "-f", "json", stdin=marked.read_bytes())
        assert json_lines(piped) == expected, name


def test_an_input_with_nothing_to_compute_from_is_an_error(tmp_path):
    """A header or object the command cannot use would give the neutral state for every
    row: an error naming what was found, and nothing on stdout (not even a CSV header)."""
    semicolons = tmp_path / "semicolons.csv"
    semicolons.write_text("q0;q1\n0.5;0.7\n")
    assert_usage_error(dyn("inverse", ARM, "-i", semicolons, "-f", "csv", check=False),
                       "semicolons.csv:1: no column to compute from: the header has 'q0;q1'")
    forward_columns = tmp_path / "tau.csv"
    forward_columns.write_text("q0,q1,tau0,tau1\n0.5,0.7,1,2\n")
    dyn("forward", ARM, "-i", forward_columns, "-f", "json")
    only_tau = tmp_path / "only_tau.csv"
    only_tau.write_text("tau0,tau1\n1,2\n")
    assert_usage_error(dyn("inverse", ARM, "-i", only_tau, "-f", "csv", check=False),
                       "only_tau.csv:1: no column to compute from")
    for line, found in (('{"Q": [1, 2]}', '"Q"'), ('{"tau": [1, 2], "t": 0.1}', '"tau", "t"')):
        result = dyn("inverse", ARM, "-i", "-", "-f", "json", stdin=f'{{"q": [0, 0]}}\n{line}\n',
                     check=False)
        assert len(json_lines(result)) == 1
        result.stdout = b""
        assert_usage_error(result, f'<stdin>:2: no "q", "v" or "a" here, nothing to compute '
                                   f"from (the object has {found})")
    neutral = json_lines(dyn("inverse", ARM, "-i", "-", "-f", "json", stdin="{}\n"))
    assert neutral == json_lines(dyn("inverse", ARM, "-i", "-", "-f", "json",
                                     stdin='{"q": [0, 0]}\n'))  # {}: all defaults, as no --q
    wrench = '{"fext": {"link2": [0, 0, -10, 0, 0, 0]}}\n'  # a wrench at the neutral state
    assert len(json_lines(dyn("inverse", ARM, "-i", "-", "-f", "json", stdin=wrench))) == 1
    assert_usage_error(dyn("mass", ARM, "-i", "-", "-f", "json", stdin=wrench, check=False),
                       '<stdin>:1: no "q" here')  # M does not depend on forces


def test_a_byte_that_is_not_utf8_names_its_line_after_the_lines_before_it(tmp_path, states,
                                                                          small_chunks):
    q, v, a = states
    files = write_inputs(tmp_path, q, v, a)
    for name, first_line in (("jsonl", 1), ("csv", 2)):
        lines = files[name].read_bytes().splitlines(keepends=True)
        bad = first_line + 10  # the 11th state: one chunk of 7 and 3 states before it
        lines[bad - 1] = lines[bad - 1].replace(b",", b",\xe9", 1)  # Latin-1, not UTF-8
        source = tmp_path / f"latin.{name}"
        source.write_bytes(b"".join(lines))
        target = tmp_path / f"tau_{name}.csv"
        line = assert_usage_error(dyn("inverse", ARM, "-i", source, "-o", target, check=False),
                                  f"latin.{name}:{bad}: not UTF-8 text (byte 0xe9 at column")
        assert "the 10 states before it are in" in line
        written = np.loadtxt(partial(target), delimiter=",", skiprows=1)
        np.testing.assert_array_equal(written, rnea_rows(q[:10], v[:10], a[:10]))


def test_text_inputs_as_text_mode_read_them(tmp_path, states):
    """Line ends LF, CRLF or a lone CR (old Mac files), blank lines before the CSV header:
    the same states; NUL bytes (UTF-16 read as UTF-8) and CSV-level errors (a field over
    csv's size limit) are one-line errors naming the line, after the rows before it."""
    q, v, a = states
    files = write_inputs(tmp_path, q, v, a)
    expected = json_lines(dyn("inverse", ARM, "-i", files["jsonl"], "-f", "json"))
    for name in ("jsonl", "csv"):
        text = files[name].read_bytes()
        for ending in (b"\r\n", b"\r"):
            variant = tmp_path / f"ends.{name}"
            variant.write_bytes((b"\n\n" if name == "csv" else b"") + text.replace(b"\n", ending))
            assert json_lines(dyn("inverse", ARM, "-i", variant, "-f", "json")) == expected
    utf16 = tmp_path / "utf16.csv"
    utf16.write_bytes(files["csv"].read_text().encode("utf-16-le"))
    assert_usage_error(dyn("inverse", ARM, "-i", utf16, "-f", "json", check=False),
                       "utf16.csv:1: holds NUL bytes (UTF-16 text? dyn reads UTF-8)")
    lines = files["csv"].read_text().splitlines(keepends=True)
    long_cell = tmp_path / "long.csv"
    long_cell.write_text(lines[0].rstrip("\n") + ",note\n"
                         + "".join(line.rstrip("\n") + ",x\n" for line in lines[1:4])
                         + lines[4].rstrip("\n") + "," + "y" * 200_000 + "\n")
    target = tmp_path / "tau.csv"
    assert_usage_error(dyn("inverse", ARM, "-i", long_cell, "-o", target, "--quiet",
                           check=False),
                       "long.csv:5: not readable as CSV (field larger than field limit",
                       "the 3 states before it are in")
    np.testing.assert_array_equal(np.loadtxt(partial(target), delimiter=",", skiprows=1),
                                  rnea_rows(q[:3], v[:3], a[:3]))


def rnea_rows(q, v, a) -> np.ndarray:
    model = load_model(str(ARM))
    return np.array([rnea(model, q[k], v[k], a[k]) for k in range(len(q))])


def test_huge_finite_npz_numbers_are_not_reported_as_overflows(tmp_path):
    source = tmp_path / "huge.npz"
    np.savez(source, q=np.full((3, 2), 1e308))
    result = dyn("inverse", ARM, "-i", source, "-f", "json", fresh=True)
    assert result.stderr == b"" and len(json_lines(result)) == 3


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGPIPE"), reason="POSIX pipes")
def test_a_closed_output_pipe_ends_dyn_quietly(tmp_path):
    """``dyn ... | head -1``: ended by SIGPIPE like other Unix tools (exit status 141 in a
    shell), no message; not exit code 1, which means that a check found errors."""
    import signal

    source = tmp_path / "many.npz"
    rng = np.random.default_rng(2)
    np.savez(source, q=rng.normal(size=(50_000, 2)))
    process = subprocess.Popen([sys.executable, "-m", "treedyn.cli", "inverse", str(ARM),
                                "-i", str(source), "-f", "csv"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout.readline().startswith(b"tau:")
    process.stdout.close()
    assert process.wait(timeout=60) == -signal.SIGPIPE
    assert process.stderr.read() == b""


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
    files = document["files"]
    assert [(r["command"], r["format"], r["stage"]) for r in files] == [
        (command, fmt, stage) for command in ("inverse", "forward", "mass")
        for fmt in ("npz", "jsonl", "csv") for stage in ("read", "write", "pipeline")]
    assert all(0 < r["states"] <= 64 and r["states_per_s"] > 0 for r in files)
    assert "files" not in json.loads(dyn("bench", ARM, "--states", "64", "--seconds", "0.01",
                                         "--no-files", "-f", "json").stdout)
    lines = dyn("bench", ARM, "--states", "64", "--seconds", "0.01", "-f", "csv",
                ).stdout.decode().splitlines()
    assert lines[0] == "command,states,threads,states_per_s,us_per_state,stage,format"
    assert len(lines) == 1 + 9 + 27 and lines[1].endswith(",engine,")
    assert lines[-1].startswith("mass,") and lines[-1].endswith(",pipeline,csv")


def test_bench_mass_rows_stay_under_their_memory_budget(monkeypatch, arm):
    """Batched mass calls and mass files hold at most MASS_BYTES of matrices: the rows say
    how many states they timed, and the first file of each format starts smaller when its
    results are many numbers."""
    from treedyn.pipeline import bench

    monkeypatch.setattr(bench, "MASS_BYTES", 8 * 2 * 2 * 10)  # 10 mass matrices of the arm
    monkeypatch.setattr(bench, "FIRST_FILE_NUMBERS", 2 * 2 * 3)  # a first file of 3 states
    assert bench.batch_states("mass", arm, 64) == 10 and bench.batch_states("inverse", arm, 64) == 64
    document = json.loads(dyn("bench", ARM, "--states", "64", "--seconds", "0.01",
                              "-f", "json").stdout)
    assert [(r["command"], r["states"]) for r in document["rows"] if r["states"] > 1] == [
        (command, n) for command, n in (("inverse", 64), ("forward", 64), ("mass", 10))
        for _ in range(2)]
    files = [r for r in document["files"] if r["command"] == "mass"]
    assert files and all(3 <= r["states"] <= 10 for r in files)


@pytest.mark.parametrize("fmt", ["npz", "jsonl", "csv"])
def test_bench_times_real_pipelines(tmp_path, arm, fmt):
    """The files bench writes states that read back exactly, and its written and piped
    results are the engine's on them: it times the real thing."""
    from treedyn.pipeline.bench import FileJob, random_states
    from treedyn.pipeline.layout import Layout

    count = 40
    states = random_states(arm, count)
    expected = {"inverse": rnea(arm, states["q"], states["v"], states["a"]),
                "forward": aba(arm, states["q"], states["v"], states["tau"]),
                "mass": crba(arm, states["q"])}
    key = {"inverse": "tau", "forward": "a", "mass": "M"}
    for command in ("inverse", "forward", "mass"):
        job = FileJob(Layout.of(arm), command, fmt, count, str(tmp_path))
        for kind in job.kinds:
            np.testing.assert_array_equal(
                np.concatenate([getattr(chunk, kind) for chunk in job.read()]), states[kind])
        job.write()
        job.pipeline()
        for name in ("written", "results"):
            path = tmp_path / f"{name}.{fmt}"
            if fmt == "npz":
                got = np.load(path)[key[command]]
            elif fmt == "jsonl":
                got = np.array([line[key[command]] for line in map(json.loads,
                                                                   path.read_text().splitlines())])
            else:
                got = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
            np.testing.assert_array_equal(got.reshape(expected[command].shape),
                                          expected[command], err_msg=f"{command} {name}")


def test_stdin_npz_is_streamed_from_a_spool(states, small_chunks):
    q, v, a = states
    buffer = io.BytesIO()
    np.savez(buffer, q=q, v=v, a=a)
    lines = json_lines(dyn("inverse", ARM, "-i", "-", "-f", "json", stdin=buffer.getvalue()))
    np.testing.assert_array_equal([line["tau"] for line in lines],
                                  rnea(load_model(str(ARM)), q, v, a))


# ----------------------------------------------------------------------------- .npz files

def savez_v2(path, **arrays) -> None:
    """An uncompressed .npz whose members have version 2.0 .npy headers."""
    import zipfile

    from numpy.lib import format as npy

    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                npy.write_array(member, array, version=(2, 0))


def npz_variants(folder, q, v, a) -> dict:
    """States saved in the ways an .npz can hold them: {label: path}."""
    ints = np.round(q * 3).astype(np.int64)
    variants = {
        "v1": (np.savez, {"q": q, "v": v, "a": a}),
        "v2": (savez_v2, {"q": q, "v": v, "a": a}),
        "ints": (np.savez, {"q": ints, "v": v.astype(np.float32), "a": a.astype(">f8")}),
        "compressed": (np.savez_compressed, {"q": q, "v": v, "a": a}),
        "fortran": (np.savez, {"q": np.asfortranarray(q), "v": v, "a": a}),
        "one_state": (np.savez, {"q": q[0], "v": v[0], "a": a[0]}),
    }
    files = {}
    for label, (save, arrays) in variants.items():
        files[label] = folder / f"{label}.npz"
        save(files[label], **arrays)
    return files


def read_members(stream, layout, kinds=("q", "v", "a"), size: int = CHUNK):
    """The members of an .npz as the reader opens them, and their rows read a block of
    ``size`` at a time: ({kind: member}, {kind: rows})."""
    from treedyn.pipeline.npz import npz_members

    members = {m.kind: m for m in npz_members(stream, "states.npz", layout, kinds)}
    rows = {}
    for kind, m in members.items():
        blocks = [m.read(s, min(s + size, m.count)) for s in range(0, m.count, size)]
        assert {block.dtype for block in blocks} == {m.dtype}
        rows[kind] = np.concatenate(blocks).astype(m.dtype)  # concatenate drops '>'
    return members, rows


def test_npz_members_are_read_as_np_load_reads_them(tmp_path, arm, states):
    """Members stored or compressed (v1.0 and v2.0 headers, any number type) are streamed
    through zipfile, Fortran-ordered ones read whole, from a file or an in-memory archive:
    always np.load's rows exactly."""
    from treedyn.pipeline.layout import Layout

    layout = Layout.of(arm)
    for label, path in npz_variants(tmp_path, *states).items():
        with np.load(path) as saved:
            expected = {kind: saved[kind].reshape(-1, 2) for kind in ("q", "v", "a")}
        with open(path, "rb") as stream:
            members, from_file = read_members(stream, layout)
        in_memory, from_memory = read_members(io.BytesIO(path.read_bytes()), layout)
        for kind, rows in expected.items():
            for got in (from_file[kind], from_memory[kind]):
                assert got.dtype == rows.dtype, (label, kind)
                np.testing.assert_array_equal(got, rows, err_msg=f"{label} {kind}")
        assert (members["q"].whole is not None) == (label == "fortran"), label
        if label != "one_state":
            taus = json_lines(dyn("inverse", ARM, "-i", path, "-f", "json"))
            np.testing.assert_array_equal(
                [line["tau"] for line in taus],
                rnea(arm, *(expected[kind].astype(float) for kind in ("q", "v", "a"))))


def corrupt(path, member: str, fraction: float = 0.5) -> None:
    """Flip one bit of ``member``'s data in the .npz at ``path`` (at ``fraction`` of it)."""
    import struct
    import zipfile

    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    data = bytearray(path.read_bytes())
    names, extra = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    data[info.header_offset + 30 + names + extra + int(info.compress_size * fraction)] ^= 1
    path.write_bytes(data)


def thousand_states(path, **save) -> tuple:
    """1000 random states (16 kB per member: more than zipfile reads with the header)."""
    rng = np.random.default_rng(4)
    q, v, a = (rng.normal(size=(1000, 2)) for _ in range(3))
    (np.savez_compressed if save.get("compressed") else np.savez)(path, q=q, v=v, a=a)
    return q, v, a


def test_a_corrupted_npz_member_is_an_error_not_used(tmp_path, arm, small_chunks):
    """One flipped bit in the rows of a stored member: its CRC-32 does not match once
    zipfile has read the member's last byte (it reads ahead, so some chunks before the last
    may have been printed), an error naming the file, from a file, stdin or an in-memory
    stream. The states before it were read from the damaged member: an output file is
    removed, and on stdout the line says how many were printed and that they may be
    wrong."""
    from treedyn.pipeline.errors import UsageError
    from treedyn.pipeline.layout import Layout
    from treedyn.pipeline.npz import npz_chunks, npz_members

    path, target = tmp_path / "states.npz", tmp_path / "tau.npz"
    thousand_states(path)
    corrupt(path, "v.npy")
    bad = "not a readable .npz file (Bad CRC-32 for file 'v.npy')"
    result = dyn("inverse", ARM, "-i", path, "-f", "json", check=False)
    printed = len(result.stdout.splitlines())
    assert 0 < printed < 1000 and printed % 7 == 0  # whole chunks of 7, not the last one
    result.stdout = b""
    assert_usage_error(result, f"states.npz: {bad}",
                       f"the {printed} states written to stdout before this was found were "
                       "read from that file and may be wrong")
    piped = dyn("inverse", ARM, "-i", "-", "-o", target, stdin=path.read_bytes(), check=False)
    assert_usage_error(piped, f"<stdin>: {bad}", f"{target} is not written and nothing is "
                       f"kept: the {printed} states")
    assert not target.exists() and not partial(target).exists()
    layout = Layout.of(arm)
    members = npz_members(io.BytesIO(path.read_bytes()), "states.npz", layout, ("q", "v"))
    with pytest.raises(UsageError, match=r"states\.npz: .*Bad CRC-32 for file 'v\.npy'"):
        list(npz_chunks(members, "states.npz", layout, {}, 100))


def test_a_corrupted_npz_member_in_one_chunk_leaves_no_output(tmp_path):
    path, target = tmp_path / "states.npz", tmp_path / "tau.npz"
    thousand_states(path)
    corrupt(path, "a.npy", 0.9)
    line = assert_usage_error(dyn("inverse", ARM, "-i", path, "-o", target, check=False),
                              "states.npz: not a readable .npz file (Bad CRC-32 for file "
                              "'a.npy')")
    assert "stopped" not in line and not target.exists()
    packed = tmp_path / "packed.npz"
    thousand_states(packed, compressed=True)
    corrupt(packed, "v.npy", 0.3)
    assert_usage_error(dyn("inverse", ARM, "-i", packed, "-o", target, check=False),
                       "packed.npz: not a readable .npz file (")


def test_npz_rows_read_from_a_later_row_are_still_checked(tmp_path, arm):
    """A block read from a later row on (as a distributed worker reads its share) gives
    the same rows; the block that ends the file checks the CRC-32 of the whole members."""
    from treedyn.pipeline.errors import UsageError
    from treedyn.pipeline.layout import Layout
    from treedyn.pipeline.npz import npz_chunks, npz_members

    layout = Layout.of(arm)
    path = tmp_path / "states.npz"
    q, v, _ = thousand_states(path)

    def block(first, end, kinds=("q", "v")):
        with open(path, "rb") as stream:
            members = npz_members(stream, "states.npz", layout, kinds)
            chunks = list(npz_chunks(members, "states.npz", layout, {}, 64, first, end))
        return (np.concatenate([c.q for c in chunks]),
                np.concatenate([c.v for c in chunks]) if "v" in kinds else None)

    got_q, got_v = block(960, None)
    np.testing.assert_array_equal(got_q, q[960:])
    np.testing.assert_array_equal(got_v, v[960:])
    corrupt(path, "v.npy", 0.2)  # in the rows of block [0, 500)
    np.testing.assert_array_equal(block(960, None, ("q",))[0], q[960:])  # q is intact
    np.testing.assert_array_equal(block(500, 600)[1], v[500:600])  # does not end the file
    with pytest.raises(UsageError, match="Bad CRC-32 for file 'v.npy'"):
        block(960, None)


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss units are Linux's")
def test_npz_input_memory_does_not_grow_with_the_input(tmp_path):
    """1.2M states (58 MB of .npz) in the same peak RSS as 20k: stored members are read a
    block at a time, nothing of the file is kept or mapped."""
    rows = np.random.default_rng(5).uniform(-1, 1, size=(1000, 6))
    small, large = tmp_path / "small.npz", tmp_path / "large.npz"
    for path, count in ((small, 20_000), (large, 1_200_000)):
        states = np.tile(rows, (count // 1000, 1))
        np.savez(path, q=states[:, :2], v=states[:, 2:4], a=states[:, 4:])
    out = tmp_path / "tau.npz"
    base = peak_rss_mb(["inverse", str(ARM), "-i", str(small), "-o", str(out)])
    peak = peak_rss_mb(["inverse", str(ARM), "-i", str(large), "-o", str(out)])
    with np.load(out) as saved:
        assert saved["tau"].shape == (1_200_000, 2)
    assert peak < base + 16, (base, peak)


@pytest.fixture
def npz_total(monkeypatch):
    """.npz outputs told the number of states of their .npz input (the ``total`` of their
    NpzSink), or not (``.told = False``), whatever the run layer passes; ``.sinks`` lists
    the sinks made."""
    from types import SimpleNamespace

    from treedyn.pipeline.sinks import NpzSink
    from treedyn.pipeline.source import Input

    hint = SimpleNamespace(told=True, sinks=[], sources=[])
    opened, start = Input.open, NpzSink.start

    def input_open(path, prefix=None):
        hint.sources.append(opened(path, prefix))
        return hint.sources[-1]

    def sink_start(sink):
        source = hint.sources[-1]
        sink.total = (lambda: source.total) if hint.told else None
        hint.sinks.append(sink)
        start(sink)

    monkeypatch.setattr(Input, "open", staticmethod(input_open))
    monkeypatch.setattr(NpzSink, "start", sink_start)
    return hint


def npz_contents(path) -> dict:
    """Every array of an .npz, and the raw bytes of its members."""
    import zipfile

    with np.load(path) as saved, zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        return {"arrays": {name: saved[name] for name in saved.files},
                "bytes": {name: archive.read(name) for name in archive.namelist()}}


@pytest.mark.parametrize("command, options", [("inverse", ()), ("forward", ()),
                                              ("mass", ("--sparsity",))])
def test_npz_output_told_the_count_equals_the_spooled_output(tmp_path, states, small_chunks,
                                                             npz_total, command, options):
    """Told the number of states, the .npz output is written as chunks arrive; the archive
    holds the same arrays, byte for byte, as the one spooled and copied on close."""
    q, v, a = states
    source = tmp_path / "states.npz"
    np.savez(source, q=q, v=v, a=a, tau=a)
    outputs = {}
    for told in (True, False):
        npz_total.told = told
        outputs[told] = tmp_path / f"told_{told}.npz"
        dyn(command, ARM, "-i", source, "-o", outputs[told], *options)
        sink = npz_total.sinks[-1]
        assert (sink.announced, sink.spool is None) == ((COUNT, True) if told else (0, False))
    told, spooled = npz_contents(outputs[True]), npz_contents(outputs[False])
    assert told["bytes"] == spooled["bytes"]
    assert sorted(told["arrays"]) == sorted(spooled["arrays"]) == sorted(
        [{"inverse": "tau", "forward": "a", "mass": "M"}[command], "dofs"]
        + (["sparsity"] if options else []))
    for name, array in spooled["arrays"].items():
        assert told["arrays"][name].dtype == array.dtype
        np.testing.assert_array_equal(told["arrays"][name], array)


def test_npz_output_told_the_count_ends_at_a_bad_row(tmp_path, arm, states, small_chunks,
                                                     npz_total):
    """Fewer states than announced (a bad row stops the run): the archive is rewritten with
    the true count, a valid .npz of exactly the states before the bad row."""
    q, v, a = (x.copy() for x in states)
    v[10, 1] = np.inf
    source, target = tmp_path / "states.npz", tmp_path / "tau.npz"
    np.savez(source, q=q, v=v, a=a)
    assert_usage_error(dyn("inverse", ARM, "-i", source, "-o", target, check=False),
                       "v[10]", "the 10 states before it are in")
    assert npz_total.sinks[-1].announced == COUNT
    saved = npz_contents(partial(target))["arrays"]
    assert sorted(saved) == ["dofs", "tau"] and saved["dofs"].tolist() == ["joint1", "joint2"]
    np.testing.assert_array_equal(saved["tau"], rnea(arm, q[:10], v[:10], a[:10]))
    assert not [p for p in os.listdir(tmp_path) if p not in ("states.npz", "tau.partial.npz")]


@pytest.mark.parametrize("total, chunks", [(10, (4, 6)), (10, (4, 3)), (10, (4, 8)),
                                           (10, ()), (None, (4, 6)), (lambda: 10, (4, 6)),
                                           (lambda: None, (3,))])
def test_npz_sink_ends_with_the_states_it_received(tmp_path, total, chunks):
    """Whatever the count announced (none, right, too many, too few), the archive holds
    the states received and the extra arrays."""
    from treedyn.pipeline.sinks import NpzSink, npz_extra

    path = tmp_path / "out.npz"
    rng = np.random.default_rng(6)
    blocks = [rng.normal(size=(n, 3, 3)) for n in chunks]
    sink = NpzSink(open(path, "wb"), "M", (3, 3), npz_extra(["a", "b", "c"], np.eye(3)),
                   str(path), total=total)
    for block in blocks:
        sink.put(block, None)
    told = total() if callable(total) else total
    assert (sink.member is not None) == bool(told and chunks)
    sink.close()
    saved = npz_contents(path)["arrays"]
    np.testing.assert_array_equal(saved["M"], np.concatenate(blocks) if blocks
                                  else np.zeros((0, 3, 3)))
    assert saved["dofs"].tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(saved["sparsity"], np.eye(3, dtype=np.int8))
    assert os.listdir(tmp_path) == ["out.npz"]


def test_npz_sink_told_the_count_aborts_cleanly(tmp_path):
    """keep() after the archive was started (an error before any state counted) removes
    the temporary and leaves no zip object to finish it later."""
    import gc

    from treedyn.pipeline.sinks import NpzSink, npz_extra

    path = tmp_path / "out.npz"
    temporary = tmp_path / ".out.npz.part"
    sink = NpzSink(open(temporary, "wb"), "tau", (2,), npz_extra(["a", "b"]), str(path), total=5)
    sink.temporary = str(temporary)
    sink.start()
    assert sink.keep() == 0
    del sink
    gc.collect()
    assert os.listdir(tmp_path) == []


def test_dyn_pins_blas_to_one_thread_unless_told_otherwise():
    """The engine's own threads each run small BLAS calls; BLAS threads on top oversubscribe."""
    code = ("import os, treedyn.cli.app, numpy; "
            "print(os.environ['OPENBLAS_NUM_THREADS'], os.environ['OMP_NUM_THREADS'])")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    pinned = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True)
    assert pinned.stdout.split() == ["1", "1"]
    chosen = subprocess.run([sys.executable, "-c", code], env={**env, "OPENBLAS_NUM_THREADS": "2"},
                            capture_output=True, text=True, check=True)
    assert chosen.stdout.split() == ["2", "1"]


def test_npz_output_of_an_npz_input_is_written_in_place(tmp_path, states, small_chunks,
                                                        monkeypatch):
    """dyn tells an .npz output the number of states of its .npz input (no spool)."""
    from treedyn.pipeline.sinks import NpzSink

    seen, start = [], NpzSink.start

    def recording(sink):
        start(sink)
        seen.append((sink.announced, sink.spool is None))

    monkeypatch.setattr(NpzSink, "start", recording)
    q, v, a = states
    source, target = tmp_path / "states.npz", tmp_path / "tau.npz"
    np.savez(source, q=q, v=v, a=a)
    dyn("inverse", ARM, "-i", source, "-o", target)
    assert seen == [(len(q), True)]
    with np.load(target) as saved:
        np.testing.assert_array_equal(saved["tau"], rnea(load_model(str(ARM)), q, v, a))


def test_a_run_over_many_states_leaves_the_garbage_collector_as_it_was(tmp_path):
    """The collector is tuned for the run (pipeline/heap.py) and set back after it, also
    after a bad row: the tests, and a Python caller, run dyn in their own process."""
    import gc

    before = gc.get_threshold()
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text('{"q": [0.1, 0.2]}\n' * 5)
    bad.write_text('{"q": [0.1, 0.2]}\n{"q": [0.1]}\n')
    dyn("inverse", ARM, "-i", good, "-f", "json")
    dyn("inverse", ARM, "-i", bad, "-f", "json", check=False)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_refused_header_is_the_one_line_without_the_warnings_before_it(tmp_path):
    """The warnings about arrays or columns not read come once the file is found good: a
    file refused says its one line alone."""
    np.savez(tmp_path / "w.npz", q=np.zeros((5, 3)), v=np.zeros((5, 2)))
    (tmp_path / "w.csv").write_text("q0,q1,q2,v0\n1,2,3,4\n")
    assert_usage_error(dyn("frames", ARM, "--input", tmp_path / "w.npz", check=False),
                       "array q is float64 (5, 3)")
    assert_usage_error(dyn("frames", ARM, "--input", tmp_path / "w.csv", check=False),
                       "column 'q2': out of range")


def test_external_forces_a_command_does_not_read_are_not_checked(tmp_path):
    """energy, frames, mass ... say "fext" is not read, and do not refuse its bodies."""
    source = tmp_path / "s.jsonl"
    source.write_text('{"q": [1, 2], "fext": {"nope": [1, 2, 3, 4, 5, 6]}}\n')
    for command in ("energy", "frames", "mass"):
        result = dyn(command, ARM, "--input", source, "-f", "json")
        assert 'key "fext" not read' in result.stderr.decode()
    assert_usage_error(dyn("inverse", ARM, "--input", source, check=False),
                       "unknown body 'nope'")


def test_a_state_command_about_v_says_when_the_states_have_none(tmp_path):
    """C(q, v), the momentum, the kinetic energy and Jdot of states without v are those of
    v = 0: said once; commands of q alone (frames) and the dynamics (documented zeros) say
    nothing."""
    source = tmp_path / "q.csv"
    source.write_text("q0,q1\n0.1,0.2\n0.3,0.4\n")
    said = "the states have no v: computed with v = 0"
    for args in (["coriolis"], ["energy"], ["centroidal"], ["jacobian", "--frame", "link2",
                                                             "--dot"]):
        err = dyn(args[0], ARM, *args[1:], "--input", source, "-f", "json").stderr.decode()
        assert err.count(said) == 1, (args, err)
    for command in ("frames", "inverse", "mass"):
        assert said not in dyn(command, ARM, "--input", source, "-f", "json").stderr.decode()
