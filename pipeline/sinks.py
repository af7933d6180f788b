"""Writing results for ``dyn``: JSON (Lines), CSV, .npz and tables for people.

Machine formats print every number as the shortest text that reads back as the same
double (orjson's output: the digits of Python's ``repr``, the form may differ, ``0.00001``
for ``1e-05``). A *sink* receives the results chunk by chunk, so large inputs
stream: ``put(result, states)`` per chunk, then ``close()``.

A file output is written to a temporary beside its name, owned by this run (see
:mod:`.paths`), and ``close()`` renames it onto the name once complete (after an fsync): the
name only ever holds a complete result, and a file there from before is untouched until
then. A run that does not finish calls ``keep()``: the temporary, ended after its last whole
state, is renamed to ``NAME.partial.EXT`` (or removed if it holds no state), and
``keep()`` says how many states it holds. Stdout, a device or a pipe is written as the
results come. When the output itself cannot be written (a full disk), the sink raises
:class:`OutputError` saying what was kept. ``tabulate`` is imported only when a table is
printed.
"""
from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Sequence

import numpy as np
import orjson

from treedyn.engine.analysis.limits import KINDS, LimitSummary, dof_bounds, position_values

from .errors import OutputError, warn
from .naming import csv_writer
from .paths import partial_name, settle
from .schema import document_text

OUTPUT_FORMATS = {".jsonl": "json", ".ndjson": "json", ".json": "json", ".csv": "csv",
                  ".npz": "npz", ".parquet": "parquet", ".h5": "hdf5", ".hdf5": "hdf5"}


