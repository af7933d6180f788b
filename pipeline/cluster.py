"""Many files of states, and the same computation over each on a Dask cluster.

    from distributed import Client
    from treedyn.parsers import load_model
    from treedyn.pipeline.cluster import expand, run_files, targets

    files = expand("logs/*.npz")
    with Client("tcp://HOST:8786") as client:
        run_files(client, load_model("robot.urdf"), "inverse", files, targets(files, "out/"))

:func:`run_files` sends the model (its :class:`~.layout.Layout`) to every worker once
(``client.scatter(..., broadcast=True)``) and maps one task per file (``client.map``). A task
(:func:`solve_file`) reads its file with the pipeline's reader of arrays in the chunks the
one-process path uses, so the engine sees the same batches and the numbers are identical, and
writes its output through :func:`.outputs.open_sink`: into a temporary beside it, renamed
onto its name once complete. A task is therefore idempotent: when a worker dies, Dask runs
its task again elsewhere and the output is simply written again; an output is there whole
or not at all, whatever stops the run. Paths must be the same on the workers (a shared file
system; always true for a ``LocalCluster``).

Dask (``distributed``) is imported only by the functions that use it.
"""
from __future__ import annotations

import contextlib
import glob
import os
import signal
import threading
from collections.abc import Callable, Sequence

from .compute import COMPUTATIONS, collect, compute
from .errors import Ended, UsageError
from .layout import Layout
from .npz import npz_chunks
from .outputs import open_sink
from .paths import file_identity, remove_stale, writing
from .progress import Tally
from .sinks import OUTPUT_FORMATS, NpzSink
from .source import ARRAYS, CHUNK, INPUT_FORMATS, Input

EXTRA = "--scheduler needs the optional extra: pip install 'treedyn[dask]'"
CONNECT_SECONDS = 10  # Client(address, timeout=...): a scheduler that does not answer


# ----------------------------------------------------------------------------- the files

def expand(pattern: str) -> list[str]:
    """The input files: ``pattern`` itself when it names a file (``run[1].npz``), else the
    files its glob matches, sorted."""
    literal = not glob.has_magic(pattern) or os.path.exists(pattern)
    files = [pattern] if literal else sorted(glob.glob(pattern))
    if not files:
        raise UsageError(f"{pattern}: no file matches")
    return files


def targets(files: Sequence[str], folder: str | None) -> list[str]:
    """``folder/<input stem>.npz`` for each input file; refused when
    ``folder`` is not one (a name ending in / or an existing directory), two inputs have
    one stem or an output would be one of the inputs."""
    if folder is None:
        raise UsageError("dyn: several input files (or --scheduler) need --output DIR/ "
                         "(one <input stem>.npz per input file)")
    if not is_folder(folder):
        raise UsageError(f"dyn: --output {folder} must be a directory (end it with /) with "
                         "several input files or --scheduler: each input file gives "
                         "DIR/<input stem>.npz")
    outputs = [os.path.join(folder, os.path.splitext(os.path.basename(f))[0] + ".npz")
               for f in files]
    first: dict[str, str] = {}
    for path, output in zip(files, outputs):
        if output in first:
            raise UsageError(f"dyn: {first[output]} and {path} have the same stem: both "
                             f"would be written to {output}")
        first[output] = path
    refuse_overwrite(files, outputs)
    return outputs


def wants_many(input: str | None, output: str | None, scheduler: str | None) -> bool:
    """Whether a run is one of many files: a ``scheduler``, an ``output`` folder, or an
    ``input`` pattern that names no file as it is."""
    ext = os.path.splitext(output or "")[1]
    if output and os.path.isdir(output) and ext.lower() in OUTPUT_FORMATS and \
            not output.endswith(("/", os.sep)):
        raise UsageError(f"{output}: is a directory, not the {ext} file its name asks for "
                         "(write DIR/ for one .npz per input file)")
    if scheduler is not None or output and is_folder(output):
        return True
    pattern = input not in (None, "-") and glob.has_magic(input)
    return pattern and not os.path.exists(input)


def plan(layout: Layout, command: str, pattern: str, folder: str | None, fmt: str | None,
         scheduler: str | None, prefix: str | None = None):
    """(files, outputs, counts) of a run over many files (:func:`expand`, :func:`targets`,
    :func:`checked_counts`), refused before anything is written: a format other than the
    outputs' .npz, Dask missing for a ``scheduler``."""
    if scheduler is not None:
        require_dask()
    files = expand(pattern)
    outputs = targets(files, folder)
    for output in outputs:  # (none of the run's inputs, the model, ...: refused now)
        writing(output)
    if fmt is not None:
        raise UsageError(f"dyn: --format {fmt} conflicts with --output DIR/: the "
                         "files written there are .npz")
    counts = checked_counts(files, layout, command, prefix, arrays_only=scheduler is not None,
                            warns=scheduler is not None)
    return files, outputs, counts


