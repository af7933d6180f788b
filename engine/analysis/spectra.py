"""Eigenvalues of mass matrices: cond(M), and which states are singular in double precision.

``cond(M) = lambda_max / lambda_min`` of the symmetric M(q), inf when M is not positive
definite; batched over a leading N.
"""
from __future__ import annotations

import numpy as np

EPS = np.finfo(float).eps


EIGEN_BLOCK_BYTES = 64 << 20  # the eigenvectors computed at once stay under this


def mass_matrix_eigenvalues(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues ascending (N, nv), unit eigenvector of the smallest one (N, nv)) of
    symmetric M (N, nv, nv).

    ``numpy.linalg.eigh`` runs over a block of matrices at a time (one LAPACK call per
    matrix either way) and only the smallest eigenvalue's vector of each is kept: all of
    them would be another N x nv x nv array, 800 MB for 100 samples of 1000 dofs.
    """
    count, nv = M.shape[0], M.shape[-1]
    eigenvalues, weakest = np.empty((count, nv)), np.empty((count, nv))
    step = max(1, EIGEN_BLOCK_BYTES // (8 * max(nv, 1) ** 2))
    for start in range(0, count, step):
        values, vectors = np.linalg.eigh(M[start:start + step])
        eigenvalues[start:start + step] = values
        weakest[start:start + step] = vectors[..., 0]
    return eigenvalues, weakest


def condition_numbers(eigenvalues: np.ndarray) -> np.ndarray:
    """lambda_max / lambda_min per row of ascending eigenvalues; inf when not positive."""
    low, high = eigenvalues[..., 0], eigenvalues[..., -1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(low > 0, high / np.where(low > 0, low, 1.0), np.inf)


def singular_states(cond: np.ndarray) -> np.ndarray:
    """States (N,) bool whose M is singular in double precision: cond(M) >= 1 / eps, or
    not finite."""
    return ~(cond < 1.0 / EPS)
