"""Link geometry as primitive solids, and their uniform-density mass properties.

Conventions
-----------
* A :class:`~treedyn.engine.description.Shape` gives full lengths: a box its edges, a
  cylinder and a capsule ``(radius, length)`` (the capsule's length without its caps), a
  sphere its radius, an ellipsoid its semi-axes. MuJoCo gives half sizes: half edges,
  ``(radius, half length)``. :func:`half_sizes` and :func:`shape_size` convert.
* The primitive functions take half sizes (:func:`primitive_volume`,
  :func:`primitive_inertia`): a solid, or with ``shell`` MuJoCo's hollow shell (the
  volume is then the surface area); the principal moments are about the solid's centre,
  along its axes (cylinders and capsules along z).
* :func:`solid_properties` and :func:`solid_corners` pose a Shape's solid in the link frame.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .description import Shape
from .inertia_forms import parallel_axis
from .rotations import quat_matrix


@dataclass(frozen=True)
class LinkGeometry:
    """A link's usable geometry: primitive solids posed in the link frame."""

    role: str  # "collision", "visual", or "" when unknown
    solids: tuple[Shape, ...]  # boxes, cylinders, spheres, capsules, ellipsoids
    exact: bool  # False when a mesh is stood in for by its bounding box
    note: str = ""  # why the geometry is unknown
    missing: tuple[str, ...] = ()  # mesh files (as written) that could not be found
    unreadable: tuple[tuple[str, str], ...] = ()  # (mesh file as written, why it cannot be read)
    # the link's other usable geometry (its visual shapes when these are the collision
    # ones, and the reverse), None when it has no other
    alternative: "LinkGeometry | None" = None


def half_sizes(kind: str, size: np.ndarray) -> np.ndarray:
    """MuJoCo's half sizes of a primitive from its Shape size (see the conventions)."""
    size = np.asarray(size, dtype=float)
    if kind == "box":
        return size[:3] / 2
    if kind in ("capsule", "cylinder"):
        return np.array([size[0], size[1] / 2])
    return size.copy()


def shape_size(kind: str, size: np.ndarray) -> np.ndarray:
    """A primitive's Shape size from MuJoCo's half sizes (the inverse of :func:`half_sizes`)."""
    if kind == "box":
        return 2 * size[:3]
    if kind == "sphere":
        return size[:1].copy()
    if kind in ("capsule", "cylinder"):
        return np.array([size[0], 2 * size[1]])
    return size[:3].copy()


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


def solid_properties(shape: Shape) -> tuple[float, np.ndarray, np.ndarray]:
    """(volume, centroid in the link frame, unit-mass inertia about it in the link frame)."""
    if shape.kind not in ("box", "sphere", "cylinder", "capsule", "ellipsoid"):
        raise ValueError(f"not a primitive solid: {shape.kind}")
    half = half_sizes(shape.kind, shape.size)
    volume = primitive_volume(shape.kind, half, shell=False)
    local = np.diag(primitive_inertia(shape.kind, half, 1.0, shell=False))
    R = shape.rotation
    return float(volume), np.asarray(shape.translation, dtype=float), R @ local @ R.T


def solid_corners(shape: Shape) -> np.ndarray:
    """(8, 3) corners of the solid's bounding box in its own frame, posed in the link frame."""
    size = np.asarray(shape.size, dtype=float)
    if shape.kind == "box":
        half = size / 2
    elif shape.kind == "sphere":
        half = np.full(3, size[0])
    elif shape.kind == "cylinder":
        half = np.array([size[0], size[0], size[1] / 2])
    elif shape.kind == "ellipsoid":
        half = size[:3]
    else:
        half = np.array([size[0], size[0], size[1] / 2 + size[0]])
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
    return (signs * half) @ shape.rotation.T + shape.translation


# -- mass properties of rigidly joined parts ---------------------------------------


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
        inertia += part.inertia + parallel_axis(part.mass, part.com - com)
    return MassProperties(mass, com, 0.5 * (inertia + inertia.T))
