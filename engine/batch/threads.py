"""Batching settings, chunk sizes and the shared thread pool.

States are processed in chunks (:data:`settings`.chunk states at a time) with work arrays
allocated once per thread and reused (:mod:`treedyn.engine.batch.memory`); with
``settings.threads > 1`` chunks run on a thread pool (numpy releases the GIL inside its
loops and BLAS calls). A batch that fits in one chunk runs in the calling thread. The
settings are process-wide and only change through :func:`configure` (a command line
passes its own settings in; the engine reads no environment).
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np


@dataclass
class Settings:
    """Module-wide batching settings (see :func:`configure`)."""

    threads: int = max(1, min(2, os.cpu_count() or 1))
    chunk: int = 4096  # states per chunk at most
    # bytes of work arrays per thread at most (smaller chunks if needed): deep models need
    # chunks of >= ~1000 states to amortise the per-body numpy calls (a 1000-body chain:
    # ~200 KB per state in RNEA); models up to ~50 bodies stay far below it
    memory: int = 256 << 20


settings = Settings()


def configure(threads: int | None = None, chunk: int | None = None,
              memory: int | None = None) -> Settings:
    """Set the worker threads (1: no pool), the chunk size in states, the work-array budget."""
    if threads is not None:
        settings.threads = max(1, int(threads))
    if chunk is not None:
        settings.chunk = max(1, int(chunk))
    if memory is not None:
        settings.memory = max(1, int(memory))
    return settings


@contextmanager
def configured(threads: int | None = None, chunk: int | None = None, memory: int | None = None):
    """Temporarily change :data:`settings` (process-wide, not per thread)."""
    saved = (settings.threads, settings.chunk, settings.memory)
    configure(threads, chunk, memory)
    try:
        yield settings
    finally:
        settings.threads, settings.chunk, settings.memory = saved


def chunk_size(plan, shapes, count: int) -> int:
    """States per chunk for ``count`` states: settings.chunk, less if the work arrays of
    ``shapes(plan)`` would exceed settings.memory (never below 64)."""
    per_state = 8 * sum(int(np.prod(shape, dtype=int)) for shape in shapes(plan).values())
    limit = max(64, settings.memory // max(per_state, 1))
    return max(1, min(count, settings.chunk, limit))


_pool = None  # concurrent.futures.ThreadPoolExecutor, made on first use
_pool_key = (0, 0)
_pool_lock = threading.Lock()


def _executor(threads: int):
    """The shared pool; a new one after a fork (threads do not survive it) or a resize.

    A replaced pool is not shut down: a call in another thread may still be submitting
    to it. Its threads end when the last call holding it returns and it is collected.
    """
    from concurrent.futures import ThreadPoolExecutor  # imports logging: not for one state

    global _pool, _pool_key
    key = (threads, os.getpid())
    with _pool_lock:
        if _pool is None or _pool_key != key:
            _pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="treedyn")
            _pool_key = key
        return _pool


def run_chunks(count: int, work, chunk: int) -> None:
    """Call ``work(start, stop)`` over [0, count) in chunks of at most ``chunk`` states,
    on the thread pool when there are several chunks and settings.threads > 1."""
    threads = settings.threads
    if count <= chunk:
        work(0, count)
        return
    nchunks = -(-count // chunk)
    size = -(-count // nchunks)  # even chunks
    bounds = [(start, min(start + size, count)) for start in range(0, count, size)]
    if threads <= 1:
        for start, stop in bounds:
            work(start, stop)
        return
    pool = _executor(threads)
    for future in [pool.submit(work, a, b) for a, b in bounds]:
        future.result()
