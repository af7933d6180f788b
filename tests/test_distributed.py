"""``dyn ... --scheduler``: the Dask path writes what the single-machine path writes.

Most runs start a LocalCluster (2 worker processes, a few seconds); :func:`test_a_real_cluster`
starts ``dask scheduler`` and two ``dask worker`` processes and kills one mid-run. Inputs are
small generated .npz files. The chunk size (of both paths) is lowered so that a file is read
in several chunks: a task reads the same chunks as the one-process path, so the engine sees
the same batches (ABA's results move by ~1e-14 with the batch composition, which is why the
outputs can be equal).
"""
from __future__ import annotations

import contextlib
import io
import os
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
    """``treedyn.cli.app.run(args)`` in this process: (exit code, stderr)."""
    from treedyn.cli.app import run

    stderr = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
        with pytest.raises(SystemExit) as exit_info:
            run([str(arg) for arg in args])
    return exit_info.value.code, stderr.getvalue()


def states(model, count: int, seed: int) -> dict:
    """q, v and a: what inverse reads (forward and mass name what they do not read)."""
    rng = np.random.default_rng(seed)
    shape = (count, model.nv)
    return {"q": model.random_configuration(rng, count), "v": rng.normal(size=shape),
            "a": rng.normal(size=shape)}


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


def small_chunks(monkeypatch, chunk: int) -> None:
    from treedyn.cli.run import request

    monkeypatch.setattr(request, "chunk_states", lambda command, layout: chunk)


def test_inverse_on_local_cluster_matches_single_machine(tmp_path, monkeypatch, distributed):
    small_chunks(monkeypatch, chunk=32)
    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [7, 300, 1])
    out = tmp_path / "out"
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                    "--output", f"{out}/", "--scheduler", "local", "--fext",
                    "link2=0,0,-10,0,0,0", "--quiet")
    assert code == 0, err
    assert_same_as_single(tmp_path, "inverse", ARM, inputs, out,
                          "--fext", "link2=0,0,-10,0,0,0")


