"""CSV input: a header naming columns ``q0..``, ``v0..``, ``a0..``, ``tau0..`` (or
``q:<joint>``, the names of :mod:`treedyn.pipeline.naming`), parsed a chunk at a time; a bad
cell names its row and column.

One fast path and one path that locates errors. The fast path is a library's reader:
pyarrow's own threaded CSV reader (``pyarrow.csv.open_csv``, ``use_threads=True``) over a
file of at least :data:`ARROW_BYTES` when pyarrow is installed (the optional extra
``treedyn[arrow]``; its import, about 0.3 s, pays from there), its record batches cut into
the pipeline's chunks; else ``numpy.loadtxt`` over blocks of a chunk's lines. pyarrow
reads the rows only while they are what both readers read alike (:class:`_Plain`); at
anything else -- a quote, a blank line, a row of the wrong length, a cell that is not a
finite plain decimal -- the states of the whole chunks it gave are kept (it reads ahead,
so a block refused as it is read may stop it some blocks early) and the rest of the file
is read from the next chunk's first line by the loadtxt path, whose refused
blocks go row by row through :mod:`csv` and cell by cell through :func:`_number`, which
names the first bad cell (line and column); from a refused block that holds a double
quote on (a quoted cell may hold a line end), the rest of the file takes that path. Each
reader accepts the same finite numbers: plain decimals, as :func:`_number` reads them.
The chunks are those of the loadtxt path, so the numbers are the same either way.

A CSV file is never split over processes (:mod:`.parts` splits JSON Lines only): on a
quiet 2-core machine (benchmarks/bench_parts.py, table "library", 60 MB of states,
2026-12-05) the library way, pyarrow's threads, took 1.28x the split's time on 7-dof arm
states and 0.81x on the two-link arm's: the split did not beat it by the 1.3x a hand-made
way must. Read by pyarrow's threads as here, a CSV run was 1.5-2.6x as fast as one
process reading with loadtxt, and the library way, which reads the whole file first, took
1.02-2.08x its time (the same table, two runs, the machine shared at a load average of
6.5-8.5).

Measured in one process (reading 20 000 talos states, medians of 5, 2026-12-05): the
loadtxt path takes 0.29x the time of the row by row path; a file of quoted cells, which
the row by row path read whole before, 0.37x of that."""

import codecs
import csv
import itertools
import math
import re
import warnings
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from treedyn.parsers.numbers import NON_FINITE, NUMBER

from .errors import warn
from .naming import printable
from .errors import UsageError
from .naming import listing, shown
from .layout import KINDS, TIME, Layout
from .text import is_data, no_states, no_text_states, text_lines
from .vectors import FORCE_NAME, States, pop_q, warn_ignored_forces, warn_unused_kinds

POSITIONAL = re.compile(r"(q|v|a|tau)(\d+)")
TIME_COLUMN = re.compile(r"(t)()")  # the column "t" (s), read where ``kinds`` hold it


@dataclass
class _Columns:
    """Where one vector kind comes from in a CSV file: source columns -> target entries."""

    kind: str
    columns: list[int] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)
    positional: bool = False


