"""Triangle-mesh files: STL (binary and ASCII), OBJ and MuJoCo's ``.msh``, in two modes.

* As MuJoCo reads them (:func:`read_mesh_file`), for the MJCF compiler's mass properties:
  vertex positions and triangle indices, with MuJoCo's checks.
* Leniently (:func:`read_mesh_points`, :func:`read_mesh_bounds`, or :data:`POINT_READERS`
  on a file's bytes), for the bounding boxes of link geometry (:mod:`.link_geometry`):
  vertex positions only, in double precision as written, with none of MuJoCo's limits;
  ASCII STL ``vertex`` and OBJ ``v`` lines are all that is read.

Conventions
-----------
* Vertex coordinates are single precision in every supported format; they are returned as
  float64 arrays holding the float32 values, exactly as MuJoCo's compiler sees them.
* Files are read within :data:`~.files.MESH_BYTES` (regular files only, the size checked
  before a byte is read).
* STL: repeated vertices (bit-identical float triples) are merged, as MuJoCo's STL
  decoder does; faces then index the merged vertices. A file is binary when its size is
  ``84 + 50 * n`` for the face count ``n`` stored at byte 80 (MuJoCo's test): a count
  outside MuJoCo's 1 to 200000 is refused from the header, before the faces are read;
  otherwise it is read as ASCII if it is text that starts with ``solid``, and anything
  else is refused saying what the header's count needs (a truncated binary file). MuJoCo
  itself reads binary STL only; ASCII STL is accepted here with its numbers rounded to
  float32, so an ASCII file gives the same result as its binary equivalent, within the
  same limits (1 to 200000 faces, coordinates within 2**30).
* OBJ: as MuJoCo 4.0 reads it (tinyobjloader, then its OBJ decoder), in :mod:`.obj`:
  every vertex, and the triangles of the first shape, polygons of up to 100 corners cut
  as tinyobjloader cuts them and larger ones dropped.
* ``.msh`` (MuJoCo's legacy binary format): int32 counts ``nvertex, nnormal, ntexcoord,
  nface`` followed by float32 positions, normals, texture coordinates and int32 face
  indices; the file size must match exactly. ``nface`` may be 0 (the convex hull is then
  used). Normals and texture coordinates are skipped.
* Problems are reported as :class:`MeshFileError` (a ValueError) with a one-line message
  without the file name; the MJCF parser turns it into a ParseError located at the
  ``<mesh>`` element, link geometry into a note on the link.
"""
from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np

from .errors import quoted
from .files import MESH_BYTES, file_head, open_bounded, read_bounded
from .mesh_types import MeshData, MeshFileError
from .obj import read_obj, strtod

MAX_STL_FACES = 200000
MAX_COORDINATE = 2.0 ** 30
MESH_SUFFIXES = (".stl", ".obj", ".msh")


def read_mesh_file(path: str, content_type: str | None = None) -> MeshData:
    """The mesh in the file at ``path``; the format comes from ``content_type`` or the suffix.

    A binary STL's face count is checked against MuJoCo's limit and the file size from its
    header, before the rest is read."""
    kind = _format_of(path, content_type)
    data = _file_bytes(path, kind == "stl")
    readers = {"stl": read_stl, "obj": read_obj, "msh": read_msh}
    mesh = readers[kind](data)
    if not np.all(np.isfinite(mesh.vertices)):  # as MuJoCo refuses it (not "colocated")
        raise MeshFileError("a vertex coordinate is not finite (NaN or infinity)")
    return mesh


def read_mesh_points(path: str) -> np.ndarray:
    """Vertices (n, 3) float64 of the STL, OBJ or ``.msh`` file at ``path``, read leniently
    (the bounding-box mode); MeshFileError says in one line why there are none to use."""
    suffix = Path(path).suffix.lower()
    if suffix not in POINT_READERS:
        raise MeshFileError(f'unsupported mesh file type "{suffix or "(none)"}" '
                            f"(supported: {', '.join(MESH_SUFFIXES)})")
    data = _file_bytes(path, suffix == ".stl", lenient=True)
    try:
        points = POINT_READERS[suffix](data)
    except MeshFileError:
        raise
    except (ValueError, IndexError) as error:
        raise MeshFileError(f"not a valid {suffix[1:].upper()} file ({error})") from None
    if not len(points):
        raise MeshFileError("mesh file has no vertices")
    if not np.all(np.isfinite(points)):
        raise MeshFileError("a vertex coordinate is not finite (NaN or infinity)")
    return points