def solve_many(layout: Layout, command: str, pattern: str, folder: str | None,
               fmt: str | None = None, address: str | None = None, prefix: str | None = None,
               sparsity: bool = False, gravity=None, wrenches: dict | None = None,
               chunk: int = CHUNK, tally: Callable[[], Tally] = lambda: Tally(False, 0.0)
               ) -> None:
    """``COMPUTATIONS[command]`` over each file of ``pattern`` into ``folder``/<its
    stem>.npz (:func:`plan`, refused up front): here one after another through
    :func:`.stream.run` (:func:`run_each`), or one task per file on the Dask scheduler at
    ``address`` (:func:`connect`, :func:`run_files`). ``tally()`` makes the progress tally
    of each file here, of the whole run on a cluster (its ``advance`` the ``progress``
    callback, closed after); ``sparsity``: M's pattern stored beside each result;
    ``gravity``, ``wrenches``, ``chunk``, ``prefix`` as :func:`.stream.run` takes them."""
    from .batch import results_sink, structure
    from .signals import ended_by_signals
    from .stream import run

    files, outputs, counts = plan(layout, command, pattern, folder, fmt, address, prefix)
    document = structure(layout, "npz") if sparsity else None

    def each(path: str, output: str) -> None:
        progress = tally()
        try:
            run(layout, command, Input.open(path, prefix),
                results_sink(layout, command, "npz", output, document=document,
                             dataset_prefix=prefix), gravity, wrenches, chunk, progress.advance)
        finally:
            progress.close()

    with ended_by_signals():
        if address is None:
            make_folder(folder)
            return run_each(files, outputs, each)
        client, close = connect(address, quiet=True)  # refused: no folder made
        progress = tally()
        with closing(close, outputs):
            try:
                run_files(client, layout, command, files, outputs, counts, gravity, wrenches,
                          chunk, prefix, document and document["pattern"], progress.advance)
            finally:
                progress.close()


def is_folder(path: str) -> bool:
    return path.endswith(("/", os.sep)) or os.path.isdir(path)