def csv_plan(header: list[str], name: str, layout: Layout, kinds: Sequence[str],
             line: int | None = 1, warns: bool = True) -> list[_Columns]:
    """Map the header's q0../q:<joint> columns (of the kinds in use) to vector entries;
    ``line`` is the header's line in the file (blank lines may come before it; None: the
    names of a file's columns, a Parquet file's); ``warns`` of columns of external forces,
    which CSV does not carry."""
    at = name if line is None else f"{name}:{line}"
    if warns:
        warn_ignored_forces(header, at, "column")
    plan: dict[str, _Columns] = {}
    foreign, unused = [], []
    for column, title in enumerate(t.strip() for t in header):
        match = (TIME_COLUMN if TIME in kinds else POSITIONAL).fullmatch(title) or \
            POSITIONAL.fullmatch(title)
        kind, _, joint = title.partition(":")
        if match:
            kind = match.group(1)
        elif not (joint and kind in KINDS):
            # neither pandas' unnamed index column nor the states' time
            if title and title != TIME and not FORCE_NAME.match(title):
                foreign.append(title)
            continue
        if kind not in kinds:
            if kind not in unused:
                unused.append(kind)
            continue
        where = f"{at}: column '{shown(title)}'"
        entry = plan.setdefault(kind, _Columns(kind, positional=bool(match)))
        if entry.positional != bool(match):
            raise UsageError(f"{where}: mixes {kind}0.. and {kind}:<joint> columns")
        target = int(match.group(2) or 0) if match else layout.index(joint, kind, where)
        if match and target >= layout.width(kind):
            raise UsageError(f"{where}: out of range, {layout.need(kind)}")
        if target in entry.targets:
            raise UsageError(f"{where}: the same {kind} entry appears twice")
        entry.columns.append(column)
        entry.targets.append(target)
    if not plan:
        titles = listing([repr(t.strip()) for t in header], 4)
        forms = ", ".join(f"{kind}0.. or {kind}:<joint>" for kind in kinds if kind in KINDS)
        raise UsageError(f"{at}: no column to compute from: the header has {titles}; "
                         f"this command reads {forms} (comma-separated)")
    for entry in plan.values():
        if entry.positional and len(entry.targets) != layout.width(entry.kind):
            kind = entry.kind
            raise UsageError(f"{at}: has {len(entry.targets)} {kind}<k> columns, "
                             f"{layout.need(kind, len(entry.targets))} "
                             f"({kind}0..{kind}{layout.width(kind) - 1})")
    if foreign and warns:  # (once the header is good: a refusal is the run's one line)
        listed = listing([repr(t) for t in foreign], 3)
        warn(f"{at}: column{'s' if len(foreign) > 1 else ''} {listed} not read: dyn "
             "reads the columns q0.., v0.., a0.., tau0.. or q:<joint>, v:<joint>, ...")
    if warns:
        warn_unused_kinds(sorted(unused, key=KINDS.index), kinds, at,
                          ("the columns of", "the columns of"))
    return list(plan.values())


def csv_chunks(stream, name, layout, kinds, wrenches, size, file_bytes: int = 0
               ) -> Iterator[States]:
    """Chunks of a CSV stream; at a bad row, the good rows before it, then the error.
    ``file_bytes``: the size of the file (0 if unknown: a pipe), which picks the fast path.
    A file without a state (empty, or a header alone) is an error (:func:`.text.no_states`)."""
    arrow = _arrow_csv() if file_bytes >= ARROW_BYTES and stream.seekable() else None
    start = stream.tell() if arrow is not None else 0
    lines = text_lines(stream, name)
    numbered = _Counted(lines)
    reader = _NumberedReader(numbered)
    try:
        header = next((row for row in reader if row), None)  # after any blank lines
    except csv.Error as error:
        raise _csv_error(name, reader, error) from None
    if header is None:
        raise no_text_states(name, reader.line_num)
    plan = csv_plan(header, name, layout, kinds, reader.line_num)
    convert = _CsvConverter([t.strip() for t in header], plan, name, layout, wrenches)
    if arrow is None:
        rows = _rows(lines, convert, size)
    else:
        lines.close()  # (the rows are read again from their first byte)
        rows = _arrow_then_rows(stream, arrow, convert, numbered.last + 1,
                                start + _bom(stream, start) + numbered.bytes, size)
    count = 0
    for states in rows:
        count += states.count
        yield states
    if not count:
        raise no_states(name, "a header and no rows")


def _bom(stream, start: int) -> int:
    """The bytes of a byte-order mark at ``start`` (which text_lines drops), 0 or 3."""
    stream.seek(start)
    mark = stream.read(len(codecs.BOM_UTF8)) == codecs.BOM_UTF8
    return len(codecs.BOM_UTF8) if mark else 0


class _Counted:
    """Numbered lines passed on, counted: the last line's number, the bytes of them all."""

    def __init__(self, lines: Iterator[tuple[int, str]]):
        self.lines, self.last, self.bytes = lines, 0, 0

    def __iter__(self):
        return self

    def __next__(self) -> tuple[int, str]:
        self.last, text = next(self.lines)
        self.bytes += len(text.encode("utf-8", "surrogateescape"))
        return self.last, text


