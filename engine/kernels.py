"""Batched building blocks: component-major row operations, chunking, threads, work arrays.

Layout: every per-body quantity is component-major, ``X[slot, component, state]``, so a
group's rows ``X[g.slots]`` are ``(k, 6, N)`` and one component over all states is a
contiguous row. Motion vectors are ``(angular, linear)``, forces ``(torque, force)``; the
component ``3 * b + alpha`` is block ``b`` (0 angular, 1 linear), axis ``alpha`` (x, y, z),
so ``X[:, 0::3]`` are the two x components, ``X[:, 1::3]`` the two y components.

Rotations about z (the joint axis of every revolute joint in the internal frames, see
:mod:`treedyn.engine.compiled`) with ``c, s`` of shape ``(k, 1, N)``:

* ``rotate_to_child``: motion from the joint frame into the child, ``E_J = Rz(theta)^T``;
* ``rotate_to_parent``: forces (or columns ``U = IA S``) back, ``E_J^T = Rz(theta)``.

States are processed in chunks (:data:`settings`.chunk states at a time) with work arrays
allocated once per thread and reused; with ``settings.threads > 1`` chunks run on a thread
pool (numpy releases the GIL inside its loops and BLAS calls). A batch that fits in one
chunk runs in the calling thread.
"""
from __future__ import annotations

import os
import threading
import weakref
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .compiled import ROTATING, Parents


@dataclass
class Settings:
    """Module-wide batching settings (see :func:`configure`)."""

    threads: int = max(1, min(2, os.cpu_count() or 1))
    chunk: int = 4096  # states per chunk at most
    # bytes of work arrays per thread at most (smaller chunks if needed): deep models need
    # chunks of >= ~1000 states to amortise the per-body numpy calls (a 1000-body chain:
    # ~200 KB per state in RNEA); models up to ~50 bodies stay far below it
    memory: int = 256 << 20


def environment_count(name: str, default: int) -> int:
    """The whole number in environment variable ``name`` (at least 1), else ``default``;
    a value that is not a whole number keeps the default with a warning (the dyn command
    refuses it before it gets here)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return max(1, int(text))
    except ValueError:
        import warnings

        warnings.warn(f"{name}={text!r} is not a whole number; using {default}", stacklevel=2)
        return default


settings = Settings()
settings.threads = environment_count("TREEDYN_THREADS", settings.threads)
settings.chunk = environment_count("TREEDYN_CHUNK", settings.chunk)


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


def chunk_size(plan, shapes, count: int) -> int:
    """States per chunk for ``count`` states: settings.chunk, less if the work arrays of
    ``shapes(plan)`` would exceed settings.memory (never below 64)."""
    per_state = 8 * sum(int(np.prod(shape, dtype=int)) for shape in shapes(plan).values())
    limit = max(64, settings.memory // max(per_state, 1))
    return max(1, min(count, settings.chunk, limit))


@contextmanager
def configured(threads: int | None = None, chunk: int | None = None, memory: int | None = None):
    """Temporarily change :data:`settings` (process-wide, not per thread)."""
    saved = (settings.threads, settings.chunk, settings.memory)
    configure(threads, chunk, memory)
    try:
        yield settings
    finally:
        settings.threads, settings.chunk, settings.memory = saved


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


# --------------------------------------------------------------------------- work arrays
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


# ------------------------------------------------------------------------ row operations
def gather(X: np.ndarray, parents: Parents, out: np.ndarray) -> np.ndarray:
    """Rows X[parents] (k, ...): a view when contiguous, else taken into ``out``."""
    if isinstance(parents.read, slice):
        return X[parents.read]
    return np.take(X, parents.read, axis=0, out=out[:len(parents.read)], mode="clip")


def accumulate(X: np.ndarray, parents: Parents, contribution: np.ndarray,
               first: np.ndarray | None = None, initial: np.ndarray | None = None) -> None:
    """X[parents] += contribution (k, ...), summing members that share a parent.

    Members flagged in ``first`` (k,) are their parent's first contribution: X[parent] is
    not read but set to initial[parent] + contribution (ABA's W0 plus the first child's).
    """
    if parents.contiguous and (first is None or first.all() or not first.any()):
        target = X[parents.read]
        base = initial[parents.read] if first is not None and first[0] else target
        np.add(base, contribution, out=target)
        return
    for member, slot in enumerate(parents.slots):  # few members: row adds beat fancy indexing
        target = X[slot]
        base = initial[slot] if first is not None and first[member] else target
        np.add(base, contribution[member], out=target)


def rotate_to_child(X: np.ndarray, c: np.ndarray, s: np.ndarray, t1: np.ndarray, t2: np.ndarray):
    """In place, motion (k, 6, N): (x, y) <- (c x + s y, -s x + c y) for both blocks."""
    x, y = X[:, 0::3], X[:, 1::3]
    np.multiply(s, y, out=t1)
    np.multiply(s, x, out=t2)
    np.multiply(x, c, out=x)
    np.add(x, t1, out=x)
    np.multiply(y, c, out=y)
    np.subtract(y, t2, out=y)


def rotate_to_parent(X: np.ndarray, c: np.ndarray, s: np.ndarray, t1: np.ndarray, t2: np.ndarray):
    """In place, forces (k, 6, N): (x, y) <- (c x - s y, s x + c y) for both blocks."""
    x, y = X[:, 0::3], X[:, 1::3]
    np.multiply(s, y, out=t1)
    np.multiply(s, x, out=t2)
    np.multiply(x, c, out=x)
    np.subtract(x, t1, out=x)
    np.multiply(y, c, out=y)
    np.add(y, t2, out=y)


def rotated_to_parent(X: np.ndarray, c, s, out: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Out of place version of :func:`rotate_to_parent` for (..., 6, N) arrays."""
    x, y = X[..., 0::3, :], X[..., 1::3, :]
    ox, oy = out[..., 0::3, :], out[..., 1::3, :]
    np.multiply(c, x, out=ox)
    np.multiply(s, y, out=t)
    np.subtract(ox, t, out=ox)
    np.multiply(s, x, out=oy)
    np.multiply(c, y, out=t)
    np.add(oy, t, out=oy)
    out[..., 2::3, :] = X[..., 2::3, :]
    return out


