"""Many input files, and ``--scheduler``: the dynamics commands on a Dask cluster.

``dyn inverse MODEL --input 'logs/*.npz' --output out/ --scheduler tcp://HOST:8786`` (or
``--scheduler local`` for a :class:`distributed.LocalCluster` of 2 single-threaded worker
processes on this machine) expands the pattern here, reads the headers of the files of
arrays (.npz, Parquet, HDF5) to count the states of each, and submits one task per file, or
per block of about :data:`ROWS_PER_TASK` states of a large file. A task loads the model once
per worker process and model version (see :func:`worker_model`), reads its rows of the file
(through the one reader of arrays, :func:`.source.Input.members`), runs the same chunks
through the same batched engine calls as the single-machine path (blocks start on chunk
boundaries) and writes ``out/<input stem>.npz``, or a raw part file that a last task per
file assembles into it. The arrays are those ``--output FILE.npz`` holds (``tau``, ``a`` or
``M``, and ``dofs``), so the numbers are identical. Input and output paths must be visible
to the workers at the same path (a shared file system; always true for ``local``).

Every file a task writes (``.raw``, ``.partK``, ``.tmp``) is created empty by the client
before the tasks are submitted, and tasks only open it (never create it): a stopped run's
cleanup removes these names, so a task still running on the cluster afterwards (Ctrl-C, a
lost scheduler) fails to open or rename them instead of leaving a file in the output folder;
an output appears only complete, renamed from its ``.tmp``.

Without ``--scheduler`` a pattern (or an --output directory) runs the single-machine
streaming path once per file, writing ``out/<input stem>.npz``.

Dask is imported only here and only when ``--scheduler`` is given.
"""
from __future__ import annotations

import contextlib
import functools
import glob
import os
import sys
from dataclasses import replace

import numpy as np

from treedyn.engine.factor import dense_pattern

from treedyn.pipeline.errors import Ended, UsageError
from treedyn.pipeline.layout import Layout
from ..model import load
from treedyn.pipeline.npz import npz_chunks
from treedyn.pipeline.sinks import OUTPUT_FORMATS, npz_extra, write_archive
from treedyn.pipeline.paths import file_identity
from treedyn.pipeline.source import ARRAYS, INPUT_FORMATS, Input
from treedyn.pipeline.vectors import parse_fext, parse_gravity
from treedyn.pipeline.compute import COMPUTATIONS, compute
from .pool import ended_by_signals
from .progress import Progress, wanted
from .request import chunk_states
from .scheduler import connect, require_dask
from .stream import stream

ROWS_PER_TASK = 100_000  # states per task at most (rounded down to whole chunks)
_MODELS: dict = {}  # (path, free_flyer, xacro, mimic) -> (model digest, Model), per worker


def wants_many(request) -> bool:
    """--scheduler, a glob pattern that names no file as is, or an --output directory."""
    output = request.output
    if (output is not None and os.path.isdir(output) and not output.endswith(("/", os.sep))
            and os.path.splitext(output)[1].lower() in OUTPUT_FORMATS):
        raise UsageError(f"{output}: is a directory, not the {os.path.splitext(output)[1]} "
                         "file its name asks for (write DIR/ for one .npz per input file)")
    if getattr(request, "scheduler", None) is not None:
        return True
    if request.input is None or request.input == "-":
        return False
    pattern = glob.has_magic(request.input) and not os.path.exists(request.input)
    return pattern or (output is not None and is_directory(output))


def is_directory(path: str) -> bool:
    return path.endswith(("/", os.sep)) or os.path.isdir(path)