def test_parquet_and_hdf5_inputs_on_local_cluster_match_single_machine(tmp_path, monkeypatch,
                                                                      distributed):
    """Files of arrays other than .npz: chunks that start inside row groups (Parquet)
    and a nested group (HDF5, --dataset-prefix) give the single-machine numbers."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    h5py = pytest.importorskip("h5py")
    small_chunks(monkeypatch, chunk=32)
    model = load_model(str(ARM))
    logs = tmp_path / "logs"
    logs.mkdir()
    vectors = states(model, 300, seed=3)
    table = pa.table({kind: pa.FixedSizeListArray.from_arrays(values.ravel(), model.nv)
                      for kind, values in vectors.items()})
    pq.write_table(table, logs / "run_a.parquet", row_group_size=45)  # not a block's size
    with h5py.File(logs / "run_b.h5", "w") as file:
        for kind, values in vectors.items():
            file.create_dataset(f"data/demo_0/{kind}", data=values[:250], chunks=(40, 2))
    out = tmp_path / "out"
    code, err = dyn("inverse", ARM, "--input", logs / "run_*", "--output", f"{out}/",
                    "--scheduler", "local", "--dataset-prefix", "data/demo_0", "--quiet")
    assert code == 0, err
    expected = tmp_path / "single.npz"
    np.savez(expected, **vectors)
    code, err = dyn("inverse", ARM, "--input", expected, "--output", tmp_path / "tau.npz")
    assert code == 0, err
    tau = np.load(tmp_path / "tau.npz")["tau"]
    with np.load(out / "run_a.npz") as got:
        assert np.array_equal(got["tau"], tau)
    with np.load(out / "run_b.npz") as got:
        assert np.array_equal(got["tau"], tau[:250])
    assert sorted(p.name for p in out.iterdir()) == ["run_a.npz", "run_b.npz"]


def test_a_null_in_a_parquet_file_on_a_worker_names_the_state(tmp_path, monkeypatch,
                                                               distributed):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    small_chunks(monkeypatch, chunk=32)
    model = load_model(str(ARM))
    vectors = states(model, 200, seed=4)
    q = [list(row) for row in vectors["q"]]
    q[150] = None
    table = pa.table({"q": pa.array(q, pa.list_(pa.float64())),
                      "v": pa.array([list(row) for row in vectors["v"]])})
    (tmp_path / "logs").mkdir()
    pq.write_table(table, tmp_path / "logs" / "bad.parquet", row_group_size=50)
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.parquet",
                    "--output", f"{tmp_path}/out/", "--scheduler", "local", "--quiet")
    assert code == 2 and err.count("\n") == 1, err
    assert "bad.parquet: state 150: q is missing (null)" in err
    assert "0 of 1 output files were completed" in err
    assert not any((tmp_path / "out").iterdir())


@pytest.mark.skipif(not SOLO.exists(), reason="example-robot-data is not installed")
def test_free_flyer_forward_and_mass_on_local_cluster(tmp_path, monkeypatch, distributed):
    small_chunks(monkeypatch, chunk=16)
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


def test_scheduler_needs_files_of_arrays(tmp_path, distributed):
    path = tmp_path / "states.jsonl"
    path.write_text('{"q": [0.1, 0.2]}\n')
    code, err = dyn("inverse", ARM, "--input", path, "--output", f"{tmp_path}/out/",
                    "--scheduler", "local")
    assert code == 2 and "reads files of arrays only" in err and err.count("\n") == 1


def test_bad_row_keeps_the_files_that_finished(tmp_path, monkeypatch, distributed):
    """A NaN in one file fails the run with one line; finished files stay, the bad one goes."""
    small_chunks(monkeypatch, chunk=32)
    model = load_model(str(ARM))
    inputs = write_inputs(tmp_path / "logs", model, [5, 200])
    bad = dict(np.load(inputs[1]))
    bad["q"][150, 0] = np.nan
    np.savez(inputs[1], **bad)
    out = tmp_path / "out"
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                    "--output", f"{out}/", "--scheduler", "local", "--quiet")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"{inputs[1]}: q[150] holds a non-finite number; "), err
    assert err.endswith("; 1 of 2 output files were completed and kept\n"), err
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
    """The headers of every input are checked first: no output is left of the files
    before the bad one, and no task is submitted."""
    small_chunks(monkeypatch, chunk=32)
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
                   f"before it are in {out}/log1.partial.npz; {out}/log1.npz is not written; "
                   "1 of 3 output files were completed and kept\n")
    assert sorted(p.name for p in out.iterdir()) == ["log0.npz", "log1.partial.npz"]
    with np.load(out / "log0.npz") as done, np.load(out / "log1.partial.npz") as stopped:
        assert len(done["tau"]) == 5 and len(stopped["tau"]) == 3


@pytest.mark.skipif(sys.platform != "linux", reason="pty")
def test_progress_bar_counts_the_states_of_every_task(tmp_path, distributed):
    from test_pipelines import run_on_terminal

    write_inputs(tmp_path / "logs", load_model(str(ARM)), [250_000, 3])  # 2 tasks
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

    from treedyn.pipeline import cluster

    class Client:
        def __init__(self, address, timeout):
            self.address = address

        def close(self):
            pass

    monkeypatch.setattr(cluster, "require_dask", lambda: types.SimpleNamespace(Client=Client))
    saved = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        client, close = cluster.connect("tcp://127.0.0.1:8786")
        assert client.address == "tcp://127.0.0.1:8786"
        assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGPIPE, saved)


# ----------------------------------------------------------------- review findings (Dask path)

def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_cluster(workers: int) -> tuple[str, list]:
    """``dask scheduler`` on a free port of 127.0.0.1 and ``workers`` single-threaded
    ``dask worker`` processes (each in a session of its own, its nanny and worker process
    one group): (address, [scheduler, worker, ...])."""
    import subprocess

    import distributed

    address = f"tcp://127.0.0.1:{free_port()}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
             "start_new_session": True}
    processes = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host",
                                   "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                                   "--dashboard-address", "127.0.0.1:0"], **quiet)]
    try:
        with distributed.Client(address, timeout="30s") as client:
            processes += [subprocess.Popen([sys.executable, "-m", "dask", "worker", address,
                                            "--nthreads", "1", "--no-dashboard"], **quiet)
                          for _ in range(workers)]
            client.wait_for_workers(workers, timeout=60)
    except BaseException:
        stop_cluster(processes)
        raise
    return address, processes


def stop_cluster(processes) -> None:
    import os
    import signal

    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def group_alive(process) -> bool:
    """Whether any process of ``process``'s group (its session) is left."""
    import os

    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def tcp_cluster(distributed):
    """A ``dask scheduler`` and two single-threaded ``dask worker`` processes on 127.0.0.1,
    as a long-lived cluster is: (address, [scheduler, worker, worker]); all killed after."""
    address, processes = start_cluster(2)
    try:
        yield address, processes
    finally:
        stop_cluster(processes)