def make_folder(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise UsageError(f"{path}: cannot create ({error.strerror or error})") from None


def refuse_overwrite(files: Sequence[str], outputs: Sequence[str]) -> None:
    """An output that is one of the inputs (the same path, through a symbolic link, or a
    hard link) would replace it by the results: compared by real path, and an output that
    exists also by device and inode (one stat per file, not one per pair)."""
    paths = {os.path.realpath(path): path for path in files}
    inodes = {file_identity(path): path for path in files}
    inodes.pop(None, None)  # inputs that do not exist (they fail later, as unreadable)
    for output in outputs:
        path = paths.get(os.path.realpath(output)) or inodes.get(file_identity(output))
        if path is not None:
            raise UsageError(f"dyn: --output {output} would overwrite the input {path}; "
                             "choose another output folder")


def checked_counts(files: Sequence[str], layout: Layout, command: str,
                   prefix: str | None = None, arrays_only: bool = False,
                   warns: bool = True) -> list[int | None]:
    """The number of states of each input file of arrays (None for a text file), every
    input checked before anything is written or submitted, so that a bad later file fails
    the run up front: its format known, the file readable and a file of arrays' arrays
    checked from their headers (in the HDF5 group ``prefix``; ``warns`` of those not read).
    ``arrays_only``: a text file is refused (the cluster reads files of arrays)."""
    kinds = COMPUTATIONS[command].kinds
    counts: list[int | None] = []
    for path in files:
        if INPUT_FORMATS.get(os.path.splitext(path)[1].lower()) not in ARRAYS:
            if arrays_only:
                raise UsageError(f"{path}: --scheduler reads files of arrays only (.npz, "
                                 ".parquet, .h5)")
        try:
            source = Input.open(path, prefix)
            try:
                counts.append(source.members(layout, kinds, warns=warns)[0].count
                              if source.kind in ARRAYS else None)
            finally:
                source.stream.close()
        except UsageError as error:
            raise UsageError(f"{error}; nothing was written") from None
    return counts


def run_each(files: Sequence[str], outputs: Sequence[str],
             run_one: Callable[[str, str], object]) -> None:
    """``run_one(file, output)`` for each file in turn, in this process; a UsageError of
    one (a bad row) also says how many outputs, those of the files before it, were
    completed."""
    for done, (path, output) in enumerate(zip(files, outputs)):
        try:
            run_one(path, output)
        except UsageError as error:
            if len(files) == 1:
                raise
            raise UsageError(f"{error}; {kept(done, len(files))}") from None


# ------------------------------------------------------------------------ the cluster

def connect(address: str, quiet: bool = False):
    """``(client, close)``: a dask.distributed Client of the scheduler at ``address``, or
    for ``"local"`` of a LocalCluster of 2 single-threaded worker processes started here;
    ``close()`` closes both. An address that gives no scheduler within
    :data:`CONNECT_SECONDS` is one line. ``quiet``: distributed's log records silenced
    in this process (a lost scheduler logs some 30 lines; the error raised says it in one).

    A program may let SIGPIPE end it (``dyn`` does, for a closed stdout); with sockets to
    a cluster a peer closing a connection is an error to handle, so SIGPIPE is ignored
    again (Python's default) from here on."""
    distributed = require_dask()
    if quiet:
        import logging

        for name in ["distributed", *logging.root.manager.loggerDict]:
            if name.split(".")[0] == "distributed":
                logging.getLogger(name).setLevel(logging.CRITICAL)
    if hasattr(signal, "SIGPIPE") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    if address == "local":
        return local_cluster(distributed)
    client = within(CONNECT_SECONDS + 1, lambda: distributed.Client(
        address, timeout=f"{CONNECT_SECONDS}s"), f"{address}: not a Dask scheduler, or not "
        "answering")
    return client, client.close


def within(seconds: float, start: Callable, message: str):
    """``start()``, or a UsageError ``message (why)`` when it fails or has
    not returned after ``seconds``. The Client's own timeout bounds connecting but not its
    first read: a service that takes the connection and waits (an HTTP server, the
    dashboard's port) would hang it, so it starts on a daemon thread given up on then."""
    done: dict = {}

    def run() -> None:
        try:
            done["value"] = start()
        except BaseException as error:  # noqa: BLE001 -- a MemoryError too: a banner read
            done["error"] = error  # as a frame's size

    thread = threading.Thread(target=run, name="dyn-connect", daemon=True)
    thread.start()
    thread.join(seconds)
    if "value" in done:
        return done["value"]
    error = done.get("error")
    detail = f"no answer in {seconds:g} s" if error is None else (
        " ".join(str(error).split()) or type(error).__name__)
    raise UsageError(f"{message} ({detail})")


def require_dask():
    """The dask.distributed module, or the one-line error naming the optional extra."""
    try:
        import distributed
    except ImportError:
        raise UsageError(EXTRA) from None
    return distributed


def local_cluster(distributed):
    """A LocalCluster of 2 single-threaded worker processes, its Client and their close.

    No dashboard (port 8787 taken by another cluster is no warning). The workers are
    started with SIGINT ignored (inherited): a terminal's Ctrl-C reaches the whole process
    group, and only this process takes it, stops the run and closes them quietly.
    """
    import logging

    ignoring = threading.current_thread() is threading.main_thread()
    saved = signal.signal(signal.SIGINT, signal.SIG_IGN) if ignoring else None
    try:
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            silence_logs=logging.CRITICAL)
        try:
            client = distributed.Client(cluster)
        except BaseException:
            cluster.close()
            raise
    finally:
        if ignoring:
            signal.signal(signal.SIGINT, saved)

    def close() -> None:
        client.close()
        cluster.close()  # (a second or two)
    return client, close


@contextlib.contextmanager
def closing(close: Callable[[], None], outputs: Sequence[str]):
    """Within: a run into ``outputs``; then ``close()`` of :func:`connect`, and the
    temporaries of tasks whose worker is gone (a local cluster's, closed) removed. An
    interrupt while a local cluster closes (a second or two) still says what the run left."""
    try:
        try:
            yield
        except BaseException:
            close()
            raise
        try:
            close()
        except (KeyboardInterrupt, Ended) as error:
            error.kept = f"{kept(len(outputs), len(outputs))} (the cluster was closing)"
            raise
    finally:
        for output in outputs:
            remove_stale(os.path.realpath(output))