def shift_to_child(X: np.ndarray, d: np.ndarray, t: np.ndarray):
    """In place, motion (k, 6, N) through a shift d along z: lin_x += d w_y, lin_y -= d w_x."""
    np.multiply(d, X[:, 1], out=t)
    X[:, 3] += t
    np.multiply(d, X[:, 0], out=t)
    X[:, 4] -= t


def shift_to_parent(X: np.ndarray, d: np.ndarray, t: np.ndarray):
    """In place, forces (k, 6, N) back through a shift d along z: n_x -= d f_y, n_y += d f_x."""
    np.multiply(d, X[:, 4], out=t)
    X[:, 0] -= t
    np.multiply(d, X[:, 3], out=t)
    X[:, 1] += t


def spin_rotated(W: np.ndarray, c, s, c2, s2, out: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Spin coordinates (k, 21, N) of R A R^T, R = blockdiag(Rz(theta), Rz(theta)), into out
    (W unchanged); t (k, 6, N)."""
    np.copyto(out, W)
    return spin_rotate(out, c, s, c2, s2, t)


def spin_rotate(W: np.ndarray, c, s, c2, s2, t: np.ndarray, rows: int = 21) -> np.ndarray:
    """In place: spin coordinates W (k, 21, N) become those of R A R^T,
    R = blockdiag(Rz(theta), Rz(theta)); t (k, 6, N). ``rows=KEPT`` turns only rows 0-14
    (the others are known to be zero). The invariant rows are left as they are."""
    for X, Y, multiple in ROTATING:
        if X.start >= rows:
            continue
        cc, ss = (c, s) if multiple == 1 else (c2, s2)
        x, y = W[:, X], W[:, Y]
        t1, t2 = t[:, :x.shape[1]], t[:, 3:3 + x.shape[1]]
        np.multiply(ss, y, out=t1)
        np.multiply(ss, x, out=t2)
        np.multiply(x, cc, out=x)
        np.subtract(x, t1, out=x)
        np.multiply(y, cc, out=y)
        np.add(y, t2, out=y)
    return W


def cross_add(out: np.ndarray, a: np.ndarray, b: np.ndarray, t: np.ndarray, ia, ib, io):
    """out[io] += a[ia] x b[ib] over component axis 1, where ia/ib/io map x, y, z to rows.

    ``ia`` etc. are 3 tuples of row selectors (ints or slices) so one call can do several
    3-vectors sharing an operand (e.g. w x (n, f) with b rows ``alpha::3``).
    """
    for o, i, j in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        np.multiply(a[:, ia[i]], b[:, ib[j]], out=t)
        out[:, io[o]] += t
        np.multiply(a[:, ia[j]], b[:, ib[i]], out=t)
        out[:, io[o]] -= t


def gauss_jordan_inverse(D: np.ndarray) -> np.ndarray:
    """In-place inverse of blocks D (k, k, N) (symmetric positive definite when regular).

    No pivoting: a singular block gives inf/nan (never an exception).
    """
    k = D.shape[0]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for p in range(k):
            inv = 1.0 / D[p, p]
            D[p, p] = 1.0
            D[p] *= inv
            f = D[:, p].copy()
            f[p] = 0.0
            D[:, p] = 0.0
            D[p, p] = inv
            D -= f[:, None, :] * D[p][None]
    return D


# ------------------------------------------------------------------------- chunk inputs
_STEPS = 128  # table of sin/cos at multiples of 1/128 rad over [-8 pi, 8 pi] (2 x 51 kB)
_HALF = int(np.ceil(8 * np.pi * _STEPS)) + 1
_TABLE_SIN = np.sin(np.arange(-_HALF, _HALF + 1) / _STEPS)
_TABLE_COS = np.cos(np.arange(-_HALF, _HALF + 1) / _STEPS)
_TWO_PI = (6.2831854820251465, -1.7484555314695172e-07, -6.8604979977715316e-15)  # 2 pi, 3 parts
# of 24, 24 and 53 bits (Cody-Waite): n * part is exact for |n| < 2**29


def sincos(theta: np.ndarray, s: np.ndarray, c: np.ndarray, t1: np.ndarray, t2: np.ndarray,
           index: np.ndarray) -> None:
    """s, c = sin(theta), cos(theta) to ~1 ulp, elementwise (numpy's own sin/cos of float64 is
    slow here and holds up other threads): theta = k / 128 + x with the table for k and short
    Taylor series for |x| <= 1/256 (the next terms, x^7 / 7! and x^6 / 6!, are below 1e-17).
    Angles past the table (|theta| > 8 pi) are first reduced by 2 pi; numpy's for
    |theta| > 6e5. theta is overwritten."""
    np.multiply(theta, float(_STEPS), out=t1)  # exact
    np.rint(t1, out=t1)  # k
    if t1.size and not -_HALF <= t1.min() <= t1.max() <= _HALF:  # past the table: reduce
        if not _reduce(theta, t1, t2):
            np.sin(theta, out=s)
            np.cos(theta, out=c)
            return
        np.multiply(theta, float(_STEPS), out=t1)
        np.rint(t1, out=t1)
    np.add(t1, _HALF, out=index, casting="unsafe")  # NaN: any index; x stays NaN below
    np.take(_TABLE_SIN, index, out=s, mode="clip")
    np.take(_TABLE_COS, index, out=c, mode="clip")
    np.multiply(t1, 1.0 / _STEPS, out=t1)
    np.subtract(theta, t1, out=theta)  # x, exact
    np.multiply(theta, theta, out=t1)  # z = x^2
    np.multiply(t1, 1.0 / 120, out=t2)  # sin x = x (1 + z (-1/6 + z / 120))
    t2 -= 1.0 / 6
    t2 *= t1
    t2 += 1.0
    t2 *= theta  # sin x
    np.multiply(t1, 1.0 / 24, out=theta)  # cos x = 1 + z (-1/2 + z / 24)
    theta -= 0.5
    theta *= t1
    theta += 1.0  # cos x
    np.multiply(s, t2, out=t1)  # sin_k sin_x
    s *= theta  # sin_k cos_x
    np.multiply(c, t2, out=t2)  # cos_k sin_x
    s += t2
    c *= theta  # cos_k cos_x
    c -= t1


def _reduce(theta: np.ndarray, t1: np.ndarray, t2: np.ndarray) -> bool:
    """theta -= 2 pi n, into [-pi, pi], exactly (Cody-Waite); False (theta unchanged) when
    some |theta| is too large for that (joint limits of 1e16) or not finite."""
    np.multiply(theta, 1.0 / (2 * np.pi), out=t1)
    np.rint(t1, out=t1)  # n
    if not np.max(np.abs(t1)) <= 1e5:
        return False
    for part in _TWO_PI:
        np.multiply(t1, part, out=t2)
        np.subtract(theta, t2, out=theta)
    return True


def load_coordinates(plan, W, q: np.ndarray, spin2: bool = False) -> None:
    """Joint coordinates of a chunk q (m, nq): sin/cos of revolute angles, prismatic shifts."""
    if len(plan.rev_q):
        np.subtract(q[:, plan.rev_q].T, plan.rev_ref, out=W.TH)
        scratch = W.SC
        sincos(W.TH, W.SN, W.CS, scratch[0], scratch[1], scratch[2].view(np.intp))
        if spin2:  # cos 2 theta, sin 2 theta
            np.multiply(W.CS, W.CS, out=W.C2)
            np.multiply(W.SN, W.SN, out=W.S2)
            np.subtract(W.C2, W.S2, out=W.C2)
            np.multiply(W.SN, W.CS, out=W.S2)
            W.S2 *= 2.0
    if len(plan.pri_q):
        np.subtract(q[:, plan.pri_q].T, plan.pri_ref, out=W.DP)


def load_rows(plan, x: np.ndarray | None, out: np.ndarray, scratch: np.ndarray) -> bool:
    """A (m, nv) chunk into internal dof order, component-major (nv, m); False if x is None."""
    if x is None:
        return False
    if plan.identity_v:
        np.copyto(out, x.T)
    else:
        np.copyto(scratch, x.T)
        np.take(scratch, plan.perm_v, axis=0, out=out, mode="clip")
    return True


def store_rows(plan, rows: np.ndarray, out: np.ndarray, scratch: np.ndarray) -> None:
    """Internal-order rows (nv, m) into the model-order output chunk out (m, nv)."""
    if plan.identity_v:
        np.copyto(out, rows.T)
    else:
        np.take(rows, plan.inv_perm_v, axis=0, out=scratch, mode="clip")
        np.copyto(out, scratch.T)


def prepare_forces(plan, count: int, fext):
    """External forces as ('shared', (nj + 1, 6, 1)) or ('batch', (N, nj, 6)), or None.

    ``fext`` is ``[force, torque]`` per body in its link frame about its origin, (nj, 6)
    for all states or (N, nj, 6), shapes checked by :func:`treedyn.engine.state.states`;
    internally (torque, force) in the internal body frames.
    """
    if fext is None:
        return None
    if fext.ndim == 2 or fext.shape[0] == 1:
        rows = fext.reshape(plan.nj, 6)[plan.slot_joint[1:]]
        shared = np.zeros((plan.nj + 1, 6, 1))
        shared[1:, :, 0] = np.einsum("sij,sj->si", plan.force_map, rows)
        return ("shared", shared)
    return ("batch", np.broadcast_to(fext, (count, plan.nj, 6)))


def load_forces(plan, forces, s0: int, s1: int, Fx: np.ndarray):
    """The chunk's internal external forces, None if absent: the shared (nj + 1, 6, 1), or
    the batch's rows written into the work array Fx (nj + 1, 6, m)."""
    if forces is None:
        return None
    kind, data = forces
    if kind == "shared":
        return data
    chunk = data[s0:s1][:, plan.slot_joint[1:]]  # (m, nj, 6)
    Fx[0] = 0.0
    np.matmul(plan.force_map, chunk.transpose(1, 2, 0), out=Fx[1:])
    return Fx


# ------------------------------------------------------------------------ generic joints
def generic_transform(group, q: np.ndarray):
    """(E (m,3,3), r (m,3), S, qj) of a generic joint for the chunk q (m, nq), internal frames.

    E maps the parent's internal coordinates to the child's (its link frame), r is the
    child origin in the parent's internal coordinates; S is (6, k) or (m, 6, k).
    """
    qj = q[:, group.q_block]
    E, r = group.joint.transform(qj)
    if group.Q_parent is not None:
        E = E @ group.Q_parent
        r = r @ group.Q_parent
    return E, r, group.joint.subspace(qj), qj
