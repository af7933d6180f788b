"""Batched spatial algebra (Featherstone's conventions, leading batch dimension N).

* A spatial motion vector is ``(angular, linear)``, a spatial force ``(torque, force)``;
  arrays are ``(N, 6)`` for one vector per state and ``(N, 6, k)`` for k columns.
* A transform from frame ``p`` (parent) to frame ``i`` (child) is stored as the pair
  ``(E, r)``: ``E`` (N, 3, 3) rotates p-coordinates into i-coordinates and ``r`` (N, 3) is
  the origin of ``i`` expressed in ``p``. Its 6x6 motion matrix is
  ``X = [[E, 0], [-E [r]x, E]]``; forces go back from ``i`` to ``p`` with ``X^T``.
"""
from __future__ import annotations

import numpy as np

from .rotations import quaternion_matrix, skew  # noqa: F401 (quaternion_matrix: re-exported)


def cross3(a: np.ndarray, b: np.ndarray, axis: int = -1, out: np.ndarray | None = None
           ) -> np.ndarray:
    """Cross product of arrays of equal rank along ``axis`` (their 3-vectors; size-1 axes
    broadcast): -1 for rows (..., 3); -2 for states along the last axis (..., 3, N), and
    so on. ``out``: where to write it (neither a nor b)."""
    if out is None:
        out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    tail = (slice(None),) * (-1 - axis)
    a0, a1, a2 = (a[(..., k, *tail)] for k in range(3))
    b0, b1, b2 = (b[(..., k, *tail)] for k in range(3))
    o0, o1, o2 = (out[(..., k, *tail)] for k in range(3))
    np.multiply(a1, b2, out=o0)
    o0 -= a2 * b1
    np.multiply(a2, b0, out=o1)
    o1 -= a0 * b2
    np.multiply(a0, b1, out=o2)
    o2 -= a1 * b0
    return out


def rotate(E: np.ndarray, x: np.ndarray) -> np.ndarray:
    """E @ x for E (N, 3, 3) and x (N, 3)."""
    return np.einsum("nij,nj->ni", E, x)


def rotate_transposed(E: np.ndarray, x: np.ndarray) -> np.ndarray:
    """E^T @ x for E (N, 3, 3) and x (N, 3)."""
    return np.einsum("nji,nj->ni", E, x)


def motion_to_child(E: np.ndarray, r: np.ndarray, m: np.ndarray) -> np.ndarray:
    """X @ m: a motion (N, 6) in the parent frame, expressed in the child frame."""
    out = np.empty_like(m)
    out[:, :3] = rotate(E, m[:, :3])
    out[:, 3:] = rotate(E, m[:, 3:] - cross3(r, m[:, :3]))
    return out


def force_to_parent(E: np.ndarray, r: np.ndarray, f: np.ndarray) -> np.ndarray:
    """X^T @ f: a force (N, 6) in the child frame, expressed in the parent frame."""
    out = np.empty_like(f)
    linear = rotate_transposed(E, f[:, 3:])
    out[:, :3] = rotate_transposed(E, f[:, :3]) + cross3(r, linear)
    out[:, 3:] = linear
    return out


def forces_to_parent(E: np.ndarray, r: np.ndarray, F: np.ndarray) -> np.ndarray:
    """X^T @ F for force columns F (N, 6, k)."""
    Et = np.swapaxes(E, 1, 2)
    linear = Et @ F[:, 3:]
    out = np.empty_like(F)
    out[:, :3] = Et @ F[:, :3] + skew(r) @ linear
    out[:, 3:] = linear
    return out


def motion_cross(v: np.ndarray, m: np.ndarray) -> np.ndarray:
    """v x m for motions (N, 6): (w x m_ang, w x m_lin + v_lin x m_ang)."""
    out = cross3(v[:, None, :3], m.reshape(-1, 2, 3)).reshape(m.shape)
    out[:, 3:] += cross3(v[:, 3:], m[:, :3])
    return out


def force_cross(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """v x* f for a motion v and force f, both (N, 6): (w x n + v_lin x f, w x f)."""
    out = cross3(v[:, None, :3], f.reshape(-1, 2, 3)).reshape(f.shape)
    out[:, :3] += cross3(v[:, 3:], f[:, 3:])
    return out


def motion_matrix(E: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The 6x6 motion transform X (N, 6, 6) of the pair (E, r)."""
    X = np.zeros(E.shape[:-2] + (6, 6))
    X[..., :3, :3] = E
    X[..., 3:, 3:] = E
    X[..., 3:, :3] = -E @ skew(r)
    return X


def inertia_to_parent(E: np.ndarray, r: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    """X^T I X: a spatial inertia (N, 6, 6) in the child frame, expressed in the parent frame."""
    X = motion_matrix(E, r)
    return np.swapaxes(X, 1, 2) @ inertia @ X


def apply_subspace(S: np.ndarray, x: np.ndarray) -> np.ndarray:
    """S @ x for a motion subspace S, (6, k) shared or (N, 6, k) per state, and x (N, k)."""
    if S.ndim == 2:
        return x @ S.T
    return np.einsum("nik,nk->ni", S, x)


def project_subspace(S: np.ndarray, f: np.ndarray) -> np.ndarray:
    """S^T @ f for S (6, k) or (N, 6, k) and forces f (N, 6): returns (N, k)."""
    if S.ndim == 2:
        return f @ S
    return np.einsum("nik,ni->nk", S, f)

