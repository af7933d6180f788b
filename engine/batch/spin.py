"""The spin basis of symmetric 6x6 matrices: articulated and composite inertias as 21 numbers.

Cartesian index ``3 * b + alpha``: b = 0 angular, 1 linear; alpha = x, y, z. A rotation
about z leaves 7 spin coordinates unchanged, turns 4 pairs by ``theta`` and 3 pairs by
``2 theta`` (:data:`ROTATING`), so ``X_J^T I X_J`` of a revolute joint about z costs a few
row operations, and a constant congruence ``X_T^T (.) X_T`` is one (21, 21) matrix
(:func:`congruence_map`) applied to all states with BLAS.

A spatial inertia (the form ``[[I_o, [h]x], [-[h]x, m 1]]``, not any symmetric matrix) is
also held as its 10 parameters in a basis made for the same rotations (:data:`TEN_OF`,
:data:`MATRIX_OF_TEN`): ``(m, h_z, I_zz, I_xx + I_yy)`` do not change under a rotation about
z, ``(h_x, I_xz), (h_y, I_yz)`` turn by ``theta`` and ``((I_xx - I_yy) / 2, I_xy)`` by
``2 theta`` (:data:`TEN_ROTATING`).
"""
from __future__ import annotations

import numpy as np

from ..inertia_forms import dynamic_parameters, spatial_inertia

# Each entry: list of (coefficient, i, j) terms on A[i, j]. Rows 0-14 are the ones that stay
# in the articulated inertia IA - U D^-1 U^T of a revolute joint about z without armature
# (that update zeroes every entry in row or column 2); rows 15-20 are those entries.
SPIN_TERMS = (
    ((1, 5, 5),),  # 0: zz of block 11 (invariant)
    ((1, 0, 0), (1, 1, 1)), ((1, 3, 3), (1, 4, 4)),  # 1-2: xy traces of 00, 11
    ((1, 0, 3), (1, 1, 4)), ((1, 0, 4), (-1, 1, 3)),  # 3-4: trace and curl of 01
    ((1, 3, 5),), ((1, 0, 5),),  # 5-6: spin-1 pairs, x part
    ((1, 4, 5),), ((1, 1, 5),),  # 7-8: spin-1 pairs, y part
    ((1, 0, 0), (-1, 1, 1)), ((1, 3, 3), (-1, 4, 4)), ((1, 0, 3), (-1, 1, 4)),  # 9-11: spin-2 x
    ((2, 0, 1),), ((2, 3, 4),), ((1, 0, 4), (1, 1, 3)),  # 12-14: spin-2 pairs, y part
    ((1, 2, 2),), ((1, 2, 5),),  # 15-16: zz of 00 and 01 (invariant)
    ((1, 0, 2),), ((1, 2, 3),),  # 17-18: spin-1 pairs, x part
    ((1, 1, 2),), ((1, 2, 4),),  # 19-20: spin-1 pairs, y part
)
NSPIN = 21
KEPT = 15  # rows 0-14: all an articulated inertia past a revolute joint without armature has
# (x rows, y rows, angle multiple): pairs turned by theta or 2 theta under a rotation about
# z; the other 7 rows (0-4, 15-16) do not change under it
ROTATING = ((slice(5, 7), slice(7, 9), 1), (slice(9, 12), slice(12, 15), 2),
            (slice(17, 19), slice(19, 21), 1))


def _spin_matrices() -> tuple[np.ndarray, np.ndarray]:
    """P (21, 36): spin coordinates of vec(A) (row-major, A symmetric); Pinv (36, 21)."""
    P = np.zeros((NSPIN, 36))
    for row, terms in enumerate(SPIN_TERMS):
        for coef, i, j in terms:
            P[row, 6 * i + j] += 0.5 * coef  # symmetric average of A[i, j] and A[j, i]
            P[row, 6 * j + i] += 0.5 * coef
    pairs = [(i, j) for i in range(6) for j in range(i, 6)]
    B = np.zeros((36, len(pairs)))  # basis of symmetric matrices
    for k, (i, j) in enumerate(pairs):
        B[6 * i + j, k] = B[6 * j + i, k] = 1.0
    Pinv = B @ np.linalg.inv(P @ B)
    Pinv[np.abs(Pinv) < 1e-15] = 0.0
    return P, np.round(Pinv * 4) / 4  # entries are multiples of 1/4: make them exact