def _arrow_then_rows(stream, arrow, convert: "_CsvConverter", first: int, data: int,
                     size: int) -> Iterator[States]:
    """The States of the rows from line ``first`` (at byte ``data``) read by pyarrow's
    threads; where it refuses, the rest from the first line it did not give in a whole
    chunk, read by :func:`_rows`."""
    stream.seek(data)
    given = yield from _arrow_rows(_Plain(stream), arrow, convert, first, size)
    if given is None:
        return
    stream.seek(_line_start(stream, data, given))  # (every line before it a row pyarrow read)
    yield from _rows(text_lines(stream, convert.name, first + given, bom=False), convert, size)


def _line_start(stream, start: int, lines: int) -> int:
    """The byte offset of the line ``lines`` lines after the one at byte ``start``, in text
    whose lines end in LF, CRLF or CR alone (as both pyarrow and text mode read them)."""
    stream.seek(start)
    offset = start
    while lines:
        block = stream.read(1 << 20)
        while block.endswith(b"\r") and (more := stream.read(1)):
            block += more  # (a CRLF across two reads is one line end)
        if not block:
            break
        codes = np.frombuffer(block, np.uint8)
        ends = np.flatnonzero((codes == 10) | ((codes == 13) & (np.append(codes[1:], 0) != 10)))
        if len(ends) >= lines:
            return offset + int(ends[lines - 1]) + 1
        lines -= len(ends)
        offset += len(block)
    return offset


def _arrow_rows(source: "_Plain", arrow, convert: "_CsvConverter", first: int,
                size: int) -> Generator[States, None, int | None]:
    """The States of ``source``'s rows, one a line from line ``first``, read by pyarrow's
    threaded reader, ``size`` at a time; returns None once all are given, else (when pyarrow
    or :class:`_Plain` refuses a block, or a used cell is not finite) the number of rows
    given, whole chunks only."""
    import pyarrow as pa

    names = [f"f{c}" for c in range(len(convert.header))]
    used = [names[c] for c in convert.used]
    options = dict(
        read_options=arrow.ReadOptions(column_names=names, use_threads=True,
                                       block_size=ARROW_BLOCK),
        parse_options=arrow.ParseOptions(quote_char=False, newlines_in_values=False,
                                         ignore_empty_lines=False),  # (a row a line)
        convert_options=arrow.ConvertOptions(include_columns=used, null_values=[],
                                             column_types=dict.fromkeys(used, pa.float64())))
    given, held, pending = 0, 0, []  # pending: (rows, used columns) not given yet
    try:
        with arrow.open_csv(source, **options) as reader:
            for batch in reader:
                values = np.column_stack([column.to_numpy() for column in batch.columns])
                if not np.isfinite(values).all():
                    return given
                pending.append(values)
                held += len(values)
                while held >= size:
                    block = np.concatenate(pending)
                    pending, held = [block[size:]], held - size
                    yield convert.states(block[:size], range(first + given, first + given + size))
                    given += size
    except (pa.ArrowException, _Refused):
        return given
    if held:
        yield convert.states(np.concatenate(pending), range(first + given, first + given + held))
    return None


class _Refused(Exception):
    """A block of text pyarrow might read otherwise than :mod:`csv` does."""


class _Plain:
    """A binary stream read by pyarrow, block by block, while its text is what pyarrow and
    :mod:`csv` read alike: ASCII without a double quote or NUL byte, no field over csv's
    size limit; else :class:`_Refused` ends the read there (then :func:`_rows` reads)."""

    closed = False

    def __init__(self, stream):
        self.stream = stream
        self.window = csv.field_size_limit() // 4

    def read(self, size: int = -1) -> bytes:
        block = self.stream.read(size)
        if b'"' in block or b"\0" in block or not block.isascii() or self.long_field(block):
            raise _Refused
        return block

    def long_field(self, block: bytes) -> bool:
        """Whether a field may reach csv's size limit here: a window of a quarter of it,
        at a multiple of that from the block's start, without a comma or line end (a field
        that long, even cut by the end of a block, holds such a window on one side). A
        search a window takes microseconds a megabyte, where finding every comma with numpy
        took 7 ms, a third of pyarrow's own parsing of it (one thread, 20 ms)."""
        window = self.window
        return any(block.find(b",", at, at + window) < 0
                   and block.find(b"\n", at, at + window) < 0
                   and block.find(b"\r", at, at + window) < 0
                   for at in range(0, len(block) - window + 1, window))

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        return self.stream.tell()


