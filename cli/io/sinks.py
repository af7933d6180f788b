"""Writing results for ``dyn``: JSON (Lines), CSV, .npz and tables for people.

Machine formats print every number as the shortest text that reads back as the same
double (orjson's output: the digits of Python's ``repr``, the form may differ, ``0.00001``
for ``1e-05``). A *sink* receives the results chunk by chunk, so large inputs
stream: ``put(result, states)`` per chunk, then ``close()``. After an error, ``close()``
still ends what was written cleanly (every state written is complete), and ``abort()``
removes an output file that received no state -- unless it existed before the run: a file
is emptied only at the first write (``begin()``), so until then it keeps its contents.
When the output itself cannot be written (a full disk), the sink raises
:class:`OutputError` after cutting a text file back to its whole states, or removing an
.npz. ``tabulate`` is imported only when a table is printed.
"""
from __future__ import annotations

import contextlib
import csv
import json
import os
import stat
from collections.abc import Callable, Sequence

import numpy as np
import orjson

from ..errors import OutputError
from ..render.table import matrix_table, table

OUTPUT_FORMATS = {".jsonl": "json", ".ndjson": "json", ".json": "json", ".csv": "csv",
                  ".npz": "npz", ".parquet": "parquet", ".h5": "hdf5", ".hdf5": "hdf5"}


class Sink:
    """Receives results chunk by chunk. ``path`` is the file created for them, if any."""

    def __init__(self, stream, path: str | None = None):
        self.stream, self.path = stream, path
        self.count = 0  # states written so far
        self.whole = 0  # bytes of the output file that hold them (text files)
        self.created = True  # the file did not exist before (see cli.main.open_output)
        self.emptied = path is None  # an existing file is emptied at the first write
        self.regular = False  # the output is a regular file (not a pipe or a device)

    def begin(self) -> None:
        """Empty the output file before its first bytes: it is opened without emptying it,
        so a run that fails before its first state leaves an existing file as it was."""
        if not self.emptied:
            descriptor = self.stream.fileno()
            self.regular = stat.S_ISREG(os.fstat(descriptor).st_mode)
            if self.regular:  # a pipe or a device is left alone
                os.ftruncate(descriptor, 0)
            self.emptied = True

    def put(self, result: np.ndarray, states) -> None:
        """Write the results of a chunk of states and count them."""
        self.record(lambda: self.write(result, states), len(result))

    def record(self, write: Callable[[], None], count: int) -> None:
        """Call ``write`` (it writes ``count`` states) and count them; OutputError (see
        :meth:`failed`) if the output cannot be written."""
        try:
            self.begin()
            write()
        except OSError as error:
            raise self.failed(error) from None
        self.count += count
        self.mark()

    def write(self, result: np.ndarray, states) -> None:
        raise NotImplementedError

    def mark(self) -> None:
        """Note where the states written end in the output file (written and flushed; a
        pipe or a device has no position to note)."""
        if self.regular:
            self.whole = os.lseek(self.stream.fileno(), 0, os.SEEK_CUR)

    def where(self) -> str:
        """Where the results go, for messages: the file name or 'stdout'."""
        return "stdout" if self.path is None else self.path

    def close(self) -> None:
        """End the output; OutputError if it cannot be written."""
        try:
            self.begin()
            self.finish()
        except OSError as error:
            raise self.failed(error) from None

    def finish(self) -> None:
        if self.path is None:
            self.stream.flush()
        else:
            self.stream.close()

    def abort(self) -> bool:
        """Stop after an error before any state was written: remove the file if dyn
        created or emptied it (a file written to before keeps its contents); whether it
        was removed."""
        if self.path is None:
            return False
        close_quietly(self.stream)  # what its buffer still holds goes with the file
        if self.created or (self.emptied and self.regular):  # never a pipe or a device
            os.remove(os.path.realpath(self.path))  # (through a link: the file it names)
            return True
        return False

    def failed(self, error: OSError) -> OSError:
        """The error to raise when the output cannot be written (an OutputError, but a
        closed pipe on stdout stays a BrokenPipeError): a file keeps the states written
        whole (the bytes after them are cut off); one with none is removed."""
        reason = error.strerror or str(error)
        if self.path is None:
            if isinstance(error, BrokenPipeError):  # stdout's reader went away: dyn ends
                return error  # quietly (SIGPIPE, or as parts.try_parts does)
            after = f" after {self.count} states" if self.count else ""
            return OutputError(f"dyn: cannot write to stdout ({reason}){after}", reason)
        if self.count == 0:
            outcome = "it is removed" if self.abort() else "it is left as it was"
            return OutputError(f"{self.path}: cannot write ({reason}); {outcome}", reason)
        close_quietly(self.stream)  # the rest of its buffer: cut off here
        if self.regular:
            os.truncate(self.path, self.whole)
        states = "1 state" if self.count == 1 else f"{self.count} states"
        return OutputError(f"{self.path}: cannot write ({reason}); it holds the first {states}",
                           reason)