def expand(pattern: str) -> list[str]:
    """The input files: ``pattern`` itself when it names a file (``run[1].npz``), else the
    files its glob matches, sorted."""
    literal = not glob.has_magic(pattern) or os.path.exists(pattern)
    files = [pattern] if literal else sorted(glob.glob(pattern))
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
    if request.format is not None and request.format != "npz":
        raise UsageError(f"dyn: --format {request.format} conflicts with --output "
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
    inodes = {file_identity(path): path for path in files}
    inodes.pop(None, None)  # inputs that do not exist (they fail later, as unreadable)
    for output in outputs:
        path = paths.get(os.path.realpath(output)) or inodes.get(file_identity(output))
        if path is not None:
            raise UsageError(f"dyn: --output {output} would overwrite the input {path}; "
                             "choose another output folder")


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
            if INPUT_FORMATS.get(os.path.splitext(path)[1].lower()) not in ARRAYS:
                raise UsageError(f"{path}: --scheduler reads files of arrays only (.npz, "
                                 ".parquet, .h5)")
    counts = checked_counts(files, layout, tuple(request.vectors), request.dataset_prefix,
                            warns=request.scheduler is not None)  # else the runs warn
    if request.scheduler is None:
        make_folder(request.output)
        run_here(request, layout, gravity, wrenches, files, outputs)
        return
    client, cluster = connect(request.scheduler)  # an address refused makes no folder
    # SIGTERM and SIGHUP (kill, timeout, a cancelled CI job) end dyn as ever, after the
    # cleanup a Ctrl-C gets: the finished outputs kept, the placeholders removed
    with ended_by_signals():
        done = False
        try:
            make_folder(request.output)
            run_on_cluster(client, request, layout, files, outputs, counts)
            done = True
        finally:
            try:
                client.close()
                if cluster is not None:
                    cluster.close()  # a local cluster takes a second or two to close
            except (KeyboardInterrupt, Ended) as error:
                if done:  # the outputs are complete: say so, as an interrupted run does
                    how = "interrupted" if isinstance(error, KeyboardInterrupt) else "ended"
                    print(f"dyn: {how}; {len(files)} of {len(files)} output files were "
                          "completed and kept (the cluster was closing)", file=sys.stderr)
                raise


def checked_counts(files: list[str], layout: Layout, kinds, prefix: str | None = None,
                   warns: bool = True) -> list[int | None]:
    """The number of states of each input file of arrays (None for a text input), every
    input checked before anything is written or submitted, so that a bad later file fails
    the run up front rather than halfway: its format known, the file readable and, for a
    file of arrays, its arrays (from their headers, in the HDF5 group ``prefix``; a text
    file's rows are checked as it is read)."""
    counts = []
    try:
        for path in files:
            if INPUT_FORMATS.get(os.path.splitext(path)[1].lower()) in ARRAYS:
                counts.append(states_in(path, layout, kinds, prefix, warns))
            else:
                Input.open(path).stream.close()
                counts.append(None)
    except UsageError as error:
        raise UsageError(f"{error}; nothing was written") from None
    return counts


def run_here(request, layout: Layout, gravity, wrenches, files, outputs) -> None:
    """Each file in turn through the single-machine streaming path; an error in one (a bad
    row) also says how many output files, those of the inputs before it, were completed.
    SIGTERM and SIGHUP end the file under way as Ctrl-C does, as for one input."""
    with ended_by_signals():
        for done, (path, output) in enumerate(zip(files, outputs)):
            try:
                stream(replace(request, input=path, output=output), layout, gravity,
                       wrenches)
            except UsageError as error:
                if len(files) == 1:
                    raise
                raise UsageError(f"{error}; {done} of {len(files)} output files were "
                                 "completed and kept") from None


def run_on_cluster(client, request, layout: Layout, files, outputs, counts) -> None:
    """One task per file or block of rows, a last task per file assembling the parts.

    The inputs were checked (:func:`checked_counts`) before the first task is submitted;
    anything that fails from then on (a bad row, a failed submission, Ctrl-C, a lost
    scheduler) goes through the same cleanup, which keeps the files that finished (as
    recorded when they finished: a cancelled or lost future no longer says so) and removes
    the others; the line (or, after Ctrl-C, a line before exit 130) says how many were kept.
    A bad row reported is the earliest of the first failing input.
    """
    import distributed

    job = cluster_job(request, layout)
    size = job["size"]
    per_task = ROWS_PER_TASK // size * size if ROWS_PER_TASK >= size else ROWS_PER_TASK
    futures, written = [], []  # per input file: its final task, and the files it writes
    finished = set()  # the inputs whose final task finished: their output is complete
    states = {}  # computing task -> its number of states, for the progress bar
    before = {os.path.abspath(output): snapshot(output) for output in outputs}
    progress = Progress(wanted(request.quiet, results_on_stdout=False))
    try:
        for path, output, count in zip(files, outputs, counts):
            blocks = [(start, min(start + per_task, count))
                      for start in range(0, count, per_task)] or [(0, 0)]
            output = os.path.abspath(output)
            parts = ([output + ".raw"] if len(blocks) == 1
                     else [f"{output}.part{k}" for k in range(len(blocks))])
            # before creating or submitting anything: cleaned up if that fails; the output
            # last, so that a task renaming its .tmp during the cleanup leaves nothing
            written.append([*parts, output + ".tmp", output])
            create_empty([*parts, output + ".tmp"])
            futures.append(submit(client, job, os.path.abspath(path), blocks, parts, output,
                                  states))
        final = {future: k for k, future in enumerate(futures)}
        total = sum(states.values())
        for done in distributed.as_completed(list(dict.fromkeys([*states, *futures]))):
            if done.status == "finished":
                if done in states:
                    progress.advance(states[done], total)
                if done in final:
                    finished.add(final[done])
        for task in [*states, *futures]:  # the first error of the first failing input, in
            if task.status == "error":  # input and block order (gather's is arbitrary)
                task.result()
        client.gather(futures)
        for paths in written:
            settle(paths[-1])
    except BaseException as error:
        finished.update(k for k, future in enumerate(futures) if future.status == "finished")
        lost = client.status != "running"
        if not lost:
            with contextlib.suppress(Exception):
                client.cancel([*futures, *states])
        kept = keep_finished(finished, written, before)
        outcome = (f"{kept} of {len(files)} output files were completed and kept, the others "
                   "removed (or left as they were if no task had written to them)")
        reported = stopped_on_cluster(error, request.scheduler, outcome, lost, progress)
        if reported is error:
            raise
        raise reported from None
    finally:
        progress.close()


def cluster_job(request, layout: Layout) -> dict:
    """What every task of ``request`` needs, as plain data (it is pickled to the workers)."""
    try:
        digest = model_digest(layout.model)
    except OSError as error:
        raise UsageError(f"{request.model}: cannot read ({error.strerror or error})") from None
    return {"command": request.command, "model": os.path.abspath(request.model),
            "digest": digest, "free_flyer": request.free_flyer, "mimic": request.mimic,
            "degrees": request.degrees,
            "gravity": request.gravity, "fext": request.fext, "kinds": tuple(request.vectors),
            "size": chunk_states(request.command, layout), "sparsity": request.sparsity,
            "xacro": tuple(request.xacro), "prefix": request.dataset_prefix}


def stopped_on_cluster(error: BaseException, scheduler: str, outcome: str, lost: bool,
                       progress) -> BaseException:
    """The error to report once the cleanup after ``error`` kept what it could (``outcome``
    says what): a usage error naming the cause, or ``error`` itself (Ctrl-C, SIGTERM, and
    internal errors under DYN_TRACEBACK), after a line on stderr for the first two."""
    if isinstance(error, UsageError):
        return UsageError(f"{error}; {outcome}")
    if lost and not isinstance(error, KeyboardInterrupt):
        return UsageError(f"{scheduler}: lost the scheduler (the connection to it closed); "
                          f"{outcome}")
    if isinstance(error, (KeyboardInterrupt, Ended)):
        progress.close()
        print(f"dyn: {'interrupted' if isinstance(error, KeyboardInterrupt) else 'ended'}"
              f"; {outcome}", file=sys.stderr)
        return error
    if isinstance(error, Exception) and not os.environ.get("DYN_TRACEBACK"):
        detail = " ".join(str(error).split())[:200]
        return UsageError(f"{scheduler}: a task failed on the cluster "
                          f"({type(error).__name__}: {detail}); {outcome}")
    return error


def settle(output: str) -> None:
    """A finished output gets the mode a file dyn creates gets (0666 less the umask): its
    placeholder was opened up for the workers (:func:`create_empty`)."""
    mask = os.umask(0)
    os.umask(mask)
    with contextlib.suppress(OSError):
        os.chmod(output, 0o666 & ~mask)


def create_empty(paths) -> None:
    """Make the files the tasks will write (see the module's docstring), writable by
    whoever may write their folder while the run lasts (workers may run as another user;
    a finished output is then settled, see :func:`settle`)."""
    for path in paths:
        try:
            open(path, "wb").close()
            folder = os.stat(os.path.dirname(os.path.abspath(path))).st_mode
            os.chmod(path, (0o666 & folder) | 0o600)
        except OSError as error:
            raise UsageError(f"{path}: cannot write ({error.strerror or error})") from None


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


def keep_finished(finished: set, written, before: dict) -> int:
    """Remove the files of every input not in ``finished`` (the indexes of the inputs whose
    last task finished), except an output that existed ``before`` the run and that no task
    has written to since (its :func:`snapshot` unchanged); count the outputs kept."""
    kept = 0
    for k, paths in enumerate(written):
        if k in finished:
            settle(paths[-1])
            kept += 1
            continue
        for path in paths:
            if before.get(path) is not None and snapshot(path) == before[path]:
                continue
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
    return kept


def snapshot(path: str):
    """(inode, size, modification time) of an existing file, else None."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns


def states_in(path: str, layout: Layout, kinds, prefix: str | None = None,
              warns: bool = True) -> int:
    """The number of states of a file of arrays, its arrays checked (headers only; an HDF5
    file's in the group ``prefix``); ``warns`` of arrays it does not read."""
    source = Input.open(path, prefix)
    try:
        return source.members(layout, kinds, warns=warns)[0].count
    finally:
        source.stream.close()



# ----------------------------------------------------------------------------- on a worker

def worker_model(job: dict):
    """The model of ``job``, loaded once per worker process and model version.

    It is kept by path and --free-flyer with the :func:`model_digest` the client computed
    from its own load; a job with another digest (the file was edited between runs on a
    long-lived cluster) loads it again. What the worker loaded is digested too: a digest
    other than the client's (the file changed during the run, or the workers do not see the
    same file) is an error, not results from another model.
    """
    key = (job["model"], job["free_flyer"], job["xacro"], job["mimic"])
    cached = _MODELS.get(key)
    if cached is None or cached[0] != job["digest"]:
        model = load(job["model"], job["free_flyer"], xacro=job["xacro"], mimic=key[3])
        if model_digest(model) != job["digest"]:
            raise UsageError(f"{job['model']}: the workers read another version of the model "
                             "than dyn did (it changed during the run, or is not the same "
                             "file on the workers); run again")
        cached = _MODELS[key] = (job["digest"], model)
    return cached[1]


def model_digest(model) -> str:
    """A SHA-256 of the bytes of every file the model was read from, in the order it read
    them (its description's ``files``: the model, its MJCF includes, the meshes MJCF
    inertias may come from; a URDF's meshes do not change the dynamics). Names are left
    out: the same bytes behind a link that resolves differently on a worker are the same
    model."""
    import hashlib

    digest = hashlib.sha256()
    for name in model.description.files:
        try:
            with open(name, "rb") as stream:
                digest.update(f"\0{os.fstat(stream.fileno()).st_size}\0".encode())
                for block in iter(lambda: stream.read(1 << 20), b""):
                    digest.update(block)
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()


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
    does, written to ``target`` (the .npz if ``whole``, else raw float64 rows).

    The raw rows go to ``target``.raw (if ``whole``) or ``target``, which the client made:
    it is opened first and never created (see the module's docstring)."""
    raw = target + ".raw" if whole else target
    with reopen(raw) as out:
        model = worker_model(job)
        layout = Layout.of(model, job["degrees"])
        gravity = parse_gravity(job["gravity"])
        wrenches = parse_fext(job["fext"], model)
        source = Input.open(path, job["prefix"])
        try:
            members = source.members(layout, job["kinds"], job["size"], warns=False)
            for states in npz_chunks(members, path, layout, wrenches, job["size"], start, stop):
                result = compute(job["command"], layout, states, gravity)
                np.ascontiguousarray(result, dtype=np.float64).tofile(out)
        finally:
            source.stream.close()
    if whole:
        write_npz(job, layout, [raw], stop - start, target)
    return stop - start


def reopen(path: str):
    """``path``, a file the client made, opened to be written anew; never created: if the
    client removed it (the run was stopped), this fails and the task writes nothing."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_BINARY", 0)),
                     "wb")


@one_line
def assemble(job: dict, counts: list[int], target: str) -> int:
    """Join the part files of one input (in order) into ``target``."""
    parts = [f"{target}.part{k}" for k in range(len(counts))]
    write_npz(job, None, parts, sum(counts), target)
    return sum(counts)


def write_npz(job: dict, layout: Layout | None, raws: list[str], count: int,
              target: str) -> None:
    """The archive ``--output FILE.npz`` writes: the result rows, ``dofs`` (and
    ``sparsity`` for mass --sparsity); the raw files are removed.

    The raw files are opened before anything is written; the archive is written to
    ``target``.tmp, which the client made (:func:`reopen`), and renamed to ``target`` once
    complete: a task never leaves a partial ``target``, nor one after the client's cleanup.
    """
    with contextlib.ExitStack() as opened:
        parts = [opened.enter_context(open(raw, "rb")) for raw in raws]
        if layout is None:
            layout = Layout.of(worker_model(job), job["degrees"])
        key = COMPUTATIONS[job["command"]].key
        nv = layout.model.nv
        shape = (nv, nv) if key == "M" else (nv,)
        pattern = dense_pattern(layout.model.dof_parent) if job["sparsity"] else None
        extra = npz_extra(layout.v_labels, pattern)
        with reopen(target + ".tmp") as stream:
            write_archive(stream, key, (count, *shape), parts, extra)
            stream.flush()
            os.fsync(stream.fileno())  # on disk before the name points at it
        os.replace(target + ".tmp", target)
    for raw in raws:
        with contextlib.suppress(FileNotFoundError):
            os.remove(raw)
