"""How many worker processes a run may use (:func:`processes`), and how signals end a run
that has clean-up to do: :func:`ended_by_signals` turns SIGTERM and SIGHUP (``kill``,
``timeout``, a cancelled CI job) into :class:`Ended` while a run has clean-up to do
(worker processes, temporary parts, a cluster's placeholders), then ends dyn by the same
signal, as it would have ended without them.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading

from treedyn.pipeline.errors import Ended

from ..console import say_kept
from ..settings import whole

MAX_PROCESSES = 8


def processes() -> int:
    """Worker processes: TREEDYN_PROCESSES, else the CPUs this process may use (at most
    MAX_PROCESSES); 1 turns the split of JSON Lines off. A CSV file is never split
    (pyarrow's threads read it; the split beat them by 1.28x at most, not the 1.3x it had
    to: benchmarks/bench_parts.py), so this count does not apply to it."""
    if os.environ.get("TREEDYN_PROCESSES"):
        return whole("TREEDYN_PROCESSES", 1)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return min(cpus, MAX_PROCESSES)


@contextlib.contextmanager
def ended_by_signals():
    """Within: SIGTERM and SIGHUP raise :class:`Ended` in this process, so the clean-up of
    the ``try``/``finally`` blocks inside runs; then the handlers are restored and the
    signal is sent again, so that dyn ends by it (exit code 128 + the signal's number where
    it cannot). A process forked inside that has not set its own handlers yet ends by the
    signal at once. Outside the main thread (a program
    that runs dyn in a thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    parent = os.getpid()

    def raise_ended(number, frame) -> None:
        if os.getpid() != parent:
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
        raise Ended(number)

    previous = {number: signal.signal(number, raise_ended)
                for number in (signal.SIGTERM, signal.SIGHUP)}

    def restore() -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)

    try:
        yield
    except Ended as ended:
        say_kept(ended)  # (before the signal ends dyn)
        restore()
        signal.signal(ended.number, signal.SIG_DFL)
        os.kill(os.getpid(), ended.number)
        # still here: the signal is blocked (or kill is not the system's); end as by it
        raise SystemExit(128 + ended.number) from None
    finally:
        restore()
