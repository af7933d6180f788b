"""Reading states for ``dyn``: command-line vectors, ``--fext`` wrenches and ``--input`` files.

Everything a user types or feeds in is checked here and turned into engine units; every
problem raises :class:`UsageError` with a one-line message that names where it happened
(``--q``, ``states.csv:12``, ``states.npz: state 7``). Files are read in chunks of
:data:`CHUNK` states so that the engine runs once per chunk and output can stream.

Coordinates are named by joint: a 1-dof joint by its name, entry ``k`` of a multi-dof joint
by ``<joint>:<k>`` (``root_joint:3``); :class:`Layout` holds the dof names, the
human-readable component names (``root_joint.wx``) and the ``--degrees`` factors.

Memory stays bounded by the chunk, whatever the number of states: text inputs are parsed a
chunk at a time into preallocated blocks, and ``.npz`` members are read row-block by
row-block from the zip archive (``np.load(mmap_mode=...)`` cannot map a member of an .npz,
so each member's .npy header is parsed and its rows read: those of a member stored
uncompressed, as ``np.savez`` writes them, straight from the file at their offset, its
CRC-32 checked as they go by; others streamed through ``zipfile``, which also decompresses
``savez_compressed`` members on the fly). A piped ``.npz`` on stdin is first spooled to a
temporary file. When a row is bad, the good rows before it are yielded as a last chunk and
then the :class:`UsageError` is raised, so output can end exactly at the bad row.
"""
from __future__ import annotations

import codecs
import csv
import io
import json
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from treedyn.engine import Model
from treedyn.engine.state import cos_sin_continuous

from .output import UsageError, warn
from .settings import environment_count

CHUNK = environment_count("TREEDYN_STREAM_CHUNK", 16384)  # states per chunk at
# most (callers may ask for fewer)
KINDS = ("q", "v", "a", "tau")
DEGREE = math.pi / 180.0

STDIN = "<stdin>"
INPUT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv",
                 ".npz": "npz"}


class CorruptInput(UsageError):
    """The input file turned out to be damaged while it was read (a failed CRC-32, a broken
    compressed stream): the states already read from it cannot be trusted."""


def suggest(name: str, known: Sequence[str]) -> str:
    """' (did you mean 'x'?)' for close matches of ``name``, else a short list of names."""
    import difflib

    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:
        return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    if len(known) <= 8:
        return "; known: " + (", ".join(known) if known else "none")
    return ""


@dataclass(frozen=True)
class Layout:
    """Names, units and ``--degrees`` factors of a model's q and v coordinates."""

    model: Model
    v_labels: tuple[str, ...]  # (nv,) "joint" or "joint:k"
    v_names: tuple[str, ...]  # (nv,) for people: "joint" or "joint.wx"
    angular: np.ndarray  # (nv,) bool: the dof is a rotation (rad/s, N m)
    q_scale: np.ndarray  # (nq,) user q times this is radians
    v_scale: np.ndarray  # (nv,) user v, a times this is rad/s, rad/s^2
    tau_scale: np.ndarray  # (nv,) ones: tau is never converted
    degrees: bool = False

    @staticmethod
    def of(model: Model, degrees: bool = False) -> "Layout":
        v_labels, v_names = [], []
        angle_q = np.zeros(model.nq, dtype=bool)
        angular = np.zeros(model.nv, dtype=bool)
        for j, name in enumerate(model.joint_names):
            joint = model.joint_models[j]
            v_labels += _labels(name, model.nv_joint[j])
            v_names += [f"{name}.{p}" for p in joint.v_parts] if joint.v_parts else [name]
            angle_q[[model.idx_q[j] + k for k in joint.angle_q]] = True
            angular[[model.idx_v[j] + k for k in joint.angular_v]] = True
        factor = DEGREE if degrees else 1.0
        return Layout(model, tuple(v_labels), tuple(v_names), angular,
                      np.where(angle_q, factor, 1.0), np.where(angular, factor, 1.0),
                      np.ones(model.nv), degrees)

    def width(self, kind: str) -> int:
        """Length of a vector of ``kind``: nq for q, nv for v, a and tau."""
        return self.model.nq if kind == "q" else self.model.nv

    def scale(self, kind: str) -> np.ndarray:
        """Factors from user units to SI: --degrees converts q, v and a, never tau."""
        return {"q": self.q_scale, "tau": self.tau_scale}.get(kind, self.v_scale)

    def default(self, kind: str) -> np.ndarray:
        """The value of an omitted vector: the neutral configuration, or zeros."""
        return self.model.q_neutral if kind == "q" else np.zeros(self.model.nv)

    def need(self, kind: str, given: int = -1) -> str:
        """'model ur5 needs nq=6' for error messages; with the ``given`` count of q numbers
        that is nq plus one per continuous joint, a hint at Pinocchio's (cos, sin)."""
        text = f"model {self.model.name} needs n{'q' if kind == 'q' else 'v'}={self.width(kind)}"
        continuous = cos_sin_continuous(self.model, given) if kind == "q" else 0
        return text + (f" (Pinocchio's layout, with cos and sin for each of the {continuous} "
                       "continuous joints? dyn takes one angle for each: atan2(sin, cos))"
                       if continuous else "")

    def index(self, name: str, kind: str, where: str) -> int:
        """Position in q (kind 'q') or v of a 1-dof joint ``name``, of ``joint:k``, or of
        ``joint.part`` as ``dyn info`` names the entries (``root_joint.qw``, ``ball.wx``)."""
        model, joint_of = self.model, self.model.joint_ids
        sizes, starts = ((model.nq_joint, model.idx_q) if kind == "q"
                         else (model.nv_joint, model.idx_v))
        joint, _, part = name.rpartition(".")
        if name in joint_of and joint in joint_of:
            raise UsageError(f"{where}: '{name}' is both a joint and an entry of joint "
                             f"'{joint}'; write '{name}.<entry>' or '{joint}:<k>'")
        if name in joint_of:
            j = joint_of[name]
            if sizes[j] != 1:
                parts = model.joint_models[j].q_parts if kind == "q" else \
                    model.joint_models[j].v_parts
                raise UsageError(f"{where}: joint '{name}' has {sizes[j]} entries in {kind}; "
                                 f"name them '{name}:0'..'{name}:{sizes[j] - 1}' or as dyn "
                                 f"info does ('{name}.{parts[0]}'..)")
            return int(starts[j])
        joint, _, k = name.rpartition(":")
        if joint in joint_of and k.isdigit():
            j = joint_of[joint]
            if int(k) >= sizes[j]:
                raise UsageError(f"{where}: joint '{joint}' has only {sizes[j]} entries in "
                                 f"{kind} ({joint}:0..{joint}:{sizes[j] - 1})")
            return int(starts[j]) + int(k)
        joint, _, part = name.rpartition(".")  # the names dyn info prints: root_joint.qx
        if joint in joint_of:
            j = joint_of[joint]
            joint_model = model.joint_models[j]
            parts = list(joint_model.q_parts if kind == "q" else
                         joint_model.v_parts or ("rate",))
            if part in parts:
                return int(starts[j]) + parts.index(part)
            raise UsageError(f"{where}: joint '{joint}' has no {kind} entry '{part}' (it has "
                             f"{', '.join(parts)})")
        raise UsageError(f"{where}: unknown joint '{name}' in model {model.name}"
                         + suggest(name, model.joint_names))