def test_an_edited_model_is_loaded_again_on_a_long_lived_cluster(tmp_path, tcp_cluster):
    """The model goes to the workers with each run: an edit of the file between runs on a
    long-lived cluster gives the new model's numbers."""
    address, _ = tcp_cluster
    model = tmp_path / "arm.urdf"
    model.write_text(ARM.read_text())
    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [20])
    for mass in ("1.0", "3.0"):
        model.write_text(ARM.read_text().replace('<mass value="1.0"/>',
                                                 f'<mass value="{mass}"/>'))
        out = tmp_path / f"out-{mass}"
        code, err = dyn("inverse", model, "--input", inputs[0], "--output", f"{out}/",
                        "--scheduler", address, "--quiet")
        assert code == 0, err
        assert_same_as_single(tmp_path, "inverse", model, inputs, out)


def test_a_task_writes_its_output_whole_and_rewrites_it_when_run_again(tmp_path):
    """A task is idempotent: run twice (a worker died after it finished), the output is
    written again, whole, and no temporary is left beside it."""
    from treedyn.pipeline.cluster import solve_file
    from treedyn.pipeline.layout import Layout

    layout = Layout.of(load_model(str(ARM)))
    inputs = write_inputs(tmp_path / "logs", layout.model, [70])
    target = tmp_path / "out" / "log0.npz"
    target.parent.mkdir()
    for _ in range(2):
        assert solve_file(str(inputs[0]), str(target), layout, "inverse", chunk=32) == 70
        assert [p.name for p in target.parent.iterdir()] == ["log0.npz"]
    single = tmp_path / "single.npz"
    assert dyn("inverse", ARM, "--input", inputs[0], "--output", single)[0] == 0
    with np.load(target) as got, np.load(single) as expected:
        assert sorted(got.files) == sorted(expected.files)
        assert all(np.array_equal(got[name], expected[name]) for name in expected.files)


def test_a_task_that_cannot_write_fails_with_one_line(tmp_path):
    from treedyn.pipeline.cluster import solve_file
    from treedyn.pipeline.errors import UsageError
    from treedyn.pipeline.layout import Layout

    layout = Layout.of(load_model(str(ARM)))
    inputs = write_inputs(tmp_path / "logs", layout.model, [3])
    with pytest.raises(UsageError, match=r"gone/log0.npz: cannot write \(No such file"):
        solve_file(str(inputs[0]), str(tmp_path / "gone" / "log0.npz"), layout, "inverse")


