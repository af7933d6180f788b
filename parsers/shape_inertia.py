"""Mass properties of solids as MuJoCo's compiler computes them, for every format.

The one place for a shape's volume, centroid and inertia at uniform density: the MJCF
compiler's geoms (:mod:`.mjcf.geoms`) and a URDF link's shapes (:mod:`.geometry_inertia`)
both come here, so both give MuJoCo's numbers.

Conventions
-----------
* Quaternions are ``(w, x, y, z)`` and rotate a child frame into its parent; a pose is
  ``(pos, quat)``: the child frame's origin and orientation in the parent frame.
* Primitives take MuJoCo's half sizes (:mod:`treedyn.engine.geometry`); a solid, or
  with ``shell`` its surface (the measure is then the area).
* A mesh's mass properties are computed from its triangles with MuJoCo's
  union-of-pyramids method, in the four ``<mesh inertia>`` modes (:func:`mesh_inertia`).
* A solid's inertial is its mass, its principal frame ``(pos, quat)`` and its principal
  moments (:func:`solid_measure`, :func:`solid_principal`), as MuJoCo keeps a geom's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from treedyn.engine.geometry import primitive_inertia, primitive_volume
from treedyn.engine.rotations import (
    IDENTITY_QUAT,
    GeometryError,
    normalized,
    quat_matrix,
    quat_multiply,
)

MINVAL = 1e-15  # MuJoCo's mjMINVAL
MESH_INERTIA_MODES = ("convex", "exact", "legacy", "shell")


def compose(parent: tuple[np.ndarray, np.ndarray],
            child: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The pose ``parent * child`` (child given in the parent's frame) in the parent's parent."""
    pos, quat = parent
    return pos + quat_matrix(quat) @ child[0], normalized(quat_multiply(quat, child[1]))


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


def _directed_edges(points: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(3m, 2) vertex pairs of the edges of the non-degenerate faces, as each face turns."""
    _, _, areas = _triangles(points, faces)
    kept = faces[areas > math.sqrt(MINVAL)]
    return np.concatenate([kept[:, [0, 1]], kept[:, [1, 2]], kept[:, [2, 0]]])


def _check_orientation(points: np.ndarray, faces: np.ndarray) -> None:
    """For ``exact``: no directed edge may appear twice among the non-degenerate faces."""
    edges = _directed_edges(points, faces)
    if len(np.unique(edges, axis=0)) < len(edges):
        raise GeometryError("mesh faces have inconsistent orientation "
                            "(required by <mesh inertia=\"exact\">)")


def closed_surface(points: np.ndarray, faces: np.ndarray) -> bool:
    """Whether the non-degenerate faces form closed, consistently oriented surfaces: every
    directed edge once, and its opposite too (no hole, no edge shared by three faces, no
    face turned against its neighbours) -- where the union of pyramids is the solid's."""
    edges = _directed_edges(points, faces)
    if not len(edges):
        return False
    unique = np.unique(edges, axis=0)
    if len(unique) < len(edges):
        return False
    width = int(edges.max()) + 1
    keys = edges[:, 0] * width + edges[:, 1]
    return bool(np.isin(edges[:, 1] * width + edges[:, 0], keys).all())


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


# -- one solid --------------------------------------------------------------------------


def solid_measure(kind: str, half: np.ndarray, shell: bool,
                  mesh: "MeshInertia | None" = None) -> float:
    """The volume (the area when ``shell``) that a solid's density multiplies: the mesh's
    measure, else the primitive's of half sizes ``half``."""
    return mesh.measure if mesh is not None else primitive_volume(kind, half, shell)


def solid_principal(kind: str, half: np.ndarray, shell: bool, mesh: "MeshInertia | None",
                    pose: tuple[np.ndarray, np.ndarray], mass: float, density: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pos, quat, principal moments (3,)) of a solid of ``mass`` (``density``) placed at
    ``pose``: a mesh's principal frame and moments as MuJoCo keeps them, a primitive's
    own frame and moments."""
    if mesh is not None:
        pos, quat = compose(pose, (mesh.com, mesh.quat))
        return pos, quat, density * mesh.principal
    return pose[0], pose[1], primitive_inertia(kind, half, mass, shell)
