"""A rigid body's inertia in each of its forms, and the conversions between them.

Forms (``m`` the mass, ``c`` the centre of mass in the body frame, all batched over
leading axes):

* about the com: ``(m, c, I_c)``, ``I_c`` (3, 3) the rotational inertia about the com
  (``description.Inertia``, a URDF ``<inertial>``);
* about the origin: ``I_o = I_c + m (|c|^2 1 - c c^T)`` (3, 3);
* the parameters ``pi`` (10,) in Pinocchio's ``Inertia.toDynamicParameters`` order, the
  regressor's (:mod:`treedyn.engine.regressor`)::

      pi = (m, m c_x, m c_y, m c_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz)   (I about the origin)

* the pseudo-inertia ``J = [[Sigma, h], [h^T, m]]`` (4, 4) about the origin (Wensing,
  Kim & Slotine 2017): ``Sigma = 1/2 tr(I_o) 1 - I_o`` the second moment of the mass,
  ``h = m c``; a mass distribution has these numbers exactly when ``J >= 0``;
* the spatial inertia (6, 6) about the origin, motion ordered (angular, linear) as
  Featherstone writes it: ``[[I_o, [h]x], [-[h]x, m 1]]`` (Pinocchio orders it (linear,
  angular)).

And the two projections onto consistent inertias: :func:`nearest_consistent` (the
rotational inertia nearest in Frobenius norm meeting the strict triangle inequality, what
``check-inertia --fix`` suggests) and :func:`nearest_definite` (a pseudo-inertia with its
eigenvalues raised to a floor, where the consistent fit of identification starts; it
also makes a nil tensor of a body with mass definite, where the first has no length to
go by).
"""
from __future__ import annotations

import itertools

import numpy as np

from .rotations import skew

# parameter index - 4 of each tensor entry (row, column), and the entries in that order
TENSOR_INDEX = np.array([[0, 1, 3], [1, 2, 4], [3, 4, 5]])
ENTRIES = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))
ROUNDING = 1e-13  # relative size of eigenvalue rounding noise (about 500 ulp)


def symmetric(matrix: np.ndarray) -> np.ndarray:
    return 0.5 * (matrix + np.swapaxes(matrix, -1, -2))


# ------------------------------------------------------------------- about com / origin
def parallel_axis(mass: float, com: np.ndarray) -> np.ndarray:
    """m (|c|^2 1 - c c^T) (3, 3): what moving the reference point from the com to the
    origin adds to one body's rotational inertia."""
    com = np.asarray(com, dtype=float)
    return mass * (com @ com * np.eye(3) - np.outer(com, com))


def about_origin(mass, com, inertia) -> np.ndarray:
    """I_o (..., 3, 3) of bodies (m, c, I_c): I_c - m [c]x [c]x."""
    c = skew(np.asarray(com, dtype=float))
    mass = np.asarray(mass, dtype=float)[..., None, None]
    return np.asarray(inertia, dtype=float) - mass * c @ c


def about_com(mass, com, inertia) -> np.ndarray:
    """I_c (..., 3, 3) of bodies with I_o = ``inertia``: I_o + m [c]x [c]x."""
    c = skew(np.asarray(com, dtype=float))
    mass = np.asarray(mass, dtype=float)[..., None, None]
    return np.asarray(inertia, dtype=float) + mass * c @ c


# ------------------------------------------------------------------- parameters pi
def parameters(mass, com, inertia) -> np.ndarray:
    """pi (..., 10) of bodies (m (...), c (..., 3), I_c (..., 3, 3))."""
    mass = np.asarray(mass, dtype=float)
    origin = symmetric(about_origin(mass, com, inertia))
    pi = np.empty(mass.shape + (10,))
    pi[..., 0] = mass
    pi[..., 1:4] = mass[..., None] * np.asarray(com, dtype=float)
    for k, (r, c) in enumerate(ENTRIES):
        pi[..., 4 + k] = origin[..., r, c]
    return pi


