"""Many input files, and ``--scheduler``: the dynamics commands on a Dask cluster.

``dyn inverse MODEL --input 'logs/*.npz' --output out/ --scheduler tcp://HOST:8786`` (or
``--scheduler local`` for a :class:`distributed.LocalCluster` of 2 single-threaded worker
processes on this machine) expands the pattern here, reads the .npz headers to count the
states of each file, and submits one task per file, or per block of about
:data:`ROWS_PER_TASK` states of a large file. A task loads the model once per worker process
(cached by path and ``--free-flyer``), reads its rows of the .npz, runs the same chunks
through the same batched engine calls as the single-machine path (blocks start on chunk
boundaries) and writes ``out/<input stem>.npz``, or a raw part file that a last task per
file assembles into it. The arrays are those ``--output FILE.npz`` holds (``tau``, ``a`` or
``M``, and ``dofs``), so the numbers are identical. Input and output paths must be visible
to the workers at the same path (a shared file system; always true for ``local``).

Without ``--scheduler`` a pattern (or an --output directory) runs the single-machine
streaming path once per file, writing ``out/<input stem>.npz``.

Dask is imported only here and only when ``--scheduler`` is given.
"""
from __future__ import annotations

import functools
import glob
import os
import shutil
import signal
import threading
from dataclasses import replace

import numpy as np

from .inputs import INPUT_FORMATS, Input, Layout, UsageError, _npz_members, pop_q
from .progress import Progress, wanted

ROWS_PER_TASK = 100_000  # states per task at most (rounded down to whole chunks)
EXTRA = "--scheduler needs the optional extra: pip install 'treedyn[dask]'"
_MODELS: dict = {}  # (path, free_flyer) -> Model, per worker process


def wants_many(request) -> bool:
    """--scheduler, a glob pattern that names no file as is, or an --output directory."""
    if getattr(request, "scheduler", None) is not None:
        return True
    if request.input is None or request.input == "-":
        return False
    pattern = glob.has_magic(request.input) and not os.path.exists(request.input)
    return pattern or (request.output is not None and is_directory(request.output))


def is_directory(path: str) -> bool:
    return path.endswith(("/", os.sep)) or os.path.isdir(path)


def expand(pattern: str) -> list[str]:
    files = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
    if not files:
        raise UsageError(f"{pattern}: no file matches")
    return files


def targets(request, files: list[str]) -> list[str]:
    """out/<stem>.npz for each input file, checked (the output directory is not made yet)."""
    if request.output is None:
        raise UsageError("dyn: several input files (or --scheduler) need --output DIR/ "
                         "(one <input stem>.npz per input file)")
    if not is_directory(request.output):
        raise UsageError(f"dyn: --output {request.output} must be a directory (end it with "
                         "/) with several input files or --scheduler: each input file "
                         "gives DIR/<input stem>.npz")
    if request.format is not None and request.format.value != "npz":
        raise UsageError(f"dyn: --format {request.format.value} conflicts with --output "
                         "DIR/: the files written there are .npz")
    outputs = [os.path.join(request.output, os.path.splitext(os.path.basename(f))[0] + ".npz")
               for f in files]
    refuse_same_stem(files, outputs)
    refuse_overwrite(files, outputs)
    return outputs


def refuse_same_stem(files: list[str], outputs: list[str]) -> None:
    """Two inputs with one stem (a/x.npz and b/x.npz) would write the same output file."""
    first = {}
    for path, output in zip(files, outputs):
        if output in first:
            raise UsageError(f"dyn: {first[output]} and {path} have the same stem: both "
                             f"would be written to {output}")
        first[output] = path


def refuse_overwrite(files: list[str], outputs: list[str]) -> None:
    """An output that is one of the inputs (the same path, through a symbolic link, or a
    hard link) would be truncated while it is read, or replaced by the results.

    Files are compared by real path, and an output that exists also by device and inode,
    as :func:`os.path.samefile` does (one stat per file, not one per pair).
    """
    paths = {os.path.realpath(path): path for path in files}
    inodes = {inode(path): path for path in files}
    inodes.pop(None, None)  # inputs that do not exist (they fail later, as unreadable)
    for output in outputs:
        path = paths.get(os.path.realpath(output)) or inodes.get(inode(output))
        if path is not None:
            raise UsageError(f"dyn: --output {output} would overwrite the input {path}; "
                             "choose another output folder")


