"""Triangle-mesh files: STL (binary and ASCII), OBJ and MuJoCo's ``.msh``, in two modes.

* As MuJoCo reads them (:func:`read_mesh_file`), for the MJCF compiler's mass properties:
  vertex positions and triangle indices, with MuJoCo's checks.
* Leniently (:data:`POINT_READERS`), for the bounding boxes of link geometry
  (:mod:`.link_geometry`): vertex positions only, in double precision as written, with
  none of MuJoCo's limits; ASCII STL ``vertex`` and OBJ ``v`` lines are all that is read,
  and a file that cannot be read gives None instead of an error.

Conventions
-----------
* Vertex coordinates are single precision in every supported format; they are returned as
  float64 arrays holding the float32 values, exactly as MuJoCo's compiler sees them.
* STL: repeated vertices (bit-identical float triples) are merged, as MuJoCo's STL
  decoder does; faces then index the merged vertices. A file is binary when its size is
  ``84 + 50 * n`` for the face count ``n`` stored at byte 80; otherwise it is read as
  ASCII if it starts with ``solid``. MuJoCo itself reads binary STL only; ASCII STL is
  accepted here with its numbers rounded to float32, so an ASCII file gives the same
  result as its binary equivalent. Both need 1 to 200000 faces and coordinates within
  2**30, like MuJoCo.
* OBJ (MuJoCo reads it with tinyobjloader): every ``v`` line is a vertex (extra numbers
  such as colours are ignored), faces are those of the first group or object that has any
  (a later ``o``/``g`` line ends it); ``f`` indices are 1-based or negative (relative),
  texture and normal indices are skipped. A quad is split along its shorter diagonal
  (along the 2nd-4th corners on a tie) and a larger polygon by tinyobjloader's ear
  clipping (:func:`_ear_clipping`), so a non-convex polygon gives the triangles MuJoCo
  integrates, not a fan that reaches outside it.
* ``.msh`` (MuJoCo's legacy binary format): int32 counts ``nvertex, nnormal, ntexcoord,
  nface`` followed by float32 positions, normals, texture coordinates and int32 face
  indices; the file size must match exactly. ``nface`` may be 0 (the convex hull is then
  used). Normals and texture coordinates are skipped.
* Problems are reported as :class:`MeshFileError` with a one-line message; the MJCF parser
  turns it into a ParseError located at the ``<mesh>`` element.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .files import MESH_BYTES, read_bounded

MAX_STL_FACES = 200000
MAX_COORDINATE = 2.0 ** 30
MESH_SUFFIXES = (".stl", ".obj", ".msh")


class MeshFileError(ValueError):
    """A mesh file that cannot be read or is invalid (message without the file name)."""


@dataclass(frozen=True)
class MeshData:
    """Vertices (n, 3) float64 holding float32 values, faces (m, 3) int64 (m may be 0)."""

    vertices: np.ndarray
    faces: np.ndarray


def read_mesh_file(path: str, content_type: str | None = None) -> MeshData:
    """The mesh in the file at ``path``; the format comes from ``content_type`` or the suffix."""
    kind = _format_of(path, content_type)
    try:
        data = read_bounded(path, MESH_BYTES)
    except OSError as error:
        raise MeshFileError(f"cannot read mesh file ({error.strerror})") from None
    if not data:
        raise MeshFileError("mesh file is empty")
    readers = {"stl": read_stl, "obj": read_obj, "msh": read_msh}
    mesh = readers[kind](data)
    if not np.all(np.isfinite(mesh.vertices)):  # as MuJoCo refuses it (not "colocated")
        raise MeshFileError("a vertex coordinate is not finite (NaN or infinity)")
    return mesh


def _format_of(path: str, content_type: str | None) -> str:
    """"stl", "obj" or "msh" from a MuJoCo content type or, without one, the file suffix."""
    types = {"model/stl": "stl", "model/obj": "obj", "model/vnd.mujoco.msh": "msh"}
    if content_type:
        if content_type not in types:
            raise MeshFileError(f'unsupported mesh content_type "{content_type}" '
                                f"(supported: {', '.join(types)})")
        return types[content_type]
    suffix = Path(path).suffix.lower()
    if suffix not in MESH_SUFFIXES:
        raise MeshFileError(f'unsupported mesh file type "{suffix or "(none)"}" '
                            f"(supported: {', '.join(MESH_SUFFIXES)})")
    return suffix[1:]


def read_stl(data: bytes) -> MeshData:
    """Binary or ASCII STL bytes to a mesh with repeated vertices merged."""
    if _is_binary_stl(data):
        corners = _binary_stl_corners(data)
    elif data.lstrip()[:5].lower() == b"solid":
        corners = _ascii_stl_corners(data)
    else:
        raise MeshFileError("not a valid STL file: the face count at byte 80 does not match "
                            "the file size, and the file does not start with 'solid'")
    faces_count = len(corners) // 3
    if not 1 <= faces_count <= MAX_STL_FACES:
        raise MeshFileError(f"STL file has {faces_count} faces; expected 1 to {MAX_STL_FACES}")
    if np.any(np.abs(corners) > MAX_COORDINATE):
        raise MeshFileError("STL vertex coordinate exceeds 2^30 in magnitude")
    return _merge_repeated(corners.astype(np.float32))


def _is_binary_stl(data: bytes) -> bool:
    """MuJoCo's test: the face count at byte 80 matches the file size."""
    if len(data) < 84:
        return False
    count = struct.unpack_from("<i", data, 80)[0]
    return count >= 0 and len(data) == 84 + 50 * count


