"""COLLADA (.dae) vertex positions, for the bounding boxes of URDF mesh geometry.

The positions of every ``<instance_geometry>`` of the first visual scene, through the node
transforms (``matrix``, ``translate``, ``rotate``, ``scale``, and ``instance_node``
references), in ``<unit meter>`` and with ``Y_UP``/``X_UP`` turned to z up as assimp
does; without a visual scene, the positions of every geometry. Only bounding boxes are
taken from them, so faces, normals and materials are not read.
"""
from __future__ import annotations

import numpy as np
from lxml import etree

from treedyn.engine.rotations import axis_angle_matrix


def dae_points(data: bytes) -> np.ndarray | None:
    """Positions (n, 3) of a COLLADA file's visual scene, in metres, z up."""
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
