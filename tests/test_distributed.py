"""``dyn ... --scheduler local``: the Dask path writes what the single-machine path writes.

Each run starts a LocalCluster (2 worker processes, a few seconds); inputs are small
generated .npz files. The chunk size (of both paths) and ``ROWS_PER_TASK`` are lowered so
that a file is also split into row blocks, computed by different tasks and assembled: blocks
start on chunk boundaries, so the engine sees the same batches as on one machine (ABA's
results move by ~1e-14 with the batch composition, which is why the outputs can be equal).
"""
from __future__ import annotations

import contextlib
import io
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from treedyn.parsers import load_model

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
ROBOTS = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix/share/example-robot-data/robots"
SOLO = ROBOTS / "solo_description" / "robots" / "solo12.urdf"


def dyn(*args) -> tuple[int, str]:
    """``treedyn.cli.main.run(args)`` in this process: (exit code, stderr)."""
    from treedyn.cli.main import run

    stderr = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
        with pytest.raises(SystemExit) as exit_info:
            run([str(arg) for arg in args])
    return exit_info.value.code, stderr.getvalue()


def states(model, count: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    shape = (count, model.nv)
    return {"q": model.random_configuration(rng, count), "v": rng.normal(size=shape),
            "a": rng.normal(size=shape), "tau": rng.normal(size=shape)}


def write_inputs(folder: Path, model, counts, compressed=False) -> list[Path]:
    folder.mkdir()
    save = np.savez_compressed if compressed else np.savez
    paths = []
    for k, count in enumerate(counts):
        path = folder / f"log{k}.npz"
        save(path, **states(model, count, seed=k))
        paths.append(path)
    return paths


def assert_same_as_single(tmp_path, command, model_path, inputs, out, *options):
    key = {"inverse": "tau", "forward": "a", "mass": "M"}[command]
    for path in inputs:
        single = tmp_path / f"single-{path.stem}.npz"
        code, err = dyn(command, model_path, "--input", path, "--output", single, *options)
        assert code == 0, err
        with np.load(out / f"{path.stem}.npz") as got, np.load(single) as expected:
            assert sorted(got.files) == sorted(expected.files)
            for name in expected.files:
                assert got[name].dtype == expected[name].dtype
                assert np.array_equal(got[name], expected[name]), (path, name)
            assert len(got[key]) == len(np.load(path)["q"])
    leftovers = [p.name for p in out.iterdir() if not p.name.endswith(".npz")]
    assert not leftovers


@pytest.fixture(scope="module")
def distributed():
    return pytest.importorskip("distributed")


def small_tasks(monkeypatch, chunk: int, per_task: int) -> None:
    from treedyn.cli import distributed as module
    from treedyn.cli import main

    monkeypatch.setattr(main, "chunk_states", lambda command, layout: chunk)
    monkeypatch.setattr(module, "ROWS_PER_TASK", per_task)


def test_inverse_on_local_cluster_matches_single_machine(tmp_path, monkeypatch, distributed):
    small_tasks(monkeypatch, chunk=32, per_task=128)  # log1 becomes 3 blocks
    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [7, 300, 1])
    out = tmp_path / "out"
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                    "--output", f"{out}/", "--scheduler", "local", "--fext",
                    "link2=0,0,-10,0,0,0", "--quiet")
    assert code == 0, err
    assert_same_as_single(tmp_path, "inverse", ARM, inputs, out,
                          "--fext", "link2=0,0,-10,0,0,0")


@pytest.mark.skipif(not SOLO.exists(), reason="example-robot-data is not installed")
def test_free_flyer_forward_and_mass_on_local_cluster(tmp_path, monkeypatch, distributed):
    small_tasks(monkeypatch, chunk=16, per_task=48)  # log0 becomes 3 blocks
    model = load_model(str(SOLO), free_flyer=True)
    inputs = write_inputs(tmp_path / "logs", model, [120, 9], compressed=True)
    for command, options in (("forward", ["--degrees"]), ("mass", ["--sparsity"])):
        out = tmp_path / f"out-{command}"
        code, err = dyn(command, SOLO, "--free-flyer", "--input",
                        tmp_path / "logs" / "log*.npz", "--output", f"{out}/",
                        "--scheduler", "local", *options)
        assert code == 0, err
        assert_same_as_single(tmp_path, command, SOLO, inputs, out, "--free-flyer", *options)


