"""Worker processes forked from dyn, and how signals end a run that has them.

One helper starts the pool of the parallel path (text parts, :mod:`.parts`): fork after
the parent's stdio is flushed, with Ctrl-C, SIGTERM and SIGHUP held until every worker
exists, each worker on one engine thread and ending with its parent
(``PR_SET_PDEATHSIG``). :func:`ended_by_signals` turns SIGTERM and SIGHUP (``kill``,
``timeout``, a cancelled CI job) into :class:`Ended` while a run has clean-up to do
(worker processes, temporary parts, a cluster's placeholders), then ends dyn by the same
signal, as it would have ended without them.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading

from treedyn.engine.batch.threads import configure

from treedyn.pipeline.errors import Ended

from ..console import say_kept
from ..settings import whole

MAX_PROCESSES = 8
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies
WORKER_DIED = ("dyn: a worker process ended abruptly (killed, or out of memory?); "
               "TREEDYN_PROCESSES=1 runs in one process")


def processes() -> int:
    """Worker processes: TREEDYN_PROCESSES, else the CPUs this process may use (at most
    MAX_PROCESSES); 1 turns the parallel paths off."""
    if os.environ.get("TREEDYN_PROCESSES"):
        return whole("TREEDYN_PROCESSES", 1)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return min(cpus, MAX_PROCESSES)


def flush_stdio() -> None:
    """Flush stdout and stderr: a forked worker must not write the parent's buffers again."""
    for stdio in (sys.stdout, sys.stderr):
        if stdio is not None:
            stdio.flush()


STOPPING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}  # held while the workers start


def fork_pool(workers: int, interrupt=signal.SIG_DFL):
    """A ProcessPoolExecutor of ``workers`` forked processes, all started before it is
    returned (fork starts them at the first task). Ctrl-C, SIGTERM and SIGHUP are held
    meanwhile, so that they arrive when the pool can stop them (and not inside the
    callbacks that run after a fork, where Python ignores what a handler raises).
    ``interrupt`` is the workers' SIGINT handler: SIG_IGN when the parent stops them
    itself. Raises OSError or BrokenProcessPool when the pool cannot start (no semaphores,
    no fork)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    flush_stdio()
    pool = None
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        pool = ProcessPoolExecutor(workers, mp_context=get_context("fork"),
                                   initializer=start_worker, initargs=(os.getpid(), interrupt))
        pool.submit(int).result()
    except BaseException:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
    return pool


def start_worker(parent: int, interrupt=signal.SIG_DFL) -> None:
    """In each worker: one engine thread; Ctrl-C (unless ``interrupt`` is SIG_IGN: the
    parent then stops the worker), SIGTERM or SIGHUP end it quietly (the parent reports),
    and so does the parent's death (no worker outlives it)."""
    signal.signal(signal.SIGINT, interrupt)
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):  # not Linux's C library: the pipes end it later
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
    configure(threads=1)


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
