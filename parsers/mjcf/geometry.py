"""Frames, orientations and mass properties with MuJoCo's compiler conventions.

Conventions
-----------
* Quaternions are ``(w, x, y, z)`` and rotate a child frame into its parent; a pose is
  ``(pos, quat)``: the child frame's origin and orientation in the parent frame.
* The orientation forms (``axisangle``, ``euler``, ``xyaxes``, ``zaxis``) and quaternion
  algebra are :mod:`treedyn.engine.rotations`'s.
* Mass properties are ``(mass, com, inertia)``: the 3x3 rotational inertia is about the
  centre of mass, in the frame the com is given in.
* Primitive geoms (sphere, capsule, ellipsoid, cylinder, box) have their volume- or
  shell-based mass properties in the geom frame (:mod:`treedyn.engine.geometry`); a
  mesh's are computed from its triangles with MuJoCo's union-of-pyramids method, in the
  four ``<mesh inertia>`` modes. Both live in :mod:`treedyn.parsers.shape_inertia`, shared
  with URDF links (``dyn inertia-from-geometry``); they are named here as the compiler
  uses them (``geo.mesh_inertia``, ``geo.combine``, ...).
"""
from __future__ import annotations

import numpy as np

from treedyn.engine.geometry import MassProperties, combine  # noqa: F401 (geo.combine)
from treedyn.engine.rotations import GeometryError, quat_matrix

from ..shape_inertia import (  # noqa: F401 (the MJCF compiler's names for them: geo.*)
    BODY_TOLERANCE,
    MESH_INERTIA_MODES,
    MESH_TOLERANCE,
    MINVAL,
    MeshInertia,
    check_hull,
    compose,
    convex_hull_faces,
    mesh_inertia,
    principal_axes,
)

# geom type -> number of size parameters that must be positive
SIZE_COUNT = {"plane": 3, "hfield": 0, "sphere": 1, "capsule": 2, "ellipsoid": 3,
              "cylinder": 2, "box": 3, "mesh": 0, "sdf": 0}


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
