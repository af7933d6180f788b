"""Wavefront OBJ as MuJoCo 4.0 reads it: tinyobjloader's parse, then MuJoCo's OBJ decoder.

The file is read with numpy a block of whole lines at a time, so that what it holds beside
the result is bounded (:data:`BLOCK`; a line longer than :data:`LONGEST` is refused by its
number). Every rule below was checked against MuJoCo 4.0 (``tests/test_meshes.py``).

Lines
-----
* A line ends at ``\\n``, ``\\r\\n`` or a lone ``\\r``; a NUL byte ends it too. Leading
  spaces and tabs are skipped. A line is a vertex (``v``), normal (``vn``), texture
  coordinate (``vt``), face (``f``), polyline (``l``), point set (``p``), group (``g``) or
  object (``o``) when that word is followed by a space or a tab; every other line
  (``#`` comments, ``usemtl``, ``mtllib``, ``s``, ...) is skipped. There are no line
  continuations.
* A vertex is the first three words of its line, each read as C's ``strtod`` reads the
  start of a word ("1,5" is 1, "0x10" is 16, "1e" is 1; a word that is not a number, or a
  missing one, is 0), then rounded to float32. Further words (w, colours) are ignored.
* A corner of ``f``, ``l`` and ``p`` lines is ``v``, ``v/vt``, ``v//vn`` or ``v/vt/vn``,
  each index read as C's ``atoi`` (a sign, digits, up to any other character); indices are
  1-based or negative (relative to the lines so far). MuJoCo refuses the whole file for a
  vertex index 0 or text, a relative index before the first element, or a fourth field;
  so is a word after the corners, such as a comment.

Faces
-----
* MuJoCo takes the first shape tinyobjloader makes. A ``g`` line closes a shape that has
  triangles, an ``o`` line one with triangles, polylines or points, the end of the file
  one with any of these lines; a group or object that closes without them makes none.
  ``usemtl`` does not close a shape.
* A face is triangulated as tinyobjloader does: a triangle as written; a quad along its
  shorter diagonal (along the 2nd-4th corners on a tie; a quad that names a vertex not
  yet read is dropped); 5 to 100 corners by ear clipping (:func:`_ear_clipping`). Faces of
  fewer than 3 or more than :data:`MAX_POLYGON` corners give no triangles (MuJoCo 4.0).
* A first shape with polylines and no triangles gives each segment as a degenerate
  triangle (a, b, b), as MuJoCo's decoder does; one with neither gives no faces (MuJoCo
  then uses the convex hull).
* Each triangle's vertices must exist; when the file has ``vn`` lines, each corner of each
  triangle must name one of them (MuJoCo refuses the file otherwise).
"""
from __future__ import annotations

import itertools
import re
import warnings

import numpy as np

from .errors import quoted
from .mesh_types import MeshData, MeshFileError

BLOCK = 2 << 20  # bytes of whole lines read at a time
LONGEST = 16 << 20  # the longest line read (tinyobjloader has no limit)
MAX_POLYGON = 100  # MuJoCo 4.0 gives no triangles for a face with more corners
_V, _VN, _VT, _F, _L, _P, _G, _O = range(1, 9)
_DECIMAL = b"0123456789+-.eE"  # words Python's float reads as strtod does (checked first)
_NUMBER = re.compile(  # the start of a word that C's strtod reads
    rb"[+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    rb"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    rb"|(?i:inf(?:inity)?|nan(?:\([0-9a-z_]*\))?))")
_INTEGER = re.compile(rb"[ \t\n\v\f\r]*([+-]?[0-9]*)")  # what C's atoi reads
_PLAIN_CORNERS = re.compile(rb"[0-9][+-]|[+-][^0-9]|[+-]$|[0-9]{19}")  # not for fromstring