def inode(path: str):
    """(device, inode) of an existing file, else None."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return status.st_dev, status.st_ino


def make_folder(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise UsageError(f"{path}: cannot create ({error.strerror or error})") from None


def solve_many(request, layout: Layout, gravity, wrenches) -> None:
    """Entry point from :func:`treedyn.cli.main.solve` when :func:`wants_many` says so."""
    if request.scheduler is not None:
        require_dask()
    files = expand(request.input)
    outputs = targets(request, files)
    if request.scheduler is not None:
        for path in files:
            if INPUT_FORMATS.get(os.path.splitext(path)[1].lower()) != "npz":
                raise UsageError(f"{path}: --scheduler reads .npz inputs only")
    counts = checked_counts(files, layout, tuple(request.vectors))
    make_folder(request.output)
    if request.scheduler is None:
        run_here(request, layout, gravity, wrenches, files, outputs)
        return
    client, cluster = connect(request.scheduler)
    try:
        run_on_cluster(client, request, layout, files, outputs, counts)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def checked_counts(files: list[str], layout: Layout, kinds) -> list[int | None]:
    """The number of states of each .npz input (None for a text input), every input
    checked before anything is written or submitted, so that a bad later file fails the
    run up front rather than halfway: its format known, the file readable and, for an
    .npz, its arrays (from their headers; a text file's rows are checked as it is read)."""
    counts = []
    try:
        for path in files:
            if INPUT_FORMATS.get(os.path.splitext(path)[1].lower()) == "npz":
                counts.append(states_in(path, layout, kinds))
            else:
                Input.open(path).stream.close()
                counts.append(None)
    except UsageError as error:
        raise UsageError(f"{error}; nothing was written") from None
    return counts


def run_here(request, layout: Layout, gravity, wrenches, files, outputs) -> None:
    """Each file in turn through the single-machine streaming path; an error in one (a bad
    row) also says how many output files, those of the inputs before it, were completed."""
    from .main import stream

    for done, (path, output) in enumerate(zip(files, outputs)):
        try:
            stream(replace(request, input=path, output=output), layout, gravity, wrenches)
        except UsageError as error:
            if len(files) == 1:
                raise
            raise UsageError(f"{error}; {done} of {len(files)} output files were completed "
                             "and kept") from None


def require_dask():
    """The dask.distributed module, or the one-line error naming the optional extra."""
    try:
        import distributed
    except ImportError:
        raise UsageError(EXTRA) from None
    return distributed


def connect(address: str):
    """A dask.distributed Client for ``address`` ('local': a LocalCluster here).

    The dyn program lets SIGPIPE end it quietly when its stdout reader goes away; with
    sockets to a cluster, a peer closing a connection must be an error the client handles,
    not the end of dyn, so SIGPIPE is ignored again (Python's default) from here on.
    """
    if hasattr(signal, "SIGPIPE") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    distributed = require_dask()
    if address == "local":
        import logging

        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None,
                                           silence_logs=logging.CRITICAL)
        return distributed.Client(cluster), cluster
    try:
        return distributed.Client(address, timeout="30s"), None
    except (OSError, TimeoutError, ValueError) as error:
        raise UsageError(f"dyn: --scheduler {address}: cannot connect ({error})") from None


