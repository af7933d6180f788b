"""JSON Lines input: one object per line with any of ``q``, ``v``, ``a``, ``tau`` (arrays or
objects of named joints) and ``fext``; keys dyn does not read are named in one warning."""

import json
import math
from collections.abc import Iterator, Sequence

import numpy as np

from treedyn.engine import Model

from ..console import warn
from ..errors import UsageError
from .layout import Layout
from .text import Chunk, is_data, text_lines
from .vectors import States, amount, check_finite, check_frame


def jsonl_chunks(stream, name, layout, kinds, wrenches, size, lines=None) -> Iterator[States]:
    """Chunks of a JSON Lines stream (or of its numbered ``lines``); at a bad line, the good
    lines before it, then the error."""
    chunk = Chunk(name, layout, wrenches, size)
    known_links: set[str] = set()
    foreign: set[str] = set()  # keys dyn does not read, warned about once each
    try:
        for number, line in text_lines(stream, name) if lines is None else lines:
            if not is_data(line, "jsonl"):
                continue
            _jsonl_row(line, f"{name}:{number}", layout, kinds, chunk, known_links, foreign)
            chunk.lines.append(number)
            if len(chunk.lines) == size:
                yield from chunk.flush()
    except UsageError:
        yield from chunk.flush()  # the good lines before the bad one (none if flush failed)
        raise
    yield from chunk.flush()


def _jsonl_row(line: str, where: str, layout: Layout, kinds, chunk: Chunk,
               known_links: set[str], foreign: set[str]) -> None:
    """Parse one JSON line into the next row of ``chunk`` (UsageError naming ``where``);
    keys dyn does not read (``"qd"``, ``"time"``) are warned about once, in ``foreign``."""
    try:
        state = DECODER.decode(line)
    except ValueError as error:
        raise UsageError(f"{where}: not valid JSON ({getattr(error, 'msg', error)})") from None
    except RecursionError:
        raise UsageError(f"{where}: JSON nested too deeply to read") from None
    if not isinstance(state, dict):
        raise UsageError(f"{where}: expected a JSON object like {{\"q\": [...]}}")
    if state and not any(kind in state for kind in kinds) and not (
            "fext" in state and FORCES & set(kinds)):  # {} is all defaults, as no --q etc.
        keys = ", ".join(json.dumps(key) for key in list(state)[:4])
        raise UsageError(f"{where}: no {_or(kinds)} here, nothing to compute from (the object "
                         f"has {keys}{', ...' if len(state) > 4 else ''})")
    unread = state.keys() - JSON_KEYS - foreign
    for key in sorted(unread):  # one warning per key: the same in every part of a split run
        foreign.add(key)
        warn(f'{chunk.name}: key {json.dumps(key)} not read: dyn reads "q", "v", "a", "tau" '
             'and "fext"')
    row = len(chunk.lines)
    for kind in kinds:
        if kind in state:
            _json_vector(state[kind], kind, layout, chunk.vector(kind)[row], where)
    if "fext" in state:
        _json_fext(state["fext"], layout.model, chunk, row, known_links, where)


DECODER = json.JSONDecoder()


JSON_KEYS = frozenset(("q", "v", "a", "tau", "fext", "dofs"))  # "dofs": as dyn writes it


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
