"""Work arrays: one arena of memory per thread, laid out per algorithm and chunk size."""
from __future__ import annotations

import threading
import weakref

import numpy as np

_local = threading.local()
_arenas: weakref.WeakSet = weakref.WeakSet()  # every thread's Arena, for clear_workspaces
ALIGN = 8  # floats: every work array starts on a 64-byte boundary


class Arena:
    """One thread's work memory, shared by the algorithms (a thread runs one at a time)."""

    def __init__(self):
        self.buffer = np.empty(0)
        _arenas.add(self)

    def take(self, size: int) -> np.ndarray:
        """The buffer, grown to ``size`` floats if it is smaller."""
        if self.buffer.size < size:
            self.buffer = np.empty(size)
        return self.buffer


class Workspace:
    """Named work arrays with a state capacity; ``view(m)`` lays them out for m states.

    The arrays of a chunk of m states are C-contiguous (shape + (m,)) slices laid one after
    the other in the thread's arena, so every chunk size sees contiguous rows (numpy's
    copies and takes are much slower on strided views).
    """

    def __init__(self, arena: Arena, capacity: int, shapes: dict[str, tuple]):
        self.arena = arena
        self.capacity = capacity
        self.shapes = shapes
        self.sizes = {name: int(np.prod(shape, dtype=int)) for name, shape in shapes.items()}

    def floats(self, m: int) -> int:
        return sum(-(-size * m // ALIGN) * ALIGN for size in self.sizes.values())

    def view(self, m: int) -> "Views":
        buffer = self.arena.take(self.floats(self.capacity))
        views, offset = {}, 0
        for name, shape in self.shapes.items():
            size = self.sizes[name] * m
            views[name] = buffer[offset:offset + size].reshape(shape + (m,))
            offset += -(-size // ALIGN) * ALIGN
        return Views(views)


class Views(dict):
    """The work arrays of one chunk by name, as attributes (``W.V``, ``W.IA``)."""

    __getattr__ = dict.__getitem__


def workspace(key, plan, capacity: int, shapes) -> Workspace:
    """This thread's work arrays for ``key`` (algorithm) on ``plan``, at least ``capacity``.

    The layout per algorithm (the last plan used) is kept; the memory is one arena per
    thread, as large as the largest layout, reused across chunks, calls and algorithms,
    so large batches do not page-fault fresh temporaries and settings.memory bounds what
    a thread keeps.
    """
    arena = getattr(_local, "arena", None)
    if arena is None:
        arena = _local.arena = Arena()
        _local.cache = {}
    entry = _local.cache.get(key)
    if entry is None or entry[0] is not plan or entry[1].capacity < capacity:
        entry = (plan, Workspace(arena, max(capacity, 1), shapes(plan)))
        _local.cache[key] = entry
    return entry[1]


def clear_workspaces() -> None:
    """Release every thread's work memory (a call running now keeps its own until it ends)."""
    for arena in list(_arenas):
        arena.buffer = np.empty(0)
