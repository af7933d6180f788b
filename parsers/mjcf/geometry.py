"""Frames, orientations and mass properties with MuJoCo's compiler conventions.

Conventions
-----------
* Quaternions are ``(w, x, y, z)`` and rotate a child frame into its parent; a pose is
  ``(pos, quat)``: the child frame's origin and orientation in the parent frame.
* Orientation forms follow MuJoCo's ``<compiler angle eulerseq>``: ``axisangle`` (axis is
  normalised; the angle is in degrees when ``degree``), ``euler`` (lower-case letters of the
  sequence rotate about moving axes, upper-case about fixed axes), ``xyaxes`` (the y axis
  is made orthogonal to x) and ``zaxis`` (the smallest rotation taking z to the vector).
  A vector counts as zero when its squared norm is below ``EPS`` (MuJoCo's ``mjEPS``).
* Mass properties are ``(mass, com, inertia)``: the 3x3 rotational inertia is about the
  centre of mass, in the frame the com is given in.
* Primitive geoms (sphere, capsule, ellipsoid, cylinder, box) have their volume- or
  shell-based mass properties in the geom frame; a mesh's are computed from its triangles
  with MuJoCo's union-of-pyramids method, in the four ``<mesh inertia>`` modes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

EPS = 1e-14  # MuJoCo's mjEPS
MINVAL = 1e-15  # MuJoCo's mjMINVAL
IDENTITY_QUAT = np.array([1.0, 0.0, 0.0, 0.0])

# geom type -> number of size parameters that must be positive
SIZE_COUNT = {"plane": 3, "hfield": 0, "sphere": 1, "capsule": 2, "ellipsoid": 3,
              "cylinder": 2, "box": 3, "mesh": 0, "sdf": 0}
MESH_INERTIA_MODES = ("convex", "exact", "legacy", "shell")


class GeometryError(ValueError):
    """An invalid orientation, geom or mesh (the parser adds file, line and element)."""


# -- quaternions and poses ------------------------------------------------------------


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


def quat_matrix(quat: np.ndarray) -> np.ndarray:
    """Rotation matrix (3, 3) of a unit quaternion (w, x, y, z)."""
    w, x, y, z = quat
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def normalized(vector: np.ndarray) -> np.ndarray:
    """``vector`` scaled to unit length; GeometryError when its squared norm is below EPS."""
    norm2 = float(vector @ vector)
    if norm2 < EPS:
        raise GeometryError("vector has zero length")
    return vector / math.sqrt(norm2)


def compose(parent: tuple[np.ndarray, np.ndarray],
            child: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The pose ``parent * child`` (child given in the parent's frame) in the parent's parent."""
    pos, quat = parent
    return pos + quat_matrix(quat) @ child[0], normalized(quat_multiply(quat, child[1]))


# -- orientation forms ----------------------------------------------------------------


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


# -- MuJoCo's principal axes -----------------------------------------------------------

MESH_TOLERANCE = 1e-7  # stop of MuJoCo's Jacobi iteration for mesh inertias
BODY_TOLERANCE = 2e-15  # ... for body inertias (several geoms, fullinertia)
SORT_TOLERANCE = 1e-12  # moments closer than this (relative) are not reordered


