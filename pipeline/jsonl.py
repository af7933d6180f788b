"""JSON Lines input: one object per line with any of ``q``, ``v``, ``a``, ``tau`` (arrays or
objects of named joints) and ``fext``; keys dyn does not read are named in one warning.

Two paths. The fast one reads a block of lines at once: when every line of it is an object
with the same keys, none of them "fext", whose vectors are flat arrays of numbers of the
right lengths, simdjson parses each array straight into doubles (:func:`_typed_arrays`).
Any other block, and every block where pysimdjson is not installed (a Python it has no
wheel for, 3.14), is read line by line by orjson (:func:`_jsonl_row`), which names the
line and the key of what is wrong; a line orjson refuses is decoded again by the standard
library, whose message says what is wrong (and which reads ``NaN``, reported as not
finite, and integers beyond 64 bits, as JSON allows).

Measured in one process (reading 20 000 talos states, medians of 5, 2026-12-05): the fast
path takes 0.68x the time of the line by line path, with or without a ``"time"`` key in
each line. The orjson blocks that sat between them (every line decoded by orjson, then
the block's lists turned into arrays by numpy) took 1.16x the line by line path's time,
and were removed."""

import json
import math
from collections.abc import Iterator, Sequence

import numpy as np
import orjson

try:
    import simdjson
except ImportError:  # a Python it has no wheel for (pyproject.toml): orjson reads every line
    simdjson = None

from treedyn.engine import Model

from .errors import warn
from .errors import UsageError
from .layout import KINDS, TIME, Layout
from .text import Chunk, is_data, no_text_states, text_lines
from .vectors import States, amount, check_finite, check_frame, warn_unused_kinds


def jsonl_chunks(stream, name, layout, kinds, wrenches, size, lines=None) -> Iterator[States]:
    """Chunks of a JSON Lines stream (or of its numbered ``lines``, a part of a file); at a
    bad line, the good lines before it, then the error. A stream without a state (empty,
    or blank lines only) is an error (:func:`.text.no_text_states`)."""
    chunk = Chunk(name, layout, wrenches, size)
    seen = Seen()
    numbered = text_lines(stream, name) if lines is None else lines
    flushed = 0  # states of the full chunks yielded
    try:
        for block in _blocks(numbered, chunk, seen):
            if not _fast_block(block, layout, kinds, chunk, seen):
                for number, line in block:
                    _jsonl_row(line, f"{name}:{number}", layout, kinds, chunk, seen)
                    chunk.lines.append(number)
            if len(chunk.lines) == size:
                flushed += size
                yield from chunk.flush()
    except UsageError:
        yield from chunk.flush()  # the good lines before the bad one (none if flush failed)
        raise
    if not (flushed or chunk.lines) and lines is None:
        raise no_text_states(name, seen.lines)
    yield from chunk.flush()


class Seen:
    """What earlier lines showed: the links of "fext" checked, the keys warned about, the
    number of the last line (once all are read)."""

    def __init__(self):
        self.links: set[str] = set()
        self.foreign: set[str] = set()  # keys dyn does not read, warned about once each
        self.keys: set[tuple] = set()  # key sequences checked (and warned about) already
        self.lines = 0  # the last line's number: 0 for an empty stream


BLOCK_CHARS = 4 << 20  # text decoded at a time at most (about 10 times that as objects)


def _blocks(numbered, chunk: Chunk, seen: Seen) -> Iterator[list[tuple[int, str]]]:
    """The data lines, in blocks of BLOCK_CHARS at most that fill the chunk up to its size."""
    block: list[tuple[int, str]] = []
    chars = number = 0
    try:
        for number, line in numbered:
            if is_data(line, "jsonl"):
                block.append((number, line))
                chars += len(line)
                if len(block) + len(chunk.lines) >= chunk.size or chars >= BLOCK_CHARS:
                    yield block
                    block, chars = [], 0
    except UsageError:  # a line that cannot be read: the lines before it first
        if block:
            yield block
        raise
    seen.lines = number
    if block:
        yield block


