"""Link geometry as primitive solids, for the plausibility checks of ``dyn check-inertia``.

The URDF parser keeps each link's ``<collision>`` and ``<visual>`` shapes as written
(:class:`~treedyn.engine.description.Shape`). Here mesh shapes are replaced by the
axis-aligned bounding box of their scaled vertices, in the mesh's own frame, so that the
engine only ever sees boxes, cylinders, spheres, capsules and ellipsoids (MJCF) posed in
the link frame. The MJCF parser gives mesh files as resolved paths.

Mesh files
----------
* ``package://PKG/rest`` is looked up as :mod:`treedyn.parsers.packages` finds packages
  (the folders above the model, then the ``PackagePaths`` the caller passes: those of
  ``ROS_PACKAGE_PATH`` and ``AMENT_PREFIX_PATH``), the same lookup as xacro's
  ``$(find PKG)``. ``file://`` and plain paths are absolute or relative to the
  model's directory. Meshes that cannot be found are listed (``LinkGeometry.missing``):
  ``dyn check-inertia`` warns that the geometry checks of those links were skipped.
* STL (binary and ASCII), Wavefront OBJ (``v`` lines) and COLLADA (.dae: the positions of
  every ``<instance_geometry>`` of the visual scene, through the node transforms, in
  ``<unit meter>`` and with ``Y_UP``/``X_UP`` turned to z-up as assimp does) and MuJoCo's
  ``.msh`` are read; other formats and unreadable files (truncated, a non-finite vertex,
  malformed) make that geometry unusable and are listed with the reason
  (``LinkGeometry.unreadable``): ``dyn check-inertia`` warns once per link and file.
* A link's geometry is its collision shapes when every one of them can be used, else its
  visual shapes under the same condition, else unknown (partial geometry would make an
  inertia look too large). Collision shapes smaller than 1 cm across give way to visual
  shapes ten times larger: such a collision shape is a token, not the link's extent. The
  other usable role is kept as ``LinkGeometry.alternative`` (the engine turns to it when
  collision shapes are too small to hold the mass, as contact points are).
"""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np

from treedyn.engine.description import Shape, TreeDescription
from treedyn.engine.geometry import LinkGeometry, solid_corners

from .collada import dae_points
from .files import MESH_BYTES, read_bounded
from .meshes import POINT_READERS, MeshFileError, read_mesh_bounds
from .packages import PackagePaths, resolve_uri

PRIMITIVES = ("box", "cylinder", "sphere", "capsule", "ellipsoid")


def link_geometry(description: TreeDescription, model_path: str,
                  packages: PackagePaths = PackagePaths()) -> dict[str, LinkGeometry]:
    """Usable geometry of every link that has shapes: {link name: LinkGeometry};
    ``packages`` says where ``package://`` meshes are looked for beyond the model's folders."""
    result = {}
    for link in description.links:
        if link.geometry:
            # the MJCF parser resolves mesh files (and refuses missing ones); a mesh name
            # it gives without a file is a form dyn does not read, not a missing file
            result[link.name] = _usable(link.geometry, model_path, packages,
                                        files_named=description.format in ("urdf", "sdf"))
    return result


def _usable(shapes: tuple[Shape, ...], model_path: str, packages: PackagePaths,
            files_named: bool = True) -> LinkGeometry:
    """The collision shapes as solids if all resolve, else the visual ones, else unknown;
    collision shapes under :data:`PLACEHOLDER` across stand aside for visual shapes
    more than ten times their size (a token sphere beside the real mesh)."""
    notes, missing, unreadable = [], [], []
    found = {}
    for role in ("collision", "visual"):
        group = [shape for shape in shapes if shape.role == role]
        if not group:
            continue
        located = {shape.mesh: resolve_uri(shape.mesh, model_path, packages) for shape in group
                   if shape.kind not in PRIMITIVES}
        solids, problem = _solids(group, located)
        if files_named:
            missing += [mesh for mesh, path in located.items() if path is None]
        unreadable += [(mesh, mesh_problem(str(path))) for mesh, path in located.items()
                       if path is not None and mesh_problem(str(path))]
        if solids is None:
            notes.append(f"{role}: {problem}")
            continue
        found[role] = LinkGeometry(role, solids, all(s.kind != "mesh" for s in group), "")
    unreadable = tuple(dict.fromkeys(unreadable))
    collision, visual = found.get("collision"), found.get("visual")
    if collision is not None and visual is not None:
        small, large = _diagonal(collision.solids), _diagonal(visual.solids)
        if small < PLACEHOLDER and large > 10 * small:
            collision, visual = visual, collision
        return dataclasses.replace(collision, alternative=visual, unreadable=unreadable)
    if collision is not None or visual is not None:
        return dataclasses.replace(collision or visual, unreadable=unreadable)
    return LinkGeometry("", (), False, "; ".join(notes) or "no shapes",
                        tuple(dict.fromkeys(missing)), unreadable)