P_SPIN, PINV_SPIN = _spin_matrices()


def column_rows(column: int) -> np.ndarray:
    """Spin rows (6,) holding A[:, column] (for a z column: each is one raw entry)."""
    rows = []
    for i in range(6):
        target = np.zeros(36)
        target[6 * i + column] += 0.5
        target[6 * column + i] += 0.5
        match = [r for r in range(NSPIN) if np.array_equal(P_SPIN[r], target)]
        rows.append(match[0])
    return np.array(rows)


def spin_of(A: np.ndarray) -> np.ndarray:
    """Spin coordinates (..., 21) of symmetric matrices (..., 6, 6)."""
    return A.reshape(A.shape[:-2] + (36,)) @ P_SPIN.T


def matrices_of(w: np.ndarray) -> np.ndarray:
    """Symmetric matrices (m, 6, 6) from spin coordinates w (21, m), component-major."""
    return (PINV_SPIN @ w).T.reshape(w.shape[-1], 6, 6)


def spins_of(A: np.ndarray) -> np.ndarray:
    """Spin coordinates (21, m), component-major, of symmetric matrices A (m, 6, 6)."""
    return P_SPIN @ A.reshape(len(A), 36).T


def congruence_map(X: np.ndarray, of=P_SPIN, matrix=PINV_SPIN) -> np.ndarray:
    """(21, 21) L with spin(X^T A X) = L spin(A) for symmetric A; for X (n, 6, 6), the
    (n, 21, 21) maps of each (the same products as one at a time). With ``of`` =
    :data:`TEN_OF` and ``matrix`` = :data:`MATRIX_OF_TEN`, the (10, 10) maps of the 10
    parameters of a spatial inertia under a motion transform X."""
    if X.ndim == 2:
        return of @ np.kron(X.T, X.T) @ matrix
    A = np.swapaxes(X, 1, 2)  # kron(A, A)[6 i + k, 6 j + l] = A[i, j] A[k, l]
    products = (A[:, :, None, :, None] * A[:, None, :, None, :]).reshape(len(X), 36, 36)
    return np.matmul(np.matmul(of, products), matrix)


def _ten_basis() -> tuple[np.ndarray, np.ndarray]:
    """(TEN_OF (10, 36), MATRIX_OF_TEN (36, 10)): the parameters of vec(A) (row-major) of a
    spatial inertia A, and back, from Pinocchio's order of :mod:`treedyn.engine.inertia_forms`
    (m, h_x, h_y, h_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz)."""
    T = np.zeros((10, 10))  # ours = T pinocchio's
    for row, terms in enumerate((((1, 0),), ((1, 3),), ((1, 9),), ((1, 4), (1, 6)), ((1, 1),),
                                 ((1, 7),), ((1, 2),), ((1, 8),), ((.5, 4), (-.5, 6)), ((1, 5),))):
        for coef, column in terms:
            T[row, column] = coef
    units = np.eye(36).reshape(36, 6, 6)
    of = T @ dynamic_parameters((units + np.swapaxes(units, 1, 2)) / 2).T
    matrix = spatial_inertia(np.linalg.inv(T).T).reshape(10, 36).T
    return of, matrix


TEN_OF, MATRIX_OF_TEN = _ten_basis()
SPIN_OF_TEN = P_SPIN @ MATRIX_OF_TEN  # (21, 10)
# rows of the 10 parameters that turn under a rotation about z: (x rows, y rows, multiple)
TEN_ROTATING = ((slice(4, 6), slice(6, 8), 1), (slice(8, 9), slice(9, 10), 2))