def _fast_block(block, layout: Layout, kinds, chunk: Chunk, seen: Seen) -> bool:
    """Put a block of lines into ``chunk`` at once, if simdjson is installed and each line
    is an object with the keys of the first line, none of them "fext", and flat arrays of
    numbers of the right lengths for the vectors; False (nothing put) otherwise."""
    if simdjson is None:
        return False
    texts = [line for _, line in block]
    try:
        first = orjson.loads(texts[0])
    except orjson.JSONDecodeError:
        return False
    if type(first) is not dict or "fext" in first:
        return False
    keys = tuple(first)
    arrays = _typed_arrays(texts, keys, layout, kinds)
    if arrays is None:
        return False
    if keys not in seen.keys:  # warnings and errors depend on the keys alone
        _check_keys(first, f"{chunk.name}:{block[0][0]}", kinds, chunk, seen)
        seen.keys.add(keys)
    row = len(chunk.lines)
    for kind, array in arrays.items():
        target = chunk.vector(kind)[row:row + len(texts)]
        target[:] = array
        if layout.degrees:
            target *= layout.scale(kind)
    chunk.lines.extend(number for number, _ in block)
    return True


VECTORS = frozenset(KINDS)


def _typed_arrays(texts: list[str], keys: tuple, layout: Layout, kinds
                  ) -> dict[str, np.ndarray] | None:
    """The arrays of ``kinds`` in lines with ``keys``, each number parsed by simdjson
    straight into a double (orjson makes a Python float of each, which numpy then reads);
    None unless every line is an object with exactly ``keys``, the vectors' values arrays,
    and the arrays flat and of the right lengths of numbers (then the block is read line by
    line). simdjson refuses what orjson refuses, reads the same doubles, and flattens
    nested arrays: each line must hold one ``[`` per vector (so the values of other keys,
    ``"time"``, hold none)."""
    vectors = [key for key in keys if key in VECTORS]
    if np.count_nonzero(np.frombuffer("".join(texts).encode(), np.uint8) == ord("[")
                        ) != len(vectors) * len(texts):
        return None  # a nested array, or a vector that is not an array
    parser = simdjson.Parser()
    widths = {kind: layout.width(kind) for kind in kinds if kind in keys}
    buffers: dict[str, list] = {kind: [] for kind in widths}
    try:
        for text in texts:
            state = parser.parse(text)
            if type(state) is not simdjson.Object or len(state) != len(keys) or not all(
                    type(state[key]) is simdjson.Array for key in vectors):
                return None
            for kind, width in widths.items():
                vector = state[kind]
                if len(vector) != width:
                    return None
                buffers[kind].append(vector.as_buffer(of_type="d"))
            state = vector = None  # (the parser is reused once nothing refers to its last line)
    except (ValueError, TypeError, KeyError, RuntimeError):  # not valid JSON, not numbers,
        return None  # a key missing, an integer beyond 64 bits
    return {kind: np.frombuffer(b"".join(parts), np.float64).reshape(len(texts), -1)
            for kind, parts in buffers.items()}


def _jsonl_row(line: str, where: str, layout: Layout, kinds, chunk: Chunk, seen: Seen
               ) -> None:
    """Parse one JSON line into the next row of ``chunk`` (UsageError naming ``where``);
    keys dyn does not read (``"qd"``, ``"time"``) are warned about once (see :class:`Seen`)."""
    state = _decode(line, where)
    if not isinstance(state, dict):
        raise UsageError(f"{where}: expected a JSON object like {{\"q\": [...]}}")
    _check_keys(state, where, kinds, chunk, seen)
    row = len(chunk.lines)
    for kind in kinds:
        if kind in state:
            value = state[kind]  # the time "t": a number
            _json_vector([value] if kind == TIME and _is_number(value) else value, kind,
                         layout, chunk.vector(kind)[row], where)
    if "fext" in state and FORCES & set(kinds):  # (else said not read, and not checked)
        _json_fext(state["fext"], layout.model, chunk, row, seen.links, where)