def test_ctrl_c_keeps_the_outputs_that_finished(tmp_path, monkeypatch, distributed):
    """Ctrl-C once a file is done: that file stays (cancelling used to make its future look
    unfinished, and it was removed), a line says how many were kept, exit 130."""
    import time

    from treedyn.cli.run import progress as module  # (the bar of each run)

    out = tmp_path / "out"

    class Interrupted(module.Progress):
        def advance(self, *args, **kwargs):
            if (out / "log0.npz").exists():  # Ctrl-C once log0's task has written it
                time.sleep(0.5)
                raise KeyboardInterrupt

    monkeypatch.setattr(module, "Progress", Interrupted)
    small_chunks(monkeypatch, chunk=32)
    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [3, 6000])
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                    "--output", f"{out}/", "--scheduler", "local", "--quiet")
    assert code == 130
    monkeypatch.setattr(module, "Progress", Interrupted.__base__)  # (the runs below: no Ctrl-C)
    kept = sorted(p.name for p in out.iterdir())
    assert "log0.npz" in kept and all(name.endswith(".npz") for name in kept), kept
    assert err.startswith("dyn: interrupted; ") and err.count("\n") == 1, err
    said = int(err.split("; ")[1].split()[0])  # the tasks finished when it stopped; the
    assert 1 <= said <= len(kept)  # others were cancelled, or completed their output whole
    assert err.endswith(" of 2 output files were completed and kept\n"), err
    assert_same_as_single(tmp_path, "inverse", ARM, inputs[:len(kept)], out)


def test_losing_the_scheduler_is_one_line_and_leaves_no_partial_file(tmp_path, monkeypatch,
                                                                     tcp_cluster):
    import os
    import signal
    import time

    from treedyn.cli.run import progress as module  # (the bar of each run)

    address, (scheduler, *_) = tcp_cluster

    class Killing(module.Progress):
        def advance(self, *args, **kwargs):
            if scheduler.poll() is None:
                os.killpg(scheduler.pid, signal.SIGKILL)
                scheduler.wait()
                time.sleep(0.5)

    monkeypatch.setattr(module, "Progress", Killing)
    small_chunks(monkeypatch, chunk=32)
    write_inputs(tmp_path / "logs", load_model(str(ARM)), [3, 6000])
    out = tmp_path / "out"
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                    "--output", f"{out}/", "--scheduler", address, "--quiet")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"{address}: lost the scheduler (the connection to it closed); ")
    assert "of 2 output files were completed and kept" in err
    time.sleep(2)  # a task still running on a worker completes its own output, or none
    for path in out.iterdir():
        assert path.suffix == ".npz", path
        np.load(path)["tau"]