class Sink:
    """Receives results chunk by chunk. ``path`` is the output file, if any; ``temporary``
    the file written until it is complete (None: ``stream`` is written as it comes --
    stdout, a device, a pipe, or a worker's part file)."""

    def __init__(self, stream, path: str | None = None, temporary: str | None = None):
        self.stream, self.path, self.temporary = stream, path, temporary
        self.count = 0  # states written so far
        self.whole = 0  # bytes of the file written that hold them (text files)
        self.existed = False  # a file was at ``path`` before the run (set by open_sink)
        self.kept: str | None = None  # NAME.partial.EXT, once keep() renamed a file there
        self.ended = False  # finish() wrote the end of the file (it is complete)
        self.renamed = False  # the complete file was renamed onto ``path``
        self.regular = path is not None and stat.S_ISREG(os.fstat(stream.fileno()).st_mode)

    def put(self, result: np.ndarray, states) -> None:
        """Write the results of a chunk of states and count them."""
        self.record(lambda: self.write(result, states), len(result))

    def record(self, write: Callable[[], None], count: int) -> None:
        """Call ``write`` (it writes ``count`` states) and count them; OutputError (see
        :meth:`failed`) if the output cannot be written."""
        try:
            write()
            whole = self.position()
        except OSError as error:
            raise self.failed(error) from None
        self.count, self.whole = self.count + count, whole  # together: a signal sees both

    def write(self, result: np.ndarray, states) -> None:
        raise NotImplementedError

    def position(self) -> int:
        """Where the states written end in the output file (written and flushed; a pipe
        or a device has no position to note)."""
        return os.lseek(self.stream.fileno(), 0, os.SEEK_CUR) if self.regular else 0

    def where(self) -> str:
        """Where the results go, for messages: the file name or 'stdout'."""
        return "stdout" if self.path is None else self.path

    def write_whole(self, result: np.ndarray, states) -> None:
        """``put`` then ``close``: all the results at once (one state); on any failure
        (Ctrl-C too) the temporary is removed and the file at ``path`` left as it was."""
        try:
            self.put(result, states)
            self.close()
        except BaseException:
            self.discard()
            raise

    def close(self) -> None:
        """End the output (a file: renamed onto its name); OutputError if it cannot be
        written."""
        try:
            self.finish()
            self.ended = True
            if self.temporary is not None:
                settle(self.stream, self.temporary, os.path.realpath(self.path))
                self.temporary, self.renamed = None, True
            elif self.path is None:
                self.stream.flush()
            else:
                self.stream.close()
        except OSError as error:
            raise self.failed(error) from None

    def finish(self) -> None:
        """Write what ends the output after its last state (a header, an archive's end)."""

    def keep(self) -> int:
        """After a run that did not finish: the states written, ended after the last whole
        one, renamed from the temporary to ``NAME.partial.EXT`` (:attr:`kept`); the
        temporary is removed when it holds none or cannot be ended. The number of states
        kept (0: nothing kept). Stdout, a device or a pipe keep what they received."""
        if self.renamed:  # stopped just after the complete file took its name
            return self.count
        if self.temporary is None:
            if self.path is not None:
                close_quietly(self.stream)
                if self.regular:  # a worker's part: cut after its whole states
                    os.truncate(self.path, self.whole)
            return self.count
        held = 0
        try:
            if self.count:  # (a file ended already, a signal before its rename: as it is)
                held = self.count if self.ended else self.end_partial()
            if held:
                self.kept = partial_name(self.path)
                settle(self.stream, self.temporary, self.kept)
                self.temporary = None
        except Exception:  # noqa: BLE001 -- (OSError, a writer stopped mid-way): not kept
            held, self.kept = 0, None
        self.discard()
        return held

    def end_partial(self) -> int:
        """End the temporary after its whole states (the text after them is cut off);
        the number of states it holds."""
        close_quietly(self.stream)  # what its buffer still holds goes with the cut
        os.truncate(self.temporary, self.whole)
        return self.count

    def discard(self) -> None:
        """Remove the temporary, if any is left (stdout is left open)."""
        if self.path is None:
            return
        close_quietly(self.stream)
        if self.temporary is not None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.temporary)
            self.temporary = None

    def outcome(self, held: int, before_it: bool = False) -> str:
        """What a run that did not finish left, after :meth:`keep` kept ``held`` states:
        'out.npz is unchanged, the first 2 states are in out.partial.npz', or when
        ``before_it`` (a bad row stopped the run) 'the 2 states before it are in
        out.partial.npz; out.npz is unchanged'; for stdout (or a device), 'the first 2
        states are written to stdout'."""
        are = "are" if held != 1 else "is"
        if self.renamed:
            return f"{self.path} is complete ({states_text(held)})"
        first = f"the {states_text(held)} before it" if before_it else \
            f"the first {states_text(held)}"
        if self.temporary is None and self.kept is None and (held or self.path is None):
            return f"{first} {are} written to {self.where()}"  # stdout, a device, a pipe
        before = f"{self.path} {'is unchanged' if self.existed else 'is not written'}"
        if not held:
            return f"{before}, no state was completed"
        if before_it:
            return f"{first} {are} in {self.kept}; {before}"
        return f"{before}, {first} {are} in {self.kept}"

    def failed(self, error: OSError) -> OSError:
        """The error to raise when the output cannot be written (an OutputError, but a
        closed pipe on stdout stays a BrokenPipeError), after :meth:`keep`."""
        reason = error.strerror or str(error)
        if self.path is None:
            if isinstance(error, BrokenPipeError):  # stdout's reader went away: dyn ends
                return error  # quietly (SIGPIPE, or as parts.try_parts does)
            after = f" after {states_text(self.count)}" if self.count else ""
            return OutputError(f"dyn: cannot write to stdout ({reason}){after}", reason)
        held = self.keep()
        return OutputError(f"{self.path}: cannot write ({reason}); {self.outcome(held)}",
                           reason)