def com_form(pi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m (...), c (..., 3), I_c (..., 3, 3)) of parameters pi (..., 10) with m > 0."""
    pi = np.asarray(pi, dtype=float)
    mass = pi[..., 0]
    com = pi[..., 1:4] / mass[..., None]
    return mass, com, symmetric(about_com(mass, com, pi[..., 4 + TENSOR_INDEX]))


# ------------------------------------------------------------------- pseudo-inertia J
def second_moment(inertia: np.ndarray) -> np.ndarray:
    """Sigma = 1/2 tr(I) 1 - I (..., 3, 3): the mass's second moment for rotational
    inertias I (about the same point)."""
    trace = np.trace(inertia, axis1=-2, axis2=-1)
    return 0.5 * np.asarray(trace)[..., None, None] * np.eye(3) - inertia


def pseudo_inertia(pi: np.ndarray) -> np.ndarray:
    """J (..., 4, 4) of parameters pi (..., 10)."""
    pi = np.asarray(pi, dtype=float)
    J = np.zeros(pi.shape[:-1] + (4, 4))
    J[..., :3, :3] = second_moment(pi[..., 4 + TENSOR_INDEX])
    J[..., :3, 3] = J[..., 3, :3] = pi[..., 1:4]
    J[..., 3, 3] = pi[..., 0]
    return J


def parameters_of_pseudo(J: np.ndarray) -> np.ndarray:
    """pi (..., 10) of pseudo-inertias J (..., 4, 4): I = tr(Sigma) 1 - Sigma."""
    sigma = symmetric(J[..., :3, :3])
    inertia = np.trace(sigma, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - sigma
    pi = np.empty(J.shape[:-2] + (10,))
    pi[..., 0] = J[..., 3, 3]
    pi[..., 1:4] = J[..., :3, 3]
    for k, (r, c) in enumerate(ENTRIES):
        pi[..., 4 + k] = inertia[..., r, c]
    return pi


def pseudo_inertia_of(mass, com, inertia) -> np.ndarray:
    """J (..., 4, 4) about the origin of bodies (m, c, I_c)."""
    return pseudo_inertia(parameters(mass, com, inertia))


# ------------------------------------------------------------------- spatial inertia
def dynamic_parameters(spatial: np.ndarray) -> np.ndarray:
    """(..., 10) parameters of spatial inertias (..., 6, 6) about the origin (angular,
    linear), whatever the sign of their mass."""
    out = np.empty(spatial.shape[:-2] + (10,))
    out[..., 0] = spatial[..., 3, 3]
    out[..., 1] = spatial[..., 2, 4]  # h = (S[2,4], S[0,5], S[1,3]) as Inertia.from_spatial
    out[..., 2] = spatial[..., 0, 5]
    out[..., 3] = spatial[..., 1, 3]
    bar = symmetric(spatial[..., :3, :3])
    for k, (r, c) in enumerate(ENTRIES):
        out[..., 4 + k] = bar[..., r, c]
    return out


def spatial_inertia(parameters: np.ndarray) -> np.ndarray:
    """(..., 6, 6) spatial inertias about the origin from parameters (..., 10)."""
    p = np.asarray(parameters, dtype=float)
    out = np.zeros(p.shape[:-1] + (6, 6))
    out[..., :3, :3] = p[..., 4 + TENSOR_INDEX]
    hx = skew(p[..., 1:4])
    out[..., :3, 3:] = hx
    out[..., 3:, :3] = -hx
    out[..., 3:, 3:] = p[..., 0, None, None] * np.eye(3)
    return out


def spatial_pseudo_inertia(spatial: np.ndarray) -> np.ndarray:
    """J (..., 4, 4) about the origin of spatial inertias (..., 6, 6), whatever the sign of
    their mass."""
    return pseudo_inertia(dynamic_parameters(spatial))


# ------------------------------------------------------------------- projections
def principal_moments(inertia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(moments ascending (..., 3), principal axes as columns (..., 3, 3)) of the symmetric
    part; moments within rounding of zero (:data:`ROUNDING` of the largest) are exactly 0."""
    moments, axes = np.linalg.eigh(symmetric(inertia))
    scale = np.abs(moments).max(axis=-1, keepdims=True, initial=0.0)
    return np.where(np.abs(moments) <= ROUNDING * scale, 0.0, moments), axes


def nearest_consistent(inertia: np.ndarray, margin: float = 1e-5) -> np.ndarray:
    """The rotational inertia (3, 3) nearest (Frobenius) to ``inertia`` meeting the strict
    triangle inequality: every ``sigma_k = (lambda_i + lambda_j - lambda_k) / 2 >= margin
    tr(I)``.

    The feasible set is convex and rotation invariant, so the nearest point keeps the
    principal axes; the moments are projected onto the polyhedral cone by trying every
    set of active constraints (3 constraints: 8 sets) and keeping the closest feasible one.
    """
    moments, axes = principal_moments(inertia)
    scale = max(abs(float(moments.sum())), np.finfo(float).tiny)
    floor = margin * scale
    A = 0.5 * np.ones((3, 3)) - np.eye(3)  # sigma = A @ moments
    best, best_distance = None, np.inf
    for active in itertools.product((False, True), repeat=3):
        rows = A[list(active)]
        candidate = moments
        if rows.size:
            candidate = moments - rows.T @ np.linalg.solve(rows @ rows.T,
                                                           rows @ moments - floor)
        if np.all(A @ candidate >= floor - 1e-12 * scale):
            distance = float(np.linalg.norm(candidate - moments))
            if distance < best_distance:
                best, best_distance = candidate, distance
    return axes @ np.diag(best) @ axes.T


def nearest_definite(J: np.ndarray, floor: float = 1e-6) -> np.ndarray:
    """Pseudo-inertias J (..., 4, 4) with eigenvalues raised to at least ``floor`` times
    their largest: a consistent body unchanged, else a close consistent one."""
    values, vectors = np.linalg.eigh(symmetric(J))
    low = floor * np.maximum(values[..., -1:], np.finfo(float).tiny)
    values = np.maximum(values, low)
    return vectors @ (values[..., None] * np.swapaxes(vectors, -1, -2))
