"""Many states through one process: chunks read, computed and written as they come.

A file output appears only complete (see :mod:`..io.sinks`): after a bad row or a signal
the file is unchanged, the states before the stop are in NAME.partial.EXT and the error
says how many (:func:`stopped`).
"""
from __future__ import annotations

import contextlib
import sys
from concurrent.futures import ThreadPoolExecutor

from ..console import one_line
from ..errors import CorruptInput, Ended, OutputError, UsageError
from ..io.layout import Layout
from ..io.sinks import NpzSink, Sink, states_text
from ..io.source import Input
from .compute import collect, compute
from .progress import Progress, wanted
from .request import Request, chunk_states, open_sink


def stream(request: Request, layout: Layout, gravity, wrenches) -> None:
    """Many states: chunks in, results out as they are computed, progress on stderr.

    A chunk is computed on a worker thread while the next one is read and the previous
    one written (numpy releases the GIL in the engine, so parsing and writing overlap it);
    results are written in input order. On an error, the states before the bad one are
    computed and written, and kept as :func:`stopped` says.
    """
    source = Input.open(request.input, request.dataset_prefix)
    size = chunk_states(request.command, layout)
    chunks = source.chunks(layout, tuple(request.vectors), wrenches, size)
    sink = open_sink(request, layout, single=False)
    if isinstance(sink, NpzSink):  # the count is known once the first chunk is read
        sink.total = lambda: source.total
    progress = Progress(wanted(request.quiet, results_on_stdout=request.output is None))
    worker = ThreadPoolExecutor(1, thread_name_prefix="dyn-compute")
    try:
        pending = None  # (future, states, share of the input read) of the chunk computed
        for states in ahead(chunks):
            done = None if pending is None else (
                collect(pending[0].result, pending[1], sink), *pending[1:])
            pending = None if states is None else (
                worker.submit(compute, request.command, layout, states, gravity), states,
                source.consumed())
            if done is not None:
                result, states_done, consumed = done
                before = sink.count
                sink.put(result, states_done)
                progress.advance(sink.count - before, source.total, consumed)
        progress.close()
        sink.close()  # (a signal while the file is completed: kept as for any other)
    except BaseException as error:
        progress.close()
        raise stopped(sink, error) from None
    finally:
        worker.shutdown(wait=True)


def ahead(chunks):
    """The chunks, then None; a read error (a bad row) is raised one step late, after the
    None, so that the chunk still being computed is written first."""
    try:
        yield from chunks
    except Exception as error:  # noqa: BLE001 -- re-raised below, after the last chunk
        yield None
        raise error from None
    yield None


def stopped(sink: Sink, error: BaseException) -> BaseException:
    """End the output after an error (:meth:`.Sink.keep`: a file is left unchanged and the
    states completed go to NAME.partial.EXT); a UsageError then also says what was kept,
    and a signal's line on stderr says it.

    A damaged input (a failed CRC-32) is only found once the damaged part was read, so the
    states before it are not known to be good: nothing is kept then.
    """
    if isinstance(error, OutputError):  # the sink has kept what it could, and says so
        return error
    if isinstance(error, CorruptInput):
        count = states_text(sink.count)
        were = "were" if sink.count != 1 else "was"
        if sink.path is None:
            return UsageError(f"{error}; the {count} written to stdout before this was "
                              f"found {were} read from that file and may be wrong")
        sink.discard()
        before = "is unchanged" if sink.existed else "is not written"
        return UsageError(f"{error}; {sink.where()} {before} and nothing is kept: the "
                          f"{count} computed {were} read from that file and may be wrong")
    held = sink.keep()
    if isinstance(error, (KeyboardInterrupt, Ended)):
        if held or sink.path is not None:
            said(error, sink.outcome(held))
        return error
    if not isinstance(error, UsageError) or not (held or sink.count):
        return error  # (a bad first row: the output is as it was, as for any bad input)
    return UsageError(f"{error}; stopped there: {sink.outcome(held, before_it=True)}")


def said(error: BaseException, outcome: str) -> None:
    """The line an interrupted run ends with (Ctrl-C, SIGTERM, SIGHUP): what it left."""
    how = "interrupted" if isinstance(error, KeyboardInterrupt) else "ended by a signal"
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr closed or full
        print(one_line(f"dyn: {how}; {outcome}"), file=sys.stderr)  # (an output path)