def principal_axes(inertia: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """(moments (3,) in decreasing order, quat of the principal frame) as MuJoCo finds them.

    MuJoCo's compiler diagonalises inertias with a Jacobi iteration: starting at the
    identity, it zeroes the largest off-diagonal element by a rotation about the remaining
    axis, and stops once that element is below ``tolerance`` times the largest diagonal
    element of ``inertia``; what remains off the diagonal is dropped. The tolerance is
    loose for meshes (``MESH_TOLERANCE``, so a mesh's compiled inertia can differ from its
    exact one by ~1e-7) and tight for bodies (``BODY_TOLERANCE``); both were measured
    against MuJoCo 4.0. The moments are then sorted in decreasing order by quarter turns.
    Reproducing this makes compiled inertias, and the frames of fitted geoms and aligned
    free bodies, agree with MuJoCo's to rounding.
    """
    scale = float(np.abs(np.diag(inertia)).max())
    if scale == 0:
        return np.zeros(3), IDENTITY_QUAT.copy()
    pairs = ((0, 1, 2), (0, 2, 1), (1, 2, 0))  # (row, column, rotation axis)
    quat = IDENTITY_QUAT.copy()
    moments = np.diag(inertia).copy()
    for _ in range(500):
        frame = quat_matrix(quat)
        diagonal = frame.T @ inertia @ frame
        moments = np.diag(diagonal).copy()
        size = [abs(diagonal[r, c]) for r, c, _ in pairs]
        if size[0] > size[1] and size[0] > size[2]:
            row, col, axis = pairs[0]
        elif size[1] > size[2]:
            row, col, axis = pairs[1]
        else:
            row, col, axis = pairs[2]
        off = diagonal[row, col]
        if abs(off) < tolerance * scale:
            break
        quat = normalized(quat_multiply(quat, _jacobi_rotation(diagonal, row, col, axis)))
    for j in (0, 1, 0):
        if moments[j] + SORT_TOLERANCE * scale < moments[j + 1]:
            moments[j], moments[j + 1] = moments[j + 1], moments[j]
            step = np.zeros(4)
            step[0] = step[(j + 2) % 3 + 1] = math.sqrt(0.5)
            quat = normalized(quat_multiply(quat, step))
    return moments, quat


def _jacobi_rotation(diagonal: np.ndarray, row: int, col: int, axis: int) -> np.ndarray:
    """Quaternion of the plane rotation about ``axis`` that zeroes ``diagonal[row, col]``."""
    off = diagonal[row, col]
    tau = (diagonal[col, col] - diagonal[row, row]) / (2 * off)
    tangent = 1 / (abs(tau) + math.sqrt(1 + tau * tau))
    cosine = 1 / math.sqrt(1 + tangent * tangent)
    half_sine = tangent * cosine / (2 * math.sqrt((1 + cosine) / 2))
    if (tau >= 0) != (axis == 1):
        half_sine = -half_sine
    step = np.zeros(4)
    step[0] = math.sqrt(1 - half_sine * half_sine)
    step[axis + 1] = half_sine
    return normalized(step)


# -- mass properties ------------------------------------------------------------------


@dataclass(frozen=True)
class MassProperties:
    """Mass, com (3,) and inertia (3, 3) about the com, all in one frame."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray

    def placed(self, pose: tuple[np.ndarray, np.ndarray]) -> "MassProperties":
        """The same body seen from the frame in which ``pose`` is given."""
        rotation = quat_matrix(pose[1])
        return MassProperties(self.mass, pose[0] + rotation @ self.com,
                              rotation @ self.inertia @ rotation.T)


def combine(parts: list[MassProperties]) -> MassProperties:
    """Mass properties of rigidly joined parts (all in one frame); parallel-axis theorem."""
    mass = sum(part.mass for part in parts)
    com = sum(part.mass * part.com for part in parts) / mass
    inertia = np.zeros((3, 3))
    for part in parts:
        d = part.com - com
        inertia += part.inertia + part.mass * ((d @ d) * np.eye(3) - np.outer(d, d))
    return MassProperties(mass, com, 0.5 * (inertia + inertia.T))


def primitive_volume(kind: str, size: np.ndarray, shell: bool) -> float:
    """Volume (or surface area when ``shell``) of a primitive geom; 0 for other types."""
    r = size[0]
    if kind == "sphere":
        return 4 * math.pi * r * r if shell else 4 * math.pi * r ** 3 / 3
    if kind in ("capsule", "cylinder"):
        height = 2 * size[1]
        if kind == "capsule":
            if shell:
                return 4 * math.pi * r * r + 2 * math.pi * r * height
            return math.pi * (r * r * height + 4 * r ** 3 / 3)
        if shell:
            return 2 * math.pi * r * r + 2 * math.pi * r * height
        return math.pi * r * r * height
    if kind == "ellipsoid":
        a, b, c = size
        if shell:
            p = 1.6075  # Thomsen's approximation of the ellipsoid's area
            return 4 * math.pi * (((a * b) ** p + (b * c) ** p + (c * a) ** p) / 3) ** (1 / p)
        return 4 * math.pi * a * b * c / 3
    if kind in ("box", "hfield"):
        a, b, c = size
        return 8 * (a * b + b * c + c * a) if shell else 8 * a * b * c
    return 0.0


def primitive_inertia(kind: str, size: np.ndarray, mass: float, shell: bool) -> np.ndarray:
    """Principal moments (3,) of a primitive geom of ``mass`` about its frame's axes."""
    if kind == "sphere":
        return np.full(3, (2 / 3 if shell else 2 / 5) * mass * size[0] ** 2)
    if kind == "capsule":
        return _capsule_inertia(size[0], size[1], mass, shell)
    if kind == "cylinder":
        return _cylinder_inertia(size[0], size[1], mass, shell)
    if kind == "ellipsoid":
        return _ellipsoid_inertia(size, mass, shell)
    if kind in ("box", "hfield"):
        return _box_inertia(size, mass, shell)
    return np.zeros(3)


def _capsule_inertia(radius: float, half: float, mass: float, shell: bool) -> np.ndarray:
    """Capsule along z: a cylinder of length 2*half plus two hemispherical caps."""
    height = 2 * half
    r2 = radius * radius
    if shell:
        cap_area, side_area = 4 * math.pi * r2, 2 * math.pi * radius * height
        caps = mass * cap_area / (cap_area + side_area)
        side = mass - caps
        axial = side * r2 + 2 * caps * r2 / 3
        cap_com = radius / 2
        cap_shift = half + cap_com
        lateral = (side * (6 * r2 + height * height) / 12 + 2 * caps * r2 / 3
                   + caps * (cap_shift * cap_shift - cap_com * cap_com))
        return np.array([lateral, lateral, axial])
    caps = mass * 4 * radius / (4 * radius + 3 * height)
    side = mass - caps
    lateral = (side * (3 * r2 + height * height) / 12 + 2 * caps * r2 / 5
               + caps * height * (3 * radius + 2 * height) / 8)
    axial = side * r2 / 2 + 2 * caps * r2 / 5
    return np.array([lateral, lateral, axial])


def _cylinder_inertia(radius: float, half: float, mass: float, shell: bool) -> np.ndarray:
    """Cylinder along z; the shell is the side plus both end disks."""
    height = 2 * half
    r2 = radius * radius
    if not shell:
        lateral = mass * (3 * r2 + height * height) / 12
        return np.array([lateral, lateral, mass * r2 / 2])
    disk_area, side_area = math.pi * r2, 2 * math.pi * radius * height
    disk = mass * disk_area / (2 * disk_area + side_area)
    side = mass - 2 * disk
    lateral = side * (6 * r2 + height * height) / 12 + 2 * (disk * r2 / 4 + disk * half * half)
    axial = side * r2 + 2 * (disk * r2 / 2)
    return np.array([lateral, lateral, axial])


def _ellipsoid_inertia(size: np.ndarray, mass: float, shell: bool) -> np.ndarray:
    """Solid ellipsoid; the shell is MuJoCo's difference of two ellipsoids 1e-6 apart."""
    s2 = np.asarray(size, dtype=float) ** 2
    if not shell:
        return mass * np.array([s2[1] + s2[2], s2[0] + s2[2], s2[0] + s2[1]]) / 5
    grown = np.asarray(size, dtype=float) + 1e-6
    g2 = grown ** 2
    inner = 4 * math.pi * np.prod(size) / 3
    outer = 4 * math.pi * np.prod(grown) / 3
    density = mass / (outer - inner)
    inner_moments = inner * density * np.array([s2[1] + s2[2], s2[0] + s2[2], s2[0] + s2[1]]) / 5
    outer_moments = outer * density * np.array([g2[1] + g2[2], g2[0] + g2[2], g2[0] + g2[1]]) / 5
    return outer_moments - inner_moments


def _box_inertia(size: np.ndarray, mass: float, shell: bool) -> np.ndarray:
    """Solid box of half-sizes ``size``; the shell is its six faces."""
    s2 = np.asarray(size, dtype=float) ** 2
    if not shell:
        return mass * np.array([s2[1] + s2[2], s2[0] + s2[2], s2[0] + s2[1]]) / 3
    lx, ly, lz = 2 * np.asarray(size, dtype=float)
    areas = np.array([lx * ly, ly * lz, lz * lx])  # faces normal to z, x, y
    m0, m1, m2 = mass * areas / (2 * areas.sum())
    ix = 2 * (m0 * s2[2] + m2 * s2[1] + m0 * ly * ly / 12 + m1 * (ly * ly + lz * lz) / 12
              + m2 * lz * lz / 12)
    iy = 2 * (m0 * s2[2] + m1 * s2[0] + m0 * lx * lx / 12 + m1 * lz * lz / 12
              + m2 * (lx * lx + lz * lz) / 12)
    iz = 2 * (m1 * s2[0] + m2 * s2[1] + m0 * (lx * lx + ly * ly) / 12 + m1 * ly * ly / 12
              + m2 * lx * lx / 12)
    return np.array([ix, iy, iz])


# -- meshes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MeshInertia:
    """A processed mesh: its measure, centroid and unit-density inertia in mesh coordinates.

    ``measure`` is the volume (the area for ``shell``) that the density multiplies; the
    inertia (3, 3) is about ``com`` for unit density. ``principal`` holds the principal
    moments in decreasing order and ``quat`` the principal frame as MuJoCo computes them
    (see :func:`principal_axes`), and ``vertices`` the transformed vertices (for fitting
    primitives to the mesh).
    """

    measure: float
    com: np.ndarray
    inertia: np.ndarray
    principal: np.ndarray
    quat: np.ndarray
    vertices: np.ndarray

    def box_half_sizes(self) -> np.ndarray:
        """Half-sizes (3,) of the box with this mesh's measure and principal moments."""
        e = self.principal
        sums = np.array([e[1] + e[2] - e[0], e[0] + e[2] - e[1], e[0] + e[1] - e[2]])
        return 0.5 * np.sqrt(6 * np.maximum(sums, 0.0) / self.measure)


def mesh_inertia(vertices: np.ndarray, faces: np.ndarray, mode: str, scale: np.ndarray,
                 refpos: np.ndarray, refquat: np.ndarray, hull_vertices: int = -1) -> MeshInertia:
    """MuJoCo's mesh mass properties for ``<mesh inertia=mode>``.

    Faces are used as given (``legacy``, ``exact``, ``shell``) or replaced by the convex
    hull (``convex``, and whenever the mesh has no faces), of at most ``hull_vertices``
    vertices (``maxhullvert``; -1: no limit). Vertices are offset by
    ``refpos``, rotated by the conjugate of ``refquat`` and scaled; a mirroring scale
    reverses the winding. Each face forms a pyramid with the area-weighted face centroid
    (for the centroid) and with the centroid (for the inertia); ``legacy`` counts every
    pyramid as positive, ``exact`` signs them by orientation, ``shell`` weights faces by
    area.
    """
    points = np.asarray(vertices, dtype=float)
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if len(faces) == 0 or mode == "convex":
        faces = convex_hull_faces(points, hull_vertices)
    if mode == "exact":
        _check_orientation(points, faces)
    if np.prod(scale) < 0:
        faces = faces[:, [0, 2, 1]]
    points = points - refpos
    if np.any(refquat != IDENTITY_QUAT):
        points = points @ quat_matrix(normalized(np.asarray(refquat, dtype=float)))
    points = points * scale
    triangles = _triangles(points, faces)
    facecen = _face_centroid(triangles)
    if mode == "shell":
        com = _shell_centroid(triangles, facecen)
    else:
        com = _volume_centroid(triangles, facecen, legacy=(mode == "legacy"))
    measure, inertia = _pyramid_inertia(points - com, faces, mode)
    principal, quat = principal_axes(inertia, MESH_TOLERANCE)
    _check_principal(principal)
    return MeshInertia(measure, com, inertia, principal, quat, points)


def _triangles(points: np.ndarray, faces: np.ndarray):
    """(unit normals (m, 3), centers (m, 3), areas (m,)); degenerate faces get area 0."""
    a, b, c = points[faces[:, 0]], points[faces[:, 1]], points[faces[:, 2]]
    cross = np.cross(b - a, c - a)
    length = np.linalg.norm(cross, axis=1)
    valid = length >= MINVAL
    normals = np.zeros_like(cross)
    normals[valid] = cross[valid] / length[valid, None]
    areas = np.where(valid, 0.5 * length, 0.0)
    return normals, (a + b + c) / 3, areas


def _face_centroid(triangles) -> np.ndarray:
    """Area-weighted centroid of the faces (the pyramids' apex for the mesh centroid);
    ``triangles`` as :func:`_triangles` gives them."""
    _, centers, areas = triangles
    total = areas.sum()
    if total < MINVAL:
        raise GeometryError("mesh surface area is too small")
    return (areas[:, None] * centers).sum(axis=0) / total


def _volume_centroid(triangles, facecen, legacy: bool) -> np.ndarray:
    """Centroid of the pyramids from ``facecen`` to every face (all positive if legacy)."""
    normals, centers, areas = triangles
    volumes = np.einsum("ij,ij->i", centers - facecen, normals) * areas / 3
    if legacy:
        volumes = np.abs(volumes)
    total = volumes.sum()
    if total < MINVAL:
        if total < 0:
            raise GeometryError("mesh volume is negative (misoriented triangles)")
        raise GeometryError("mesh volume is too small; try <mesh inertia=\"shell\">")
    return (volumes[:, None] * (0.75 * centers + 0.25 * facecen)).sum(axis=0) / total


def _shell_centroid(triangles, facecen) -> np.ndarray:
    """MuJoCo's shell centroid: face-area weights on 3/4 face center + 1/4 facecen."""
    _, centers, areas = triangles
    total = areas.sum()
    return (areas[:, None] * (0.75 * centers + 0.25 * facecen)).sum(axis=0) / total


def _pyramid_inertia(centered: np.ndarray, faces: np.ndarray, mode: str):
    """(measure, unit-density inertia (3, 3)) of pyramids from the origin to every face."""
    normals, centers, areas = _triangles(centered, faces)
    if mode == "shell":
        weights, divisor = areas, 12.0
    else:
        weights, divisor = np.einsum("ij,ij->i", centers, normals) * areas / 3, 20.0
        if mode == "legacy":
            weights = np.abs(weights)
    d, e, f = centered[faces[:, 0]], centered[faces[:, 1]], centered[faces[:, 2]]
    products = np.zeros((3, 3))
    for k in range(3):
        for m in range(k, 3):
            terms = (2 * (d[:, k] * d[:, m] + e[:, k] * e[:, m] + f[:, k] * f[:, m])
                     + d[:, k] * e[:, m] + d[:, m] * e[:, k] + d[:, k] * f[:, m]
                     + d[:, m] * f[:, k] + e[:, k] * f[:, m] + e[:, m] * f[:, k])
            products[k, m] = products[m, k] = (weights / divisor * terms).sum()
    inertia = np.trace(products) * np.eye(3) - products
    return float(weights.sum()), inertia


def _check_principal(principal: np.ndarray) -> None:
    """MuJoCo's mesh checks: positive moments that satisfy the triangle inequality."""
    if principal[2] <= 0:
        raise GeometryError("mesh inertia has a non-positive principal moment")
    e = principal
    for a, b, c in ((0, 1, 2), (0, 2, 1), (1, 2, 0)):
        if e[a] + e[b] < e[c] * (1 - 1e-6) - 1e-9:
            raise GeometryError("mesh principal moments violate A + B >= C")


def _check_orientation(points: np.ndarray, faces: np.ndarray) -> None:
    """For ``exact``: no directed edge may appear twice among the non-degenerate faces."""
    _, _, areas = _triangles(points, faces)
    kept = faces[areas > math.sqrt(MINVAL)]
    edges = np.concatenate([kept[:, [0, 1]], kept[:, [1, 2]], kept[:, [2, 0]]])
    unique = np.unique(edges, axis=0)
    if len(unique) < len(edges):
        raise GeometryError("mesh faces have inconsistent orientation "
                            "(required by <mesh inertia=\"exact\">)")


def convex_hull_faces(points: np.ndarray, max_vertices: int = -1) -> np.ndarray:
    """Outward-oriented triangles (m, 3) of the convex hull of ``points`` (qhull).

    ``max_vertices`` > 0 stops qhull as MuJoCo's ``maxhullvert`` does: option ``Q9`` (add
    the furthest of all outside points first) and ``TA`` (stop after that many points
    beyond the initial simplex's 4), so the hull has at most that many vertices.
    """
    from scipy.spatial import ConvexHull, QhullError

    _check_spread(points)
    options = "Qt" if max_vertices < 0 else f"Qt Q9 TA{max_vertices - 4}"
    try:
        hull = ConvexHull(points, qhull_options=options)
    except (QhullError, ValueError) as error:
        raise GeometryError(f"cannot build the convex hull of the mesh "
                            f"({str(error).splitlines()[0]})") from None
    faces = hull.simplices.astype(np.int64)
    a, b, c = points[faces[:, 0]], points[faces[:, 1]], points[faces[:, 2]]
    inward = np.einsum("ij,ij->i", np.cross(b - a, c - a), hull.equations[:, :3]) < 0
    faces[inward] = faces[inward][:, [0, 2, 1]]
    return faces


def check_hull(points: np.ndarray, max_vertices: int = -1) -> None:
    """Raise GeometryError where MuJoCo cannot build the convex hull of ``points``.

    MuJoCo's own test (:func:`_check_spread`), then qhull itself, unless the points are
    plainly 3-D (their smallest spread at least 1e-6 of the largest), which qhull never
    refuses: so most models need not load scipy.
    """
    _check_spread(points)
    centered = points - points.mean(axis=0)
    spread = np.linalg.eigvalsh(centered.T @ centered)
    if not spread[0] > 1e-12 * spread[2]:
        convex_hull_faces(points, max_vertices)


def _check_spread(points: np.ndarray) -> None:
    """MuJoCo's test before qhull: the points must span 3D (tolerances ``MINVAL``).

    From point 0: the first point farther than MINVAL gives the first edge, the first
    later point whose edge makes a cross product above MINVAL * |e1| * |e2| the plane, and
    some point must then lie more than MINVAL * |e1| off that plane.
    """
    edges = points[1:] - points[0]
    lengths = np.linalg.norm(edges, axis=1)
    far = np.flatnonzero(lengths > MINVAL)
    if not len(far):
        raise GeometryError("the mesh's vertices are all at one point (colocated); no "
                            "convex hull")
    first = far[0]
    edge, length = edges[first], lengths[first]
    cross = np.cross(edge, edges)
    norms = np.linalg.norm(cross, axis=1)
    spanning = (lengths >= MINVAL) & (norms > MINVAL * length * lengths)
    spanning[first] = False
    if not spanning.any():
        raise GeometryError("the mesh's vertices are collinear; no convex hull")
    index = np.flatnonzero(spanning)[0]
    normal = cross[index] / norms[index]
    if np.all(np.abs(edges @ normal) <= MINVAL * length):
        raise GeometryError("the mesh's vertices are coplanar (the mesh is flat); no convex "
                            "hull")


def fitted_primitive(mesh: MeshInertia, kind: str, aabb: bool,
                     fitscale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(size (3,), pos (3,), quat) of the primitive MuJoCo fits to a mesh, in mesh coordinates.

    The primitive sits in the mesh's principal frame (axes in decreasing order of moment):
    by default it matches the equivalent-inertia box; with ``aabb`` (``fitaabb``) it is
    the smallest primitive containing the mesh's bounding box in that frame.
    """
    center = np.zeros(3)
    size = np.zeros(3)
    axes = quat_matrix(mesh.quat)
    if not aabb:
        box = mesh.box_half_sizes()
        if kind == "sphere":
            size[0] = box.sum() / 3
        elif kind in ("capsule", "cylinder"):
            size[0] = (box[0] + box[1]) / 2
            size[1] = max(0.0, box[2] - size[0] / 2) if kind == "capsule" else box[2]
        elif kind in ("ellipsoid", "box"):
            size[:] = box
        else:
            raise GeometryError(f"cannot fit a {kind} geom to a mesh")
    else:
        local = (mesh.vertices - mesh.com) @ axes
        low, high = local.min(axis=0), local.max(axis=0)
        center = (low + high) / 2
        half = high - center
        if kind == "sphere":
            size[0] = half.max()
        elif kind in ("capsule", "cylinder"):
            size[0] = max(half[0], half[1])
            size[1] = half[2] - (size[0] if kind == "capsule" else 0.0)
        elif kind in ("ellipsoid", "box"):
            size[:] = half
        else:
            raise GeometryError(f"cannot fit a {kind} geom to a mesh")
    return size * fitscale, mesh.com + axes @ center, mesh.quat