def _binary_stl_corners(data: bytes) -> np.ndarray:
    """Corner positions (3 * nface, 3) float32 of a binary STL (see :func:`_is_binary_stl`)."""
    count = struct.unpack_from("<i", data, 80)[0]
    records = np.frombuffer(data, dtype=np.uint8, count=50 * count, offset=84)
    records = records.reshape(count, 50)[:, 12:48].copy()
    return records.view("<f4").reshape(count * 3, 3)


_ASCII_TOKEN = re.compile(rb"\S+")


def _ascii_stl_corners(data: bytes) -> np.ndarray:
    """Corner positions (3 * nface, 3) float32 of an ASCII STL, checked for triangles."""
    words = _ASCII_TOKEN.findall(data)
    corners: list[list[float]] = []
    in_loop = 0
    i = 0
    while i < len(words):
        word = words[i].lower()
        if word == b"outer":
            in_loop = 0
        elif word == b"vertex":
            if i + 3 >= len(words):
                raise MeshFileError("ASCII STL: 'vertex' needs 3 numbers")
            corners.append([_stl_number(w) for w in words[i + 1:i + 4]])
            in_loop += 1
            i += 3
        elif word == b"endloop" and in_loop != 3:
            raise MeshFileError(f"ASCII STL: a facet has {in_loop} vertices; only triangles "
                                "are supported")
        i += 1
    if len(corners) % 3:
        raise MeshFileError("ASCII STL: vertex count is not a multiple of 3")
    return np.array(corners, dtype=np.float32).reshape(-1, 3)


def _stl_number(word: bytes) -> float:
    """A finite coordinate of an ASCII STL ``vertex`` line."""
    try:
        value = float(word)
    except ValueError:
        raise MeshFileError(f"ASCII STL: {word.decode(errors='replace')!r} is not a number") \
            from None
    if not np.isfinite(value):
        raise MeshFileError(f"ASCII STL: {word.decode(errors='replace')!r} is not finite")
    return value


def _merge_repeated(corners: np.ndarray) -> MeshData:
    """Merge bit-identical float32 corners; vertices keep the order of first appearance.

    The corners' bits are sorted as two integer keys (a stable sort, so each run of equal
    corners starts at its first appearance), which is several times faster than sorting
    12-byte strings.
    """
    bits = np.ascontiguousarray(corners, dtype=np.float32).view(np.uint32).reshape(-1, 3)
    high = (bits[:, 0].astype(np.uint64) << np.uint64(32)) | bits[:, 1]
    low = bits[:, 2]
    order = np.lexsort((low, high))
    new = np.ones(len(order), dtype=bool)
    new[1:] = (high[order[1:]] != high[order[:-1]]) | (low[order[1:]] != low[order[:-1]])
    group = np.cumsum(new) - 1  # of each sorted corner
    first = order[new]  # first appearance of each group
    by_appearance = np.argsort(first, kind="stable")
    rank = np.empty_like(by_appearance)
    rank[by_appearance] = np.arange(len(by_appearance))
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = rank[group]
    vertices = corners[first[by_appearance]].astype(np.float64)
    return MeshData(vertices, inverse.reshape(-1, 3))