def test_a_damaged_compressed_input_on_a_worker_is_one_line(tmp_path):
    """As on one machine: "not a readable .npz file (Bad CRC-32 ...)", not an internal error."""
    import zipfile

    from treedyn.pipeline.cluster import solve_file
    from treedyn.pipeline.errors import UsageError
    from treedyn.pipeline.layout import Layout

    path = tmp_path / "b.npz"
    np.savez_compressed(path, **states(load_model(str(ARM)), 2000, seed=0))
    info = zipfile.ZipFile(path).getinfo("v.npy")
    data = bytearray(path.read_bytes())
    data[info.header_offset + 30 + len(info.filename) + len(info.extra)
         + info.compress_size // 2] ^= 0x55
    path.write_bytes(bytes(data))
    single = dyn("inverse", ARM, "--input", path, "--output", tmp_path / "single.npz")[1]
    message = single.strip().split(";")[0]
    assert "not a readable .npz file" in message
    with pytest.raises(UsageError) as error:
        solve_file(str(path), str(tmp_path / "out.npz"), Layout.of(load_model(str(ARM))),
                   "inverse", chunk=512)
    assert str(error.value) == message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.npz"]  # no output, no temporary


def test_the_earliest_bad_row_of_any_array_is_named(tmp_path):
    from treedyn.pipeline.cluster import solve_file
    from treedyn.pipeline.errors import UsageError
    from treedyn.pipeline.layout import Layout

    values = states(load_model(str(ARM)), 50, seed=0)
    values["v"][12, 0] = np.inf
    values["q"][25, 1] = np.nan
    path = tmp_path / "f.npz"
    np.savez(path, **values)
    with pytest.raises(UsageError) as error:
        solve_file(str(path), str(tmp_path / "out.npz"), Layout.of(load_model(str(ARM))),
                   "inverse", chunk=32)
    assert not (tmp_path / "out.npz").exists()
    assert str(error.value) == f"{path}: v[12] holds a non-finite number"
    single = dyn("inverse", ARM, "--input", path, "--output", tmp_path / "single.npz")[1]
    assert single.startswith(f"{path}: v[12] holds a non-finite number;")


def test_a_file_named_like_a_pattern_is_that_file(tmp_path):
    """in/run[1].npz exists: it is the input, not a pattern matching in/run1.npz."""
    from treedyn.pipeline.cluster import expand

    logs = tmp_path / "in"
    logs.mkdir()
    model = load_model(str(ARM))
    np.savez(logs / "run[1].npz", **states(model, 10, seed=0))
    np.savez(logs / "run1.npz", **states(model, 3, seed=1))
    assert expand(str(logs / "run[1].npz")) == [str(logs / "run[1].npz")]
    out = tmp_path / "out"
    code, err = dyn("inverse", ARM, "--input", logs / "run[1].npz", "--output", f"{out}/")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["run[1].npz"]
    assert len(np.load(out / "run[1].npz")["tau"]) == 10


@pytest.mark.parametrize("server", ["http", "banner"])
def test_an_address_that_is_not_a_scheduler_is_one_line(tmp_path, monkeypatch, distributed,
                                                         server):
    """An HTTP server (the dashboard's port given by mistake) hung dyn; a service that greets
    first made it allocate its greeting read as a size (MemoryError)."""
    import http.server
    import socketserver
    import threading
    import time

    class Banner(socketserver.BaseRequestHandler):
        def handle(self):
            self.request.sendall(b"SSH-2.0-OpenSSH_8.9p1 Ubuntu-3\r\n")
            time.sleep(5)

    class Web(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # not on the stderr the test reads
            pass

    handler = Web if server == "http" else Banner
    listening = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    listening.daemon_threads = True
    threading.Thread(target=listening.serve_forever, daemon=True).start()
    from treedyn.pipeline import cluster

    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 2)
    address = f"tcp://127.0.0.1:{listening.server_address[1]}"
    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [3])
    try:
        began = time.monotonic()
        code, err = dyn("inverse", ARM, "--input", inputs[0], "--output", f"{tmp_path}/out/",
                        "--scheduler", address)
    finally:
        listening.shutdown()
        listening.server_close()
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"{address}: not a Dask scheduler, or not answering (")
    assert time.monotonic() - began < 10


def test_a_refused_connection_is_one_line_within_the_timeout(tmp_path, monkeypatch,
                                                             distributed):
    """Nothing listening at the address (a closed port): the Client's timeout, one line."""
    import socket
    import time

    from treedyn.pipeline import cluster

    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 2)
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [3])
    began = time.monotonic()
    code, err = dyn("inverse", ARM, "--input", inputs[0], "--output", f"{tmp_path}/out/",
                    "--scheduler", f"tcp://127.0.0.1:{port}")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"tcp://127.0.0.1:{port}: not a Dask scheduler, or not answering "
                          "("), err
    assert time.monotonic() - began < 8
    assert not (tmp_path / "out").exists()


def test_local_cluster_does_not_warn_when_port_8787_is_taken(tmp_path, distributed):
    import socket
    import warnings

    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [3])
    with contextlib.ExitStack() as stack:
        taker = stack.enter_context(socket.socket())
        with contextlib.suppress(OSError):  # taken already: as good
            taker.bind(("0.0.0.0", 8787))
            taker.listen()
        caught = stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        code, err = dyn("inverse", ARM, "--input", inputs[0], "--output",
                        f"{tmp_path}/out/", "--scheduler", "local", "--quiet")
    assert code == 0 and err == "", err
    assert not [w for w in caught if "already in use" in str(w.message)]


