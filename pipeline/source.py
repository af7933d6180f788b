"""``--input FILE`` (or ``-``): the file opened, its format told by its extension (or, on
stdin, by its first bytes), and its states read in chunks: JSON Lines, CSV, .npz, Parquet
(:mod:`.parquet`) and HDF5 (:mod:`.hdf5`).

Every problem raises :class:`UsageError` with a one-line message naming where it happened
(``states.csv:12``, ``states.npz: state 7``). Files are read in chunks of at most
:data:`CHUNK` states so that the engine runs once per chunk and output can stream; memory
stays bounded by the chunk, whatever the number of states. A piped ``.npz``, Parquet or
HDF5 file on stdin is first spooled to a temporary file. When a row is bad, the good rows
before it are yielded as a last chunk and then the error is raised, so output can end
exactly at the bad row.
"""
from __future__ import annotations

import codecs
import os
import stat
import sys
from collections.abc import Iterator, Sequence

import numpy as np

from .errors import UsageError
CHUNK = 16384  # states per chunk when the caller gives no size
from .csvfile import csv_chunks
from .hdf5 import close_files, hdf5_members, require_h5py
from .jsonl import jsonl_chunks
from .layout import Layout
from .npz import npz_chunks, npz_members
from .parquet import parquet_members, require_arrow
from .paths import reading
from .text import STDIN, no_states, text_lines, window
from .vectors import States

INPUT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv",
                 ".npz": "npz", ".parquet": "parquet", ".h5": "hdf5", ".hdf5": "hdf5"}
ARRAYS = frozenset(("npz", "parquet", "hdf5"))  # files of arrays: states counted up front
EMPTY_ARRAYS = {"npz": "its arrays have no rows", "parquet": "the file has no rows",
                "hdf5": "its datasets have length 0"}  # why a file of arrays has no states
MAGIC = {b"PK": "npz", b"PAR1": "parquet", b"\x89HDF\r\n\x1a\n": "hdf5"}  # on stdin


class Input:
    """An opened ``--input``: a text stream (JSON Lines, CSV) or a binary file of arrays
    (.npz, Parquet, HDF5: the group ``prefix`` of the last)."""

    def __init__(self, name: str, kind: str, stream, owned: bool = True):
        self.name, self.kind, self.stream = name, kind, stream
        self.prefix: str | None = None  # --dataset-prefix
        self.owned = owned  # close the stream when done (not for the process's stdin)
        self.total: int | None = None  # number of states, once known (.npz)
        self.window: tuple[int, int, int, bool] | None = None  # a part: first, skip, take, BOM
        try:  # bytes in all, for the share read so far (a regular file, also on stdin)
            status = os.fstat(stream.fileno())
            self.size = status.st_size if stat.S_ISREG(status.st_mode) else 0
        except (OSError, AttributeError, ValueError):  # no descriptor (tests' stdin)
            self.size = 0

    def consumed(self) -> float | None:
        """The share of a text input read so far (0..1, by bytes; the chunk just yielded
        included), or None when unknown (a pipe; files of arrays count states instead)."""
        if self.kind in ARRAYS or not self.size:
            return None
        try:
            return min(1.0, self.stream.tell() / self.size)
        except (OSError, ValueError):
            return None

    @staticmethod
    def open(path: str, prefix: str | None = None) -> "Input":
        """``path`` (``-`` for stdin) opened, its format told; an HDF5 file's datasets are
        looked for in the group ``prefix`` (``--dataset-prefix``)."""
        reading(path, "the input file")  # (stdin too, when redirected from a file)
        source = Input._open(path)
        source.prefix = prefix
        return source

    @staticmethod
    def _open(path: str) -> "Input":
        if path == "-":
            return sniff_stdin()
        suffix = os.path.splitext(path)[1].lower()
        kind = INPUT_FORMATS.get(suffix)
        if kind is None:
            raise UsageError(f"{path}: unknown input format '{suffix or path}' "
                             "(use .jsonl, .csv, .npz, .parquet or .h5, or - for stdin)")
        if kind == "parquet":  # the optional extras: one line before anything is done
            require_arrow()
        elif kind == "hdf5":
            require_h5py()
        try:
            stream = open(path, "rb")  # text is decoded line by line (text_lines)
        except OSError as error:
            raise UsageError(f"{path}: cannot read ({error.strerror})") from None
        return Input(path, kind, stream)

    @staticmethod
    def part(path: str, start: int, first: int, skip: int, take: int) -> "Input":
        """A part of a JSON Lines file (see :mod:`.parts`): from byte ``start`` (where line
        ``first`` begins), the ``take`` data lines after the first ``skip`` ones."""
        source = Input(path, "jsonl", open(path, "rb"))
        source.stream.seek(start)
        source.window = (first, skip, take, start == 0)
        return source

    def chunks(self, layout: Layout, kinds: Sequence[str], wrenches: dict[str, np.ndarray],
               size: int = CHUNK) -> Iterator[States]:
        """States in input order, ``size`` at a time, with the command-line wrenches added."""
        lines = None
        if self.window is not None:
            first, skip, take, bom = self.window
            lines = window(text_lines(self.stream, self.name, first, bom), self.kind, skip,
                            take)
        try:
            if self.kind in ARRAYS:
                yield from self._arrays(layout, kinds, wrenches, size)
            elif self.kind == "jsonl":
                yield from jsonl_chunks(self.stream, self.name, layout, kinds, wrenches, size,
                                         lines)
            else:
                yield from csv_chunks(self.stream, self.name, layout, kinds, wrenches, size,
                                      self.size)
        finally:
            close_files(self.stream)  # (an HDF5 file's, before its stream)
            if self.owned:
                self.stream.close()

    def _arrays(self, layout, kinds, wrenches, size) -> Iterator[States]:
        """The reader of arrays; the number of states is known once the headers are read."""
        return npz_chunks(self.members(layout, kinds, size), self.name, layout, wrenches, size)

    def members(self, layout: Layout, kinds: Sequence[str], size: int = CHUNK,
                warns: bool = True) -> list:
        """The arrays of a file of arrays (.npz, Parquet, HDF5) for :func:`.npz.npz_chunks`,
        checked from the file's headers (``warns`` of those it does not read); sets
        :attr:`total`."""
        if self.kind == "npz":
            members = npz_members(self.stream, self.name, layout, kinds, warns)
        elif self.kind == "parquet":
            members = parquet_members(self.stream, self.name, layout, kinds, size, warns)
        else:
            members = hdf5_members(self.stream, self.name, layout, kinds, self.prefix, warns)
        self.total = members[0].count
        if not self.total:
            raise no_states(self.name, EMPTY_ARRAYS[self.kind])
        return members


def sniff_stdin() -> Input:
    """stdin as a file of arrays (.npz, Parquet, HDF5: told by their magic bytes, spooled
    to a temporary file), JSON Lines ('{') or CSV."""
    if sys.stdin is None or not hasattr(sys.stdin, "buffer"):
        raise UsageError("dyn: --input -: no standard input")
    raw = sys.stdin.buffer
    head = raw.peek(256) if hasattr(raw, "peek") else b""
    binary = next((kind for magic, kind in MAGIC.items() if head.startswith(magic)), None)
    if binary is not None:
        import shutil
        import tempfile

        spool = tempfile.TemporaryFile()
        shutil.copyfileobj(raw, spool, 1 << 20)
        spool.seek(0)
        return Input(STDIN, binary, spool)
    kind = "csv" if head.removeprefix(codecs.BOM_UTF8).lstrip()[:1] not in (b"{", b"") else "jsonl"
    return Input(STDIN, kind, raw, owned=False)