def states_text(count: int) -> str:
    """'1 state', '2 states'."""
    return "1 state" if count == 1 else f"{count} states"


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
    """One JSON object per state and line: ``extra`` with the state's result as the value
    of ``key`` (in its place when ``extra`` holds it, else first), spaced as
    ``json.dumps`` spaces it."""

    def __init__(self, stream, key: str, extra: dict | None = None, path: str | None = None):
        super().__init__(stream, path)
        extra = extra or {}
        keys = list(extra if key in extra else {key: None, **extra})
        at = keys.index(key)
        before, after = ({name: extra[name] for name in part}
                         for part in (keys[:at], keys[at + 1:]))
        self.head = ("{" + (json.dumps(before)[1:-1] + ", " if before else "")
                     + json.dumps(key) + ": ")
        self.tail = (", " + json.dumps(after)[1:-1] if after else "") + "}\n"

    def text(self, result) -> str:
        """The lines of a block of results, from one text of the whole block: the rows of
        ``[row, row, ...]`` are parted where a row's brackets close and the next one's open
        (``], [`` for vectors, ``]], [[`` for matrices: never inside a row)."""
        if not len(result):
            return ""
        head, tail, depth = self.head.encode(), self.tail.encode(), result.ndim - 1
        if not result[0].size:  # no dofs: rows without numbers, whose brackets part nothing
            row = json.dumps(np.zeros(result.shape[1:]).tolist()).encode()
            return (head + row + tail).decode() * len(result)
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
        self.writer = csv_writer(stream)  # (names that look like formulas neutralised)
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
    """A binary file readable only once complete (.npz, Parquet, HDF5). A run that does not
    finish ends it with the states counted (:meth:`end_partial`); one whose output cannot
    be written removes it (its end cannot be written either). ``noun`` names the format in
    messages; ``parts()`` are the writer's open objects to close when it stops."""

    noun = "file"

    def parts(self) -> tuple:
        return ()

    def position(self) -> int:
        """Nothing to note: an unfinished file is ended by its writer, not cut."""
        return 0

    def end_partial(self) -> int:
        """End the file after the states counted (:meth:`finish` with what it holds)."""
        self.finish()
        return self.count

    def discard(self) -> None:
        close_quietly(*(part for part in self.parts() if part is not None))
        super().discard()

    def failed(self, error: OSError) -> OSError:
        """A file readable only once complete is removed when it cannot be written."""
        if self.temporary is None:
            return super().failed(error)
        reason = error.strerror or str(error)
        self.discard()
        before = "is unchanged" if self.existed else "is not written"
        return OutputError(f"{self.path}: cannot write ({reason}); {self.path} {before} (an "
                           f"unfinished {self.noun} cannot be read: nothing is kept)", reason)


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
                 path: str | None = None, total=None):
        super().__init__(stream, path)
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
                return
            self.respool()
        if self.spool is not None:  # (rows of a chunk not counted, a signal came: cut off)
            self.spool.truncate(self.count * int(np.prod(self.shape, dtype=np.int64)) * 8)
            self.spool.seek(0)
        write_archive(self.stream, self.key, (self.count, *self.shape),
                      [self.spool] if self.spool is not None else [], self.extra)
        if self.spool is not None:
            self.spool.close()

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
    :mod:`treedyn.pipeline.naming`) and, for ``mass --sparsity``, the (nv, nv) int8 pattern."""
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


class RawSink(Sink):
    """Results as raw float64 rows (a part of an .npz output)."""

    def write(self, result, states) -> None:
        self.stream.write(np.ascontiguousarray(result, dtype=np.float64))
        self.stream.flush()


class LimitsSink(Sink):
    """``dyn check-limits``' output: not a row per state but one JSON document, the states
    of a motion that leave the model's limits (:mod:`treedyn.engine.analysis.limits`),
    accumulated chunk by chunk (memory: the summary, whatever the number of states) and
    written whole when the sink is closed. ``put`` takes a chunk's joint forces (the log's,
    or inverse dynamics'); q and v come with the states. ``stream`` None writes nothing
    (the caller prints :meth:`document` its own way). Positions and velocities are compared
    in the units the log is read in (``layout.degrees``: degrees, deg/s)."""

    def __init__(self, stream, layout, head: dict, path: str | None = None):
        super().__init__(stream, path)
        self.layout, self.head = layout, head
        scale = layout.v_scale  # (a 1-dof joint's q is an angle where its v is)
        bounds = dof_bounds(layout.model)
        bounds["position"] = bounds["position"].scaled(scale)
        bounds["velocity"] = bounds["velocity"].scaled(scale)
        self.summary = LimitSummary(bounds)
        self.torques: set[str] = set()  # where the chunks' tau came from
        self.warned = False  # that the log has no v
        self.chosen = None  # the findings reported (a findings.Selection; None: every one)
        self.found: list = []  # those reported, as the last document() found them
        self.traces: list[dict] | None = None  # each chunk's values, after :meth:`trace`

    def trace(self) -> None:
        """Hold every chunk's compared values (a picture of the whole log: memory grows
        with it) in :attr:`traces`, one dict of kind -> (states, nv) array per chunk."""
        self.traces = []

    def write(self, result, states) -> None:
        scale = self.layout.v_scale
        values = {"position": position_values(self.layout.model, states.q) / scale,
                  "effort": result}
        if states.v is not None:
            values["velocity"] = states.v / scale
        source = torque_source(states)
        if source not in self.torques:
            self.torques.add(source)
            unread = [kind for kind in ("v", "a") if getattr(states, kind) is None]
            if source != "log" and unread:  # (stated once for each source of tau)
                warn(f"{self.head['input']}: no {' or '.join(unread)} in the log: the effort "
                     f"limits are checked on inverse dynamics with {' = '.join(unread)} = 0")
        if states.v is None and "velocity" not in self.summary.checked and not self.warned:
            self.warned = True
            warn(f"{self.head['input']}: no v in the log: velocity limits are not checked")
        self.summary.add(values, states.count, states.where)
        if self.traces is not None:
            self.traces.append({kind: np.array(value) for kind, value in values.items()})

    def document(self) -> dict:
        """The summary as JSON-ready data (keys in docs/interface.md); ``ok``: no finding
        reported (:attr:`chosen`)."""
        summary, layout = self.summary, self.layout
        units = {"position": layout.units("q"), "velocity": layout.units("v"),
                 "effort": layout.units("tau")}
        from .findings import limits_findings, with_findings  # (not on the states' paths)

        entries = summary.entries(layout.v_labels, units)
        found = limits_findings(entries, layout)
        if self.chosen is not None:
            found = self.chosen.kept(found)
        self.found = found
        return with_findings({
            **self.head, "states": summary.states, "offending_states": summary.offending,
            "checked": [kind for kind in KINDS if kind in summary.checked],
            "tau": " and ".join(sorted(self.torques)) or None, "joints": entries,
            "ok": not found}, found, "check-limits")

    def finish(self) -> None:
        if self.stream is not None:
            self.stream.write(document_text(self.document(), "check-limits") + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.stream is None:  # (nothing to write)
            self.ended = True
            return
        super().close()

    def end_partial(self) -> int:
        """A stopped run's file holds the summary of the states before the stop."""
        self.finish()
        return self.count

    def keep(self) -> int:
        """Stdout gets no summary of a run that did not finish (a file: NAME.partial.json,
        as for every output)."""
        return 0 if self.path is None else super().keep()

    def outcome(self, held: int, before_it: bool = False) -> str:
        if self.path is None:
            return "nothing is written to stdout"
        return super().outcome(held, before_it)


def torque_source(states) -> str:
    """Where a chunk's tau for the effort limits comes from: the log, else inverse
    dynamics (of q, v and a; a missing v or a is zero)."""
    if states.tau is not None:
        return "log"
    missing = [kind for kind in ("v", "a") if getattr(states, kind) is None]
    return "inverse dynamics" + (f" ({' = '.join(missing)} = 0)" if missing else "")