def run_on_cluster(client, request, layout: Layout, files, outputs, counts) -> None:
    """One task per file or block of rows, a last task per file assembling the parts.

    The inputs were checked (:func:`checked_counts`) before the first task is submitted;
    anything that fails from then on (a bad row, a failed submission) goes through the
    same cleanup, which keeps the files that finished and removes the others.
    """
    from .main import chunk_states

    size = chunk_states(request.command, layout)
    per_task = ROWS_PER_TASK // size * size if ROWS_PER_TASK >= size else ROWS_PER_TASK
    job = {"command": request.command, "model": os.path.abspath(request.model),
           "free_flyer": request.free_flyer, "degrees": request.degrees,
           "gravity": request.gravity, "fext": request.fext, "kinds": tuple(request.vectors),
           "size": size, "sparsity": request.sparsity}
    futures, written = [], []  # per input file: its final task, and the files it writes
    states = {}  # computing task -> its number of states, for the progress bar
    before = {os.path.abspath(output): snapshot(output) for output in outputs}
    progress = Progress(wanted(request.quiet, results_on_stdout=False))
    try:
        import distributed

        for path, output, count in zip(files, outputs, counts):
            blocks = [(start, min(start + per_task, count))
                      for start in range(0, count, per_task)] or [(0, 0)]
            output = os.path.abspath(output)
            parts = ([output + ".raw"] if len(blocks) == 1
                     else [f"{output}.part{k}" for k in range(len(blocks))])
            written.append([output, *parts])  # before submitting: cleaned up if that fails
            futures.append(submit(client, job, os.path.abspath(path), blocks, parts, output,
                                  states))
        total = sum(states.values())
        for done in distributed.as_completed(list(states)):
            if done.status == "finished":
                progress.advance(states[done], total)
        distributed.wait(futures)  # every task ended: no file is written after the cleanup
        client.gather(futures)
    except UsageError as error:
        kept = keep_finished(futures, written, before)
        raise UsageError(f"{error}; {kept} of {len(files)} output files were completed and "
                         "kept, the others removed (or left as they were if no task had "
                         "written to them)") from None
    except BaseException:
        client.cancel([*futures, *states])
        keep_finished(futures, written, before)
        raise
    finally:
        progress.close()


def submit(client, job: dict, path: str, blocks, parts, output: str, states: dict):
    """The tasks of one input; the last one, which writes ``output``, is returned (each
    computing task is added to ``states`` with its number of states)."""
    if len(blocks) == 1:
        (start, stop), = blocks
        future = client.submit(solve_block, job, path, start, stop, output, True, pure=False)
        states[future] = stop - start
        return future
    pieces = []
    for (start, stop), part in zip(blocks, parts):
        pieces.append(client.submit(solve_block, job, path, start, stop, part, False,
                                    pure=False))
        states[pieces[-1]] = stop - start
    return client.submit(assemble, job, pieces, output, pure=False)


def keep_finished(futures, written, before: dict) -> int:
    """Remove the files of every input whose last task did not finish (or was never
    submitted), except an output that existed ``before`` the run and that no task has
    written to since (its :func:`snapshot` unchanged); count the outputs kept."""
    kept = 0
    for k, paths in enumerate(written):
        if k < len(futures) and futures[k].status == "finished":
            kept += 1
            continue
        for path in paths:
            if before.get(path) is not None and snapshot(path) == before[path]:
                continue
            if os.path.exists(path):
                os.remove(path)
    return kept


