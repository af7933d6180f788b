"""A large JSON Lines file run over worker processes: parts of the file parsed, computed
and written in parallel, then joined in input order (:func:`run_parts`).

JSON Lines costs about a microsecond per number to parse and to print (Python's float
conversions), tens of times the engine's cost, and one process does it on one core. The
file is cut at line ends into parts; forked worker processes (as many as the caller asks,
one engine thread each) read their part with the file's line numbers, compute and write
its results to a temporary file next to the output, and the parent appends the parts to
the output in order as they finish. The output is byte for byte the one process's: the
same readers, engine calls and writers run on every part, and parts are whole chunks of
the one-process run, so every state is computed in the same chunk (BLAS rounds alike).

Why by hand (benchmarks/bench_parts.py, table "library"; docs/benchmarks.md "Text files
over processes"): the library way -- one process whose text is parsed by pyarrow's own
threads (``pyarrow.json.read_json``, ``use_threads=True``), the engine's threads, dyn's
writers -- took 2.13x the split's time on 60 MB of 7-dof arm states and 1.55x on the
two-link arm's, on a quiet 2-core machine (2026-12-05; the split was 1.39x and 1.45x as
fast as one process), so the split stays, over the 1.3x a hand-made way must beat the
library by. ``read_json`` parses only (the printing stays on one core) and holds the whole
file in memory. CSV is not split: pyarrow's threaded CSV reader, in one process
(:mod:`.csvfile`), took 1.28x (7-dof arm) and 0.81x (two-link arm) the split's time, short
of that 1.3x.

At a bad line, the parts before it and the states of its part before it are written, and
the error is the one process's (same line number, same message, "stopped there"); later
parts are dropped. A file that the split would misnumber runs in one process
(:func:`run_parts` returns None): carriage returns that do not end a line (text mode
reads them as line ends). Warnings are given once, by the parent. At most two parts per
worker are computed ahead of the one being appended, so a slow reader of stdout holds up
the workers rather than filling the disk. An interrupt (KeyboardInterrupt, or
:class:`.errors.Ended` raised by the caller's signal handlers) ends the run as it ends one
process (:func:`.stream.stopped`), once the temporary parts are removed. Workers end with
the parent, whatever ends it: each watches its parent's sentinel
(:func:`multiprocessing.parent_process`). Workers are forked (the model is parsed once):
on Linux only (macOS's BLAS is not safe in a forked child), and only while the parent has
no other thread; else one process runs.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from treedyn.engine import configure

from .compute import COMPUTATIONS, collect, compute
from .errors import Ended, OutputError, StatesWarning, UsageError, warn
from .layout import Layout
from .outputs import open_output
from .paths import remove_stale, temporary_name
from .sinks import CsvSink, JsonSink, NpzSink, RawSink, Sink
from .source import CHUNK, INPUT_FORMATS, Input
from .stream import Progress, stopped
from .text import is_data

PART_BYTES = 16 << 20  # bytes of text per part
SCAN = 1 << 20  # bytes read at a time when surveying a part
WORKER_DIED = ("dyn: a worker process ended abruptly (killed, or out of memory?); "
               "TREEDYN_PROCESSES=1 runs in one process")
STOPPING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}  # held while the workers start


@dataclass
class Job:
    """Everything a worker needs, set in the parent before it forks (never pickled)."""

    command: str
    path: str  # the input file
    layout: Layout
    gravity: np.ndarray | None
    wrenches: dict
    chunk: int  # states per chunk
    output: str  # of the parts: "json" or "csv" text as the output's, "raw" rows for .npz
    target: str | None  # the output file (None: stdout), for messages
    folder: str  # the parts' temporary files


@dataclass
class Outcome:
    """What a worker did with one part."""

    count: int  # states written to the part file
    error: str | None = None  # the bad line's message (the states before it are written)
    warnings: list[str] = field(default_factory=list)


class Survey(NamedTuple):
    """A byte range of the file, counted."""

    lines: int
    data: int  # lines that hold a state (is_data)
    fine: bool  # it reads the same apart from the rest of the file


class Part(NamedTuple):
    """States of whole chunks, found from the byte range where they begin."""

    start: int  # byte offset of that range
    first: int  # its first line number
    skip: int  # data lines there before the part's first state
    take: int  # the part's states


_JOB: dict = {}  # "job": the Job of the forked workers


def run_parts(layout: Layout, command: str, path: str, open_sink: Callable[[], Sink],
              output: str | None, output_kind: str, workers: int,
              part_bytes: int = PART_BYTES, gravity=None, wrenches: dict | None = None,
              chunk: int = CHUNK, progress: Progress | None = None) -> Sink | None:
    """Stream the states of the JSON Lines file ``path`` through
    ``COMPUTATIONS[command]`` of ``layout`` in ``workers`` forked processes, parts of about
    ``part_bytes`` each, into the sink ``open_sink()`` opens: ``output_kind`` "json", "csv"
    or "npz" (its format), ``output`` its file (None: stdout; named in messages). Returns
    the closed sink, or None (nothing done, nothing opened) when the file is not JSON Lines
    (CSV is read by pyarrow's threads, :mod:`.csvfile`), cannot be split safely or has
    fewer than two parts: then run it in one process (:func:`.stream.run`).
    ``gravity``, ``wrenches``, ``chunk`` and ``progress`` as for :func:`.stream.run`."""
    if (INPUT_FORMATS.get(os.path.splitext(path)[1].lower()) != "jsonl" or workers < 2
            or threading.active_count() > 1
            or not sys.platform.startswith("linux")):  # fork: after BLAS, safe on Linux
        return None
    try:
        size = os.path.getsize(path)
        bounds = split(path, 0, size, part_bytes)
    except OSError:  # unreadable: one process reports it, as ever
        return None
    if len(bounds) < 2:
        return None
    folder = None
    try:
        try:
            folder = parts_folder(output)
        except OSError:  # one process reports an unwritable output as it does
            return None
        _JOB["job"] = Job(command, path, layout, gravity, wrenches or {}, chunk,
                          "raw" if output_kind == "npz" else output_kind, output, folder)
        return run(bounds, size, min(workers, len(bounds)), part_bytes, open_sink, progress)
    finally:
        _JOB.clear()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def parts_folder(output: str | None) -> str:
    """A new folder for the parts: beside the output, named as its temporaries are (so the
    next run to that output removes it if this one is killed, see
    :func:`.paths.remove_stale`), or a temporary folder for stdout."""
    if output is None:
        return tempfile.mkdtemp(prefix=".dyn-parts-")
    target = os.path.realpath(output)
    remove_stale(target)
    folder = temporary_name(target, ".parts")
    os.mkdir(folder, 0o700)
    return folder


def split(path: str, start: int, size: int, step: int) -> list[tuple[int, int]]:
    """Byte ranges [a, b) from ``start`` to ``size``, each ending after a line end, of
    about ``step`` bytes (the last one ends the file)."""
    bounds, a = [], start
    with open(path, "rb") as stream:
        while a < size:
            b = a + step
            if b >= size:
                bounds.append((a, size))
                break
            stream.seek(b)
            while True:
                block = stream.read(1 << 16)
                found = block.find(b"\n")
                if not block or found >= 0:
                    b = b + found + 1 if block else size
                    break
                b += len(block)
            bounds.append((a, b))
            a = b
    return bounds


def survey(path: str, start: int, end: int) -> Survey:
    """Lines and data lines of bytes [start, end) of JSON Lines, read a megabyte of whole
    lines at a time, and whether they read the same apart: no carriage return that does
    not end a line (text mode would end a line there, unlike the count here)."""
    lines = data = 0
    carry = bytearray()  # the line begun, not ended yet (grown in place: long lines)
    with open(path, "rb") as stream:
        stream.seek(start)
        left = end - start
        while True:
            block = stream.read(min(SCAN, left)) if left > 0 else b""
            left -= len(block)
            cut = block.rfind(b"\n") + 1 if block else len(block)
            if block and not cut:
                carry += block
                continue
            complete = b"".join((carry, memoryview(block)[:cut])) if carry else block[:cut]
            carry = bytearray(block[cut:])
            if b"\r" in complete and not returns_end_lines(complete):
                return Survey(0, 0, False)
            if start == 0 and lines == 0 and complete.startswith(b"\xef\xbb\xbf"):
                complete = complete[3:]  # a BOM, which the reader drops
            ends = line_ends(complete)
            count = len(ends) + (not complete.endswith(b"\n") and bool(complete))  # an unended last
            lines += count
            if no_blank_line(complete, ends):
                data += count
            else:
                pieces = complete.decode("utf-8", errors="surrogateescape").split("\n")
                data += sum(is_data(piece, "jsonl") for piece in pieces[:count])
            if not block:
                return Survey(lines, data, True)


def line_ends(text: bytes) -> np.ndarray:
    """The offsets of the line feeds in ``text`` (numpy finds them in 0.36x the time
    ``bytes.count`` takes to count them)."""
    return np.flatnonzero(np.frombuffer(text, np.uint8) == ord("\n"))


def returns_end_lines(text: bytes) -> bool:
    """Whether every carriage return in ``text`` is followed by a line feed."""
    codes = np.frombuffer(text, np.uint8)
    after = np.flatnonzero(codes == ord("\r")) + 1
    return not len(after) or (after[-1] < len(codes) and bool((codes[after] == ord("\n")).all()))


BLANK = np.zeros(256, bool)  # the ASCII codes str.strip() removes, by code
BLANK[list(b" \t\r\n\x0b\x0c\x1c\x1d\x1e\x1f")] = True


def no_blank_line(complete: bytes, ends: np.ndarray) -> bool:
    """Whether whole lines of text (line feeds at ``ends``; every carriage return ends a
    line) surely hold no line that :func:`.text.is_data` skips, told from the first byte of
    each line (a look-up per line, where decoding and splitting the text took 3.5 times as
    long); a False may be wrong (the caller then counts line by line). JSON Lines skips
    lines of blanks, which in ASCII text begin with one of :data:`BLANK`."""
    if not complete.isascii():
        return False
    codes = np.frombuffer(complete, np.uint8)
    starts = ends + 1
    firsts = codes[np.append(0, starts[starts < len(codes)])] if len(codes) else codes
    return not BLANK[firsts].any()


def run(bounds, size: int, workers: int, part_bytes: int,
        open_sink: Callable[[], Sink], progress: Progress | None) -> Sink | None:
    """Survey the byte ranges, then compute parts of whole chunks in ``workers`` processes
    and join them; None if a range cannot be read apart (nothing opened then)."""
    job = _JOB["job"]
    try:
        pool = fork_pool(workers)
    except (KeyboardInterrupt, Ended) as error:
        raise unopened(job.target, error) from None
    try:
        try:
            pending = [pool.submit(survey, job.path, a, b) for a, b in bounds]
            surveys = [future.result() for future in pending]
            if not all(part.fine for part in surveys):
                return None
            parts = plan(surveys, [a for a, _ in bounds], 1, job.chunk, size, part_bytes)
            if len(parts) < 2:
                return None
            sink = open_sink()
        except (KeyboardInterrupt, Ended) as error:
            raise unopened(job.target, error) from None
        try:
            join(pool, parts, sink, job.folder, progress, sum(part.data for part in surveys),
                 2 * workers)
            sink.close()
        except BaseException as error:
            raise stopped(sink, error) from None
        return sink
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def unopened(output: str | None, error: BaseException) -> BaseException:
    """A Ctrl-C or signal before the output was opened: the line saying the output file is
    as it was (stdout got nothing either), and the error to raise on."""
    if output is not None:
        before = "is unchanged" if os.path.exists(output) else "is not written"
        error.kept = f"{output} {before}, no state was completed"
    return error


def plan(surveys: list[Survey], starts, first: int, chunk: int, data_bytes: int,
         part_bytes: int) -> list[Part]:
    """Parts of whole chunks of ``chunk`` states (so every state is computed in the chunk
    one process would put it in), about ``part_bytes`` each: (byte start and first line
    number of the range where the part begins, data lines to skip there, states)."""
    lines = np.array([survey.lines for survey in surveys])
    data = np.array([survey.data for survey in surveys])
    total = int(data.sum())
    line_first = first + np.concatenate([[0], np.cumsum(lines)[:-1]])
    data_first = np.concatenate([[0], np.cumsum(data)[:-1]])
    per_state = data_bytes / max(total, 1)
    step = chunk * max(1, round(part_bytes / (chunk * per_state)))
    parts = []
    for begin in range(0, total, step):
        r = int(np.searchsorted(data_first, begin, side="right")) - 1  # holds that state
        parts.append(Part(int(starts[r]), int(line_first[r]), begin - int(data_first[r]),
                          min(step, total - begin)))
    return parts


def join(pool, parts: list[Part], sink: Sink, folder: str, progress, total: int,
         ahead: int) -> None:
    """Compute the parts, at most ``ahead`` past the one being joined (their files wait on
    disk), and append them to ``sink`` in order; at a part's error, what it wrote, then
    the error."""
    from concurrent.futures.process import BrokenProcessPool

    where = re.compile(re.escape(_JOB["job"].path) + r":\d+: ")
    warned: set[str] = set()  # as one process: once per cause, at its first line
    counts: list[int] = []
    futures = [pool.submit(_run_part, index, *part) for index, part in enumerate(parts[:ahead])]
    for index, future in enumerate(futures):
        try:
            outcome = future.result()
        except BrokenProcessPool:
            raise UsageError(WORKER_DIED) from None
        if index + ahead < len(parts):
            futures.append(pool.submit(_run_part, index + ahead, *parts[index + ahead]))
        for message in outcome.warnings:
            if where.sub("", message, count=1) not in warned:
                warned.add(where.sub("", message, count=1))
                warn(message)
        counts.append(outcome.count)
        if not isinstance(sink, NpzSink):
            append_text(sink, part_file(folder, index), outcome.count)
            with contextlib.suppress(FileNotFoundError):  # a part that could not be written
                os.remove(part_file(folder, index))  # the disk holds the parts not yet joined
        if progress is not None:
            progress(outcome.count, total, None)
        if outcome.error is not None:
            break
    if isinstance(sink, NpzSink):
        append_rows(sink, folder, counts)
    if outcome.error is not None:
        raise UsageError(outcome.error)


def append_text(sink: Sink, path: str, count: int) -> None:
    """A text part's lines after the output's (the CSV header first), byte for byte."""
    if count == 0:
        return
    target = sink.stream
    with open(path, "rb") as part:
        def copy() -> None:  # inside record()
            if isinstance(sink, CsvSink):
                sink.write_header()
            if hasattr(target, "buffer"):
                target.flush()
                shutil.copyfileobj(part, target.buffer, 1 << 20)
                target.buffer.flush()
            else:  # a text stream with no bytes below it (tests' stdout)
                target.write(part.read().decode())
                target.flush()

        sink.record(copy, count)


def append_rows(sink: NpzSink, folder: str, counts: list[int]) -> None:
    """The parts' raw rows into the archive, which now knows its number of states."""
    sink.total = sum(counts)
    width = int(np.prod(sink.shape, dtype=np.int64))
    step = max(1, (8 << 20) // (8 * width))
    for index, count in enumerate(counts):
        if count == 0:  # perhaps no file: a part that could not be written is removed
            continue
        with open(part_file(folder, index), "rb") as part:
            for start in range(0, count, step):
                rows = np.fromfile(part, dtype=np.float64, count=min(step, count - start) * width)
                sink.put(rows.reshape(-1, *sink.shape), None)


def part_file(folder: str, index: int) -> str:
    return os.path.join(folder, f"part{index:06d}")


def _run_part(index: int, start: int, first: int, skip: int, take: int) -> Outcome:
    """Read, compute and write one part (in a worker): ``take`` states from the data line
    after the first ``skip`` ones of the range at byte ``start`` (line ``first``); a bad
    line ends it as in one process, with the states before it written."""
    job = _JOB["job"]
    source = Input.part(job.path, start, first, skip, take)
    chunks = source.chunks(job.layout, COMPUTATIONS[job.command].kinds, job.wrenches,
                           job.chunk)
    path = part_file(job.folder, index)
    if job.output == "raw":
        sink: Sink = RawSink(open_output(path, True)[0], path)
    elif job.output == "csv":
        sink = CsvSink(open_output(path, False)[0], None, path)  # header: the parent's
    else:
        sink = JsonSink(open_output(path, False)[0], COMPUTATIONS[job.command].key, {}, path)
    outcome = Outcome(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StatesWarning)
        try:
            try:
                for states in chunks:
                    sink.put(collect(lambda: compute(job.command, job.layout, states,
                                                     job.gravity), states, sink), states)
            finally:
                sink.close()
        except OutputError as error:  # the part file: say whose part it is
            where = (f"{job.target} next to it" if job.target is not None
                     else f"stdout in {os.path.dirname(job.folder)}")
            outcome.error = f"dyn: cannot write a temporary part of {where} ({error.reason})"
        except UsageError as error:
            outcome.error = str(error)
    for caught_one in caught:  # the parent gives the states' warnings, once each
        if issubclass(caught_one.category, StatesWarning):
            outcome.warnings.append(str(caught_one.message))
        else:
            warnings.showwarning(caught_one.message, caught_one.category,
                                 caught_one.filename, caught_one.lineno)
    outcome.count = sink.count
    return outcome


def flush_stdio() -> None:
    """Flush stdout and stderr: a forked worker must not write the parent's buffers again."""
    for stdio in (sys.stdout, sys.stderr):
        if stdio is not None:
            stdio.flush()


def fork_pool(workers: int, interrupt=signal.SIG_DFL):
    """A ProcessPoolExecutor of ``workers`` forked processes, all started before it is
    returned (fork starts them at the first task). Ctrl-C, SIGTERM and SIGHUP are held
    meanwhile, so that they arrive when the pool can stop them (and not inside the
    callbacks that run after a fork, where Python ignores what a handler raises).
    ``interrupt`` is the workers' SIGINT handler: SIG_IGN when the parent stops them
    itself. Raises OSError or BrokenProcessPool when the pool cannot start (no semaphores,
    no fork)."""
    from concurrent.futures import ProcessPoolExecutor

    flush_stdio()
    pool = None
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                   initializer=start_worker, initargs=(interrupt,))
        pool.submit(int).result()
    except BaseException:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
    return pool


def start_worker(interrupt=signal.SIG_DFL) -> None:
    """In each worker: one engine thread; Ctrl-C (unless ``interrupt`` is SIG_IGN: the
    parent then stops the worker), SIGTERM or SIGHUP end it quietly (the parent reports),
    and so does the parent's end, however it comes (no worker outlives it): a thread
    waits on the parent's sentinel, a pipe that multiprocessing closes only when the
    parent (and the sibling workers forked after this one, which end the same way) is
    gone."""
    signal.signal(signal.SIGINT, interrupt)
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=end_with, args=(parent.sentinel,), daemon=True,
                         name="dyn-parent-watch").start()
    configure(threads=1)


def end_with(sentinel: int) -> None:
    """End this worker at once when ``sentinel`` (its parent's) is ready: the parent is gone."""
    from multiprocessing.connection import wait

    wait([sentinel])
    os._exit(1)
