"""``.npz`` input, read row-block by row-block: ``np.load(mmap_mode=...)`` cannot map a
member of an .npz, so each member's .npy header is parsed and its rows streamed through
``zipfile``, which also decompresses ``savez_compressed`` members on the fly and checks
each member's CRC-32 when its last row is read."""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .errors import warn
from .naming import printable
from .errors import CorruptInput, UsageError
from .naming import listing
from .layout import KINDS, TIME
from .vectors import FORCE_NAME, States, pop_q, warn_ignored_forces, warn_unused_kinds

VERIFY_BYTES = 16 << 20  # bytes read at a time when a member's CRC-32 is checked again


@dataclass
class StatesArray:
    """One vector of the states (q, v, a, tau, fext) as rows of an array: an .npz member,
    read a block of rows at a time through ``zipfile`` (or held whole if it must be). The
    readers of Parquet and HDF5 give :func:`npz_chunks` their columns and datasets in this
    shape (``kind``, ``count``, ``width``, ``problem``, ``read``, ``verify``)."""

    kind: str
    shape: tuple
    dtype: np.dtype
    stream: object = None  # the member's file, positioned at its first row
    whole: np.ndarray | None = None  # Fortran-ordered arrays are loaded at once
    reopen: object = None  # () -> the member's file again, from its first byte

    @property
    def count(self) -> int:
        return 1 if len(self.shape) == 1 else self.shape[0]

    @property
    def width(self) -> int:
        return self.shape[-1] if self.shape else 0

    def problem(self, row: int) -> str:
        """What is wrong with state ``row``, whose numbers were not all finite."""
        return f"{self.kind}[{row}] holds a non-finite number"

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as a (stop - start, width) array, possibly a read-only view
        (rows are read in order)."""
        if self.whole is not None:
            return self.whole.reshape(self.count, self.width)[start:stop]
        size = (stop - start) * self.width * self.dtype.itemsize
        data = self.stream.read(size)
        if len(data) != size:
            raise UsageError(f"array {self.kind} is truncated")
        return np.frombuffer(data, dtype=self.dtype).reshape(stop - start, self.width)

    def verify(self) -> None:
        """Read the member once more from its start to its end, so that ``zipfile`` checks
        its CRC-32: a read that began further on (a seek) checks nothing (Python 3.12 and
        later seek in a stored member without reading the rows before)."""
        if self.reopen is None:
            return
        with self.reopen() as stream:
            while stream.read(VERIFY_BYTES):
                pass


def npz_chunks(members: list[StatesArray], name, layout, wrenches, size, first: int = 0,
               end: int | None = None) -> Iterator[States]:
    """Chunks of ``size`` states of the .npz arrays, from state ``first`` to ``end`` (the
    last, by default); at a non-finite row, the rows before it, then the error. The one
    .npz reader: the streaming path reads a whole file, a cluster task its block of it;
    also the reader of the arrays of HDF5 and Parquet files, whose ``members`` have the
    attributes and methods of :class:`StatesArray` and raise UsageError (CorruptInput) for
    what their libraries cannot read."""
    import zipfile
    import zlib

    count = members[0].count if end is None else end
    shown = printable(name)  # where a state is, in tables too
    verify = first > 0 and count == members[0].count  # a block that ends the members
    unscaled = {m.kind: bool(np.all(layout.scale(m.kind) == 1.0)) for m in members}
    if first:
        try:
            for member in members:  # move every streamed member to row ``first``
                if member.stream is not None:
                    member.stream.seek(first * member.width * member.dtype.itemsize, 1)
        except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as error:
            raise CorruptInput(f"{name}: not a readable .npz file ({error})") from None
    for start in range(first, count, size):
        stop = min(start + size, count)
        vectors = {}
        bad = None
        for member in members:
            try:
                block = member.read(start, stop)
                if verify and stop == count:
                    member.verify()
                # float64 rows of our own, to scale in place and hand on: one copy at most
                block = block.astype(np.float64)
            except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as error:
                raise CorruptInput(f"{name}: not a readable .npz file ({error})") from None
            except UsageError as error:
                raise type(error)(f"{name}: {error}") from None
            with np.errstate(over="ignore", invalid="ignore"):
                finite = np.isfinite(block.sum())
            if not finite:  # a NaN or inf (or only an overflow of the sum): find the row
                rows = np.flatnonzero(~np.isfinite(block).all(axis=1))
                if rows.size and (bad is None or rows[0] < bad[1]):
                    bad = (member.kind, int(rows[0]))
            if not unscaled[member.kind]:
                block *= layout.scale(member.kind)
            vectors[member.kind] = block
        if bad is not None:
            vectors = {kind: block[:bad[1]] for kind, block in vectors.items()}
            stop = start + bad[1]
        if stop > start:
            q = pop_q(vectors, layout, stop - start)
            yield States(q=q, wrenches=dict(wrenches),
                         where=lambda i, s=start: f"{shown}: state {s + i}", **vectors)
        if bad is not None:
            member = next(m for m in members if m.kind == bad[0])
            raise UsageError(f"{name}: {member.problem(stop)}")


def npz_members(stream, name, layout, kinds, warns: bool = True) -> list[StatesArray]:
    """The arrays of the kinds in use, checked: numeric, right width, same length;
    ``warns`` of arrays of external forces, which an .npz does not carry."""
    import zipfile
    import zlib

    if not zipfile.is_zipfile(stream):
        raise UsageError(f"{name}: not an .npz (zip) archive")
    stream.seek(0)
    try:
        archive = zipfile.ZipFile(stream)
        names = [n.removesuffix(".npy") for n in archive.namelist()]
        members = [_open_member(archive, kind) for kind in kinds if kind in names]
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        raise UsageError(f"{name}: not a readable .npz file ({error})") from None
    if not members:
        raise UsageError(f"{name}: has none of the arrays {', '.join(kinds)} "
                         f"(it has: {', '.join(names) or 'nothing'})")
    check_members(members, names, name, layout, kinds,
                  (lambda n: _rows_of(archive, n) == members[0].count) if warns else None)
    return members


def check_members(members, names, name, layout, kinds, per_state=None, what="array") -> None:
    """The arrays of a file of arrays checked: numeric, of the model's width, as many
    states each. With ``per_state`` (whether the array called so has one row per state),
    arrays dyn does not read are named in one warning, and those of external forces and of
    vectors this command does not take in others; ``what`` names the arrays in them."""
    for member in members:
        width = layout.width(member.kind)
        if (len(member.shape) not in (1, 2) or member.width != width
                or member.dtype.kind not in "fiu"):
            raise UsageError(f"{name}: {what} {member.kind} is {member.dtype} {member.shape}, "
                             f"{layout.need(member.kind, member.width)}: expected (N, {width}) "
                             "numbers")
    if len({member.count for member in members}) > 1:
        shapes = ", ".join(f"{m.kind} {m.shape}" for m in members)
        raise UsageError(f"{name}: {what}s have different numbers of states ({shapes})")
    if per_state is not None:  # (once the arrays are good: a refusal is the run's one line)
        warn_ignored_forces(names, name, what)
        warn_unused_kinds([kind for kind in KINDS if kind in names and kind not in kinds],
                          kinds, name, (what, f"{what}s"))
        foreign = [n for n in names if n not in KINDS and not FORCE_NAME.match(n)
                   and n not in ("dofs", TIME) and per_state(n)]
        if foreign:
            listed = listing([repr(n) for n in foreign], 3)
            warn(f"{name}: {what}{'s' if len(foreign) > 1 else ''} {listed} not read: dyn "
                 f"reads the {what}s q, v, a and tau")


def _npy_header(stream) -> tuple | None:
    """(shape, fortran, dtype) from the header of an .npy stream, left at its data; None
    for a format version without a header reader here (3.0)."""
    from numpy.lib import format as npy

    version = npy.read_magic(stream)
    if version == (1, 0):
        return npy.read_array_header_1_0(stream)
    if version == (2, 0):
        return npy.read_array_header_2_0(stream)
    return None


def _rows_of(archive, name: str) -> int | None:
    """The first dimension of member ``name``.npy from its header (None for a scalar or an
    unreadable header): arrays with one row per state are the ones worth a warning."""
    try:
        with archive.open(f"{name}.npy") as stream:
            header = _npy_header(stream)
    except (OSError, ValueError, KeyError):
        return None
    return header[0][0] if header and header[0] else None


def _open_member(archive, kind: str) -> StatesArray:
    """The member ``kind``.npy, its header parsed and its data ready to stream."""
    from numpy.lib import format as npy

    stream = archive.open(f"{kind}.npy")
    header = _npy_header(stream)
    if header is not None:
        shape, fortran, dtype = header
    else:
        stream = archive.open(f"{kind}.npy")
        whole = npy.read_array(stream, allow_pickle=False)
        return StatesArray(kind, (len(whole), 1) if kind == TIME and whole.ndim == 1
                           else whole.shape, whole.dtype, whole=whole)
    if kind == TIME and len(shape) == 1:  # the times (N,): one per state
        shape = (*shape, 1)
    if fortran and len(shape) > 1:
        whole = npy.read_array(archive.open(f"{kind}.npy"), allow_pickle=False)
        return StatesArray(kind, shape, dtype, whole=whole)
    return StatesArray(kind, tuple(shape), np.dtype(dtype), stream=stream,
                   reopen=lambda: archive.open(f"{kind}.npy"))
