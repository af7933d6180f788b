"""Link geometry as primitive solids, for the plausibility checks of ``dyn check-inertia``.

The URDF parser keeps each link's ``<collision>`` and ``<visual>`` shapes as written
(:class:`~treedyn.engine.description.Shape`). Here mesh shapes are replaced by the
axis-aligned bounding box of their scaled vertices, in the mesh's own frame, so that the
engine only ever sees boxes, cylinders, spheres, capsules and ellipsoids (MJCF) posed in
the link frame. The MJCF parser gives mesh files as resolved paths.

Mesh files
----------
* ``package://PKG/rest`` is looked up in the ancestors of the model's directory: an
  ancestor named ``PKG``, or one holding a directory ``PKG`` (``package:///rest`` has an
  empty package and is looked up the same way with ``rest`` alone); then in the
  directories of ``ROS_PACKAGE_PATH`` (``DIR/PKG``, or ``DIR`` itself when named ``PKG``)
  and the prefixes of ``AMENT_PREFIX_PATH`` (``PREFIX/share/PKG``), as ROS finds packages
  (without crawling deeper). ``file://`` and plain paths are absolute or relative to the
  model's directory. Meshes that cannot be found are listed (``LinkGeometry.missing``):
  ``dyn check-inertia`` warns that the geometry checks of those links were skipped.
* STL (binary and ASCII), Wavefront OBJ (``v`` lines) and COLLADA (.dae: the positions of
  every ``<instance_geometry>`` of the visual scene, through the node transforms, in
  ``<unit meter>`` and with ``Y_UP``/``X_UP`` turned to z-up as assimp does) and MuJoCo's
  ``.msh`` are read; other formats and unreadable files make the link's geometry unknown.
* A link's geometry is its collision shapes when every one of them can be used, else its
  visual shapes under the same condition, else unknown (partial geometry would make an
  inertia look too large). Collision shapes smaller than 1 cm across give way to visual
  shapes ten times larger: such a collision shape is a token, not the link's extent.
"""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import numpy as np

from treedyn.engine.description import Shape, TreeDescription
from treedyn.engine.analysis.inertia import LinkGeometry, solid_corners

from .mesh import read_msh

PRIMITIVES = ("box", "cylinder", "sphere", "capsule", "ellipsoid")


def link_geometry(description: TreeDescription, model_path: str) -> dict[str, LinkGeometry]:
    """Usable geometry of every link that has shapes: {link name: LinkGeometry}."""
    result = {}
    for link in description.links:
        if link.geometry:
            # the MJCF parser resolves mesh files (and refuses missing ones); a mesh name
            # it gives without a file is a form dyn does not read, not a missing file
            result[link.name] = _usable(link.geometry, model_path,
                                        files_named=description.format == "urdf")
    return result


def _usable(shapes: tuple[Shape, ...], model_path: str, files_named: bool = True
            ) -> LinkGeometry:
    """The collision shapes as solids if all resolve, else the visual ones, else unknown;
    collision shapes under :data:`PLACEHOLDER` across stand aside for visual shapes
    more than ten times their size (a token sphere beside the real mesh)."""
    notes, missing = [], []
    found = {}
    for role in ("collision", "visual"):
        group = [shape for shape in shapes if shape.role == role]
        if not group:
            continue
        located = {shape.mesh: resolve_mesh(shape.mesh, model_path) for shape in group
                   if shape.kind not in PRIMITIVES}
        solids, problem = _solids(group, located)
        if files_named:
            missing += [mesh for mesh, path in located.items() if path is None]
        if solids is None:
            notes.append(f"{role}: {problem}")
            continue
        found[role] = LinkGeometry(role, solids, all(s.kind != "mesh" for s in group), "")
    collision, visual = found.get("collision"), found.get("visual")
    if collision is not None and visual is not None:
        small, large = _diagonal(collision.solids), _diagonal(visual.solids)
        if small < PLACEHOLDER and large > 10 * small:
            return visual
    if collision is not None or visual is not None:
        return collision or visual
    return LinkGeometry("", (), False, "; ".join(notes) or "no shapes",
                        tuple(dict.fromkeys(missing)))


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


def resolve_mesh(filename: str, model_path: str) -> Path | None:
    """The file a URDF mesh ``filename`` names, or None when it cannot be found."""
    base = Path(model_path).resolve().parent
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        if not package:
            package, _, rest = rest.partition("/")
        ros = [Path(d) for d in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if d]
        ament = [Path(d) / "share" for d in
                 os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if d]
        for folder in (base, *base.parents, *ros, *ament):
            for candidate in (folder / rest if folder.name == package else None,
                              folder / package / rest):
                if candidate is not None and candidate.is_file():
                    return candidate
        return None
    if filename.startswith("file://"):
        filename = filename[len("file://"):]
    path = Path(filename)
    path = path if path.is_absolute() else base / path
    return path if path.is_file() else None