def test_glob_without_scheduler_runs_each_file_here(tmp_path):
    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [4, 11])
    out = tmp_path / "out"
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                    "--output", f"{out}/")
    assert code == 0, err
    assert_same_as_single(tmp_path, "inverse", ARM, inputs, out)


def test_missing_extra_is_one_line_exit_2(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [3])
    code, err = dyn("inverse", ARM, "--input", inputs[0], "--output", f"{tmp_path}/out/",
                    "--scheduler", "local")
    assert code == 2
    assert err == "--scheduler needs the optional extra: pip install 'treedyn[dask]'\n"


@pytest.mark.parametrize("args, message", [
    (["--output", "o.npz"], "must be a directory"),
    (["--output", "o/", "--format", "csv"], "--format csv conflicts"),
    ([], "need --output DIR/"),
])
def test_bad_usage_of_many_inputs_is_one_line_exit_2(tmp_path, args, message):
    write_inputs(tmp_path / "logs", load_model(str(ARM)), [2, 2])
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz", *args)
    assert code == 2
    assert message in err and err.count("\n") == 1


def test_scheduler_needs_npz_inputs(tmp_path, distributed):
    path = tmp_path / "states.jsonl"
    path.write_text('{"q": [0.1, 0.2]}\n')
    code, err = dyn("inverse", ARM, "--input", path, "--output", f"{tmp_path}/out/",
                    "--scheduler", "local")
    assert code == 2 and "reads .npz inputs only" in err and err.count("\n") == 1


def test_bad_row_keeps_the_files_that_finished(tmp_path, monkeypatch, distributed):
    """A NaN in one file fails the run with one line; finished files stay, the bad one goes."""
    small_tasks(monkeypatch, chunk=32, per_task=128)
    model = load_model(str(ARM))
    inputs = write_inputs(tmp_path / "logs", model, [5, 200])
    bad = dict(np.load(inputs[1]))
    bad["q"][150, 0] = np.nan
    np.savez(inputs[1], **bad)
    out = tmp_path / "out"
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                    "--output", f"{out}/", "--scheduler", "local", "--quiet")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "log1.npz" in err and "1 of 2 output files were completed and kept" in err
    assert sorted(p.name for p in out.iterdir()) == ["log0.npz"]
    (out / "log1.npz").write_bytes(b"an earlier run's results")  # no task writes to it now
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                    "--output", f"{out}/", "--scheduler", "local", "--quiet")
    assert code == 2 and (out / "log1.npz").read_bytes() == b"an earlier run's results"
    single = tmp_path / "single.npz"
    assert dyn("inverse", ARM, "--input", inputs[0], "--output", single)[0] == 0
    with np.load(out / "log0.npz") as got, np.load(single) as expected:
        assert np.array_equal(got["tau"], expected["tau"])


def scheduler_args(scheduler: bool) -> list[str]:
    """``--scheduler local`` (Dask installed, else the test is skipped), or nothing."""
    if not scheduler:
        return []
    pytest.importorskip("distributed")
    return ["--scheduler", "local"]


def output_folder(tmp_path, logs: Path, how: str) -> Path:
    """An --output folder whose log0.npz is the input logs/log0.npz, by one path or another."""
    if how == "same folder":
        return logs
    if how == "symbolic link":
        (tmp_path / "link").symlink_to(logs)
        return tmp_path / "link"
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "log0.npz").hardlink_to(logs / "log0.npz")
    return tmp_path / "out"


@pytest.mark.parametrize("scheduler", [False, True], ids=["here", "scheduler"])
@pytest.mark.parametrize("how", ["same folder", "symbolic link", "hard link"])
def test_output_that_is_an_input_is_refused(tmp_path, how, scheduler):
    """Writing out/log0.npz would truncate the input it reads (or replace it by the results)."""
    logs = tmp_path / "logs"
    inputs = write_inputs(logs, load_model(str(ARM)), [5, 3])
    before = inputs[0].read_bytes()
    out = output_folder(tmp_path, logs, how)
    code, err = dyn("inverse", ARM, "--input", logs / "*.npz", "--output", f"{out}/",
                    *scheduler_args(scheduler))
    assert code == 2 and err.count("\n") == 1, err
    assert err == (f"dyn: --output {out}/log0.npz would overwrite the input {inputs[0]}; "
                   "choose another output folder\n")
    assert inputs[0].read_bytes() == before
    assert sorted(p.name for p in logs.iterdir()) == ["log0.npz", "log1.npz"]


