"""The log-Cholesky parametrization of a rigid body's inertia (Rucker and Wensing 2022).

The pseudo-inertia about the body origin ``J = [[Sigma, h], [h^T, m]]`` (``Sigma = 1/2
tr(I) 1 - I``, I about the origin; positive definite exactly when the body is physically
consistent: m > 0 and the com-frame moments meet the strict triangle inequality) is
written ``J = U U^T`` with the upper triangular::

    U = e^alpha [[e^d1, s12, s13, t1],
                 [0,    e^d2, s23, t2],
                 [0,    0,    e^d3, t3],
                 [0,    0,    0,    1 ]]

so every theta = (alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3) in R^10 is a consistent
body and every consistent body has exactly one theta. Parameters pi in the order of
:mod:`treedyn.engine.regressor`.
"""
from __future__ import annotations

import numpy as np

from ..inertia_forms import parameters_of_pseudo

# theta index of each strictly upper entry of U (row, column): s12, s23, s13, t1, t2, t3
_OFF = ((0, 1, 4), (1, 2, 5), (0, 2, 6), (0, 3, 7), (1, 3, 8), (2, 3, 9))


def factor(theta: np.ndarray) -> np.ndarray:
    """U (nb, 4, 4) of theta (nb, 10)."""
    U = np.zeros(theta.shape[:-1] + (4, 4))
    for k in range(3):
        U[..., k, k] = np.exp(theta[..., 1 + k])
    for r, c, t in _OFF:
        U[..., r, c] = theta[..., t]
    U[..., 3, 3] = 1.0
    return np.exp(theta[..., 0])[..., None, None] * U


def parameters_and_jacobian(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pi (nb, 10), d pi / d theta (nb, 10, 10)) for theta (nb, 10)."""
    U = factor(theta)
    scale = np.exp(theta[..., 0])
    dU = np.zeros(theta.shape + (4, 4))  # (nb, 10, 4, 4): d U / d theta_k
    dU[:, 0] = U
    for k in range(3):
        dU[:, 1 + k, k, k] = U[:, k, k]
    for r, c, t in _OFF:
        dU[:, t, r, c] = scale
    Ut = np.swapaxes(U, -1, -2)[:, None]
    dJ = dU @ Ut
    dJ = dJ + np.swapaxes(dJ, -1, -2)
    return parameters_of_pseudo(U @ np.swapaxes(U, -1, -2)), np.swapaxes(parameters_of_pseudo(dJ), -1, -2)


def theta_of(J: np.ndarray) -> np.ndarray:
    """theta (nb, 10) of positive definite pseudo-inertias J (nb, 4, 4): the upper
    triangular factor is the flipped Cholesky factor of the flipped J."""
    flip = np.eye(4)[::-1]
    L = np.linalg.cholesky(flip @ J @ flip)
    U = flip @ L @ flip  # upper triangular, U U^T = J
    alpha = np.log(U[:, 3, 3])
    bar = U / U[:, 3, 3, None, None]
    theta = np.empty((len(J), 10))
    theta[:, 0] = alpha
    for k in range(3):
        theta[:, 1 + k] = np.log(bar[:, k, k])
    for r, c, t in _OFF:
        theta[:, t] = bar[:, r, c]
    return theta