@functools.lru_cache(maxsize=1024)
def mesh_bounds(path: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(min, max) corners (3,) of a mesh file's vertices, or None if it cannot be read."""
    reader = MESH_READERS.get(Path(path).suffix.lower())
    if reader is None:
        return None
    try:
        data = Path(path).read_bytes()
        points = reader(data)
    except (OSError, ValueError, IndexError):
        return None
    if points is None or len(points) == 0 or not np.all(np.isfinite(points)):
        return None
    return points.min(axis=0), points.max(axis=0)


def stl_points(data: bytes) -> np.ndarray:
    """Vertices (n, 3) of a binary or ASCII STL file."""
    if len(data) >= 84:
        count = int(np.frombuffer(data, dtype="<u4", count=1, offset=80)[0])
        if len(data) == 84 + 50 * count:
            record = np.dtype([("normal", "<f4", 3), ("corners", "<f4", (3, 3)),
                               ("attribute", "<u2")])
            faces = np.frombuffer(data, dtype=record, count=count, offset=84)
            return faces["corners"].reshape(-1, 3).astype(float)
    words = re.findall(rb"vertex\s+(\S+)\s+(\S+)\s+(\S+)", data)
    return np.array(words, dtype=float).reshape(-1, 3)


def obj_points(data: bytes) -> np.ndarray:
    """Vertices (n, 3) of a Wavefront OBJ file (its ``v x y z`` lines)."""
    rows = re.findall(rb"^[ \t]*v[ \t]+(\S+)[ \t]+(\S+)[ \t]+(\S+)", data, flags=re.M)
    return np.array(rows, dtype=float).reshape(-1, 3)


def dae_points(data: bytes) -> np.ndarray | None:
    """Positions (n, 3) of a COLLADA file's visual scene, in metres, z up."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
    root = etree.fromstring(data, parser)
    for element in root.iter(etree.Element):
        element.tag = etree.QName(element).localname
    unit = root.find("asset/unit")
    meter = float(unit.get("meter", "1")) if unit is not None else 1.0
    up = (root.findtext("asset/up_axis") or "Z_UP").strip()
    top = np.diag([meter, meter, meter, 1.0]) @ _UP_AXIS.get(up, np.eye(4))
    geometries = {g.get("id"): g for g in root.iter("geometry")}
    points = []
    scenes = list(root.iter("visual_scene"))
    if not scenes:
        return np.concatenate([_positions(g) for g in geometries.values()] or [np.zeros((0, 3))])
    nodes = {n.get("id"): n for n in root.iter("node") if n.get("id")}
    for node in scenes[0].iterchildren("node"):
        _collect(node, top, geometries, nodes, points, 0)
    return np.concatenate(points) if points else None


# assimp turns Y_UP and X_UP documents to z up with these root transforms.
_UP_AXIS = {
    "Y_UP": np.array([[1.0, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]]),
    "X_UP": np.array([[0.0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]),
}


def _collect(node, parent: np.ndarray, geometries: dict, nodes: dict, points: list,
             depth: int) -> None:
    """Add the transformed positions of ``node``'s geometries and of its child nodes."""
    if depth > 64:
        return
    transform = parent @ _node_transform(node)
    for instance in node.iterchildren("instance_geometry"):
        geometry = geometries.get(instance.get("url", "").lstrip("#"))
        if geometry is not None:
            local = _positions(geometry)
            points.append(local @ transform[:3, :3].T + transform[:3, 3])
    for child in node.iterchildren("node"):
        _collect(child, transform, geometries, nodes, points, depth + 1)
    for instance in node.iterchildren("instance_node"):
        target = nodes.get(instance.get("url", "").lstrip("#"))
        if target is not None:
            _collect(target, transform, geometries, nodes, points, depth + 1)


def _node_transform(node) -> np.ndarray:
    """The 4x4 transform of a COLLADA node's matrix/translate/rotate/scale children."""
    transform = np.eye(4)
    for element in node.iterchildren("matrix", "translate", "rotate", "scale"):
        values = np.array(element.text.split(), dtype=float)
        step = np.eye(4)
        if element.tag == "matrix":
            step = values.reshape(4, 4)
        elif element.tag == "translate":
            step[:3, 3] = values
        elif element.tag == "scale":
            step[:3, :3] = np.diag(values)
        else:
            axis, angle = values[:3] / np.linalg.norm(values[:3]), np.radians(values[3])
            K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
            step[:3, :3] = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K
        transform = transform @ step
    return transform


def _positions(geometry) -> np.ndarray:
    """The vertex positions (n, 3) of a COLLADA <geometry> (its <vertices> POSITION source)."""
    mesh = geometry.find("mesh")
    if mesh is None:
        return np.zeros((0, 3))
    sources = {s.get("id"): s for s in mesh.iterchildren("source")}
    arrays = []
    for vertices in mesh.iterchildren("vertices"):
        for entry in vertices.iterchildren("input"):
            if entry.get("semantic") == "POSITION":
                source = sources.get(entry.get("source", "").lstrip("#"))
                if source is not None:
                    arrays.append(_float_array(source))
    return np.concatenate(arrays) if arrays else np.zeros((0, 3))


def _float_array(source) -> np.ndarray:
    values = source.find("float_array")
    numbers = np.array((values.text or "").split(), dtype=float)
    accessor = source.find("technique_common/accessor")
    stride = int(accessor.get("stride", "3")) if accessor is not None else 3
    return numbers[: len(numbers) // stride * stride].reshape(-1, stride)[:, :3]


def msh_points(data: bytes) -> np.ndarray:
    """Vertices (n, 3) of a MuJoCo ``.msh`` file (read by :func:`.mesh.read_msh`)."""
    return read_msh(data).vertices


MESH_READERS = {".stl": stl_points, ".obj": obj_points, ".dae": dae_points,
                ".msh": msh_points}