def close_quietly(*files) -> None:
    """Close files whose contents no longer matter (buffers that cannot be written)."""
    for file in files:
        try:
            file.close()
        except (OSError, ValueError):
            pass


class TextSink(Sink):
    """JSON Lines or CSV: a chunk's results become one text, written and flushed."""

    def text(self, result: np.ndarray) -> str:
        raise NotImplementedError

    def write(self, result, states) -> None:
        self.write_text(self.text(result))

    def write_text(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def numbers_text(rows: np.ndarray) -> bytes:
    """orjson's text of the float64 array ``rows`` (N, ...): ``[[1.0,2.5],[0.00001,...]]``,
    each number the shortest that reads back as the same double."""
    return orjson.dumps(np.ascontiguousarray(rows, dtype=np.float64),
                        option=orjson.OPT_SERIALIZE_NUMPY)


class JsonSink(TextSink):
    """One JSON object per state and line: ``{"<key>": value, **extra}``, spaced as
    ``json.dumps`` spaces it."""

    def __init__(self, stream, key: str, extra: dict | None = None, path: str | None = None):
        super().__init__(stream, path)
        self.head = "{" + json.dumps(key) + ": "
        self.tail = (", " + json.dumps(extra)[1:-1] if extra else "") + "}\n"

    def text(self, result) -> str:
        """The lines of a block of results, from one text of the whole block: the rows of
        ``[row, row, ...]`` are parted where a row's brackets close and the next one's open
        (``], [`` for vectors, ``]], [[`` for matrices: never inside a row)."""
        if not len(result):
            return ""
        head, tail, depth = self.head.encode(), self.tail.encode(), result.ndim - 1
        text = numbers_text(result).replace(b",", b", ")
        rows = text.replace(b"]" * depth + b", " + b"[" * depth,
                            b"]" * depth + tail + head + b"[" * depth)
        return b"".join((head, memoryview(rows)[1:-1], tail)).decode()


class CsvSink(TextSink):
    """A header row, then one row per state (matrices flattened row-major). The header is
    written with the first rows (or at the end of an empty input), so an input rejected
    before its first state leaves nothing on stdout."""

    def __init__(self, stream, header: Sequence[str] | None, path: str | None = None):
        super().__init__(stream, path)
        self.writer = csv.writer(stream, lineterminator="\n")
        self.header: Sequence[str] | None = header  # None once written (or written elsewhere)

    def text(self, result) -> str:
        # numbers never need quoting: the rows of orjson's [[...],[...]] are the CSV rows
        if not len(result):
            return ""
        text = numbers_text(result.reshape(len(result), -1)).decode()
        return text[2:-2].replace("],[", "\n") + "\n"

    def write_text(self, text: str) -> None:
        self.write_header()
        super().write_text(text)

    def write_header(self) -> None:
        if self.header is not None:
            self.writer.writerow(self.header)
            self.header = None

    def finish(self) -> None:
        self.write_header()
        super().finish()


class BesideSink(Sink):
    """A binary file readable only once complete (.npz, Parquet, HDF5): written to
    ``temporary`` beside its name and renamed to it once complete -- never a partial file
    under its name, a file there from before kept till then -- and removed, not cut, when
    the run cannot end it. ``noun`` names the format in messages; ``parts()`` are the
    writer's open objects to close when it stops."""

    noun = "file"

    def __init__(self, stream, path: str | None = None, temporary: str | None = None):
        super().__init__(stream, path)
        self.temporary = temporary
        self.emptied = self.emptied or temporary is not None

    def parts(self) -> tuple:
        return ()

    def mark(self) -> None:
        """Nothing to note: an unfinished file is removed, not cut (see failed)."""

    def complete(self) -> None:
        """Close the finished file; written beside its name, rename it to that name."""
        super().finish()
        if self.temporary is not None:
            os.replace(self.temporary, os.path.realpath(self.path))
            self.temporary = None

    def abort(self) -> bool:
        """Stop without a file: what was written beside its name is removed (a file of
        that name from before is left as it was); whether no file is left at the name."""
        close_quietly(*(part for part in self.parts() if part is not None))
        if self.temporary is None:
            return super().abort()
        close_quietly(self.stream)
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.temporary)
        self.temporary = None
        return self.created

    def failed(self, error: OSError) -> OutputError:
        """A file readable only once complete is removed."""
        reason = error.strerror or str(error)
        if self.path is None:
            return super().failed(error)
        if not self.abort():
            return OutputError(f"{self.path}: cannot write ({reason}); it is left as it was",
                               reason)
        return OutputError(f"{self.path}: cannot write ({reason}); it is removed (an "
                           f"unfinished {self.noun} cannot be read)", reason)


