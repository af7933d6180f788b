"""Rotations: one set for the engine and both parsers.

Conventions
-----------
* A rotation matrix ``R`` (3, 3) maps child-frame coordinates to parent-frame ones.
* Quaternions are ``(w, x, y, z)`` and rotate a child frame into its parent, so that
  ``R(a * b) = R(a) @ R(b)`` for the Hamilton product.
* ``skew(a) @ b == cross(a, b)``, for one vector (3,) or a batch (..., 3).
* URDF's ``rpy`` is fixed-axis roll-pitch-yaw, ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``.
* MuJoCo's orientation forms follow ``<compiler angle eulerseq>``: ``axisangle`` (axis is
  normalised; the angle is in degrees when ``degree``), ``euler`` (lower-case letters of the
  sequence rotate about moving axes, upper-case about fixed axes), ``xyaxes`` (the y axis
  is made orthogonal to x) and ``zaxis`` (the smallest rotation taking z to the vector).
  A vector counts as zero when its squared norm is below ``EPS`` (MuJoCo's ``mjEPS``);
  such a vector is a :class:`GeometryError`, which callers turn into their own errors.
"""
from __future__ import annotations

import math

import numpy as np

EPS = 1e-14  # MuJoCo's mjEPS
SHORTEST_QUATERNION = 1e-15  # MuJoCo's mjMINVAL: a shorter quaternion is the identity
IDENTITY_QUAT = np.array([1.0, 0.0, 0.0, 0.0])


class GeometryError(ValueError):
    """An invalid orientation, geom or mesh (the parser adds file, line and element)."""


def skew(r) -> np.ndarray:
    """(..., 3) -> (..., 3, 3) with skew(r) @ b == cross(r, b)."""
    r = np.asarray(r)
    if r.shape == (3,) and r.dtype == np.float64:  # one vector (a model's links): the same
        x, y, z = r.tolist()  # numbers built at once, not in six strided writes
        return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    out = np.zeros(r.shape[:-1] + (3, 3))
    out[..., 0, 1] = -r[..., 2]
    out[..., 0, 2] = r[..., 1]
    out[..., 1, 0] = r[..., 2]
    out[..., 1, 2] = -r[..., 0]
    out[..., 2, 0] = -r[..., 1]
    out[..., 2, 1] = r[..., 0]
    return out


def quaternion_matrix(w: np.ndarray, x: np.ndarray, y: np.ndarray, z: np.ndarray,
                      out: np.ndarray | None = None) -> np.ndarray:
    """Rotation matrices (N, 3, 3) of quaternions given by components (N,), normalised here;
    one shorter than :data:`SHORTEST_QUATERNION` (zero) is the identity, as in MuJoCo.
    One whose squares overflow (a component past 1.3e154) is scaled by its largest
    component first: its direction, not the identity its infinite norm would make of it.
    ``out`` (3, 3, N): written there instead, states last (the same numbers)."""
    with np.errstate(over="ignore"):
        norm = np.sqrt(w * w + x * x + y * y + z * z)
    huge = norm == np.inf
    if huge.any():
        largest = np.maximum(np.maximum(abs(w), abs(x)), np.maximum(abs(y), abs(z)))
        scale = np.where(huge, largest, 1.0)
        w, x, y, z = w / scale, x / scale, y / scale, z / scale
        norm = np.sqrt(w * w + x * x + y * y + z * z)
    short = norm < SHORTEST_QUATERNION
    if short.any():
        w, norm = np.where(short, 1.0, w), np.where(short, 1.0, norm)
        x, y, z = (np.where(short, 0.0, c) for c in (x, y, z))
    return _unit_quaternion_matrix(w / norm, x / norm, y / norm, z / norm, out)


def quat_matrix(quat: np.ndarray) -> np.ndarray:
    """Rotation matrix (3, 3) of one unit quaternion (w, x, y, z), used as given."""
    w, x, y, z = quat
    return _unit_quaternion_matrix(w, x, y, z)