def snapshot(path: str):
    """(inode, size, modification time) of an existing file, else None."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns


def states_in(path: str, layout: Layout, kinds) -> int:
    """The number of states of an .npz, its arrays checked (headers only)."""
    source = Input.open(path)
    try:
        return _npz_members(source.stream, path, layout, kinds)[0].count
    finally:
        source.stream.close()


# ----------------------------------------------------------------------------- on a worker

def worker_model(path: str, free_flyer: bool):
    """The model, loaded once per worker process."""
    key = (path, free_flyer)
    if key not in _MODELS:
        from .common import load

        _MODELS[key] = load(path, free_flyer)
    return _MODELS[key]


def one_line(task):
    """A task whose OSError (an output folder the workers cannot write, a full disk, an
    input they cannot read) is a one-line error, which the client cleans up after and
    counts the kept files for, as for a bad row (other exceptions stay internal errors)."""
    @functools.wraps(task)
    def run(*args):
        try:
            return task(*args)
        except OSError as error:
            raise UsageError(f"{error.filename or 'dyn'}: {error.strerror or error}") from None
    return run


@one_line
def solve_block(job: dict, path: str, start: int, stop: int, target: str,
                whole: bool) -> int:
    """States [start, stop) of ``path``: computed chunk by chunk as the single-machine path
    does, written to ``target`` (the .npz if ``whole``, else raw float64 rows)."""
    from .inputs import parse_fext, parse_gravity
    from .main import compute

    model = worker_model(job["model"], job["free_flyer"])
    layout = Layout.of(model, job["degrees"])
    gravity = parse_gravity(job["gravity"])
    wrenches = parse_fext(job["fext"], model)
    source = Input.open(path)
    try:
        members = _npz_members(source.stream, path, layout, job["kinds"], warns=False)
        for member in members:  # move every member to row ``start``
            if member.stream is not None and start:
                member.stream.seek(start * member.width * member.dtype.itemsize, 1)
        with open(target if not whole else target + ".raw", "wb") as out:
            for begin in range(start, stop, job["size"]):
                end = min(begin + job["size"], stop)
                states = read_states(members, path, layout, wrenches, begin, end)
                result = compute(job["command"], layout, states, gravity)
                np.ascontiguousarray(result, dtype=np.float64).tofile(out)
    finally:
        source.stream.close()
    if whole:
        write_npz(job, layout, [target + ".raw"], stop - start, target)
    return stop - start


def read_states(members, path: str, layout: Layout, wrenches, begin: int, end: int):
    """States [begin, end) (rows are read in order); a non-finite number is an error."""
    from .inputs import States

    vectors = {}
    for member in members:
        if member.whole is not None:
            block = member.whole.reshape(member.count, member.width)[begin:end]
        else:
            try:
                block = member.read(begin, end)
            except (OSError, EOFError, ValueError) as error:
                raise UsageError(f"{path}: not a readable .npz file ({error})") from None
            except UsageError as error:
                raise UsageError(f"{path}: {error}") from None
        block = block.astype(float)
        rows = np.flatnonzero(~np.isfinite(block).all(axis=1))
        if rows.size:
            raise UsageError(f"{path}: {member.kind}[{begin + int(rows[0])}] holds a "
                             "non-finite number")
        vectors[member.kind] = block * layout.scale(member.kind)
    q = pop_q(vectors, layout, end - begin)
    return States(q=q, wrenches=dict(wrenches),
                  where=lambda i: f"{path}: state {begin + i}", **vectors)


@one_line
def assemble(job: dict, counts: list[int], target: str) -> int:
    """Join the part files of one input (in order) into ``target``."""
    parts = [f"{target}.part{k}" for k in range(len(counts))]
    write_npz(job, None, parts, sum(counts), target)
    return sum(counts)


def write_npz(job: dict, layout: Layout | None, raws: list[str], count: int,
              target: str) -> None:
    """The archive ``--output FILE.npz`` writes: the result rows, ``dofs`` (and
    ``sparsity`` for mass --sparsity); the raw files are removed."""
    import zipfile

    from numpy.lib import format as npy

    from .main import RESULT_KEY

    if layout is None:
        layout = Layout.of(worker_model(job["model"], job["free_flyer"]), job["degrees"])
    key = RESULT_KEY[job["command"]]
    nv = layout.model.nv
    shape = (nv, nv) if key == "M" else (nv,)
    extra = {"dofs": np.array(layout.v_labels, dtype=str)}
    if job["sparsity"]:
        extra["sparsity"] = layout.model.sparsity.astype(np.int8)
    header = {"descr": npy.dtype_to_descr(np.dtype(np.float64)), "fortran_order": False,
              "shape": (count, *shape)}
    with open(target, "wb") as stream, zipfile.ZipFile(
            stream, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        with archive.open(f"{key}.npy", "w", force_zip64=True) as member:
            npy.write_array_header_2_0(member, header)
            for raw in raws:
                with open(raw, "rb") as part:
                    shutil.copyfileobj(part, member, 1 << 20)
        for name, array in extra.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                npy.write_array(member, np.asanyarray(array), allow_pickle=False)
    for raw in raws:
        os.remove(raw)