def read_obj(data: bytes) -> MeshData:
    """Wavefront OBJ bytes to a mesh: all vertices, the triangulated faces of the first group."""
    vertices: list[list[float]] = []
    faces: list[tuple[int, int, int]] = []
    done = False  # the first group with faces has ended
    for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "v":
            if len(words) < 4:
                raise MeshFileError(f"OBJ line {number}: a vertex needs 3 coordinates")
            vertices.append([_obj_number(word, number) for word in words[1:4]])
        elif words[0] in ("o", "g") and faces:
            done = True
        elif words[0] == "f" and not done:
            corners = [_obj_index(word, len(vertices), number) for word in words[1:]]
            if len(corners) < 3:
                raise MeshFileError(f"OBJ line {number}: a face needs at least 3 vertices")
            faces.extend(_triangulated(corners, vertices))
    points = np.array(vertices, dtype=np.float32).reshape(-1, 3).astype(np.float64)
    return MeshData(points, np.array(faces, dtype=np.int64).reshape(-1, 3))


def _obj_number(word: str, line: int) -> float:
    """A finite coordinate of an OBJ ``v`` line."""
    try:
        value = float(word)
    except ValueError:
        raise MeshFileError(f"OBJ line {line}: {word!r} is not a number") from None
    if not np.isfinite(value):
        raise MeshFileError(f"OBJ line {line}: {word!r} is not finite")
    return value


def _obj_index(word: str, count: int, line: int) -> int:
    """0-based vertex index of an ``f`` corner (``i``, ``i/t``, ``i//n``, ``i/t/n``)."""
    text = word.split("/", 1)[0]
    try:
        index = int(text)
    except ValueError:
        raise MeshFileError(f"OBJ line {line}: {word!r} is not a vertex index") from None
    index = index - 1 if index > 0 else count + index
    if not 0 <= index < count:
        raise MeshFileError(f"OBJ line {line}: vertex index {text} does not exist")
    return index


def _triangulated(corners: list[int], vertices: list[list[float]]) -> list[tuple[int, int, int]]:
    """Triangles of one OBJ face, split as tinyobjloader does (see the module notes)."""
    if len(corners) == 3:
        return [tuple(corners)]
    p = np.array([vertices[i] for i in corners], dtype=np.float32)
    if len(corners) == 4:
        a, b, c, d = corners
        if np.sum((p[2] - p[0]) ** 2) < np.sum((p[3] - p[1]) ** 2):
            return [(a, b, c), (a, c, d)]
        return [(a, b, d), (b, c, d)]
    return [tuple(corners[i] for i in triangle) for triangle in _ear_clipping(p)]


def _ear_clipping(p: np.ndarray) -> list[tuple[int, int, int]]:
    """tinyobjloader's ear clipping of a polygon p (n, 3), float32 arithmetic as in its build.

    The polygon is projected on a coordinate plane: the one most nearly normal to the
    first corner that is not degenerate. Walking from corner 0, the triangle of the next
    three remaining corners is cut off when its turn has the sign tinyobjloader's test
    accepts (the turn times the cross product of its first two corners' projections) and no
    other remaining corner lies inside it; otherwise the walk moves on one corner. When a
    full lap cuts nothing, the corners left are dropped, as tinyobjloader drops them.
    """
    n = len(p)
    plane = [1, 2]
    epsilon = np.finfo(np.float32).eps
    for k in range(n):
        normal = np.abs(np.cross(p[(k + 1) % n] - p[k], p[(k + 2) % n] - p[(k + 1) % n]))
        if np.any(normal > epsilon):
            cx, cy, cz = normal
            if not (cx > cy and cx > cz):
                plane = [0, 1] if cz > cx and cz > cy else [0, 2]
            break
    xy = p[:, plane]
    remaining = list(range(n))
    triangles = []
    start, budget, previous = 0, n, n
    while len(remaining) > 3 and budget > 0:
        m = len(remaining)
        if start >= m:
            start -= m
        if previous != m:
            previous, budget = m, m
        else:
            budget -= 1
        triangle = [remaining[(start + k) % m] for k in range(3)]
        (x0, y0), (x1, y1), (x2, y2) = xy[triangle]
        turn = (x1 - x0) * (y2 - y1) - (y1 - y0) * (x2 - x1)
        if turn * ((x0 * y1 - y0 * x1) * np.float32(0.5)) < 0:
            start += 1
            continue
        corners = xy[triangle]
        if any(_inside(corners, xy[remaining[(start + k) % m]]) for k in range(3, m)):
            start += 1
            continue
        triangles.append(tuple(triangle))
        del remaining[(start + 1) % m]
    if len(remaining) == 3:
        triangles.append(tuple(remaining))
    return triangles