class NpzSink(BesideSink):
    """Saves ``{key: (N, ...), **extra}`` (uncompressed, like np.savez; ``extra`` from
    :func:`npz_extra`: the dof labels and, for ``mass --sparsity``, the pattern).

    An .npz cannot be appended to and its arrays need their length up front. When the
    number of states is known (``total``: a count, or a function giving it once known, e.g.
    the states of an .npz input, asked when the first chunk arrives) and the output is a
    seekable file, the archive's ``key``.npy member is written as chunks arrive: its header
    announces ``total`` rows and each chunk's rows go straight into it. Otherwise (and if
    the count announced turns out wrong, e.g. a bad row stopped the run) the rows are spooled
    to a temporary file next to the output and copied into the archive on close. Either way
    memory stays one chunk, whatever N, and the archive ends with the true count.
    """

    noun = ".npz"

    def __init__(self, stream, key: str, shape: tuple[int, ...], extra: dict,
                 path: str | None = None, total=None, temporary: str | None = None):
        super().__init__(stream, path, temporary)
        self.key, self.shape = key, shape
        self.extra = extra
        self.total = total  # int | Callable[[], int | None] | None: the states to come
        self.spool = None  # the raw rows, when the count was not known up front
        self.archive = self.member = None  # the archive written as chunks arrive
        self.announced = 0  # rows the member's header announces
        self.rows_at = 0  # offset of its first row in the output file

    def write(self, result, states) -> None:
        rows = np.ascontiguousarray(result, dtype=np.float64)
        if self.member is None and self.spool is None:
            self.start()
        if self.member is not None:
            self.member.write(rows)
        else:
            self.spool.write(rows)  # (tofile's errors have no errno to report)

    def start(self) -> None:
        """At the first chunk: stream into the archive if the count is known, else spool."""
        import tempfile
        import zipfile

        total = self.total() if callable(self.total) else self.total
        if total and self.path is not None and self.stream.seekable():
            self.archive = zipfile.ZipFile(self.stream, "w", zipfile.ZIP_STORED,
                                           allowZip64=True)
            self.member = self.archive.open(f"{self.key}.npy", "w", force_zip64=True)
            self.announced = int(total)
            self.header(self.member, self.announced)
            self.rows_at = self.stream.tell()
        else:
            folder = os.path.dirname(os.path.abspath(self.path)) if self.path else None
            self.spool = tempfile.TemporaryFile(dir=folder)

    def header(self, member, count: int) -> None:
        npy_header(member, (count, *self.shape))

    def finish(self) -> None:
        if self.member is not None:
            with self.archive:
                self.member.close()  # zipfile puts the member's size and CRC in its header
                if self.count == self.announced:
                    self.write_extra(self.archive)
            if self.count == self.announced:
                self.complete()
                return
            self.respool()
        if self.spool is not None:
            self.spool.seek(0)
        write_archive(self.stream, self.key, (self.count, *self.shape),
                      [self.spool] if self.spool is not None else [], self.extra)
        if self.spool is not None:
            self.spool.close()
        self.complete()

    def respool(self) -> None:
        """Not the count announced (the archive is closed): move the rows written to a
        spool and empty the output, to write the archive again with the true count."""
        import tempfile

        self.archive = self.member = None
        self.stream.flush()
        self.spool = tempfile.TemporaryFile(dir=os.path.dirname(os.path.abspath(self.path)))
        left = self.count * int(np.prod(self.shape, dtype=np.int64)) * 8
        with open(self.temporary or self.path, "rb") as written:
            written.seek(self.rows_at)
            while left > 0:
                data = written.read(min(left, 1 << 20))
                if not data:
                    raise OSError(f"{self.path}: rows missing while rewriting the archive")
                self.spool.write(data)
                left -= len(data)
        self.stream.seek(0)
        self.stream.truncate()

    def write_extra(self, archive) -> None:
        write_arrays(archive, self.extra)

    def parts(self) -> tuple:
        return self.member, self.archive, self.spool


