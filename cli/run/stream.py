"""Many states through one process: chunks read, computed and written as they come.

The output ends cleanly on every path: after a bad row the states before it are written
and the error says how many (:func:`stopped`); an output that received no state is
removed, or left as it was if it existed.
"""
from __future__ import annotations

import contextlib
import sys
from concurrent.futures import ThreadPoolExecutor

from ..console import one_line
from ..errors import CorruptInput, Ended, OutputError, UsageError
from ..io.layout import Layout
from ..io.sinks import BesideSink, NpzSink, Sink
from ..io.source import Input
from .compute import collect, compute
from .progress import Progress, wanted
from .request import Request, chunk_states, open_sink


def stream(request: Request, layout: Layout, gravity, wrenches) -> None:
    """Many states: chunks in, results out as they are computed, progress on stderr.

    A chunk is computed on a worker thread while the next one is read and the previous
    one written (numpy releases the GIL in the engine, so parsing and writing overlap it);
    results are written in input order. On an error, the states before the bad one are
    computed and written, the output is ended cleanly and the error says how many states
    it holds (a file that received no state is removed, or left as it was if it existed).
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
    except BaseException as error:
        progress.close()
        raise stopped(sink, error) from None
    finally:
        worker.shutdown(wait=True)
    progress.close()
    sink.close()


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
    """End the output after an error; a UsageError then also says what the output holds.

    A damaged input (a failed CRC-32) is only found once the damaged part was read, so the
    states before it are not known to be good: an output file is removed then.
    """
    if isinstance(error, OutputError):  # the sink has ended its output already
        return error
    if sink.count == 0:
        removed = sink.abort()
        if isinstance(error, (KeyboardInterrupt, Ended)) and sink.path is not None:
            said(error, f"nothing was written to {sink.where()}"
                        + ("" if removed else " (it is left as it was)"))
        return error
    states, were = (f"{sink.count} states", "were") if sink.count > 1 else ("1 state", "was")
    if isinstance(error, CorruptInput):
        if sink.path is None:
            return UsageError(f"{error}; the {states} written to stdout before this was "
                              f"found {were} read from that file and may be wrong")
        sink.abort()
        return UsageError(f"{error}; {sink.where()} is removed: the {states} written to it "
                          f"{were} read from that file and may be wrong")
    sink.close()
    held = "saved in" if isinstance(sink, BesideSink) else "written to"
    if isinstance(error, (KeyboardInterrupt, Ended)):
        said(error, f"the first {states} {'are' if sink.count > 1 else 'is'} {held} "
                    f"{sink.where()}")
    if not isinstance(error, UsageError):
        return error
    return UsageError(f"{error}; stopped there: the {states} before it "
                      f"{'are' if sink.count > 1 else 'is'} {held} {sink.where()}")


def said(error: BaseException, outcome: str) -> None:
    """The line an interrupted run ends with (Ctrl-C, SIGTERM, SIGHUP): what it left."""
    how = "interrupted" if isinstance(error, KeyboardInterrupt) else "ended by a signal"
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr closed or full
        print(one_line(f"dyn: {how}; {outcome}"), file=sys.stderr)  # (an output path)