def read_obj(data: bytes) -> MeshData:
    """Wavefront OBJ bytes to every vertex and the triangles of MuJoCo's first shape."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    scan = _Scan()
    start, line = 0, 1
    while start < len(data):
        end = data.rfind(b"\n", start, start + BLOCK) + 1 or data.find(b"\n", start) + 1
        end = end or len(data)
        block = data[start:end]
        if len(block) > BLOCK + LONGEST:  # then its last line is longer (bounded memory)
            where = line + block.count(b"\n", 0, BLOCK)
            raise MeshFileError(f"OBJ line {where}: longer than {LONGEST >> 20} MiB")
        scan.add(block, line)
        line += block.count(b"\n")
        start = end
    return scan.mesh()


class _Scan:
    """What the blocks of lines hold: vertices, and the corner records of ``f``/``l``/``p``
    lines beside the ``g``/``o`` lines that close shapes, in file order."""

    def __init__(self):
        self.counts = {_V: 0, _VN: 0, _VT: 0}  # lines read so far
        self.vertices: list[np.ndarray] = []  # (k, 3) float32 per block
        self.kinds, self.lines, self.sizes, self.before = [], [], [], []  # per record
        self.v: list[np.ndarray] = []  # 0-based vertex index per corner
        self.vn: list[np.ndarray] = []  # 0-based normal index per corner, -1 for none

    def add(self, block: bytes, line0: int) -> None:
        """Read one block of whole lines whose first line is number ``line0``."""
        buf, first, ends = _line_table(block)
        kinds = _kinds(buf, first, ends)
        before = {}
        for kind in (_V, _VN, _VT):
            mine = kinds == kind
            before[kind] = self.counts[kind] + np.cumsum(mine) - mine  # before each line
            self.counts[kind] += int(np.count_nonzero(mine))
        rows = np.flatnonzero(kinds == _V)
        text, _, count = _words(buf, first[rows] + 2, ends[rows])
        self.vertices.append(_vertex_values(text, _split(text), count))
        rows = np.flatnonzero(kinds >= _F)
        corners = rows[kinds[rows] < _G]  # f, l and p lines; g and o have no corners
        text, begins, count = _words(buf, first[corners] + 2, ends[corners])
        sizes = np.zeros(len(rows), np.int64)
        sizes[kinds[rows] < _G] = count
        lines = line0 + rows
        v, vt, vn = _corner_fields(text, begins, sizes, lines)
        where = (text, sizes, lines)
        # int32 is enough within the 1 GiB file limit, and halves what is kept
        fixed = _fixed(v, np.repeat(before[_V][rows], sizes), False, *where)
        self.v.append(fixed.astype(np.int32))
        _fixed(vt, np.repeat(before[_VT][rows], sizes), True, *where)
        fixed = _fixed(vn, np.repeat(before[_VN][rows], sizes), True, *where)
        self.vn.append(fixed.astype(np.int32))
        self.kinds.append(kinds[rows])
        self.lines.append(lines.astype(np.int32))
        self.sizes.append(sizes.astype(np.int32))
        self.before.append(before[_V][rows].astype(np.int32))

    def mesh(self) -> MeshData:
        """Every vertex, and the triangles of the first shape (see the module notes)."""
        vertices = np.concatenate(self.vertices or [np.zeros((0, 3), np.float32)])
        kinds, lines, sizes, before, v, vn = (
            np.concatenate(x or [np.zeros(0, np.int32)]) for x in
            (self.kinds, self.lines, self.sizes, self.before, self.v, self.vn))
        self.v = self.vn = self.vertices = None  # (only the concatenations are kept)
        offsets = np.cumsum(sizes, dtype=np.int64) - sizes
        closers = np.flatnonzero(kinds >= _G)
        segment = np.cumsum(kinds >= _G) - (kinds >= _G)  # the shape each record is in
        for s in np.unique(segment[kinds < _G]):
            mine = np.flatnonzero((segment == s) & (kinds < _G))
            closer = kinds[closers[s]] if s < len(closers) else None  # None: the file's end
            known = before[closers[s]] if s < len(closers) else len(vertices)
            corners, record = _triangles(mine[kinds[mine] == _F], offsets, sizes, v, lines,
                                         vertices, known)
            others = np.count_nonzero(sizes[mine[kinds[mine] != _F]])  # l and p corners
            if not (len(corners) or closer is None or (closer == _O and others)):
                continue  # this group or object makes no shape
            normals = self.counts[_VN]
            if not len(corners):  # MuJoCo's decoder: polyline segments as (a, b, b)
                corners, record = _segments(mine[kinds[mine] == _L], offsets, sizes)
                normals = 0
            faces = _checked(corners, record, v, vn, lines, len(vertices), normals)
            return MeshData(vertices.astype(np.float64), faces)
        return MeshData(vertices.astype(np.float64), np.zeros((0, 3), np.int64))


def _line_table(block: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The block's bytes, and each line's first byte after blanks and its end (the first
    ``\\n`` or NUL)."""
    if not block.endswith(b"\n"):
        block += b"\n"
    buf = np.frombuffer(block, np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.concatenate([[0], ends[:-1] + 1])
    if b"\0" in block:
        ends = ends.copy()
        nul = np.flatnonzero(buf == 0)
        np.minimum.at(ends, np.searchsorted(ends, nul), nul)
    first = starts.copy()
    active = np.flatnonzero((buf[first] == 32) | (buf[first] == 9))
    for _ in range(16):  # a few blanks, vectorized
        if not len(active):
            return buf, first, ends
        first[active] += 1
        active = active[((buf[first[active]] == 32) | (buf[first[active]] == 9))
                        & (first[active] < ends[active])]
    for row in active.tolist():  # deeper indents
        text = block[first[row]:ends[row]]
        first[row] += len(text) - len(text.lstrip(b" \t"))
    return buf, first, ends


def _kinds(buf: np.ndarray, first: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each line's kind (_V ... _O, 0 for a line tinyobjloader skips)."""
    def at(k):
        return np.where(first + k < ends, buf[np.minimum(first + k, len(buf) - 1)], 0)
    c0, c1, c2 = at(0), at(1), at(2)
    blank1 = (c1 == 32) | (c1 == 9)
    blank2 = (c2 == 32) | (c2 == 9)
    kinds = np.zeros(len(first), np.int8)
    for letter, kind in (("v", _V), ("f", _F), ("l", _L), ("p", _P), ("g", _G), ("o", _O)):
        kinds[(c0 == ord(letter)) & blank1] = kind
    kinds[(c0 == ord("v")) & (c1 == ord("n")) & blank2] = _VN
    kinds[(c0 == ord("v")) & (c1 == ord("t")) & blank2] = _VT
    return kinds


def _words(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
           ) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The texts of the lines from starts to ends as one string, each followed by a space
    and with tabs made spaces; where its words begin; and how many words each line has."""
    length = ends - starts + 1  # with the end's byte, made a space
    runs = np.empty(2 * len(starts) + 1, np.int64)  # skipped and taken bytes, in turn
    runs[0:-1:2] = starts - np.concatenate([[0], ends[:-1] + 1])
    runs[1::2] = length
    runs[-1] = len(buf) - (ends[-1] + 1 if len(ends) else 0)
    text = buf[np.repeat(np.arange(len(runs)) % 2 == 1, runs)]  # (a byte mask, not indices)
    before = np.cumsum(length) - length
    text[before + length - 1] = 32
    text[text == 9] = 32
    blank = text == 32
    begins = np.flatnonzero(~blank & np.concatenate([[True], blank[:-1]]))
    count = np.diff(np.searchsorted(begins, np.append(before, len(text))))
    return text.tobytes(), begins, count.astype(np.int64)


def _split(text: bytes) -> list[bytes]:
    """The words of a :func:`_words` text (split at spaces only, as tinyobjloader does)."""
    if b"\v" in text or b"\f" in text:  # bytes.split would split at these too
        return [word for word in text.split(b" ") if word]
    return text.split()


def _vertex_values(joined: bytes, words: list[bytes], count: np.ndarray) -> np.ndarray:
    """(k, 3) float32 of the first three words of each ``v`` line, as strtod reads them;
    ``count`` words per line, ``joined`` the lines' text (see :func:`_words`)."""
    if not np.all(count == 3):
        ends = np.cumsum(count).tolist()
        words = list(itertools.chain.from_iterable(
            (words[end - n:end] + [b""] * 3)[:3] for n, end in zip(count.tolist(), ends)))
    values = None
    if not joined.translate(None, _DECIMAL + b" "):
        try:
            values = np.array(words, dtype=np.float64)
        except ValueError:  # "1e", "1.5.5", "" ...: read as strtod does below
            pass
    if values is None:
        values = np.array([strtod(word) for word in words], dtype=np.float64)
    with np.errstate(over="ignore"):  # beyond float32: infinite, refused by the caller
        return values.reshape(-1, 3).astype(np.float32)


def strtod(word: bytes) -> float:
    """What C's strtod reads at the start of a word (0.0 where it reads nothing)."""
    match = _NUMBER.match(word.lstrip(b"\v\f"))
    if not match:
        return 0.0
    text = match.group().decode("ascii")
    body = text.lstrip("+-")
    sign = -1.0 if text.startswith("-") else 1.0
    if body[:2] in ("0x", "0X"):
        try:
            return sign * float.fromhex(body)
        except OverflowError:
            return sign * np.inf
    return float(text)


def _corner_fields(text: bytes, begins: np.ndarray, sizes: np.ndarray, lines: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(v, vt, vn) int64 per corner as atoi reads them (0 where a field is missing);
    ``text`` the corners (see :func:`_words`) beginning at ``begins``, ``sizes`` corners
    per record line."""
    fields = _plain_fields(text, begins)
    if fields is None:
        parts = [[_atoi(part) for part in word.split(b"/")] for word in _split(text)]
        count = np.fromiter(map(len, parts), np.int64, len(parts))
        values = np.fromiter(itertools.chain.from_iterable(parts), np.int64, int(count.sum()))
    else:
        count, values = fields
    if np.any(count > 3):
        corner = int(np.argmax(count > 3))
        row = int(np.searchsorted(np.cumsum(sizes), corner, side="right"))
        corner_text = _split(text)[corner].decode(errors="replace")
        raise MeshFileError(f"OBJ line {lines[row]}: corner {quoted(corner_text)} has more "
                            "than 3 fields (v/vt/vn); MuJoCo refuses the file")
    offsets = np.cumsum(count) - count
    values = values.astype(np.int32).astype(np.int64)  # atoi's int: the low 32 bits
    last = max(len(values) - 1, 0)
    take = lambda k: np.where(count > k, values[np.minimum(offsets + k, last)], 0)
    return take(0), take(1), take(2)


def _plain_fields(text: bytes, begins: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(fields per corner, the field values) for corners of digits, signs and slashes
    only, read by numpy at once; None for other corners. ``text`` holds the corners
    between spaces, beginning at ``begins``."""
    if text.translate(None, b"0123456789+-/ "):
        return None
    long = len(begins) and np.diff(begins, append=len(text)).max() > 19  # 19 digits or more
    if (long or b"+" in text or b"-" in text) and _PLAIN_CORNERS.search(text):
        return None
    count = np.ones(len(begins), np.int64)
    if b"/" in text:  # each slash adds a field to its corner; an empty field reads 0
        slashes = np.flatnonzero(np.frombuffer(text, np.uint8) == 47)
        count += np.bincount(np.searchsorted(begins, slashes, side="right") - 1,
                             minlength=len(begins))
        while b"//" in text:
            text = text.replace(b"//", b"/0/")
        text = b" " + text
        text = text.replace(b" /", b" 0/").replace(b"/ ", b"/0 ").replace(b"/", b" ")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            values = np.fromstring(text, dtype=np.int64, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    return (count, values) if len(values) == count.sum() else None


def _atoi(text: bytes) -> int:
    """C's atoi: the integer at the start (0 for none), wrapped to int32 by the caller;
    strtol saturates at the int64 range first."""
    digits = _INTEGER.match(text).group(1)
    value = int(digits) if digits.strip(b"+-") else 0
    return max(-2 ** 63, min(2 ** 63 - 1, value))


def _fixed(raw: np.ndarray, count: np.ndarray, zero_ok: bool, text: bytes,
           sizes: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """tinyobjloader's fixIndex: 1-based to 0-based, negative relative to ``count`` (the
    lines before); 0 gives -1 where ``zero_ok`` (texcoord, normal), else is an error."""
    fixed = np.where(raw > 0, raw - 1, np.where(raw < 0, count + raw, -1))
    bad = (fixed < 0) & (raw != 0) if zero_ok else (fixed < 0)
    if np.any(bad):
        corner = int(np.argmax(bad))
        row = int(np.searchsorted(np.cumsum(sizes), corner, side="right"))
        word = _split(text)[corner]
        what = "texture or normal index" if zero_ok else "vertex index"
        raise MeshFileError(f"OBJ line {lines[row]}: corner "
                            f"{quoted(word.decode(errors='replace'))} has no valid {what} (1-based, or negative and relative to the "
                            "lines so far); MuJoCo refuses the file")
    return fixed


def _triangles(faces: np.ndarray, offsets: np.ndarray, sizes: np.ndarray, v: np.ndarray,
               lines: np.ndarray, vertices: np.ndarray, known: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """tinyobjloader's triangles of the face records ``faces``, in file order: corner
    numbers (t, 3) into ``v`` and the record of each; ``known`` vertices are read when the
    shape closes, ``vertices`` (n, 3) float32."""
    n, start = sizes[faces], offsets[faces]
    if np.all(n == 3):  # triangles only: as written
        return start[:, None] + np.arange(3), faces
    ranks, pieces = [], []
    tri = np.flatnonzero(n == 3)
    ranks.append(tri)
    pieces.append(start[tri, None] + np.arange(3))
    quad = np.flatnonzero(n == 4)
    corners = start[quad, None] + np.arange(4)
    whole = np.all(v[corners] < known, axis=1)  # else tinyobjloader skips the quad
    quad, corners = quad[whole], corners[whole]
    p = vertices[v[corners]]  # (q, 4, 3) float32, tinyobjloader's arithmetic
    d02, d13 = p[:, 2] - p[:, 0], p[:, 3] - p[:, 1]
    s02 = (d02[:, 0] * d02[:, 0] + d02[:, 1] * d02[:, 1]) + d02[:, 2] * d02[:, 2]
    s13 = (d13[:, 0] * d13[:, 0] + d13[:, 1] * d13[:, 1]) + d13[:, 2] * d13[:, 2]
    short = (s02 < s13)[:, None]
    ranks += [quad, quad]
    pieces += [np.where(short, corners[:, [0, 1, 2]], corners[:, [0, 1, 3]]),
               np.where(short, corners[:, [0, 2, 3]], corners[:, [1, 2, 3]])]
    for rank in np.flatnonzero((n > 4) & (n <= MAX_POLYGON)).tolist():
        corners = start[rank] + np.arange(n[rank])
        if np.any(v[corners] >= known):
            raise MeshFileError(f"OBJ line {lines[faces[rank]]}: a face of {n[rank]} corners "
                                "names a vertex that is defined after it")
        cut = np.array(_ear_clipping(vertices[v[corners]]), dtype=np.int64).reshape(-1, 3)
        ranks.append(np.full(len(cut), rank))
        pieces.append(corners[cut])
    ranks = np.concatenate(ranks)
    order = np.argsort(ranks, kind="stable")  # a quad's two triangles stay in order
    return np.concatenate(pieces).reshape(-1, 3)[order], faces[ranks[order]]


def _segments(polylines: np.ndarray, offsets: np.ndarray, sizes: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Each segment (a, b) of the polyline records as the corners (a, b, b), and its record."""
    count = np.maximum(sizes[polylines] - 1, 0)
    first = np.cumsum(count) - count
    a = np.repeat(offsets[polylines], count) + np.arange(int(count.sum())) - \
        np.repeat(first, count)
    return np.stack([a, a + 1, a + 1], axis=1), np.repeat(polylines, count)


def _checked(corners: np.ndarray, record: np.ndarray, v: np.ndarray, vn: np.ndarray,
             lines: np.ndarray, vertices: int, normals: int) -> np.ndarray:
    """The faces (t, 3) of the triangles' corners, once MuJoCo's checks pass: every vertex
    exists and, in a file with ``normals`` (> 0) vn lines, every corner names one."""
    faces = v[corners].astype(np.int64)
    bad = np.any(faces >= vertices, axis=1)
    if np.any(bad):
        t = int(np.argmax(bad))
        raise MeshFileError(f"OBJ line {lines[record[t]]}: vertex index {faces[t].max() + 1} "
                            f"does not exist (the file has {vertices} vertices)")
    if normals:
        named = vn[corners]
        bad = np.any((named < 0) | (named >= normals), axis=1)
        if np.any(bad):
            raise MeshFileError(f"OBJ line {lines[record[int(np.argmax(bad))]]}: a face corner "
                                f"names none of the file's {normals} normals (vn); MuJoCo "
                                "refuses a file with normals unless every corner names one")
    return faces


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
        others = [remaining[(start + k) % m] for k in range(3, m)]
        if others and np.any(_inside(xy[triangle], xy[others])):
            start += 1
            continue
        triangles.append(tuple(triangle))
        del remaining[(start + 1) % m]
    if len(remaining) == 3:
        triangles.append(tuple(remaining))
    return triangles


def _inside(triangle: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Crossing-number test of points (k, 2) in a triangle (3, 2), as tinyobjloader's
    pnpoly, in float32 (the edge's crossing is only used where the edge spans the point's
    y, as C evaluates it)."""
    x, y = points[:, 0], points[:, 1]
    inside = np.zeros(len(points), bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for i, j in ((0, 2), (1, 0), (2, 1)):
            (xi, yi), (xj, yj) = triangle[i], triangle[j]
            spans = (yi > y) != (yj > y)
            inside ^= spans & (x < (xj - xi) * (y - yi) / (yj - yi) + xi)
    return inside