@pytest.mark.skipif(sys.platform != "linux", reason="process groups, /proc")
def test_ctrl_c_on_a_terminal_ends_the_local_cluster_quietly(tmp_path, distributed):
    """A terminal's Ctrl-C reaches dyn and its worker processes (one process group): exit
    130, one line, no traceback from the workers."""
    import os
    import signal
    import subprocess
    import time

    model = load_model(str(ARM))
    write_inputs(tmp_path / "logs", model, [400_000, 400_000, 400_000])
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "treedyn.cli", "forward", str(ARM), "--input",
         str(tmp_path / "logs" / "*.npz"), "--output", f"{out}/", "--scheduler", "local",
         "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (out.exists() and any(out.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.1)  # the files are made once the cluster runs
        time.sleep(0.5)
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    err = err.decode()
    assert process.returncode == 130, err
    assert "Traceback" not in err and err.startswith("dyn: interrupted; "), err


def test_an_output_directory_named_like_a_file_is_refused(tmp_path):
    """`--output res.csv` where res.csv is a directory used to write res.csv/<stem>.npz."""
    inputs = tmp_path / "a.jsonl"
    inputs.write_text('{"q": [0.1, 0.2]}\n')
    (tmp_path / "res.csv").mkdir()
    code, stderr = dyn("inverse", ARM, "--input", inputs, "--output", tmp_path / "res.csv")
    assert code == 2 and "is a directory, not the .csv file" in stderr
    assert not list((tmp_path / "res.csv").iterdir())


def test_sigterm_keeps_the_finished_outputs_and_ends_dyn_by_it(tmp_path, monkeypatch,
                                                               distributed):
    """kill, timeout or a cancelled CI job: the cleanup of a Ctrl-C runs (finished outputs
    kept, the tasks not run cancelled), then dyn ends by the signal."""
    import signal
    import time

    from treedyn.cli.run import progress as module  # (the bar of each run)
    from treedyn.pipeline.errors import Ended

    out = tmp_path / "out"
    sent = []

    class Terminated(module.Progress):
        def advance(self, *args, **kwargs):
            if (out / "log0.npz").exists():
                time.sleep(0.5)
                raise Ended(signal.SIGTERM)

    monkeypatch.setattr(module, "Progress", Terminated)
    kill, here = os.kill, os.getpid()  # dyn ending itself is recorded; a worker's end is not
    monkeypatch.setattr(os, "kill", lambda pid, number: sent.append(number) if pid == here
                        else kill(pid, number))
    monkeypatch.setattr(signal, "signal", lambda number, handler: signal.SIG_DFL)
    small_chunks(monkeypatch, chunk=32)
    write_inputs(tmp_path / "logs", load_model(str(ARM)), [3, 6000])
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                    "--output", f"{out}/", "--scheduler", "local", "--quiet")
    assert sent == [signal.SIGTERM]
    kept = sorted(p.name for p in out.iterdir())
    assert "log0.npz" in kept and all(name.endswith(".npz") for name in kept), kept
    assert err.startswith("dyn: ended by a signal; ") and err.count("\n") == 1, err
    assert 1 <= int(err.split("; ")[1].split()[0]) <= len(kept)  # (as for Ctrl-C)
    assert err.endswith(" of 2 output files were completed and kept\n"), err


def test_the_first_failing_input_is_named_whatever_order_tasks_fail_in(tmp_path, distributed):
    """gather raised whichever failed future its set met first: one run in six named c."""
    model = load_model(str(ARM))
    logs = tmp_path / "logs"
    logs.mkdir()
    for name, row in (("a", 5), ("b", None), ("c", 6)):
        values = states(model, 50, seed=len(name))
        if row is not None:
            values["q"][row, 0] = np.nan
        np.savez(logs / f"{name}.npz", **values)
    code, err = dyn("inverse", ARM, "--input", logs / "*.npz", "--output", f"{tmp_path}/o/",
                    "--scheduler", "local", "--quiet")
    assert code == 2 and err.startswith(f"{logs / 'a.npz'}: q[5] holds a non-finite number")