def test_inputs_with_the_same_stem_are_refused(tmp_path):
    """a/log0.npz and b/log0.npz would both be written to out/log0.npz."""
    model = load_model(str(ARM))
    first, second = [write_inputs(tmp_path / name, model, [2])[0] for name in "ab"]
    out = tmp_path / "out"
    code, err = dyn("inverse", ARM, "--input", tmp_path / "*" / "log0.npz",
                    "--output", f"{out}/")
    assert code == 2 and err == (f"dyn: {first} and {second} have the same stem: both would "
                                 f"be written to {out}/log0.npz\n")
    assert not out.exists()


@pytest.mark.parametrize("scheduler", [False, True], ids=["here", "scheduler"])
def test_bad_arrays_in_a_later_file_fail_before_anything_is_written(tmp_path, monkeypatch,
                                                                   scheduler):
    """The headers of every input are checked first: no output (or part file) is left of
    the files before the bad one, and no task is submitted."""
    small_tasks(monkeypatch, chunk=32, per_task=128)  # log0 would be 2 blocks
    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [200, 4])
    np.savez(inputs[1], q=np.zeros((4, 5)))
    out = tmp_path / "out"
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                    "--output", f"{out}/", "--quiet", *scheduler_args(scheduler))
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"{inputs[1]}: array q is float64 (4, 5)")
    assert err.endswith("expected (N, 2) numbers; nothing was written\n")
    assert not out.exists()


def test_bad_row_in_a_later_file_here_says_which_outputs_were_completed(tmp_path):
    """Without --scheduler the files are run in turn: those before the bad one are complete."""
    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [5, 8, 4])
    bad = dict(np.load(inputs[1]))
    bad["v"][3, 1] = np.inf
    np.savez(inputs[1], **bad)
    out = tmp_path / "out"
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                    "--output", f"{out}/")
    assert code == 2 and err.count("\n") == 1, err
    assert err == (f"{inputs[1]}: v[3] holds a non-finite number; stopped there: the 3 states "
                   f"before it are saved in {out}/log1.npz; 1 of 3 output files were "
                   "completed and kept\n")
    assert sorted(p.name for p in out.iterdir()) == ["log0.npz", "log1.npz"]
    with np.load(out / "log0.npz") as done, np.load(out / "log1.npz") as stopped:
        assert len(done["tau"]) == 5 and len(stopped["tau"]) == 3


def test_a_task_that_cannot_write_fails_with_one_line(tmp_path):
    """An OSError on a worker becomes the error the client cleans up after and counts."""
    from treedyn.cli.distributed import solve_block
    from treedyn.cli.inputs import UsageError

    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [3])
    job = {"command": "inverse", "model": str(ARM), "free_flyer": False, "degrees": False,
           "gravity": None, "fext": None, "kinds": ("q", "v", "a"), "size": 32,
           "sparsity": False}
    target = tmp_path / "gone" / "log0.npz"
    with pytest.raises(UsageError, match="log0.npz.raw: No such file"):
        solve_block(job, str(inputs[0]), 0, 3, str(target), True)


@pytest.mark.skipif(sys.platform != "linux", reason="pty")
def test_progress_bar_counts_the_states_of_every_task(tmp_path, distributed):
    from test_pipelines import run_on_terminal

    write_inputs(tmp_path / "logs", load_model(str(ARM)), [250_000, 3])  # 3 tasks
    out = tmp_path / "out"
    args = ["inverse", str(ARM), "--input", str(tmp_path / "logs" / "*.npz"),
            "--output", f"{out}/", "--scheduler", "local"]
    code, shown = run_on_terminal(args)
    assert code == 0 and "states/s" in shown and "250,003 states" in shown, shown
    code, quiet = run_on_terminal(args + ["--quiet"])
    assert code == 0 and quiet == "", quiet


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGPIPE"), reason="POSIX signals")
def test_the_cluster_path_ignores_sigpipe_again(monkeypatch):
    """The dyn program ends quietly on SIGPIPE (a closed stdout), but with sockets to a
    cluster a closed connection must not end dyn: connecting ignores SIGPIPE again."""
    import signal
    import types

    from treedyn.cli import distributed

    fake = types.SimpleNamespace(Client=lambda address, timeout: ("client", address))
    monkeypatch.setattr(distributed, "require_dask", lambda: fake)
    saved = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        assert distributed.connect("tcp://127.0.0.1:8786") == (("client", "tcp://127.0.0.1:8786"),
                                                              None)
        assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGPIPE, saved)