def _labels(name: str, size: int) -> list[str]:
    return [name] if size == 1 else [f"{name}:{k}" for k in range(size)]


# ----------------------------------------------------------------------------- numbers

SEPARATOR = re.compile(r"\s*,\s*|\s+")  # one comma (spaces around it allowed) or spaces


def parse_numbers(text: str, where: str) -> np.ndarray:
    """Finite numbers separated by commas or spaces, optionally inside [ ]; an empty place
    between two commas (or before the first, after the last) is an error, not skipped."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1].strip()
    if not body:
        raise UsageError(f"{where}: no numbers given")
    words = SEPARATOR.split(body)
    values = np.empty(len(words))
    for k, word in enumerate(words):
        if not word:
            raise UsageError(f"{where}: number {k + 1} of {len(words)} is missing (an empty "
                             f"place between commas in '{text}')")
        try:
            values[k] = float(word)
        except ValueError:
            raise UsageError(f"{where}: '{word}' is not a number") from None
    check_finite(values, where)
    return values


def amount(count: int) -> str:
    """'1 number', '3 numbers'."""
    return "1 number" if count == 1 else f"{count} numbers"


def check_finite(values: np.ndarray, where: str) -> None:
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise UsageError(f"{where}: number {bad[0] + 1} of {values.size} is "
                         f"{values.flat[bad[0]]}; numbers must be finite")


def parse_vector(text: str, kind: str, layout: Layout) -> np.ndarray:
    """The --q/--v/--a/--tau value: nq or nv numbers, or ``joint=value`` pairs."""
    option = f"dyn: --{kind}"
    if "=" not in text:
        values = parse_numbers(text, option)
        if values.size != layout.width(kind):
            raise UsageError(f"{option} has {amount(values.size)}, "
                             f"{layout.need(kind, values.size)}")
        return values * layout.scale(kind)
    vector = layout.default(kind).copy()
    seen: set[int] = set()
    for pair in (p.strip() for p in text.split(",")):
        if not pair:
            raise UsageError(f"{option}: an empty place between commas in '{text}'")
        name, sep, value = (s.strip() for s in pair.partition("="))
        if not sep or not name:
            raise UsageError(f"{option}: '{pair}' is not joint=value "
                             "(give all numbers, or only name=value pairs)")
        i = layout.index(name, kind, option)
        if i in seen:
            raise UsageError(f"{option}: '{name}' is given twice")
        seen.add(i)
        number = parse_numbers(value, f"{option} {name}")
        if number.size != 1:
            raise UsageError(f"{option} {name}: has {amount(number.size)}, a name=value pair "
                             f"takes one (name:k=value for entry k of a multi-dof joint)")
        vector[i] = number[0] * layout.scale(kind)[i]
    return vector


def parse_gravity(text: str | None) -> np.ndarray | None:
    if text is None:
        return None
    gravity = parse_numbers(text, "dyn: --gravity")
    if gravity.size != 3:
        raise UsageError(f"dyn: --gravity has {amount(gravity.size)}, it needs 3 (gx,gy,gz)")
    return gravity


def check_frame(model: Model, name: str, where: str) -> None:
    """A link frame named ``name`` exists (any link, merged or not), else UsageError."""
    names = [frame.name for frame in model.frames]
    if name not in names:
        raise UsageError(f"{where}: unknown body '{name}' in model {model.name}"
                         + suggest(name, names))
    if model.frame(name).joint < 0:
        warn(f"{where.removeprefix('dyn: ')}: '{name}' is welded to the world; "
             "a wrench on it has no effect")


def parse_fext(items: Sequence[str] | None, model: Model) -> dict[str, np.ndarray]:
    """{link: (6,) wrench} from repeated ``--fext BODY=fx,fy,fz,tx,ty,tz`` (summed per link)."""
    wrenches: dict[str, np.ndarray] = {}
    for item in items or ():
        name, sep, numbers = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"dyn: --fext expects BODY=fx,fy,fz,tx,ty,tz, got '{item}'")
        check_frame(model, name, "dyn: --fext")
        wrench = parse_numbers(numbers, f"dyn: --fext {name}")
        if wrench.size != 6:
            raise UsageError(f"dyn: --fext {name} has {amount(wrench.size)}, it needs 6 "
                             "(fx,fy,fz,tx,ty,tz)")
        with np.errstate(over="ignore"):
            total = wrenches.get(name, 0.0) + wrench
        if not np.isfinite(total).all():
            raise UsageError(f"dyn: --fext {name}: the repeated wrenches on {name} add up to "
                             "more than a float holds")
        wrenches[name] = total
    return wrenches


# ----------------------------------------------------------------------------- states

@dataclass
class States:
    """A chunk of states in engine units. ``None`` vectors mean zeros (v, a, tau)."""

    q: np.ndarray  # (n, nq)
    v: np.ndarray | None = None  # (n, nv)
    a: np.ndarray | None = None
    tau: np.ndarray | None = None
    wrenches: dict[str, np.ndarray] = field(default_factory=dict)  # link -> (n, 6) or (6,)
    where: Callable[[int], str] = lambda i: "dyn"  # location of state i, for errors

    @property
    def count(self) -> int:
        return len(self.q)


def single_state(layout: Layout, vectors: dict[str, str | None],
                 wrenches: dict[str, np.ndarray]) -> States:
    """The one state given by --q/--v/--a/--tau (missing: neutral q, zeros)."""
    values = {kind: parse_vector(text, kind, layout)[None]
              for kind, text in vectors.items() if text is not None}
    q = values.pop("q", layout.model.q_neutral[None])
    if "q" in vectors and vectors["q"] is not None:
        warn_unlikely_q(layout, q[0])
    source = layout.model.source
    return States(q=q, wrenches=dict(wrenches),
                  where=lambda i: f"dyn: {source}: at the state given on the command line",
                  **values)


def warn_unlikely_q(layout: Layout, q: np.ndarray) -> None:
    """Warnings for a command-line q that is probably not what was meant: an angle beyond
    2 pi and outside its joint's limits (degrees without --degrees?), and a quaternion that
    is the identity written in the other order (x, y, z, w against MuJoCo's w, x, y, z)."""
    model = layout.model
    if not layout.degrees:
        suspects = [j for j in range(model.njoints) if model.nq_joint[j] == 1
                    and model.public_type(j) in ("revolute", "continuous")
                    and abs(q[model.idx_q[j]]) > 2 * math.pi
                    and not model.q_lower[model.idx_q[j]] <= q[model.idx_q[j]]
                    <= model.q_upper[model.idx_q[j]]]
        if suspects:
            listed = ", ".join(f"{model.joint_names[j]} = {q[model.idx_q[j]]:.10g}" for j in
                               suspects[:3]) + (", ..." if len(suspects) > 3 else "")
            warn(f"q beyond 2 pi and the joint limits: {listed} (radians); degrees? "
                 "--degrees reads them")
    for j, joint in enumerate(model.joint_models):
        parts = list(joint.q_parts)
        slots = [k for k, part in enumerate(parts) if part in ("qw", "qx", "qy", "qz")]
        if len(slots) != 4:
            continue
        block = q[model.idx_q[j] + slots[0]:model.idx_q[j] + slots[0] + 4]
        w_first = parts[slots[0]] == "qw"
        other_identity = [0.0, 0.0, 0.0, 1.0] if w_first else [1.0, 0.0, 0.0, 0.0]
        if np.array_equal(block, other_identity):
            order, identity = (("w, x, y, z", "1, 0, 0, 0") if w_first
                               else ("x, y, z, w", "0, 0, 0, 1"))
            warn(f"{model.joint_names[j]}: its quaternion ({order}) = "
                 f"({', '.join(f'{x:g}' for x in block)}) is a half turn, not the identity "
                 f"({identity}); this model's order is {order}")


class Input:
    """An opened ``--input``: a text stream (JSON Lines, CSV) or a binary .npz file."""

    def __init__(self, name: str, kind: str, stream, owned: bool = True):
        self.name, self.kind, self.stream = name, kind, stream
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
        included), or None when unknown (a pipe; .npz inputs count states instead)."""
        if self.kind == "npz" or not self.size:
            return None
        try:
            return min(1.0, self.stream.tell() / self.size)
        except (OSError, ValueError):
            return None

    @staticmethod
    def open(path: str) -> "Input":
        if path == "-":
            return _sniff_stdin()
        suffix = os.path.splitext(path)[1].lower()
        kind = INPUT_FORMATS.get(suffix)
        if kind is None:
            raise UsageError(f"{path}: unknown input format '{suffix or path}' "
                             "(use .jsonl, .csv or .npz, or - for stdin)")
        try:
            stream = open(path, "rb")  # text is decoded line by line (_text_lines)
        except OSError as error:
            raise UsageError(f"{path}: cannot read ({error.strerror})") from None
        return Input(path, kind, stream)

    @staticmethod
    def part(path: str, kind: str, start: int, first: int, skip: int, take: int) -> "Input":
        """A part of a text file (see :mod:`.parts`): from byte ``start`` (where line
        ``first`` begins), the ``take`` data lines after the first ``skip`` ones."""
        source = Input(path, kind, open(path, "rb"))
        source.stream.seek(start)
        source.window = (first, skip, take, start == 0)
        return source

    def chunks(self, layout: Layout, kinds: Sequence[str], wrenches: dict[str, np.ndarray],
               size: int = CHUNK, header: list[str] | None = None,
               header_line: int = 1) -> Iterator[States]:
        """States in input order, ``size`` at a time, with the command-line wrenches added
        (a CSV part takes the file's ``header``, on line ``header_line``, instead of
        reading one)."""
        lines = None
        if self.window is not None:
            first, skip, take, bom = self.window
            lines = _window(_text_lines(self.stream, self.name, first, bom), self.kind, skip,
                            take)
        try:
            if self.kind == "npz":
                yield from self._npz(self.stream, self.name, layout, kinds, wrenches, size)
            elif self.kind == "jsonl":
                yield from _jsonl_chunks(self.stream, self.name, layout, kinds, wrenches, size,
                                         lines)
            else:
                yield from _csv_chunks(self.stream, self.name, layout, kinds, wrenches, size,
                                       lines, header, header_line)
        finally:
            if self.owned:
                self.stream.close()

    def _npz(self, stream, name, layout, kinds, wrenches, size) -> Iterator[States]:
        """The .npz reader; the number of states is known once the headers are read."""
        members = _npz_members(stream, name, layout, kinds)
        self.total = members[0].count
        return _npz_chunks(members, name, layout, wrenches, size)


def _sniff_stdin() -> Input:
    """stdin as .npz (zip magic, spooled to a temporary file), JSON Lines ('{') or CSV."""
    if sys.stdin is None or not hasattr(sys.stdin, "buffer"):
        raise UsageError("dyn: --input -: no standard input")
    raw = sys.stdin.buffer
    head = raw.peek(256) if hasattr(raw, "peek") else b""
    if head.startswith(b"PK"):
        import shutil
        import tempfile

        spool = tempfile.TemporaryFile()
        shutil.copyfileobj(raw, spool, 1 << 20)
        spool.seek(0)
        return Input(STDIN, "npz", spool)
    kind = "csv" if head.removeprefix(codecs.BOM_UTF8).lstrip()[:1] not in (b"{", b"") else "jsonl"
    return Input(STDIN, kind, raw, owned=False)


def _text_lines(stream, name: str, first: int = 1, bom: bool = True
                ) -> Iterator[tuple[int, str]]:
    """(line number, text) of a binary stream read as UTF-8 text mode reads it (universal
    line ends, kept; a leading BOM, as spreadsheet programs write, dropped). Bytes that are
    not UTF-8 are reported with their line, after the lines before it were used: they are
    decoded as surrogates and caught line by line (only lines that are not ASCII are
    checked), where a strict decoder would fail a whole read-ahead block at once. Lines are
    numbered from ``first``; ``bom=False`` (a part of a file after its start) reads a BOM
    as text, as reading the whole file would there."""
    text = io.TextIOWrapper(stream, encoding="utf-8-sig" if bom else "utf-8",
                            errors="surrogateescape", newline="")
    try:
        for number, line in enumerate(text, first):
            if not line.isascii():
                try:
                    line.encode()
                except UnicodeEncodeError as error:
                    raise UsageError(f"{name}:{number}: not UTF-8 text (byte "
                                     f"{ord(line[error.start]) - 0xDC00:#04x} at column "
                                     f"{error.start + 1})") from None
            if "\0" in line:
                raise UsageError(f"{name}:{number}: holds NUL bytes (UTF-16 text? dyn reads "
                                 "UTF-8)")
            yield number, line
    finally:  # the caller owns (and closes, or not: stdin) the binary stream
        if not stream.closed:
            text.detach()


def is_data(line: str, kind: str) -> bool:
    """Whether a text line holds a state (else the readers skip it): JSON Lines skip blank
    lines, CSV (csv.reader) only empty ones."""
    return bool(line.strip()) if kind == "jsonl" else line not in ("", "\n", "\r\n", "\r")


def _window(lines: Iterator[tuple[int, str]], kind: str, skip: int, take: int
            ) -> Iterator[tuple[int, str]]:
    """The numbered lines from the data line after the first ``skip`` ones up to the
    ``take``-th data line after it."""
    for number, line in lines:
        if is_data(line, kind):
            if skip:
                skip -= 1
                continue
            if not take:
                return
            take -= 1
        elif skip:
            continue
        yield number, line


class _Chunk:
    """Accumulates up to ``size`` parsed rows of a text input in preallocated blocks."""

    def __init__(self, name: str, layout: Layout, wrenches: dict[str, np.ndarray], size: int):
        self.name, self.layout, self.cli_wrenches, self.size = name, layout, wrenches, size
        self.reset()

    def reset(self) -> None:
        self.lines: list[int] = []
        self.vectors: dict[str, np.ndarray] = {}
        self.wrenches: dict[str, np.ndarray] = {}

    def vector(self, kind: str) -> np.ndarray:
        """The (size, width) block of ``kind``, created with defaults on first use."""
        if kind not in self.vectors:
            self.vectors[kind] = np.tile(self.layout.default(kind), (self.size, 1))
        return self.vectors[kind]

    def wrench(self, name: str) -> np.ndarray:
        if name not in self.wrenches:
            self.wrenches[name] = np.zeros((self.size, 6))
        return self.wrenches[name]

    def take(self) -> States:
        n, name, lines = len(self.lines), self.name, self.lines
        vectors = {kind: block[:n] for kind, block in self.vectors.items()}
        wrenches = {link: block[:n] for link, block in self.wrenches.items()}
        with np.errstate(over="ignore"):  # an overflow is reported on the state's result
            for link, wrench in self.cli_wrenches.items():
                wrenches[link] = wrenches.get(link, 0.0) + wrench
        q = pop_q(vectors, self.layout, n)
        self.reset()
        return States(q=q, wrenches=wrenches, where=lambda i: f"{name}:{lines[i]}", **vectors)

    def flush(self) -> Iterator[States]:
        """The rows so far as States (none if empty). Arrays are checked for finite numbers
        here, a chunk at a time: at the first bad row, the rows before it, then the error."""
        n = len(self.lines)
        if not n:
            return
        bad, problem = n, None
        for kind, block in self.vectors.items():
            finite = np.isfinite(block[:bad]).all(axis=1)
            if not finite.all():
                bad, problem = int(np.argmin(finite)), kind
        if problem is None:
            yield self.take()
            return
        where = f'{self.name}:{self.lines[bad]}: "{problem}"'
        values = self.vectors[problem][bad]
        del self.lines[bad:]
        if bad:
            yield self.take()
        check_finite(values, where)


# ----------------------------------------------------------------------------- JSON Lines

def _jsonl_chunks(stream, name, layout, kinds, wrenches, size, lines=None) -> Iterator[States]:
    """Chunks of a JSON Lines stream (or of its numbered ``lines``); at a bad line, the good
    lines before it, then the error."""
    chunk = _Chunk(name, layout, wrenches, size)
    known_links: set[str] = set()
    foreign: set[str] = set()  # keys dyn does not read, warned about once each
    try:
        for number, line in _text_lines(stream, name) if lines is None else lines:
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


def _jsonl_row(line: str, where: str, layout: Layout, kinds, chunk: _Chunk,
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

    Arrays are checked for finite numbers later, a chunk at a time (:meth:`_Chunk.flush`).
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


def _json_fext(value, model: Model, chunk: _Chunk, row: int, known: set[str], where: str):
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


# ----------------------------------------------------------------------------- CSV

POSITIONAL = re.compile(r"(q|v|a|tau)(\d+)")


@dataclass
class _Columns:
    """Where one vector kind comes from in a CSV file: source columns -> target entries."""

    kind: str
    columns: list[int] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)
    positional: bool = False


def _csv_plan(header: list[str], name: str, layout: Layout, kinds: Sequence[str],
              line: int = 1, warns: bool = True) -> list[_Columns]:
    """Map the header's q0../q:<joint> columns (of the kinds in use) to vector entries;
    ``line`` is the header's line in the file (blank lines may come before it); ``warns``
    of columns of external forces, which CSV does not carry."""
    if warns:
        warn_ignored_forces(header, f"{name}:{line}", "column")
    plan: dict[str, _Columns] = {}
    foreign = []
    for column, title in enumerate(t.strip() for t in header):
        match = POSITIONAL.fullmatch(title)
        kind, _, joint = title.partition(":")
        if match:
            kind = match.group(1)
        elif not (joint and kind in KINDS):
            if title and not FORCE_NAME.match(title):  # not pandas' unnamed index column
                foreign.append(title)
            continue
        if kind not in kinds:
            continue
        where = f"{name}:{line}: column '{title}'"
        entry = plan.setdefault(kind, _Columns(kind, positional=bool(match)))
        if entry.positional != bool(match):
            raise UsageError(f"{where}: mixes {kind}0.. and {kind}:<joint> columns")
        target = int(match.group(2)) if match else layout.index(joint, kind, where)
        if match and target >= layout.width(kind):
            raise UsageError(f"{where}: out of range, {layout.need(kind)}")
        if target in entry.targets:
            raise UsageError(f"{where}: the same {kind} entry appears twice")
        entry.columns.append(column)
        entry.targets.append(target)
    if foreign and plan and warns:
        listed = ", ".join(repr(t) for t in foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        warn(f"{name}:{line}: column{'s' if len(foreign) > 1 else ''} {listed} not read: dyn "
             "reads the columns q0.., v0.., a0.., tau0.. or q:<joint>, v:<joint>, ...")
    if not plan:
        titles = ", ".join(repr(t.strip()) for t in header[:4]) + (", ..." if len(header) > 4 else "")
        forms = ", ".join(f"{kind}0.. or {kind}:<joint>" for kind in kinds)
        raise UsageError(f"{name}:{line}: no column to compute from: the header has {titles}; "
                         f"this command reads {forms} (comma-separated)")
    for entry in plan.values():
        if entry.positional and len(entry.targets) != layout.width(entry.kind):
            kind = entry.kind
            raise UsageError(f"{name}:{line}: has {len(entry.targets)} {kind}<k> columns, "
                             f"{layout.need(kind, len(entry.targets))} "
                             f"({kind}0..{kind}{layout.width(kind) - 1})")
    return list(plan.values())


def _csv_chunks(stream, name, layout, kinds, wrenches, size, lines=None,
                header: list[str] | None = None, header_line: int = 1) -> Iterator[States]:
    """Chunks of a CSV stream (or of its numbered ``lines``); at a bad row, the good rows
    before it, then the error. With ``header`` (a part of a file), there are rows only."""
    reader = _NumberedReader(_text_lines(stream, name) if lines is None else lines)
    if header is None:
        try:
            header = next((row for row in reader if row), None)  # after any blank lines
        except csv.Error as error:
            raise _csv_error(name, reader, error) from None
        header_line = reader.line_num
    if header is None:
        return
    plan = _csv_plan(header, name, layout, kinds, header_line)
    convert = _CsvConverter([t.strip() for t in header], plan, name, layout, wrenches)
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise UsageError(f"{name}:{reader.line_num}: {len(row)} field"
                                 f"{'' if len(row) == 1 else 's'}, "
                                 f"the header has {len(header)}")
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

    def values(self, rows: list[list[str]]) -> np.ndarray:
        """The used columns as floats, (n, len(used)); unreadable cells become NaN."""
        if self.every_column:
            picked = rows
        else:
            picked = [[row[c] for c in self.used] for row in rows]
        try:
            return np.array(picked, dtype=float).reshape(len(rows), len(self.used))
        except ValueError:
            return np.array([[_number(cell) for cell in row] for row in picked],
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
        return States(q=q, wrenches=dict(self.wrenches), where=lambda i: f"{name}:{lines[i]}",
                      **vectors)


def pop_q(vectors: dict, layout, count: int) -> np.ndarray:
    """The chunk's q, taken out of ``vectors``; the neutral configuration if it has none."""
    if "q" in vectors:
        return vectors.pop("q")
    return np.tile(layout.model.q_neutral, (count, 1))