def test_an_output_directory_named_like_a_file_is_refused_with_a_scheduler_too(tmp_path):
    (tmp_path / "res.npz").mkdir()
    code, stderr = dyn("inverse", ARM, "--input", tmp_path / "a.npz", "--output",
                       tmp_path / "res.npz", "--scheduler", "local")
    assert code == 2 and "is a directory, not the .npz file" in stderr


def test_an_unread_array_is_warned_about_once_without_a_scheduler(tmp_path):
    """The inputs' headers are checked up front and read again by the run: one warning."""
    model = load_model(str(ARM))
    path = tmp_path / "a.npz"
    np.savez(path, **states(model, 5, seed=0), qd=np.zeros((5, 2)), dt=0.01)
    code, err = dyn("inverse", ARM, "--input", path, "--output", f"{tmp_path}/out/")
    assert code == 0
    assert err.splitlines() == [f"dyn: warning: {path}: array 'qd' not read: dyn reads the "
                                "arrays q, v, a and tau"]


def test_ctrl_c_while_the_cluster_closes_says_the_outputs_are_complete(tmp_path, monkeypatch):
    """Closing a local cluster takes a second or two after the last task: a Ctrl-C then
    still says what the run left (it ended with exit 130 and no word)."""
    from treedyn.pipeline import cluster

    def close():
        raise KeyboardInterrupt

    monkeypatch.setattr(cluster, "require_dask", lambda: None)
    monkeypatch.setattr(cluster, "connect", lambda address, quiet: (None, close))
    monkeypatch.setattr(cluster, "run_files", lambda *args: 2)  # every task done
    write_inputs(tmp_path / "logs", load_model(str(ARM)), [3, 4])
    code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz", "--output",
                    f"{tmp_path}/out/", "--scheduler", "tcp://127.0.0.1:1", "--quiet")
    assert code == 130
    assert err == ("dyn: interrupted; 2 of 2 output files were completed and kept (the cluster "
                   "was closing)\n")


@pytest.mark.skipif(sys.platform != "linux", reason="process groups")
def test_a_real_cluster_computes_what_one_process_does_and_survives_a_killed_worker(
        tmp_path, monkeypatch, distributed):
    """``dask scheduler`` and two ``dask worker`` processes (not a LocalCluster): the
    outputs hold the one-process numbers; a worker killed while tasks run has its tasks run
    again on the other and the run completes (it used to fail 5 runs in 6 with a misleading
    line: the tasks Dask ran again met the placeholders the first run had removed); no
    output is ever partial; no process of the cluster is left afterwards."""
    import os
    import signal
    import time

    from treedyn.cli.run import progress as module  # (the bar of each run)

    small_chunks(monkeypatch, chunk=32)  # many engine calls: each task runs a while
    inputs = write_inputs(tmp_path / "logs", load_model(str(ARM)), [30_000] * 6)
    out = tmp_path / "out"
    address, processes = start_cluster(2)
    killed = []

    class Killing(module.Progress):
        def advance(self, *args, **kwargs):
            if not killed:  # one file done: both workers run tasks of the others
                os.killpg(processes[2].pid, signal.SIGKILL)
                killed.append(processes[2].wait())

    try:
        code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                        "--output", f"{out}/", "--scheduler", address, "--quiet")
        assert code == 0 and err == "", err
        assert sorted(p.name for p in out.iterdir()) == [p.name for p in inputs]
        monkeypatch.setattr(module, "Progress", Killing)
        code, err = dyn("inverse", ARM, "--input", tmp_path / "logs" / "*.npz",
                        "--output", f"{tmp_path}/killed/", "--scheduler", address, "--quiet")
    finally:
        stop_cluster(processes)
    assert killed == [-signal.SIGKILL]
    assert code == 0 and err == "", err
    assert sorted(p.name for p in (tmp_path / "killed").iterdir()) == [p.name for p in inputs]
    for folder in (out, tmp_path / "killed"):  # the same numbers as one process, no leftover
        assert_same_as_single(tmp_path, "inverse", ARM, inputs, folder)
    deadline = time.monotonic() + 10
    while any(group_alive(p) for p in processes) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(group_alive(p) for p in processes)
