"""JSON Lines and CSV results of a run in one process, formatted in worker processes.

Printing a number costs about a microsecond (Python's ``repr``), tens of times what the
engine spends on it, so ``dyn COMMAND --input big.npz --output out.csv`` spends most of its
time turning results into text. Large text files are split over processes as a whole (see
:mod:`.parts`); every other input -- an .npz, stdin, a text file that cannot be split -- is
read and computed in this process, as ever, and only the text is made elsewhere: each
chunk's results go to a forked worker that returns the sink's own ``text()`` of them -- the
same bytes one process writes -- and this process writes the texts in input order, with at
most two chunks per worker under way.

Used on Linux (fork after BLAS is safe there) when more than one process is allowed
(``TREEDYN_PROCESSES``, as for :mod:`.parts`), the input is a file (also on stdin; not a
pipe, whose producer may pause: its states are written as they come) and the first chunk
read is full (16 384 states, so more may follow); the pool is forked then, before any
thread is started.
"""
from __future__ import annotations

import collections
import signal
import sys
import threading
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from ..errors import UsageError
from ..io.sinks import TextSink
from .pool import WORKER_DIED, fork_pool, processes
from .request import sink_kind

_SINK: dict = {}  # "sink": the TextSink whose text() the forked workers call


class Ahead:
    """Puts a chunk's results to a text sink through the worker processes: ``put`` hands
    them out and writes the texts that are ready, in order; ``settle`` writes the rest.
    Once a text cannot be had (a worker died), none after it is written."""

    def __init__(self, sink: TextSink, pool, workers: int):
        self.sink, self.pool = sink, pool
        self.limit = 2 * workers
        self.pending: collections.deque = collections.deque()  # (future, states, share)
        self.share: float | None = None  # of the input read for the last text written

    def put(self, result: np.ndarray, states, share: float | None = None) -> None:
        """Hand out the results of (the first ``len(result)`` of) a chunk of ``states``,
        read with ``share`` of the input (for the progress bar); write the texts that are
        done."""
        try:
            future = self.pool.submit(_text, result)
        except BrokenProcessPool:
            raise self._broken() from None
        self.pending.append((future, len(result), share))
        while self.pending and (len(self.pending) > self.limit or self.pending[0][0].done()):
            self._write_first()

    def settle(self) -> None:
        """Write every text still to come (before an error is reported, and at the end)."""
        while self.pending:
            self._write_first()

    def write_done(self) -> None:
        """Write the texts at the head of the queue that are made already (on Ctrl-C, and
        before a broken pool is reported: one process would have written them)."""
        while self.pending and self.pending[0][0].done() and not self.pending[0][0].exception():
            self._write_first()

    def _write_first(self) -> None:
        future, count, share = self.pending[0]
        try:
            text = future.result()
        except BrokenProcessPool:
            raise self._broken() from None
        except BaseException:
            self.pending.clear()
            raise
        self.pending.popleft()
        self.sink.put_text(text, count)
        self.share = share if share is not None else self.share

    def _broken(self) -> UsageError:
        self.write_done()
        self.pending.clear()  # the later texts would leave a gap in the output
        return UsageError(WORKER_DIED)

    def shutdown(self, wait: bool = True) -> None:
        """Stop the workers; without ``wait`` (Ctrl-C) the texts under way are dropped, and
        the workers end with this process if they are still at it (PR_SET_PDEATHSIG)."""
        self.pool.shutdown(wait=wait, cancel_futures=True)
        _SINK.clear()


def text_workers(request, source) -> int:
    """Worker processes to make the text of ``request``'s results (see the module's
    documentation), or 0 to make it in this process. Asked before the output is created:
    a bad TREEDYN_PROCESSES is reported first."""
    if (sink_kind(request) not in ("json", "csv") or not sys.platform.startswith("linux")
            or not source.size):  # a pipe: a live producer's states are written as they come
        return 0
    workers = processes()
    return workers if workers > 1 else 0


def ahead_of(sink: TextSink, workers: int) -> Ahead | None:
    """The workers' pool for ``sink``, forked now; None (one process makes the text) if a
    thread already runs (fork would copy its locks) or the pool cannot be started."""
    if threading.active_count() > 1:
        return None
    _SINK["sink"] = sink
    # The workers ignore Ctrl-C: this process stops them (a worker that died at once could
    # end it through SIGPIPE, writing the next task to it, before it reports).
    try:
        pool = fork_pool(workers, interrupt=signal.SIG_IGN)
    except (OSError, BrokenProcessPool):  # no semaphores, no fork: one process does it
        _SINK.clear()
        return None
    return Ahead(sink, pool, workers)


def _text(result: np.ndarray) -> str:
    """In a worker: the text of a chunk's results, as the parent's sink makes it."""
    return _SINK["sink"].text(result)
