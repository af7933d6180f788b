"""A URDF link's inertia from its shapes at uniform density, as MuJoCo's compiler computes
a body's from its geoms (``<compiler inertiafromgeom="true">``): ``dyn inertia-from-geometry``.

Conventions
-----------
* The link keeps its mass; the density is that mass over the shapes' total volume (their
  area with ``shell``), and the com and the tensor (about the com, link frame) are those
  of the shapes at that density. Overlapping shapes count twice, as in MuJoCo.
* Each shape is a MuJoCo geom (:mod:`.shape_inertia`, the MJCF compiler's own code): a
  primitive's exact volume and moments, or ``shell`` its surface's (``shellinertia``); a
  mesh's union of pyramids in MuJoCo 4's default mode, ``legacy``, or ``shell``
  (``<mesh inertia="shell">``). A mesh that is not a closed, consistently oriented surface
  (an edge without its opposite, or used twice in one direction) has no volume to
  integrate: its convex hull stands in (``inertia="convex"``), and the result says so.
* Mesh files: STL and OBJ as MuJoCo reads them (:mod:`.meshes`); COLLADA (.dae), which
  MuJoCo does not read, by the triangles of its visual scene placed as assimp places
  them (:mod:`.collada`).
  They are found as ``dyn check-inertia`` finds them (:func:`.packages.resolve_uri`, the
  ``--mesh-path`` folders last).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from treedyn.engine.description import Inertia, Shape, TreeDescription
from treedyn.engine.geometry import MassProperties, combine, half_sizes
from treedyn.engine.rotations import IDENTITY_QUAT, GeometryError, matrix_quat, quat_matrix

from .collada import dae_mesh
from .files import MESH_BYTES, read_bounded
from .meshes import MESH_SUFFIXES, MeshFileError, read_mesh_file
from .packages import PackagePaths, resolve_uri
from .shape_inertia import (MeshInertia, closed_surface, mesh_inertia, solid_measure,
                            solid_principal)


@dataclass(frozen=True)
class LinkResult:
    """One link: ``status`` "computed" (``inertia`` the new one, link frame), "no mass",
    "no geometry" or "unreadable" (``reason`` says why; the link is left alone)."""

    link: str
    status: str
    inertia: Inertia | None = None
    measure: float = 0.0  # the shapes' total volume in m^3 (area in m^2 with shell)
    reason: str = ""
    hulls: tuple[str, ...] = ()  # mesh files (as written) whose convex hull stood in


def geometry_inertias(description: TreeDescription, model_path: str,
                      packages: PackagePaths = PackagePaths(), role: str = "collision",
                      shell: bool = False) -> list[LinkResult]:
    """Every link's inertia from its ``role`` shapes ("collision" or "visual"), in order."""
    results = []
    for link in description.links:
        shapes = [shape for shape in link.geometry if shape.role == role]
        mass = link.inertia.mass
        if not link.has_inertial or not mass > 0:
            results.append(LinkResult(link.name, "no mass", reason="the link has no mass to "
                                      "keep (no <inertial>, or mass 0)"))
        elif not shapes:
            results.append(LinkResult(link.name, "no geometry", reason=f"no {role} shapes"))
        else:
            results.append(_link_result(link.name, shapes, mass, model_path, packages, shell))
    return results


def _link_result(name: str, shapes: list[Shape], mass: float, model_path: str,
                 packages: PackagePaths, shell: bool) -> LinkResult:
    """The link's shapes at the density that gives them ``mass``."""
    solids, hulls = [], []
    for shape in shapes:
        if shape.kind != "mesh":
            solids.append((shape, None))
            continue
        path = resolve_uri(shape.mesh, model_path, packages)
        if path is None:
            return LinkResult(name, "unreadable", reason=f"mesh {shape.mesh} not found")
        try:
            mesh, hull = processed(str(path), tuple(map(float, shape.scale)), shell)
        except (MeshFileError, GeometryError, OSError) as error:
            problem = getattr(error, "strerror", None) or str(error)
            return LinkResult(name, "unreadable", reason=f"mesh {shape.mesh}: {problem}")
        solids.append((shape, mesh))
        if hull:
            hulls.append(shape.mesh)
    measures = [solid_measure(shape.kind, half_sizes(shape.kind, shape.size), shell, mesh)
                for shape, mesh in solids]
    total = sum(measures)
    if not total > 0:
        return LinkResult(name, "unreadable", reason="the shapes have no volume")
    density = mass / total
    parts = []
    for (shape, mesh), measure in zip(solids, measures):
        pose = (np.asarray(shape.translation, dtype=float), matrix_quat(shape.rotation))
        pos, quat, moments = solid_principal(shape.kind, half_sizes(shape.kind, shape.size),
                                             shell, mesh, pose, density * measure, density)
        frame = quat_matrix(quat)
        parts.append(MassProperties(density * measure, pos, frame @ np.diag(moments) @ frame.T))
    whole = parts[0] if len(parts) == 1 else combine(parts)
    inertia = Inertia(mass, whole.com, 0.5 * (whole.inertia + whole.inertia.T))
    return LinkResult(name, "computed", inertia, total, hulls=tuple(dict.fromkeys(hulls)))


@functools.lru_cache(maxsize=256)
def processed(path: str, scale: tuple[float, float, float], shell: bool
              ) -> tuple[MeshInertia, bool]:
    """(the mesh file's mass properties at unit density, scaled, whether its convex hull
    stood in): MuJoCo's ``legacy`` mode for a closed surface, ``shell`` with ``shell``,
    else ``convex``."""
    suffix = Path(path).suffix.lower()
    if suffix == ".dae":
        try:
            found = dae_mesh(read_bounded(path, MESH_BYTES))
        except (ValueError, IndexError, SyntaxError) as error:
            raise MeshFileError(str(error).split("\n")[0] or "not a valid .dae file") from None
        if found is None or len(found[0]) < 4:
            raise MeshFileError("fewer than 4 vertices")
        if not np.all(np.isfinite(found[0])):
            raise MeshFileError("a vertex coordinate is not finite (NaN or infinity)")
        vertices, faces = found
    elif suffix in MESH_SUFFIXES:
        data = read_mesh_file(path)
        vertices, faces = data.vertices, data.faces
    else:
        raise MeshFileError(f"{suffix or 'a file without suffix'} is not a mesh format "
                            "dyn reads (STL, OBJ, DAE, MSH)")
    if shell and len(faces):
        mode = "shell"
    else:
        mode = "legacy" if len(faces) and closed_surface(vertices, faces) else "convex"
    scale = np.array(scale)
    return (mesh_inertia(vertices, faces, mode, scale, np.zeros(3), IDENTITY_QUAT),
            mode == "convex")