def _decode(line: str, where: str):
    """One line's JSON value: orjson's, or (a line it refuses) the standard library's."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        pass
    try:
        return DECODER.decode(line)
    except ValueError as error:
        raise UsageError(f"{where}: not valid JSON ({getattr(error, 'msg', error)})") from None
    except RecursionError:
        raise UsageError(f"{where}: JSON nested too deeply to read") from None


def _check_keys(state: dict, where: str, kinds, chunk: Chunk, seen: Seen) -> None:
    """The checks and warnings that depend on an object's keys only: something to compute
    from, keys dyn does not read, vectors this command does not take."""
    foreign = seen.foreign
    if state and not any(kind in state for kind in kinds) and not (
            "fext" in state and FORCES & set(kinds)):  # {} is all defaults, as no --q etc.
        keys = ", ".join(json.dumps(key) for key in list(state)[:4])
        raise UsageError(f"{where}: no {_or(kinds)} here, nothing to compute from (the object "
                         f"has {keys}{', ...' if len(state) > 4 else ''})")
    unread = state.keys() - JSON_KEYS - set(kinds) - foreign
    for key in sorted(unread):  # one warning per key: the same in every part of a split run
        foreign.add(key)
        warn(f'{chunk.name}: key {json.dumps(key)} not read: dyn reads "q", "v", "a", "tau" '
             'and "fext"')
    read = {*kinds, "fext"} if FORCES & set(kinds) else set(kinds)
    unused = [key for key in (*KINDS, "fext") if key in state and key not in read
              and key not in foreign]
    if unused:  # keys of vectors this command does not take (forward's "a"): named once
        foreign.update(unused)
        warn_unused_kinds(unused, sorted(read, key=(*KINDS, "fext").index), chunk.name,
                          ("key", "keys"))


DECODER = json.JSONDecoder()


# "dofs" and "t" (the time): as dyn writes them
JSON_KEYS = frozenset(("q", "v", "a", "tau", "fext", "dofs", TIME))


FORCES = frozenset(("a", "tau"))  # the commands reading these (inverse, forward) take "fext"


NUMBER_TYPES = frozenset((int, float))  # JSON numbers; not bool


def _or(kinds: Sequence[str]) -> str:
    """'"q", "v" or "a"' for messages."""
    quoted = [f'"{kind}"' for kind in kinds]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _is_number(x) -> bool:
    return type(x) in NUMBER_TYPES


def _all_numbers(values: list) -> bool:
    return all(map(NUMBER_TYPES.__contains__, map(type, values)))


def _json_vector(value, kind: str, layout: Layout, out: np.ndarray, where: str) -> None:
    """Write a JSON array (or {joint: value} object) of ``kind`` into ``out`` (one row).

    Arrays are checked for finite numbers later, a chunk at a time (:meth:`Chunk.flush`).
    """
    if type(value) is list:
        if len(value) != len(out):
            raise UsageError(f'{where}: "{kind}" has {amount(len(value))}, '
                             f'{layout.need(kind, len(value))}')
        if not _all_numbers(value):
            bad = next(x for x in value if not _is_number(x))
            raise UsageError(f'{where}: "{kind}" holds {json.dumps(bad)}, not a number')
        try:
            out[:] = value
        except OverflowError:
            raise UsageError(f'{where}: "{kind}" holds a number too large for a float') from None
        if layout.degrees:
            out *= layout.scale(kind)
    elif isinstance(value, dict):
        scale = layout.scale(kind)
        for joint, x in value.items():
            i = layout.index(joint, kind, f'{where}: "{kind}"')
            try:
                finite = _is_number(x) and math.isfinite(x)
            except OverflowError:  # an integer beyond any float
                raise UsageError(f'{where}: "{kind}" {joint} is a number too large for a '
                                 "float") from None
            if not finite:
                raise UsageError(f'{where}: "{kind}" {joint} is {json.dumps(x)}, '
                                 "not a finite number")
            out[i] = x * scale[i]
    else:
        raise UsageError(f'{where}: "{kind}" must be an array of numbers')


def _json_fext(value, model: Model, chunk: Chunk, row: int, known: set[str], where: str):
    if not isinstance(value, dict):
        raise UsageError(f'{where}: "fext" must be an object {{"BODY": [fx, fy, fz, tx, ty, tz]}}')
    for link, wrench in value.items():
        if link not in known:
            check_frame(model, link, f'{where}: "fext"')
            known.add(link)
        if (not isinstance(wrench, list) or len(wrench) != 6
                or not all(map(_is_number, wrench))):
            raise UsageError(f'{where}: "fext" {link} must be 6 numbers [fx, fy, fz, tx, ty, tz]')
        try:
            values = np.array(wrench, dtype=float)
        except OverflowError:
            raise UsageError(f'{where}: "fext" {link} holds a number too large for a float'
                             ) from None
        check_finite(values, f'{where}: "fext" {link}')
        chunk.wrench(link)[row] += values