def _rows(numbered, convert: "_CsvConverter", size: int) -> Iterator[States]:
    """The States of the rows after the header, ``size`` at a time: blocks of lines read
    at once by loadtxt, else row by row (csv's reader): the block, or, once a block that
    holds a double quote is not read at once, the rest of the file (a quoted cell may hold
    a line end, which loadtxt never reads)."""
    for block in _blocks(numbered, size):
        quoted = any('"' in line for _, line in block)
        if not (quoted and any(line.count('"') % 2 for _, line in block)):
            states = convert.block([line for _, line in block],
                                   [number for number, _ in block])
            if states is not None:
                yield states
                continue
        if quoted:  # from here on, records, not lines
            yield from _records(_NumberedReader(itertools.chain(block, numbered)), convert,
                                size)
            return
        yield from _records(_NumberedReader(iter(block)), convert, size)  # a bad row raised


def _blocks(numbered, size: int) -> Iterator[list[tuple[int, str]]]:
    """The numbered rows (the lines not empty), ``size`` at a time."""
    block: list[tuple[int, str]] = []
    try:
        for number, line in numbered:
            if is_data(line, "csv"):
                block.append((number, line))
                if len(block) == size:
                    yield block
                    block = []
    except UsageError:  # a line that cannot be read: the lines before it first
        if block:
            yield block
        raise
    if block:
        yield block


def _records(reader, convert: "_CsvConverter", size: int) -> Iterator[States]:
    """The States of the records of ``reader`` (csv's), row by row checked; at a bad row,
    the good rows before it, then the error."""
    name, width = convert.name, len(convert.header)
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        for row in reader:
            if not row:
                continue
            if len(row) != width:
                raise UsageError(f"{name}:{reader.line_num}: {len(row)} field"
                                 f"{'' if len(row) == 1 else 's'}, the header has {width}")
            rows.append(row)
            lines.append(reader.line_num)
            if len(rows) == size:
                block, rows, lines = (rows, lines), [], []
                yield from convert.rows(*block)
    except (UsageError, csv.Error) as error:
        yield from convert.rows(rows, lines)  # the rows before the bad one, not yet converted
        if isinstance(error, csv.Error):  # e.g. a field over csv's size limit
            raise _csv_error(name, reader, error) from None
        raise
    yield from convert.rows(rows, lines)


class _NumberedReader:
    """csv.reader over numbered lines; ``line_num`` is the file's number of the line the
    last record starts on (a quoted cell may hold line ends; csv's own count would name
    the record's last line, and start again in each part of a file)."""

    def __init__(self, lines: Iterator[tuple[int, str]]):
        self.line_num = 0
        self.started = False  # has the record being read taken its first line yet
        self.reader = csv.reader(self._texts(lines))

    def _texts(self, lines: Iterator[tuple[int, str]]) -> Iterator[str]:
        for number, text in lines:
            if not self.started:
                self.line_num, self.started = number, True
            yield text

    def __iter__(self):
        return self

    def __next__(self) -> list[str]:
        self.started = False
        return next(self.reader)


def _csv_error(name: str, reader, error: csv.Error) -> UsageError:
    return UsageError(f"{name}:{reader.line_num}: not readable as CSV ({error})")