def run_files(client, model: Layout, command: str, files: Sequence[str],
              outputs: Sequence[str], counts: Sequence[int | None] | None = None,
              gravity=None, wrenches: dict | None = None, chunk: int = CHUNK,
              prefix: str | None = None, pattern=None,
              progress: Callable | None = None) -> int:
    """``COMPUTATIONS[command]`` over each file of ``files`` into the ``outputs`` (.npz) of
    the same index, one task per file on the cluster of ``client``; the outputs written.

    ``model``: a :class:`~.layout.Layout` (or an engine Model), sent to every worker once.
    ``chunk``: states per engine call, as on one machine; ``prefix``: the HDF5 group of the
    inputs; ``pattern``: M's structural pattern (``mass --sparsity``), stored beside M.
    ``progress(states, total, None)`` as each file is done (``counts``: its states).

    Every task runs to its end; a task that failed then fails the run with a UsageError
    naming the first failing file (in ``files`` order) and how many outputs were completed.
    An interrupt (KeyboardInterrupt, :class:`.Ended`) or a lost scheduler cancels the tasks
    not yet run; the error raised carries that count in ``kept``. Each output is whole or
    absent (a task already running on a remote cluster may still complete its own).
    """
    import distributed

    layout = model if isinstance(model, Layout) else Layout.of(model)
    counts = list(counts) if counts is not None else [None] * len(files)
    total = sum(count or 0 for count in counts) or None
    for folder in dict.fromkeys(os.path.dirname(os.path.abspath(o)) for o in outputs):
        make_folder(folder)
    shared = client.scatter(layout, broadcast=True)
    futures = client.map(solve_file, [os.path.abspath(f) for f in files],
                         [os.path.abspath(o) for o in outputs], layout=shared,
                         command=command, gravity=gravity, wrenches=wrenches or {},
                         chunk=chunk, prefix=prefix, pattern=pattern, pure=False)
    index = {future.key: k for k, future in enumerate(futures)}
    failed: dict[int, BaseException] = {}
    done = 0
    try:
        for future in distributed.as_completed(futures):
            k = index.pop(future.key)
            if future.status == "finished":
                done += 1
                if progress is not None:
                    progress(counts[k] or future.result(), total, None)
            elif future.status == "error":
                failed[k] = future.exception()
            else:  # cancelled: the scheduler was lost (or another client cancelled it)
                raise UsageError(f"{files[k]}: its task was cancelled on the cluster")
            future.release()  # a finished file is not run again if its worker dies
    except BaseException as error:
        left = [future for future in futures if future.key in index]
        raise stopped(client, left, outputs, done, error) from None
    if failed:
        first = min(failed)
        raise UsageError(f"{task_error(failed[first], files[first])}; "
                         f"{kept(done, len(files))}")
    return done


def kept(done: int, files: int) -> str:
    return f"{done} of {files} output files were completed and kept"


def stopped(client, futures, outputs, done: int, error: BaseException) -> BaseException:
    """The error to raise after ``error`` stopped the run with ``futures`` not seen done:
    those cancelled, and the outputs completed
    (``done``, and the futures finished meanwhile) said: in the error's ``kept`` for an
    interrupt, in the message of a lost scheduler's UsageError."""
    lost = client.status != "running"
    done += sum(future.status == "finished" for future in futures)
    if not lost:
        try:
            client.cancel(futures)
        except Exception:  # noqa: BLE001,S110 -- the connection went meanwhile
            lost = True
    outcome = kept(done, len(outputs))
    if isinstance(error, (KeyboardInterrupt, Ended)):
        error.kept = outcome
        return error
    if lost:
        return UsageError(f"{client.scheduler.address}: lost the scheduler (the connection "
                          f"to it closed); {outcome}")
    return error


def task_error(error: BaseException, path: str) -> str:
    """The line of a task's error: a UsageError's own, else the file and the failure."""
    if isinstance(error, UsageError):
        return str(error)
    detail = " ".join(str(error).split())[:200]
    return f"{path}: a task failed on the cluster ({type(error).__name__}: {detail})"


# ------------------------------------------------------------------------ on a worker

def solve_file(path: str, output: str, layout: Layout, command: str, gravity=None,
               wrenches: dict | None = None, chunk: int = CHUNK, prefix: str | None = None,
               pattern=None) -> int:
    """The states of the file of arrays ``path``, computed ``chunk`` at a time as the
    one-process path does, written to ``output`` (complete, or not at all: the temporary
    is removed on any error); the number of states."""
    computation = COMPUTATIONS[command]
    source = Input.open(path, prefix)
    try:
        sink = open_sink(output, computation.key, computation.shape(layout.model.nv),
                         layout.v_labels, pattern=pattern)
        try:
            if isinstance(sink, NpzSink):
                sink.total = lambda: source.total
            members = source.members(layout, computation.kinds, chunk, warns=False)
            for states in npz_chunks(members, path, layout, wrenches or {}, chunk):
                result = collect(lambda: compute(command, layout, states, gravity), states,
                                 sink)
                sink.put(result, states)
            sink.close()
        except BaseException:
            sink.discard()
            raise
    finally:
        source.stream.close()
    return sink.count