def read_mesh_bounds(path: str) -> tuple[np.ndarray, np.ndarray]:
    """(min, max) corners (3,) of the vertices :func:`read_mesh_points` reads; a binary STL
    is read a block of faces at a time, so any file within the size limit is read in
    bounded memory."""
    if Path(path).suffix.lower() == ".stl":
        try:
            size, head = file_head(path, MESH_BYTES, 1024)
            if _stl_kind(head, size, lenient=True) == "binary":
                with open_bounded(path, MESH_BYTES) as stream:
                    return _binary_stl_bounds(stream, (size - 84) // 50)
        except OSError as error:
            raise MeshFileError(f"cannot read mesh file ({error.strerror})") from None
    points = read_mesh_points(path)
    return points.min(axis=0), points.max(axis=0)


def _binary_stl_bounds(stream, count: int, block: int = 1 << 18
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(min, max) of the corners of a binary STL's ``count`` faces, ``block`` at a time."""
    if not count:
        raise MeshFileError("mesh file has no vertices")
    stream.seek(84)
    low, high = np.full(3, np.inf, np.float32), np.full(3, -np.inf, np.float32)
    for start in range(0, count, block):
        records = stream.read(50 * min(block, count - start))
        if len(records) != 50 * min(block, count - start):
            raise MeshFileError("binary STL file changed while it was read")
        corners = np.frombuffer(records, np.uint8).reshape(-1, 50)[:, 12:48].copy()
        corners = corners.view("<f4").reshape(-1, 3)
        if not np.all(np.isfinite(corners)):
            raise MeshFileError("a vertex coordinate is not finite (NaN or infinity)")
        low, high = np.minimum(low, corners.min(axis=0)), np.maximum(high, corners.max(axis=0))
    return low.astype(np.float64), high.astype(np.float64)


def _file_bytes(path: str, stl: bool, lenient: bool = False) -> bytes:
    """The bytes of a mesh file within :data:`MESH_BYTES`; an STL's header is checked
    first (:func:`_stl_kind`, without MuJoCo's face limit when ``lenient``)."""
    try:
        if stl:
            size, head = file_head(path, MESH_BYTES, 1024)
            _stl_kind(head, size, lenient)
        data = read_bounded(path, MESH_BYTES)
    except OSError as error:
        raise MeshFileError(f"cannot read mesh file ({error.strerror})") from None
    if not data:
        raise MeshFileError("mesh file is empty")
    return data


def _format_of(path: str, content_type: str | None) -> str:
    """"stl", "obj" or "msh" from a MuJoCo content type or, without one, the file suffix."""
    types = {"model/stl": "stl", "model/obj": "obj", "model/vnd.mujoco.msh": "msh"}
    if content_type:
        if content_type not in types:
            raise MeshFileError(f'unsupported mesh content_type {quoted(content_type)} '
                                f"(supported: {', '.join(types)})")
        return types[content_type]
    suffix = Path(path).suffix.lower()
    if suffix not in MESH_SUFFIXES:
        raise MeshFileError(f'unsupported mesh file type "{suffix or "(none)"}" '
                            f"(supported: {', '.join(MESH_SUFFIXES)})")
    return suffix[1:]


def read_stl(data: bytes) -> MeshData:
    """Binary or ASCII STL bytes to a mesh with repeated vertices merged."""
    if _stl_kind(data[:1024], len(data)) == "binary":
        corners = _binary_stl_corners(data)
    else:
        if data.lower().count(b"vertex") > 3 * MAX_STL_FACES:  # before reading the words
            raise MeshFileError(f"ASCII STL file has more than {MAX_STL_FACES} faces; MuJoCo "
                                f"reads 1 to {MAX_STL_FACES}")
        corners = _ascii_stl_corners(data)
    faces_count = len(corners) // 3
    if not 1 <= faces_count <= MAX_STL_FACES:
        raise MeshFileError(f"STL file has {faces_count} faces; expected 1 to {MAX_STL_FACES}")
    if np.any(np.abs(corners) > MAX_COORDINATE):
        raise MeshFileError("STL vertex coordinate exceeds 2^30 in magnitude")
    return _merge_repeated(corners.astype(np.float32))


def stl_problem(path: str) -> str:
    """Why MuJoCo cannot read the STL file at ``path``, as far as its size and first bytes
    tell (ASCII STL; a binary face count outside 1 to 200000; not STL), or ""."""
    try:
        size, head = file_head(path, MESH_BYTES, 1024)
        kind = _stl_kind(head, size)
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    except MeshFileError as error:
        return str(error)
    return "is ASCII STL; MuJoCo reads binary STL only" if kind == "ascii" else ""


def _stl_kind(head: bytes, size: int, lenient: bool = False) -> str:
    """"binary" or "ascii" from an STL file's first bytes and its size, as MuJoCo decides
    (binary when the face count n at byte 80 gives the size 84 + 50 n), or MeshFileError:
    a binary STL whose count MuJoCo refuses (1 to 200000 faces; any count when
    ``lenient``), or one that is neither binary nor text that starts with ``solid``."""
    count = struct.unpack_from("<i", head, 80)[0] if len(head) >= 84 else None
    if count is not None and count >= 0 and size == 84 + 50 * count:
        if not lenient and not 1 <= count <= MAX_STL_FACES:
            raise MeshFileError(f"binary STL file has {count} faces; MuJoCo reads 1 to "
                                f"{MAX_STL_FACES}")
        return "binary"
    if head.lstrip()[:5].lower() == b"solid" and not head.translate(None, _TEXT):
        return "ascii"
    if lenient and not head.translate(None, _TEXT):
        return "ascii"  # vertex lines without the 'solid' header
    if count is None:
        raise MeshFileError(f"not a valid STL file: {size} bytes, shorter than the 84-byte "
                            "binary header, and not ASCII STL text")
    raise MeshFileError(f"not a valid STL file: the face count {count} at byte 80 needs "
                        f"{84 + 50 * count} bytes but the file has {size} (a truncated "
                        "binary STL?), and it is not ASCII STL text starting with 'solid'")


_TEXT = bytes(range(32, 127)) + b"\t\n\v\f\r"  # the bytes of ASCII STL text


def _binary_stl_corners(data: bytes) -> np.ndarray:
    """Corner positions (3 * nface, 3) float32 of a binary STL (see :func:`_stl_kind`)."""
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
        raise MeshFileError(f"ASCII STL: {quoted(word.decode(errors='replace'))} is not a "
                            "number") from None
    if not np.isfinite(value):
        raise MeshFileError(f"ASCII STL: {quoted(word.decode(errors='replace'))} is not "
                            "finite")
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
    """Vertices (n, 3) of a binary or ASCII STL file, leniently (MeshFileError for bytes
    that are neither)."""
    if _stl_kind(data[:1024], len(data), lenient=True) == "binary":
        return _binary_stl_corners(data).astype(float)
    words = re.findall(rb"vertex\s+(\S+)\s+(\S+)\s+(\S+)", data)
    return np.array(words, dtype=float).reshape(-1, 3)


def obj_points(data: bytes) -> np.ndarray:
    """Vertices (n, 3) of a Wavefront OBJ file (its ``v x y z`` lines), leniently; a word
    Python's float does not read is read as strtod reads it (as MuJoCo does)."""
    rows = re.findall(rb"^[ \t]*v[ \t]+(\S+)[ \t]+(\S+)[ \t]+(\S+)", data, flags=re.M)
    try:
        return np.array(rows, dtype=float).reshape(-1, 3)
    except ValueError:
        return np.array([[strtod(word) for word in row] for row in rows]).reshape(-1, 3)


def msh_points(data: bytes) -> np.ndarray:
    """Vertices (n, 3) of a MuJoCo ``.msh`` file (read by :func:`read_msh`)."""
    return read_msh(data).vertices


# suffix -> the vertices (n, 3) of a file's bytes, read leniently (ValueError or
# IndexError for bytes that are not such a file)
POINT_READERS = {".stl": stl_points, ".obj": obj_points, ".msh": msh_points}
