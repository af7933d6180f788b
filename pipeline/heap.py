"""The heap of a run over many states: freed memory kept for the next chunk, and
fewer garbage collections, both for the run only (:func:`for_many_states`).

Every chunk allocates arrays and buffers of the same sizes again (its states, the engine's
intermediates, the text read and written). By default glibc's malloc maps blocks of a few
MB afresh each time and gives the top of its heap back to the system as soon as it is
free, so the kernel zeroes new pages for every chunk (perf: about a tenth of a JSON Lines
run). Keeping the memory made a whole run of 100 MB of talos states 0.66-0.70x as long,
JSON Lines or CSV, the two-link arm's 0.86x, xarm7's 0.95-0.97x (benchmarks/bench_parts.py,
table "heap": one process, with glibc's ``MALLOC_TRIM_THRESHOLD_`` and
``MALLOC_MMAP_THRESHOLD_``, which do the same, against its defaults, on the shared machine
at a load average of 10-13; 0.94x on a quiet one, 2026-12-02). Those variables are read
when a process starts, so dyn tells malloc itself (``mallopt``) once the run starts, and
when it ends sets glibc's settings back (the user's ``MALLOC_*_`` values if set in the
environment the caller passes, else glibc's defaults) and hands the memory kept back to
the system (``malloc_trim``): the tests, and Python callers, run dyn in their own process.
Peak memory grows by a few MB at most during the run: what is kept is what the chunks use
anyway.

Python's cyclic garbage collector is also told to run less: a JSON Lines chunk makes five
lists or dicts a state, so the default thresholds ran a young collection every 140 states
and, every 14 000, a full one over every object, the modules' and the model's included.
What exists when the states start (the modules, the model) is frozen out of the later
collections, and the youngest generation is collected after 100 000 new containers
instead of 700 (JSON Lines 0.95x the run's wall time, CSV 0.97x, paired runs; a cycle made
per chunk is still collected within a few chunks). Its settings are set back too.
"""
from __future__ import annotations

import contextlib
import ctypes
import gc
import sys
from collections.abc import Mapping

M_TRIM_THRESHOLD = -1  # mallopt's parameters (malloc.h)
M_MMAP_THRESHOLD = -3
KEEP = {M_MMAP_THRESHOLD: 32 << 20,  # blocks below this come from the heap (a chunk's are)
        M_TRIM_THRESHOLD: 1 << 30}  # free memory at the heap's top kept up to this
GLIBC = {M_MMAP_THRESHOLD: ("MALLOC_MMAP_THRESHOLD_", 128 << 10),  # and their defaults
         M_TRIM_THRESHOLD: ("MALLOC_TRIM_THRESHOLD_", 128 << 10)}

COLLECT_AFTER = (100_000, 50, 100)  # gc thresholds: new containers, then collections


@contextlib.contextmanager
def for_many_states(environment: Mapping[str, str] | None = None):
    """The process set up for a run over many states (once the model is loaded), and set
    back after it (to the ``MALLOC_*_`` values of ``environment``, the process's
    environment as its caller read it, where set)."""
    libc = glibc()
    if libc is not None:
        for parameter, value in KEEP.items():
            libc.mallopt(parameter, value)
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*COLLECT_AFTER)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        if libc is not None:
            for parameter, (name, default) in GLIBC.items():
                value = (environment or {}).get(name, "")
                libc.mallopt(parameter, int(value) if value.isdigit() else default)
            libc.malloc_trim(0)


M_MXFAST = 1  # mallopt's parameter: the largest chunk kept in a fastbin (0: none)
FASTBIN_LIMIT = 64 * ctypes.sizeof(ctypes.c_size_t) // 4  # glibc's default (DEFAULT_MXFAST)


@contextlib.contextmanager
def for_model_loading(environment: Mapping[str, str] | None = None):
    """glibc's fastbins off while a model is read, and back to glibc's default after.

    libxml2 allocates the document's nodes and attributes with malloc: 690 MB in a few
    million chunks for a 100 000-link URDF, freed when the parser is done with the tree.
    Kept in fastbins, those chunks are merged all at once by the next large allocation
    (``malloc_consolidate``), which took about 0.4 s of a run; without fastbins each
    chunk is merged as it is freed. The star's check-inertia, info and inverse took 11.2,
    8.3 and 7.2 s instead of 11.6, 8.7 and 7.5 s (wall, medians of 3, normal installs run
    alternately). Left alone
    when ``GLIBC_TUNABLES`` (in ``environment``, the process's as its caller read it)
    sets mxfast itself."""
    libc = glibc()
    if libc is None or "mxfast" in (environment or {}).get("GLIBC_TUNABLES", ""):
        yield
        return
    libc.mallopt(M_MXFAST, 0)
    try:
        yield
    finally:
        libc.mallopt(M_MXFAST, FASTBIN_LIMIT)


def glibc():
    """glibc's C library, to tune malloc (None elsewhere: nothing is done)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    except (OSError, AttributeError):  # no C library to ask (or not glibc's functions)
        return None
    return libc
