"""COLLADA (.dae) vertex positions, for the bounding boxes of URDF mesh geometry, and
triangles, for the inertia of URDF link geometry (``dyn inertia-from-geometry``).

The positions of every ``<instance_geometry>`` of the first visual scene, through the node
transforms (``matrix``, ``translate``, ``rotate``, ``scale``, and ``instance_node``
references), in ``<unit meter>`` and with ``Y_UP``/``X_UP`` turned to z up as assimp
does; without a visual scene, the positions of every geometry. :func:`dae_points` reads
positions only; :func:`dae_mesh` the faces of ``<triangles>``, ``<polylist>`` and
``<polygons>`` too (normals and materials are never read).
"""
from __future__ import annotations

import numpy as np
from lxml import etree

from treedyn.engine.rotations import axis_angle_matrix


def dae_points(data: bytes) -> np.ndarray | None:
    """Positions (n, 3) of a COLLADA file's visual scene, in metres, z up."""
    found, scene = _scene(data, lambda geometry: (_positions(geometry), None))
    points = [positions for positions, _ in found]
    if not scene:
        return np.concatenate(points or [np.zeros((0, 3))])
    return np.concatenate(points) if points else None


def _scene(data: bytes, read) -> tuple[list, bool]:
    """([(positions (n, 3), what else ``read`` gives), ...] of the geometries of the first
    visual scene, placed in it, in metres, z up; whether there is a visual scene (without
    one: every geometry's, as written)). ``read(geometry)`` gives (positions, other)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
    root = etree.fromstring(data, parser)
    for element in root.iter(etree.Element):
        element.tag = etree.QName(element).localname
    unit = root.find("asset/unit")
    meter = float(unit.get("meter", "1")) if unit is not None else 1.0
    up = (root.findtext("asset/up_axis") or "Z_UP").strip()
    top = np.diag([meter, meter, meter, 1.0]) @ _UP_AXIS.get(up, np.eye(4))
    geometries = {g.get("id"): g for g in root.iter("geometry")}
    found: list = []
    scenes = list(root.iter("visual_scene"))
    if not scenes:
        return [read(g) for g in geometries.values()], False
    nodes = {n.get("id"): n for n in root.iter("node") if n.get("id")}
    for node in scenes[0].iterchildren("node"):
        _collect(node, top, geometries, nodes, (found, read), 0)
    return found, True


# assimp turns Y_UP and X_UP documents to z up with these root transforms.
_UP_AXIS = {
    "Y_UP": np.array([[1.0, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]]),
    "X_UP": np.array([[0.0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]),
}


def _collect(node, parent: np.ndarray, geometries: dict, nodes: dict, out: tuple,
             depth: int) -> None:
    """Add to ``out`` (found, read) what ``read`` gives of ``node``'s geometries and of its
    child nodes', their positions transformed."""
    if depth > 64:
        return
    found, read = out
    transform = parent @ _node_transform(node)
    for instance in node.iterchildren("instance_geometry"):
        geometry = geometries.get(instance.get("url", "").lstrip("#"))
        if geometry is not None:
            local, other = read(geometry)
            found.append((local @ transform[:3, :3].T + transform[:3, 3], other))
    for child in node.iterchildren("node"):
        _collect(child, transform, geometries, nodes, out, depth + 1)
    for instance in node.iterchildren("instance_node"):
        target = nodes.get(instance.get("url", "").lstrip("#"))
        if target is not None:
            _collect(target, transform, geometries, nodes, out, depth + 1)


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
            step[:3, :3] = axis_angle_matrix(values[:3] / np.linalg.norm(values[:3]),
                                             np.radians(values[3]))
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


def dae_mesh(data: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """(positions (n, 3), triangles (m, 3)) of a COLLADA file's visual scene, placed as
    :func:`dae_points` places them: the faces of every ``<triangles>``, ``<polylist>`` and
    ``<polygons>`` (polygons cut into fans), over the positions of their geometry."""
    found, _ = _scene(data, _triangulated)
    points, faces, count = [], [], 0
    for positions, triangles in found:
        points.append(positions)
        faces.append(triangles + count)
        count += len(positions)
    if not points:
        return None
    return np.concatenate(points), np.concatenate(faces).astype(np.int64)


def _triangulated(geometry) -> tuple[np.ndarray, np.ndarray]:
    """(positions (n, 3), triangles (m, 3)) of a COLLADA <geometry>; indices past its
    positions are refused."""
    positions = _positions(geometry)
    mesh = geometry.find("mesh")
    triangles = []
    for primitive in () if mesh is None else mesh.iterchildren("triangles", "polylist",
                                                               "polygons"):
        inputs = list(primitive.iterchildren("input"))
        stride = 1 + max((int(entry.get("offset", "0")) for entry in inputs), default=0)
        offset = next((int(entry.get("offset", "0")) for entry in inputs
                       if entry.get("semantic") == "VERTEX"), None)
        if offset is None:
            continue
        lists = [np.array((p.text or "").split(), dtype=np.int64)
                 for p in primitive.iterchildren("p")]
        if primitive.tag == "polygons":
            counts = [len(indices) // stride for indices in lists]
        elif primitive.tag == "polylist":
            counts = [int(n) for n in (primitive.findtext("vcount") or "").split()]
        else:
            counts = None
        if counts is not None and all(count == 3 for count in counts):
            counts = None  # triangles only: read as <triangles>
        corners = np.concatenate(lists or [np.zeros(0, np.int64)])[offset::stride]
        if counts is None:
            triangles.append(corners[: len(corners) // 3 * 3].reshape(-1, 3))
            continue
        start = 0
        for count in counts:
            polygon = corners[start:start + count]
            start += count
            if len(polygon) == count >= 3:
                triangles += [np.array([[polygon[0], polygon[k], polygon[k + 1]]
                                        for k in range(1, count - 1)])]
    faces = np.concatenate(triangles) if triangles else np.zeros((0, 3), np.int64)
    if len(faces) and (faces.min() < 0 or faces.max() >= len(positions)):
        raise ValueError("a face refers to a vertex that does not exist")
    return positions, faces