def _number(cell: str) -> float:
    """A CSV cell as a float; NaN when it is not a number (reported as such)."""
    try:
        return float(cell)
    except ValueError:
        return math.nan


def _bad_cell(row, line: int, header, columns, name) -> UsageError:
    """The error for the first cell of ``row`` (in ``columns``) that is not a finite number."""
    for c in columns:
        if not math.isfinite(_number(row[c])):
            return UsageError(f"{name}:{line}: column {header[c].strip()!r}: "
                              f"{row[c]!r} is not a finite number")
    return UsageError(f"{name}:{line}: unreadable numbers")


# ----------------------------------------------------------------------------- .npz

@dataclass
class _Member:
    """One array of an .npz, read a block of rows at a time (or held whole if it must be).

    A member stored uncompressed (``np.savez``) in a file on disk is read with ``pread``
    straight into the block returned (see :class:`_Stored`); other members are streamed
    through ``zipfile``, which decompresses them and checks their CRC-32.
    """

    kind: str
    shape: tuple
    dtype: np.dtype
    stream: object = None  # the member's file, positioned at its first row
    whole: np.ndarray | None = None  # Fortran-ordered arrays are loaded at once
    stored: _Stored | None = None  # the member is read from the file at its offset

    @property
    def count(self) -> int:
        return 1 if len(self.shape) == 1 else self.shape[0]

    @property
    def width(self) -> int:
        return self.shape[-1] if self.shape else 0

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as a (stop - start, width) array (rows are read in order).

        A new array of its own for a stored member; else possibly a read-only view.
        """
        if self.whole is not None:
            return self.whole.reshape(self.count, self.width)[start:stop]
        if self.stored is not None:
            return self.stored.rows(self, start, stop)
        size = (stop - start) * self.width * self.dtype.itemsize
        data = self.stream.read(size)
        if len(data) != size:
            raise UsageError(f"array {self.kind} is truncated")
        return np.frombuffer(data, dtype=self.dtype).reshape(stop - start, self.width)


class _Stored:
    """A member stored uncompressed in the .npz's file: where its rows are, its CRC-32.

    Rows are read with ``os.preadv`` straight into a new array (the one copy a block needs;
    ``zipfile`` would copy them twice more). Its CRC-32 (the zip's integrity check, which
    ``np.load`` makes too) is computed here over the member's bytes (the .npy header, the
    rows, anything after them): carried forward over each block read in order, completed
    from the file when the last row is read (rows skipped by a read that starts further on
    are then taken in), and compared then, as ``zipfile`` would.
    """

    def __init__(self, stream, member_name: str, begin: int, first: int, end: int, crc: int):
        import zlib

        self.stream = stream  # the .npz's file (rows are read by offset: its position stays)
        self.member_name, self.kind = member_name, member_name.removesuffix(".npy")
        self.first, self.end = first, end  # file offsets: the first row; the member's end
        self.expected = crc
        header = bytearray(first - begin)
        self.read_into(header, begin)
        self.crc = zlib.crc32(header)
        self.crc_at = first  # the CRC covers the member's bytes up to here
        self.checked = False

    def rows(self, member: _Member, start: int, stop: int) -> np.ndarray:
        import zlib

        block = np.empty((stop - start, member.width), dtype=member.dtype)
        offset = self.first + start * member.width * member.dtype.itemsize
        self.read_into(block, offset)
        if offset == self.crc_at and block.nbytes:
            self.crc = zlib.crc32(block, self.crc)
            self.crc_at = offset + block.nbytes
        if stop == member.count:
            self.check()
        return block

    def check(self) -> None:
        """Complete the CRC to the member's end and compare it (once)."""
        import zlib

        if self.checked:
            return
        buffer = bytearray(min(self.end - self.crc_at, 16 << 20))
        while self.crc_at < self.end:
            part = memoryview(buffer)[:min(len(buffer), self.end - self.crc_at)]
            self.read_into(part, self.crc_at)
            self.crc = zlib.crc32(part, self.crc)
            self.crc_at += len(part)
        if self.crc != self.expected:
            raise CorruptInput(f"not a readable .npz file (Bad CRC-32 for file "
                               f"{self.member_name!r})")
        self.checked = True

    def read_into(self, target, offset: int) -> None:
        """Fill ``target`` (a writable buffer) with the file's bytes from ``offset``."""
        view = memoryview(target).cast("B")
        descriptor = self.stream.fileno()
        while len(view):
            done = (os.preadv(descriptor, [view], offset) if hasattr(os, "preadv")
                    else _copy_into(view, os.pread(descriptor, len(view), offset)))
            if not done:
                raise UsageError(f"array {self.kind} is truncated")
            view, offset = view[done:], offset + done


