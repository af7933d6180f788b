"""Parquet states and results (the optional extra ``treedyn[arrow]``, pyarrow), streamed a
chunk of rows at a time.

Input: list columns ``q``, ``v``, ``a``, ``tau`` (one list of numbers per state, as
LeRobot-style datasets keep vectors), or one numeric column per coordinate named as CSV
headers name them (``q0..`` or ``q:<joint>``; see :func:`.csvfile.csv_plan`). Rows are read
with ``ParquetFile.iter_batches``, a chunk at a time whatever the row groups, and handed to
the one reader of arrays (:func:`.npz.npz_chunks`: finite numbers, units, the bad row).
A missing value (null) or a list of the wrong length is a bad row: the states before it
are computed and written, the error names the state.

Output: one list column named as the result (``tau``, ``a``, or ``M``, a list of rows),
one row group per chunk, the dof labels in the schema's metadata (``dofs``, a JSON list;
``sparsity`` too for ``mass --sparsity``); written beside its name and renamed once
complete, as an .npz (:class:`.sinks.BesideSink`).
"""
from __future__ import annotations

import json

import numpy as np

from .errors import CorruptInput, UsageError
from .csvfile import csv_plan
from .layout import TIME, Layout
from .npz import check_members
from .sinks import BesideSink
from .vectors import amount

EXTRA = "reading and writing .parquet files needs the optional extra: pip install 'treedyn[arrow]'"


def require_arrow():
    """(pyarrow, pyarrow.parquet), or the one-line error naming the optional extra."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UsageError(f"dyn: {EXTRA}") from None
    return pyarrow, pyarrow.parquet


class _Batches:
    """The rows of a Parquet file's columns in consecutive blocks [start, stop), each
    read once for all the members that ask for it. The first block may start anywhere (a
    cluster task's rows): reading begins at the row group that holds it."""

    def __init__(self, file, columns: list[str], size: int, layout: Layout):
        self.file, self.columns, self.size, self.layout = file, columns, size, layout
        self.batches = None  # record batches from row ``at`` on
        self.at = 0  # the row the first pending batch starts at
        self.pending: list = []  # record batches read and not handed out yet
        self.span: tuple[int, int] | None = None
        self.table = None

    def seek(self, start: int) -> None:
        """Read on from the row group that holds row ``start``."""
        metadata = self.file.metadata
        group, first = 0, 0
        while (group + 1 < metadata.num_row_groups
               and first + metadata.row_group(group).num_rows <= start):
            first += metadata.row_group(group).num_rows
            group += 1
        self.batches = self.file.iter_batches(
            batch_size=self.size, row_groups=range(group, metadata.num_row_groups),
            columns=self.columns, use_threads=False)
        self.at, self.pending = first, []

    def rows(self, start: int, stop: int):
        """The pyarrow Table of rows [start, stop) (after those of the last call)."""
        if self.span != (start, stop):
            import pyarrow as pa

            if self.batches is None or start < self.at:
                self.seek(start)
            have = sum(len(batch) for batch in self.pending)
            try:
                while self.at + have < stop:
                    batch = next(self.batches)
                    self.pending.append(batch)
                    have += len(batch)
                table = pa.Table.from_batches(self.pending)
            except StopIteration:
                raise CorruptInput(f"rows {self.at + have}.. are missing") from None
            except (OSError, pa.ArrowException) as error:
                raise CorruptInput(f"not a readable .parquet file ({error})") from None
            self.table = table.slice(start - self.at, stop - start)
            self.pending = table.slice(stop - self.at).to_batches()
            self.at, self.span = stop, (start, stop)
        return self.table


class _Column:
    """One vector of the states, from a list column or from coordinate columns; a member
    for :func:`.npz.npz_chunks` (see :class:`.npz.StatesArray`)."""

    stream = None  # rows are new arrays, nothing to seek

    def __init__(self, kind: str, count: int, width: int, dtype, batches: _Batches,
                 column: str | None = None, columns=(), targets=(), fill=None):
        self.kind, self.count, self.dtype, self.batches = kind, count, np.dtype(dtype), batches
        self.shape = (count, width)
        self.column = column  # a list column, or
        self.columns, self.targets, self.fill = list(columns), list(targets), fill  # columns
        self.problems: dict[int, str] = {}  # state -> what is wrong with it

    @property
    def width(self) -> int:
        return self.shape[1]

    def read(self, start: int, stop: int) -> np.ndarray:
        table = self.batches.rows(start, stop)
        if self.column is None:
            block = np.tile(self.fill, (stop - start, 1))
            for column, target in zip(self.columns, self.targets):
                block[:, target] = _numbers(table.column(column))
            return block
        return self._lists(table.column(self.column).combine_chunks(), start, stop)

    def _lists(self, lists, start: int, stop: int) -> np.ndarray:
        """(stop - start, width) floats of a list column; the rows from the first null or
        wrong-length list on are NaN, its problem noted."""
        import pyarrow.compute as pc

        n, width = stop - start, self.width
        lengths = pc.list_value_length(lists).to_numpy(zero_copy_only=False)
        bad = np.flatnonzero(~(lengths == width))  # a null list has a NaN length
        good = int(bad[0]) if bad.size else n
        block = np.full((n, width), np.nan)
        values = _numbers(lists.slice(0, good).flatten())
        block[:good] = values.reshape(good, width)
        if good < n:
            length = lengths[good]
            self.problems[start + good] = (
                f"state {start + good}: {self.kind} is missing (null)" if length != length else
                f"state {start + good}: {self.kind} has {amount(int(length))}, "
                f"{self.batches.layout.need(self.kind, int(length))}")
        return block

    def verify(self) -> None:
        """Nothing to check again: pyarrow checks the pages it reads."""

    def problem(self, row: int) -> str:
        return self.problems.get(row, f"{self.kind}[{row}] holds a non-finite number "
                                      "(or a missing value)")


def _numbers(array) -> np.ndarray:
    """A numeric pyarrow array as float64 (a null as NaN)."""
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.float64)