class _CsvConverter:
    """Turns a block of CSV rows (strings) into States, in engine units."""

    def __init__(self, header: list[str], plan: list[_Columns], name: str, layout: Layout,
                 wrenches: dict[str, np.ndarray]):
        self.header, self.plan, self.name = header, plan, name
        self.layout, self.wrenches = layout, wrenches
        self.used = sorted(c for entry in plan for c in entry.columns)
        self.every_column = self.used == list(range(len(header)))
        self.position = {c: k for k, c in enumerate(self.used)}

    def rows(self, rows: list[list[str]], lines: list[int]) -> Iterator[States]:
        """The States of ``rows`` (none if empty); at a bad cell, the rows before it, then
        the error naming the cell's line and column."""
        if not rows:
            return
        values = self.values(rows)
        finite = np.isfinite(values).all(axis=1)
        if finite.all():
            yield self.states(values, lines)
            return
        bad = int(np.argmin(finite))
        if bad:
            yield self.states(values[:bad], lines[:bad])
        raise _bad_cell(rows[bad], lines[bad], self.header, self.used, self.name)

    def block(self, texts: list[str], lines: list[int]) -> States | None:
        """The States of rows (lines of text whose quotes are closed) read by numpy.loadtxt;
        None if a row has another number of fields than the header, is longer than csv's
        field limit, or a used cell is not a finite number as loadtxt reads it (those rows
        then go row by row, which names what is wrong)."""
        limit = csv.field_size_limit()
        if any(len(text) > limit for text in texts):
            return None  # (a line that long may hold a cell over csv's limit: csv says so)
        commas = len(self.header) - 1
        if any(text.count(",") != commas for text in texts):
            return None
        quoted = any('"' in text for text in texts)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # (a warning is a row loadtxt misread)
                values = np.loadtxt(texts, delimiter=",", comments=None, dtype=np.float64,
                                    usecols=None if self.every_column else self.used,
                                    ndmin=2, encoding=None, quotechar='"' if quoted else None)
        except (ValueError, Warning):
            return None
        if values.shape != (len(texts), len(self.used)) or not np.isfinite(values).all():
            return None
        return self.states(values, lines)

    def values(self, rows: list[list[str]]) -> np.ndarray:
        """The used columns as floats, (n, len(used)), cell by cell; unreadable cells
        become NaN."""
        used = range(len(self.header)) if self.every_column else self.used
        return np.array([[_number(row[c]) for c in used] for row in rows],
                        dtype=float).reshape(len(rows), len(self.used))

    def states(self, values: np.ndarray, lines: list[int]) -> States:
        layout, name = self.layout, self.name
        vectors = {}
        for entry in self.plan:
            columns = [self.position[c] for c in entry.columns]
            vector = np.tile(layout.default(entry.kind), (len(values), 1))
            vector[:, entry.targets] = values[:, columns] * layout.scale(entry.kind)[entry.targets]
            vectors[entry.kind] = vector
        q = pop_q(vectors, layout, len(values))
        name = printable(name)  # (tables show it)
        return States(q=q, wrenches=dict(self.wrenches), where=lambda i: f"{name}:{lines[i]}",
                      **vectors)


ARROW_BYTES = 32 << 20  # a CSV file this large is read by pyarrow's threads, when installed
ARROW_BLOCK = 1 << 20  # bytes pyarrow parses at a time (a batch; a longer row is refused)


def _arrow_csv():
    """The module pyarrow.csv, or None without the optional extra."""
    try:
        import pyarrow.csv
    except ImportError:
        return None
    return pyarrow.csv


def _number(cell: str) -> float:
    """A CSV cell as a float; NaN when it is not a plain decimal number (reported as such):
    float() alone also takes '1_000' and full-width digits, which the fast path's readers,
    and the command line, refuse."""
    word = cell.strip()
    if NUMBER.fullmatch(word) or NON_FINITE.fullmatch(word):
        return float(word)
    return math.nan


def _bad_cell(row, line: int, header, columns, name) -> UsageError:
    """The error for the first cell of ``row`` (in ``columns``) that is not a finite number."""
    for c in columns:
        if not math.isfinite(_number(row[c])):
            return UsageError(f"{name}:{line}: column {header[c].strip()!r}: "
                              f"{row[c]!r} is not a finite number")
    return UsageError(f"{name}:{line}: unreadable numbers")