def _unit_quaternion_matrix(w, x, y, z, out: np.ndarray | None = None) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of unit quaternions given by components (...), or
    into ``out`` (3, 3, ...), the components first."""
    R = np.empty(np.shape(w) + (3, 3)) if out is None else out
    E = np.moveaxis(R, (-2, -1), (0, 1)) if out is None else out  # E[a, b] is R[..., a, b]
    x2, y2, z2 = x + x, y + y, z + z  # each product once: 2 (x y - z w) = x y2 - w z2, exactly
    xx, yy, zz, xy, xz, yz = x * x2, y * y2, z * z2, x * y2, x * z2, y * z2
    wx, wy, wz = w * x2, w * y2, w * z2
    E[0, 0] = 1 - (yy + zz)
    E[0, 1] = xy - wz
    E[0, 2] = xz + wy
    E[1, 0] = xy + wz
    E[1, 1] = 1 - (xx + zz)
    E[1, 2] = yz - wx
    E[2, 0] = xz - wy
    E[2, 1] = yz + wx
    E[2, 2] = 1 - (xx + yy)
    return R


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b``, so that ``R(a * b) = R(a) @ R(b)``."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])


def normalized(vector: np.ndarray) -> np.ndarray:
    """``vector`` scaled to unit length; GeometryError when its squared norm is below EPS."""
    norm2 = float(vector @ vector)
    if norm2 < EPS:
        raise GeometryError("vector has zero length")
    return vector / math.sqrt(norm2)


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF's fixed-axis roll-pitch-yaw: ``Rz(yaw) @ Ry(pitch) @ Rx(roll)`` (3, 3)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def matrix_rpy(matrix: np.ndarray) -> tuple[float, float, float]:
    """(roll, pitch, yaw) with ``rpy_matrix(roll, pitch, yaw)`` the rotation ``matrix``.

    Yaw first, then pitch and roll from the matrix with that yaw taken off (``Rz(-yaw) @
    matrix = Ry(pitch) @ Rx(roll)``), so the angles give the matrix back to rounding also
    at and near pitch = ±pi/2, where yaw and roll turn about one axis and any yaw serves."""
    m = np.asarray(matrix, dtype=float)
    yaw = math.atan2(m[1, 0], m[0, 0])
    cy, sy = math.cos(yaw), math.sin(yaw)
    rest = np.array([[cy, sy, 0.0], [-sy, cy, 0.0], [0.0, 0.0, 1.0]]) @ m
    pitch = math.atan2(-rest[2, 0], rest[0, 0])
    roll = math.atan2(-rest[1, 2], rest[1, 1])
    return roll, pitch, yaw


def axis_angle_matrix(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix (3, 3) by ``angle`` (radians) about the unit ``axis`` (Rodrigues)."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


# -- MuJoCo's orientation forms ----------------------------------------------------------


def axisangle_quat(axisangle: np.ndarray, degree: bool) -> np.ndarray:
    """Quaternion of ``axisangle = (x, y, z, angle)``."""
    try:
        axis = normalized(np.asarray(axisangle[:3], dtype=float))
    except GeometryError:
        raise GeometryError("axisangle axis has zero length") from None
    angle = math.radians(axisangle[3]) if degree else float(axisangle[3])
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])


def euler_quat(angles: np.ndarray, sequence: str, degree: bool) -> np.ndarray:
    """Quaternion of three Euler angles applied in ``sequence`` (e.g. "xyz", "XYZ")."""
    quat = IDENTITY_QUAT.copy()
    for angle, letter in zip(angles, sequence):
        angle = math.radians(angle) if degree else float(angle)
        step = np.zeros(4)
        step[0] = math.cos(angle / 2)
        step["xyz".index(letter.lower()) + 1] = math.sin(angle / 2)
        quat = quat_multiply(quat, step) if letter.islower() else quat_multiply(step, quat)
    return normalized(quat)


def xyaxes_quat(xyaxes: np.ndarray) -> np.ndarray:
    """Quaternion of the frame with x axis ``xyaxes[:3]`` and y axis ``xyaxes[3:]``."""
    try:
        x = normalized(np.asarray(xyaxes[:3], dtype=float))
    except GeometryError:
        raise GeometryError("xyaxes: x axis has zero length") from None
    y = np.asarray(xyaxes[3:], dtype=float)
    try:
        y = normalized(y - x * (x @ y))
    except GeometryError:
        raise GeometryError("xyaxes: y axis is zero or parallel to x") from None
    z = normalized(np.cross(x, y))
    return matrix_quat(np.column_stack([x, y, z]))


def zaxis_quat(zaxis: np.ndarray) -> np.ndarray:
    """The smallest rotation taking (0, 0, 1) to ``zaxis`` (about x by pi for -z)."""
    try:
        z = normalized(np.asarray(zaxis, dtype=float))
    except GeometryError:
        raise GeometryError("zaxis has zero length") from None
    axis = np.array([-z[1], z[0], 0.0])
    sine = math.sqrt(float(axis @ axis))
    axis = axis / sine if sine >= 1e-10 else np.array([1.0, 0.0, 0.0])
    angle = math.atan2(sine, z[2])
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])


def matrix_quat(matrix: np.ndarray) -> np.ndarray:
    """Unit quaternion (w >= 0 branch of the largest component) of a rotation matrix."""
    m = matrix
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        w = 0.5 * math.sqrt(1 + trace)
        quat = [w, (m[2, 1] - m[1, 2]) / (4 * w), (m[0, 2] - m[2, 0]) / (4 * w),
                (m[1, 0] - m[0, 1]) / (4 * w)]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        x = 0.5 * math.sqrt(1 + m[0, 0] - m[1, 1] - m[2, 2])
        quat = [(m[2, 1] - m[1, 2]) / (4 * x), x, (m[0, 1] + m[1, 0]) / (4 * x),
                (m[0, 2] + m[2, 0]) / (4 * x)]
    elif m[1, 1] > m[2, 2]:
        y = 0.5 * math.sqrt(1 - m[0, 0] + m[1, 1] - m[2, 2])
        quat = [(m[0, 2] - m[2, 0]) / (4 * y), (m[0, 1] + m[1, 0]) / (4 * y), y,
                (m[1, 2] + m[2, 1]) / (4 * y)]
    else:
        z = 0.5 * math.sqrt(1 - m[0, 0] - m[1, 1] + m[2, 2])
        quat = [(m[1, 0] - m[0, 1]) / (4 * z), (m[0, 2] + m[2, 0]) / (4 * z),
                (m[1, 2] + m[2, 1]) / (4 * z), z]
    return normalized(np.array(quat))