def _copy_into(view: memoryview, data: bytes) -> int:
    view[:len(data)] = data
    return len(data)


def _npz_chunks(members: list[_Member], name, layout, wrenches, size) -> Iterator[States]:
    """Chunks of the .npz arrays; at a non-finite row, the rows before it, then the error."""
    import zipfile
    import zlib

    count = members[0].count
    unscaled = {m.kind: bool(np.all(layout.scale(m.kind) == 1.0)) for m in members}
    for start in range(0, count, size):
        stop = min(start + size, count)
        vectors = {}
        bad = None
        for member in members:
            try:
                block = member.read(start, stop)
                # float64 rows of our own, to scale in place and hand on: one copy at most
                block = block.astype(np.float64, copy=member.stored is None)
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
                         where=lambda i, s=start: f"{name}: state {s + i}", **vectors)
        if bad is not None:
            raise UsageError(f"{name}: {bad[0]}[{stop}] holds a non-finite number")


def _npz_members(stream, name, layout, kinds, warns: bool = True) -> list[_Member]:
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
        on_disk = _on_disk(stream)
        members = [_open_member(archive, kind, stream if on_disk else None)
                   for kind in kinds if kind in names]
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        raise UsageError(f"{name}: not a readable .npz file ({error})") from None
    if not members:
        raise UsageError(f"{name}: has none of the arrays {', '.join(kinds)} "
                         f"(it has: {', '.join(names) or 'nothing'})")
    if warns:
        warn_ignored_forces(names, name, "array")
        foreign = [n for n in names if n not in KINDS and not FORCE_NAME.match(n)
                   and n != "dofs" and _rows_of(archive, n) == members[0].count]
        if foreign:
            listed = ", ".join(repr(n) for n in foreign[:3]) + (", ..." if len(foreign) > 3
                                                               else "")
            warn(f"{name}: array{'s' if len(foreign) > 1 else ''} {listed} not read: dyn "
                 "reads the arrays q, v, a and tau")
    for member in members:
        width = layout.width(member.kind)
        if (len(member.shape) not in (1, 2) or member.width != width
                or member.dtype.kind not in "fiu"):
            raise UsageError(f"{name}: array {member.kind} is {member.dtype} {member.shape}, "
                             f"{layout.need(member.kind, member.width)}: expected (N, {width}) "
                             "numbers")
    if len({member.count for member in members}) > 1:
        shapes = ", ".join(f"{m.kind} {m.shape}" for m in members)
        raise UsageError(f"{name}: arrays have different numbers of states ({shapes})")
    return members


