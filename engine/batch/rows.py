"""Component-major row operations of the batched sweeps.

Layout: every per-body quantity is component-major, ``X[slot, component, state]``, so a
group's rows ``X[g.slots]`` are ``(k, 6, N)`` and one component over all states is a
contiguous row. Motion vectors are ``(angular, linear)``, forces ``(torque, force)``; the
component ``3 * b + alpha`` is block ``b`` (0 angular, 1 linear), axis ``alpha`` (x, y, z),
so ``X[:, 0::3]`` are the two x components, ``X[:, 1::3]`` the two y components.

Rotations about z (the joint axis of every revolute joint in the internal frames, see
:mod:`treedyn.engine.batch.plan`) with ``c, s`` of shape ``(k, 1, N)``:

* ``rotate(..., to_child=True)``: motion from the joint frame into the child,
  ``E_J = Rz(theta)^T``;
* ``rotate(...)``: forces (or columns ``U = IA S``) back, ``E_J^T = Rz(theta)``.
"""
from __future__ import annotations

import numpy as np

from .plan import Parents
from .spin import ROTATING


def gather(X: np.ndarray, parents: Parents, out: np.ndarray) -> np.ndarray:
    """Rows X[parents] (k, ...): a view when contiguous, else taken into ``out``."""
    if isinstance(parents.read, slice):
        return X[parents.read]
    return np.take(X, parents.read, axis=0, out=out[:len(parents.read)], mode="clip")


def accumulate(X: np.ndarray, parents: Parents, contribution: np.ndarray,
               first: np.ndarray | None = None, initial: np.ndarray | None = None) -> None:
    """X[parents] += contribution (k, ...), summing members that share a parent.

    Members flagged in ``first`` (k,) are their parent's first contribution: X[parent] is
    not read but set to initial[parent] + contribution (ABA's I0 plus the first child's).
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


def turn(x: np.ndarray, y: np.ndarray, c, s, t1: np.ndarray, t2: np.ndarray,
         backwards: bool = False) -> None:
    """In place: (x, y) <- (c x - s y, s x + c y), a turn by theta with (c, s) = (cos, sin);
    ``backwards`` turns by -theta: (c x + s y, -s x + c y). t1, t2 are scratch like x."""
    first, second = (np.add, np.subtract) if backwards else (np.subtract, np.add)
    np.multiply(s, y, out=t1)
    np.multiply(s, x, out=t2)
    np.multiply(x, c, out=x)
    first(x, t1, out=x)
    np.multiply(y, c, out=y)
    second(y, t2, out=y)


def rotate(X: np.ndarray, c: np.ndarray, s: np.ndarray, t1: np.ndarray, t2: np.ndarray,
           to_child: bool = False) -> np.ndarray:
    """In place, both blocks of (..., 6, N): forces to the parent, (x, y) <- Rz(theta) (x, y);
    with ``to_child`` motions to the child, Rz(theta)^T. t1, t2 (..., 2, N)."""
    turn(X[..., 0::3, :], X[..., 1::3, :], c, s, t1, t2, backwards=to_child)
    return X


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
        turn(x, y, cc, ss, t[:, :x.shape[1]], t[:, 3:3 + x.shape[1]])
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
