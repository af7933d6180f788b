"""The heap of a run over many states: freed memory kept for the next chunk, and
fewer garbage collections.

Every chunk allocates arrays and buffers of the same sizes again (its states, the engine's
intermediates, the text read and written). By default glibc's malloc maps blocks of a few
MB afresh each time and gives the top of its heap back to the system as soon as it is
free, so the kernel zeroes new pages for every chunk: on 100 000 talos states, JSON Lines
to JSON Lines, zeroing pages was about a tenth of the run's time, and keeping the memory
made the whole process 0.94x as long, CSV to CSV too (8 alternating runs each; the
environment's ``MALLOC_TRIM_THRESHOLD_`` and ``MALLOC_MMAP_THRESHOLD_`` do the same). Peak
memory grows by a few MB at most: what is kept is what the chunks use anyway.

Python's cyclic garbage collector is also told to run less: a JSON Lines chunk makes five
lists or dicts a state, so the default thresholds ran a young collection every 140 states
and, every 14 000, a full one over every object, the modules' and the model's included.
What exists when the states start (the modules, the model) is frozen out of the later
collections, and the youngest generation is collected after 100 000 new containers
instead of 700 (JSON Lines 0.95x the run's wall time, CSV 0.97x, paired runs as above; a
cycle made per chunk is still collected within a few chunks). The collector's settings
are set back when the run ends (the tests, and Python callers, run dyn in their own
process); malloc's stay, as they only keep memory for reuse.
"""
from __future__ import annotations

import contextlib
import ctypes
import gc
import sys

M_TRIM_THRESHOLD = -1  # mallopt's parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # blocks below this come from the heap (a chunk's arrays are)
TRIM_THRESHOLD = 1 << 30  # free memory at the heap's top kept up to this


COLLECT_AFTER = (100_000, 50, 100)  # gc thresholds: new containers, then collections


@contextlib.contextmanager
def for_many_states():
    """The process set up for a run over many states (once the model is loaded)."""
    keep_freed_memory()
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*COLLECT_AFTER)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def keep_freed_memory() -> None:
    """Have glibc's malloc keep freed memory for reuse (elsewhere: nothing is done)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library to ask (or no mallopt in it)
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