# fext, fext0..fext5 (named as q0..), fext:b, fext_b; not fextra
FORCE_NAME = re.compile(r"fext\d*(?:$|[^a-z0-9])", re.IGNORECASE)


def warn_ignored_forces(names: Sequence[str], where: str, what: str) -> None:
    """A warning for columns or arrays named like external forces (``fext...``): only
    --fext and JSON Lines' "fext" objects apply forces, so their numbers are not used."""
    forces = [title.strip() for title in names if FORCE_NAME.match(title.strip())]
    if forces:
        listed = ", ".join(repr(title) for title in forces[:3]) + (", ..." if len(forces) > 3
                                                                  else "")
        warn(f"{where}: {what}{'s' if len(forces) > 1 else ''} {listed} ignored: only --fext "
             f'and the "fext" objects of JSON Lines input apply external forces')


def _on_disk(stream) -> bool:
    """The stream is a regular file that can be read by offset (not a pipe or a buffer)."""
    import stat

    if not hasattr(os, "pread"):
        return False
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return False


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


def _open_member(archive, kind: str, file=None) -> _Member:
    """The member ``kind``.npy, its header parsed and its data ready to stream; read from
    ``file`` by offset instead when it is stored uncompressed there."""
    from numpy.lib import format as npy

    stream = archive.open(f"{kind}.npy")
    header = _npy_header(stream)
    if header is not None:
        shape, fortran, dtype = header
    else:
        stream = archive.open(f"{kind}.npy")
        whole = npy.read_array(stream, allow_pickle=False)
        return _Member(kind, whole.shape, whole.dtype, whole=whole)
    if fortran and len(shape) > 1:
        whole = npy.read_array(archive.open(f"{kind}.npy"), allow_pickle=False)
        return _Member(kind, shape, dtype, whole=whole)
    member = _Member(kind, tuple(shape), np.dtype(dtype), stream=stream)
    if file is not None:
        member.stored = _stored(archive.getinfo(f"{kind}.npy"), member, file)
        if member.stored is not None:
            stream.close()
            member.stream = None
    return member


def _stored(info, member: _Member, file) -> _Stored | None:
    """Where the rows of a member stored uncompressed are in ``file``, or ``None`` (the
    member is then streamed): compressed, encrypted, not numbers, or not laid out as its
    headers say (``zipfile`` then reports the problem)."""
    import struct
    import zipfile

    if (info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1
            or member.dtype.kind not in "fiu" or info.compress_size != info.file_size):
        return None
    descriptor = file.fileno()
    size = os.fstat(descriptor).st_size
    local = os.pread(descriptor, 30, info.header_offset)  # the local file header
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        return None
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    begin = info.header_offset + 30 + name_length + extra_length  # the .npy file
    end = begin + info.file_size
    magic = os.pread(descriptor, 12, begin)
    if end > size or len(magic) != 12 or magic[:6] != b"\x93NUMPY":
        return None
    if magic[6] == 1:
        first = begin + 10 + int.from_bytes(magic[8:10], "little")
    elif magic[6] == 2:
        first = begin + 12 + int.from_bytes(magic[8:12], "little")
    else:
        return None
    if first + math.prod(member.shape) * member.dtype.itemsize > end:
        return None  # truncated: the stream reports it
    return _Stored(file, info.filename, begin, first, end, info.CRC)