def npz_extra(labels: Sequence[str], sparsity=None) -> dict:
    """The arrays an .npz of results holds besides the results: ``dofs`` (the labels of
    :mod:`treedyn.cli.naming`) and, for ``mass --sparsity``, the (nv, nv) int8 pattern."""
    extra = {"dofs": np.array(labels, dtype=str)}
    if sparsity is not None:
        extra["sparsity"] = np.asarray(sparsity, dtype=np.int8)
    return extra


def npy_header(member, shape: tuple) -> None:
    """The .npy header of a C-ordered float64 array of ``shape`` (version 2: any size)."""
    from numpy.lib import format as npy

    npy.write_array_header_2_0(member, {
        "descr": npy.dtype_to_descr(np.dtype(np.float64)), "fortran_order": False,
        "shape": shape})


def write_arrays(archive, arrays: dict) -> None:
    """Each array as ``<name>.npy`` in the open zip ``archive``, as np.savez writes it."""
    from numpy.lib import format as npy

    for name, array in arrays.items():
        with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
            npy.write_array(member, np.asanyarray(array), allow_pickle=False)


def write_archive(stream, key: str, shape: tuple, raws, extra: dict) -> None:
    """An uncompressed .npz on ``stream``: ``key``.npy of ``shape`` (N, ...) whose float64
    rows are copied from the binary files ``raws`` in order, then the ``extra`` arrays. The
    one writer of whole archives: the spooled path of :class:`NpzSink` and the cluster's
    tasks."""
    import shutil
    import zipfile

    with zipfile.ZipFile(stream, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        with archive.open(f"{key}.npy", "w", force_zip64=True) as member:
            npy_header(member, shape)
            for raw in raws:
                shutil.copyfileobj(raw, member, 1 << 20)
        write_arrays(archive, extra)


class TableSink(Sink):
    """Tables for people: a vector as dof/value/unit rows, a matrix with labelled rows."""

    def __init__(self, stream, key: str, labels: Sequence[str], units: Sequence[str] | None,
                 single: bool, footer: str = ""):
        super().__init__(stream)
        self.key, self.labels, self.units = key, list(labels), units
        self.single, self.footer = single, footer

    def write(self, result, states) -> None:
        if result.ndim == 3:
            for i, matrix in enumerate(result):
                title = "" if self.single else f"state {states.where(i)}\n"
                self.stream.write(title + matrix_table(matrix, self.labels) + "\n\n")
        elif self.single:
            rows = [[label, value, unit]
                    for label, value, unit in zip(self.labels, result[0], self.units)]
            self.stream.write(table(rows, ["dof", self.key, "unit"]) + "\n")
        else:
            rows = [[states.where(i), *row] for i, row in enumerate(result)]
            self.stream.write(table(rows, ["state", *self.labels]) + "\n")

    def finish(self) -> None:
        if self.footer:
            self.stream.write(self.footer + "\n")
        super().finish()


class RawSink(Sink):
    """Results as raw float64 rows (a part of an .npz output)."""

    def write(self, result, states) -> None:
        self.stream.write(np.ascontiguousarray(result, dtype=np.float64))
        self.stream.flush()