def _inside(triangle: np.ndarray, point: np.ndarray) -> bool:
    """Crossing-number test of a point in a triangle (3, 2), as tinyobjloader's pnpoly."""
    x, y = point
    inside = False
    for i, j in ((0, 2), (1, 0), (2, 1)):
        (xi, yi), (xj, yj) = triangle[i], triangle[j]
        if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
            inside = not inside
    return inside


def read_msh(data: bytes) -> MeshData:
    """MuJoCo's legacy binary ``.msh`` bytes to a mesh (normals and texcoords skipped)."""
    if len(data) < 16:
        raise MeshFileError("missing header in MSH file")
    nvertex, nnormal, ntexcoord, nface = struct.unpack_from("<4i", data, 0)
    if (nvertex < 4 or nface < 0 or nnormal < 0 or ntexcoord < 0
            or nnormal not in (0, nvertex) or ntexcoord not in (0, nvertex)):
        raise MeshFileError(f"invalid sizes in MSH file (nvertex={nvertex}, nnormal={nnormal}, "
                            f"ntexcoord={ntexcoord}, nface={nface})")
    expected = 16 + 12 * (nvertex + nnormal + nface) + 8 * ntexcoord
    if len(data) != expected:
        raise MeshFileError(f"unexpected MSH file size {len(data)} (expected {expected})")
    vertices = np.frombuffer(data, dtype="<f4", count=3 * nvertex, offset=16)
    offset = 16 + 12 * (nvertex + nnormal) + 8 * ntexcoord
    faces = np.frombuffer(data, dtype="<i4", count=3 * nface, offset=offset)
    faces = faces.reshape(nface, 3).astype(np.int64)
    if nface and (faces.min() < 0 or faces.max() >= nvertex):
        raise MeshFileError("MSH face refers to a vertex that does not exist")
    return MeshData(vertices.reshape(nvertex, 3).astype(np.float64), faces)


# -- lenient: vertices for bounding boxes ---------------------------------------------


def stl_points(data: bytes) -> np.ndarray:
    """Vertices (n, 3) of a binary or ASCII STL file, leniently."""
    if _is_binary_stl(data):
        return _binary_stl_corners(data).astype(float)
    words = re.findall(rb"vertex\s+(\S+)\s+(\S+)\s+(\S+)", data)
    return np.array(words, dtype=float).reshape(-1, 3)


def obj_points(data: bytes) -> np.ndarray:
    """Vertices (n, 3) of a Wavefront OBJ file (its ``v x y z`` lines), leniently."""
    rows = re.findall(rb"^[ \t]*v[ \t]+(\S+)[ \t]+(\S+)[ \t]+(\S+)", data, flags=re.M)
    return np.array(rows, dtype=float).reshape(-1, 3)


def msh_points(data: bytes) -> np.ndarray:
    """Vertices (n, 3) of a MuJoCo ``.msh`` file (read by :func:`read_msh`)."""
    return read_msh(data).vertices


# suffix -> the vertices (n, 3) of a file's bytes, read leniently (ValueError or
# IndexError for bytes that are not such a file)
POINT_READERS = {".stl": stl_points, ".obj": obj_points, ".msh": msh_points}