def parquet_members(stream, name: str, layout: Layout, kinds, size: int,
                    warns: bool = True) -> list[_Column]:
    """The vectors of the kinds in use in a Parquet file, checked from its schema."""
    pa, pq = require_arrow()
    try:
        file = pq.ParquetFile(stream)
    except (OSError, pa.ArrowException) as error:
        raise UsageError(f"{name}: not a readable .parquet file ({error})") from None
    schema = file.schema_arrow
    names, count = list(schema.names), file.metadata.num_rows
    lists = [kind for kind in kinds if kind in names and kind != TIME]
    if lists:  # list columns q, v, ... (the times t: with columns q0.., as CSV's)
        batches = _Batches(file, lists, size, layout)
        members = [_list_member(kind, schema.field(kind).type, count, layout, batches, name)
                   for kind in lists]
        check_members(members, names, name, layout, kinds,
                      (lambda n: True) if warns else None, what="column")
        return members
    members = _coordinate_members(names, schema, count, layout, kinds, name, warns)
    batches = _Batches(file, sorted({c for member in members for c in member.columns}), size,
                       layout)
    for member in members:
        member.batches = batches
    return members


def _list_member(kind, kind_type, count, layout, batches, name) -> _Column:
    import pyarrow as pa

    if not (pa.types.is_list(kind_type) or pa.types.is_large_list(kind_type)
            or pa.types.is_fixed_size_list(kind_type)) or not _numeric(kind_type.value_type):
        raise UsageError(f"{name}: column {kind} is {kind_type}, expected a list of numbers "
                         f"per state ({layout.need(kind)})")
    width = layout.width(kind)
    if pa.types.is_fixed_size_list(kind_type) and kind_type.list_size != width:
        raise UsageError(f"{name}: column {kind} holds lists of {kind_type.list_size}, "
                         f"{layout.need(kind, kind_type.list_size)}")
    return _Column(kind, count, width, np.float64, batches, column=kind)


def _coordinate_members(names, schema, count, layout, kinds, name, warns):
    """Members from one column per coordinate (CSV's header names)."""
    plan = csv_plan(names, name, layout, kinds, line=None, warns=warns)
    members = []
    for entry in plan:
        picked = [names[c] for c in entry.columns]
        for column in picked:
            if not _numeric(schema.field(column).type):
                raise UsageError(f"{name}: column '{column}' is {schema.field(column).type}, "
                                 "not numbers")
        fill = layout.default(entry.kind) / layout.scale(entry.kind)  # scaled back on read
        members.append(_Column(entry.kind, count, layout.width(entry.kind), np.float64,
                               None, columns=picked, targets=entry.targets, fill=fill))
    return members


def _numeric(arrow_type) -> bool:
    import pyarrow as pa

    return pa.types.is_floating(arrow_type) or pa.types.is_integer(arrow_type)


class ParquetSink(BesideSink):
    """Results as a Parquet file: the ``key`` column of lists, a row group per chunk."""

    noun = ".parquet"

    def __init__(self, stream, key: str, shape: tuple[int, ...], extra: dict,
                 path: str | None = None):
        super().__init__(stream, path)
        self.key, self.shape, self.extra = key, shape, extra
        self.writer = None

    def parts(self) -> tuple:
        return (self.writer,)

    def arrays(self, result: np.ndarray):
        """The results as a (nested) fixed-size list array: a list of nv numbers per state,
        a list of nv rows for a mass matrix."""
        import pyarrow as pa

        if not all(self.shape):  # no dofs: lists of no numbers (a fixed size must be >= 1)
            kind = pa.float64()
            for _ in self.shape:
                kind = pa.list_(kind)
            return pa.array([[]] * len(result), type=kind)
        array = pa.array(np.ascontiguousarray(result, dtype=np.float64).reshape(-1))
        for width in reversed(self.shape):
            array = pa.FixedSizeListArray.from_arrays(array, width)
        return array

    def open_writer(self) -> None:
        pa, pq = require_arrow()
        metadata = {key: json.dumps(value.tolist()) for key, value in self.extra.items()}
        schema = pa.schema([(self.key, self.arrays(np.zeros((0, *self.shape))).type)],
                           metadata=metadata)
        # random-looking doubles: a dictionary of values or statistics would cost time
        # and save nothing
        self.writer = pq.ParquetWriter(self.stream, schema, use_dictionary=False,
                                       write_statistics=False)

    def write(self, result, states) -> None:
        import pyarrow as pa

        if self.writer is None:
            self.open_writer()
        table = pa.Table.from_arrays([self.arrays(result)], schema=self.writer.schema)
        try:
            self.writer.write_table(table, row_group_size=max(1, len(result)))
        except pa.ArrowException as error:  # (its I/O errors are OSErrors)
            raise OSError(str(error)) from None

    def finish(self) -> None:
        if self.writer is None:
            self.open_writer()  # no state: a file of the schema and no rows
        self.writer.close()

    def end_partial(self) -> int:
        """The file closed after its last whole row group: the rows it holds, read back
        (a signal between a row group written and counted is then still told exactly)."""
        _, pq = require_arrow()
        self.finish()
        if not self.stream.closed:
            self.stream.flush()
        return pq.read_metadata(self.temporary).num_rows

