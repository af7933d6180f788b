"""A large JSON Lines input run over worker processes
(:func:`treedyn.pipeline.parts.run_parts`) when the command asks for it: a regular file of
at least two parts (:func:`split_bytes`), results into a file or stdout as JSON Lines, CSV
or .npz, with TREEDYN_PROCESSES workers (:func:`.pool.processes`) and parts of
TREEDYN_PART_BYTES. The split beat the library way (pyarrow's threaded JSON reader) by
2.13x on 7-dof arm states and 1.55x on the two-link arm's (benchmarks/bench_parts.py, a
quiet 2-core machine). A CSV input is never split: pyarrow's threaded CSV reader, in one
process (:mod:`treedyn.pipeline.csvfile`), came within 1.28x (7-dof arm) of the split, and
beat it on the two-link arm (the split took 1.23x its time).

``mass`` into an .npz runs in one process: the parent's join of the parts copies nv x nv
numbers a state, and the split was only 1.15x faster (benchmarks/bench_parts.py). Ctrl-C,
SIGTERM, SIGHUP and a closed stdout end dyn as they end one process, once the temporary
parts are removed.
"""
from __future__ import annotations

import os
import signal

from treedyn.pipeline.parts import PART_BYTES, run_parts
from treedyn.pipeline.source import INPUT_FORMATS

from ..settings import whole
from .pool import ended_by_signals, processes
from .progress import Progress, wanted
from .request import chunk_states, open_sink, sink_kind


def split_bytes() -> int:
    """The smallest text file that is split: two parts."""
    return 2 * part_bytes()


def part_bytes() -> int:
    """Bytes per part: TREEDYN_PART_BYTES (tests use small parts), else PART_BYTES."""
    return whole("TREEDYN_PART_BYTES", PART_BYTES)


def try_parts(request, layout, gravity, wrenches) -> bool:
    """Run ``request`` over parts of its input file in worker processes; False (nothing
    done, nothing opened) when the input is not a large regular JSON Lines file, or cannot
    be split safely, or the results go to a table."""
    path = request.input
    kind = INPUT_FORMATS.get(os.path.splitext(path)[1].lower())
    workers = processes()
    if (path == "-" or kind != "jsonl" or workers < 2 or request.sparsity
            or not os.path.isfile(path)):
        return False
    output = sink_kind(request)
    if output in ("table", "parquet", "hdf5"):  # (Parquet and HDF5 are written by one process)
        return False
    if request.command == "mass" and output == "npz":
        return False  # nv x nv numbers a state to join: 1.15x faster split, not worth it
    if os.path.getsize(path) < split_bytes():
        return False
    # The parent talks to the workers through pipes: a worker that dies (Ctrl-C) must not
    # end it through SIGPIPE before it cleans up. A reader of stdout that goes away ends
    # it as it would end one process (dyn lets SIGPIPE do that), after the clean-up.
    # SIGTERM and SIGHUP end dyn as ever, but after the parts are removed.
    quiet_end = signal.getsignal(signal.SIGPIPE) == signal.SIG_DFL
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    broken_pipe = False
    with ended_by_signals():  # from before the parts' folder is made: a signal never leaves it
        progress = Progress(wanted(request.quiet, results_on_stdout=request.output is None))
        try:
            return run_parts(layout, request.command, path,
                             lambda: open_sink(request, layout, single=False), request.output,
                             output, workers, part_bytes(), gravity, wrenches,
                             chunk_states(request.command, layout), progress.advance
                             ) is not None
        except BrokenPipeError:
            if request.output is not None or not quiet_end:
                raise
            broken_pipe = True  # stdout's reader went away: end as one process does
            return True
        finally:
            progress.close()
            signal.signal(signal.SIGPIPE, signal.SIG_DFL if quiet_end else signal.SIG_IGN)
            if broken_pipe:
                os.kill(os.getpid(), signal.SIGPIPE)