PLACEHOLDER = 0.01  # m: a collision geometry whose bounding box is smaller is a token


def _diagonal(solids: tuple[Shape, ...]) -> float:
    """The diagonal of the link-frame bounding box of ``solids``."""
    corners = np.vstack([solid_corners(solid) for solid in solids])
    return float(np.linalg.norm(corners.max(axis=0) - corners.min(axis=0)))


def _solids(shapes: list[Shape], located: dict[str, Path | None]
            ) -> tuple[tuple[Shape, ...] | None, str]:
    """(primitive solids, "") or (None, why a shape cannot be used); ``located`` gives each
    mesh's file (None when not found)."""
    solids = []
    for shape in shapes:
        if shape.kind in PRIMITIVES:
            solids.append(shape)
            continue
        path = located[shape.mesh]
        if path is None:
            return None, f"mesh {shape.mesh} not found"
        bounds = mesh_bounds(str(path))
        if bounds is None:
            return None, f"mesh {shape.mesh} cannot be read"
        solids.append(_mesh_box(shape, *bounds))
    return tuple(solids), ""


def _mesh_box(shape: Shape, low: np.ndarray, high: np.ndarray) -> Shape:
    """The box solid of a mesh's bounding box (low, high in mesh coordinates, unscaled)."""
    scale = np.asarray(shape.scale, dtype=float)
    corners = np.sort(np.stack([low * scale, high * scale]), axis=0)
    center = corners.mean(axis=0)
    return Shape("box", corners[1] - corners[0], shape.rotation,
                 shape.translation + shape.rotation @ center, shape.role, shape.mesh,
                 source=shape.source)


@functools.lru_cache(maxsize=1024)
def mesh_bounds(path: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(min, max) corners (3,) of a mesh file's vertices, or None if it cannot be read."""
    return _read_bounds(path)[0]


def mesh_problem(path: str) -> str:
    """Why the mesh file at ``path`` cannot be read ("" when it can)."""
    return _read_bounds(path)[1]


@functools.lru_cache(maxsize=1024)
def _read_bounds(path: str) -> tuple[tuple[np.ndarray, np.ndarray] | None, str]:
    """(bounds or None, "" or why the file gives no bounding box): STL, OBJ and ``.msh``
    through :func:`read_mesh_bounds` (a binary STL a block of faces at a time, its header
    checked against its size first), COLLADA through :func:`dae_points`."""
    suffix = Path(path).suffix.lower()
    if suffix in POINT_READERS:
        try:
            return read_mesh_bounds(path), ""
        except MeshFileError as error:
            return None, str(error)
    if suffix != ".dae":
        return None, f"{suffix or 'a file without suffix'} is not a mesh format dyn reads"
    try:
        points = dae_points(read_bounded(path, MESH_BYTES))
    except OSError as error:
        return None, error.strerror or str(error)
    except (ValueError, IndexError, SyntaxError) as error:
        return None, str(error).split("\n")[0] or "not a valid .dae file"
    if points is None or len(points) == 0:
        return None, "no vertices"
    if not np.all(np.isfinite(points)):
        return None, "a vertex coordinate is not finite (NaN or infinity)"
    return (points.min(axis=0), points.max(axis=0)), ""


