"""Reading states for ``dyn``: command-line vectors, ``--fext`` wrenches and ``--input`` files.

Everything a user types or feeds in is checked here and turned into engine units; every
problem raises :class:`UsageError` with a one-line message that names where it happened
(``--q``, ``states.csv:12``, ``states.npz: state 7``). Files are read in chunks of
:data:`CHUNK` states so that the engine runs once per chunk and output can stream.

Coordinates are named by joint: a 1-dof joint by its name, entry ``k`` of a multi-dof joint
by ``<joint>:<k>`` (``root_joint:3``); :class:`Layout` holds the dof names, the
human-readable component names (``root_joint.wx``) and the ``--degrees`` factors.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from treedyn.engine import Model

from .output import warn

CHUNK = 4096
KINDS = ("q", "v", "a", "tau")
DEGREE = math.pi / 180.0

STDIN = "<stdin>"
INPUT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv",
                 ".npz": "npz"}


class UsageError(Exception):
    """Bad usage or bad input: reported as one line on stderr with exit code 2."""


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

    def need(self, kind: str) -> str:
        """'model ur5 needs nq=6' for error messages."""
        return f"model {self.model.name} needs n{'q' if kind == 'q' else 'v'}={self.width(kind)}"

    def index(self, name: str, kind: str, where: str) -> int:
        """Position in q (kind 'q') or v of a 1-dof joint ``name``, or of ``joint:k``."""
        model = self.model
        sizes, starts = ((model.nq_joint, model.idx_q) if kind == "q"
                         else (model.nv_joint, model.idx_v))
        if name in model.joint_names:
            j = model.joint_names.index(name)
            if sizes[j] != 1:
                raise UsageError(f"{where}: joint '{name}' has {sizes[j]} entries in {kind}; "
                                 f"name them '{name}:0'..'{name}:{sizes[j] - 1}'")
            return int(starts[j])
        joint, _, k = name.rpartition(":")
        if joint in model.joint_names and k.isdigit():
            j = model.joint_names.index(joint)
            if int(k) >= sizes[j]:
                raise UsageError(f"{where}: joint '{joint}' has only {sizes[j]} entries in "
                                 f"{kind} ({joint}:0..{joint}:{sizes[j] - 1})")
            return int(starts[j]) + int(k)
        raise UsageError(f"{where}: unknown joint '{name}' in model {model.name}"
                         + suggest(name, model.joint_names))


def _labels(name: str, size: int) -> list[str]:
    return [name] if size == 1 else [f"{name}:{k}" for k in range(size)]


# ----------------------------------------------------------------------------- numbers

def parse_numbers(text: str, where: str) -> np.ndarray:
    """Finite numbers separated by commas and/or spaces, optionally inside [ ]."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    words = [w for w in re.split(r"[\s,]+", body) if w]
    if not words:
        raise UsageError(f"{where}: no numbers given")
    values = np.empty(len(words))
    for k, word in enumerate(words):
        try:
            values[k] = float(word)
        except ValueError:
            raise UsageError(f"{where}: '{word}' is not a number") from None
    check_finite(values, where)
    return values


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
            raise UsageError(f"{option} has {values.size} numbers, {layout.need(kind)}")
        return values * layout.scale(kind)
    vector = layout.default(kind).copy()
    seen: set[int] = set()
    for pair in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = (s.strip() for s in pair.partition("="))
        if not sep or not name:
            raise UsageError(f"{option}: '{pair}' is not joint=value "
                             "(give all numbers, or only name=value pairs)")
        i = layout.index(name, kind, option)
        if i in seen:
            raise UsageError(f"{option}: '{name}' is given twice")
        seen.add(i)
        vector[i] = parse_numbers(value, f"{option} {name}")[0] * layout.scale(kind)[i]
    return vector


def parse_gravity(text: str | None) -> np.ndarray | None:
    if text is None:
        return None
    gravity = parse_numbers(text, "dyn: --gravity")
    if gravity.size != 3:
        raise UsageError(f"dyn: --gravity has {gravity.size} numbers, it needs 3 (gx,gy,gz)")
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
            raise UsageError(f"dyn: --fext {name} has {wrench.size} numbers, it needs 6 "
                             "(fx,fy,fz,tx,ty,tz)")
        wrenches[name] = wrenches.get(name, 0.0) + wrench
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
    return States(q=q, wrenches=dict(wrenches), **values)


class Input:
    """An opened ``--input``: a text stream (JSON Lines, CSV) or a binary .npz file."""

    def __init__(self, name: str, kind: str, stream):
        self.name, self.kind, self.stream = name, kind, stream

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
            stream = (open(path, "rb") if kind == "npz"
                      else open(path, encoding="utf-8", newline=""))
        except OSError as error:
            raise UsageError(f"{path}: cannot read ({error.strerror})") from None
        return Input(path, kind, stream)

    def chunks(self, layout: Layout, kinds: Sequence[str],
               wrenches: dict[str, np.ndarray]) -> Iterator[States]:
        """States in input order, CHUNK at a time, with the command-line wrenches added."""
        reader = {"jsonl": _jsonl_chunks, "csv": _csv_chunks, "npz": _npz_chunks}[self.kind]
        try:
            yield from reader(self.stream, self.name, layout, kinds, wrenches)
        except UnicodeDecodeError:
            raise UsageError(f"{self.name}: not UTF-8 text") from None
        finally:
            if self.name != STDIN:
                self.stream.close()


def _sniff_stdin() -> Input:
    """stdin as .npz (zip magic), JSON Lines (starts with '{') or CSV."""
    if sys.stdin is None or not hasattr(sys.stdin, "buffer"):
        raise UsageError("dyn: --input -: no standard input")
    raw = sys.stdin.buffer
    head = raw.peek(256) if hasattr(raw, "peek") else b""
    if head.startswith(b"PK"):
        return Input(STDIN, "npz", io.BytesIO(raw.read()))
    text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
    return Input(STDIN, "csv" if head.lstrip()[:1] not in (b"{", b"") else "jsonl", text)


class _Chunk:
    """Accumulates up to CHUNK parsed rows of a text input."""

    def __init__(self, name: str, layout: Layout, wrenches: dict[str, np.ndarray]):
        self.name, self.layout, self.cli_wrenches = name, layout, wrenches
        self.reset()

    def reset(self) -> None:
        self.lines: list[int] = []
        self.vectors: dict[str, np.ndarray] = {}
        self.wrenches: dict[str, np.ndarray] = {}

    def vector(self, kind: str) -> np.ndarray:
        """The (CHUNK, width) block of ``kind``, created with defaults on first use."""
        if kind not in self.vectors:
            self.vectors[kind] = np.tile(self.layout.default(kind), (CHUNK, 1))
        return self.vectors[kind]

    def wrench(self, name: str) -> np.ndarray:
        if name not in self.wrenches:
            self.wrenches[name] = np.zeros((CHUNK, 6))
        return self.wrenches[name]

    def take(self) -> States:
        n, name, lines = len(self.lines), self.name, self.lines
        vectors = {kind: block[:n] for kind, block in self.vectors.items()}
        wrenches = {link: block[:n] for link, block in self.wrenches.items()}
        for link, wrench in self.cli_wrenches.items():
            wrenches[link] = wrenches.get(link, 0.0) + wrench
        q = vectors.pop("q", np.tile(self.layout.model.q_neutral, (n, 1)))
        self.reset()
        return States(q=q, wrenches=wrenches, where=lambda i: f"{name}:{lines[i]}", **vectors)


# ----------------------------------------------------------------------------- JSON Lines

def _jsonl_chunks(stream, name, layout, kinds, wrenches) -> Iterator[States]:
    chunk = _Chunk(name, layout, wrenches)
    known_links: set[str] = set()
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            state = json.loads(line)
        except ValueError as error:
            raise UsageError(f"{where}: not valid JSON ({getattr(error, 'msg', error)})") from None
        if not isinstance(state, dict):
            raise UsageError(f"{where}: expected a JSON object like {{\"q\": [...]}}")
        row = len(chunk.lines)
        for kind in kinds:
            if kind in state:
                _json_vector(state[kind], kind, layout, chunk.vector(kind)[row], where)
        if "fext" in state:
            _json_fext(state["fext"], layout.model, chunk, row, known_links, where)
        chunk.lines.append(number)
        if len(chunk.lines) == CHUNK:
            yield chunk.take()
    if chunk.lines:
        yield chunk.take()


def _is_number(x) -> bool:
    return type(x) in (int, float)


def _json_vector(value, kind: str, layout: Layout, out: np.ndarray, where: str) -> None:
    """Write a JSON array (or {joint: value} object) of ``kind`` into ``out`` (one row)."""
    scale = layout.scale(kind)
    if isinstance(value, list):
        if len(value) != layout.width(kind):
            raise UsageError(f'{where}: "{kind}" has {len(value)} numbers, {layout.need(kind)}')
        if not all(map(_is_number, value)):
            bad = next(x for x in value if not _is_number(x))
            raise UsageError(f'{where}: "{kind}" holds {json.dumps(bad)}, not a number')
        values = np.array(value, dtype=float)
        check_finite(values, f'{where}: "{kind}"')
        out[:] = values * scale
    elif isinstance(value, dict):
        for joint, x in value.items():
            i = layout.index(joint, kind, f'{where}: "{kind}"')
            if not _is_number(x) or not math.isfinite(x):
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
        values = np.array(wrench, dtype=float)
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


def _csv_plan(header: list[str], name: str, layout: Layout,
              kinds: Sequence[str]) -> list[_Columns]:
    """Map the header's q0../q:<joint> columns (of the kinds in use) to vector entries."""
    plan: dict[str, _Columns] = {}
    for column, title in enumerate(t.strip() for t in header):
        match = POSITIONAL.fullmatch(title)
        kind, _, joint = title.partition(":")
        if match:
            kind = match.group(1)
        elif not (joint and kind in KINDS):
            continue
        if kind not in kinds:
            continue
        where = f"{name}:1: column '{title}'"
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
    for entry in plan.values():
        if entry.positional and len(entry.targets) != layout.width(entry.kind):
            kind = entry.kind
            raise UsageError(f"{name}:1: has {len(entry.targets)} {kind}<k> columns, "
                             f"{layout.need(kind)} ({kind}0..{kind}{layout.width(kind) - 1})")
    return list(plan.values())


def _csv_chunks(stream, name, layout, kinds, wrenches) -> Iterator[States]:
    reader = csv.reader(stream)
    header = next(reader, None)
    if header is None:
        return
    plan = _csv_plan(header, name, layout, kinds)
    rows: list[list[str]] = []
    lines: list[int] = []
    for row in reader:
        if not row:
            continue
        if len(row) != len(header):
            raise UsageError(f"{name}:{reader.line_num}: {len(row)} fields, "
                             f"the header has {len(header)}")
        rows.append(row)
        lines.append(reader.line_num)
        if len(rows) == CHUNK:
            yield _csv_states(rows, lines, header, plan, name, layout, wrenches)
            rows, lines = [], []
    if rows:
        yield _csv_states(rows, lines, header, plan, name, layout, wrenches)


def _csv_states(rows, lines, header, plan, name, layout, wrenches) -> States:
    cells = np.array(rows, dtype=str)
    vectors = {}
    for entry in plan:
        block = cells[:, entry.columns]
        try:
            values = block.astype(float)
        except ValueError:
            raise _bad_cell(block, lines, header, entry.columns, name) from None
        if not np.isfinite(values).all():
            raise _bad_cell(block, lines, header, entry.columns, name)
        vector = np.tile(layout.default(entry.kind), (len(rows), 1))
        vector[:, entry.targets] = values * layout.scale(entry.kind)[entry.targets]
        vectors[entry.kind] = vector
    q = vectors.pop("q", np.tile(layout.model.q_neutral, (len(rows), 1)))
    return States(q=q, wrenches=dict(wrenches), where=lambda i: f"{name}:{lines[i]}", **vectors)


def _bad_cell(block, lines, header, columns, name) -> UsageError:
    """The error for the first cell of ``block`` that is not a finite number."""
    for r, row in enumerate(block):
        for c, cell in enumerate(row):
            try:
                ok = math.isfinite(float(cell))
            except ValueError:
                ok = False
            if not ok:
                return UsageError(f"{name}:{lines[r]}: column '{header[columns[c]].strip()}': "
                                  f"'{cell}' is not a finite number")
    return UsageError(f"{name}: unreadable numbers")


# ----------------------------------------------------------------------------- .npz

def _npz_chunks(stream, name, layout, kinds, wrenches) -> Iterator[States]:
    arrays = _npz_arrays(stream, name, layout, kinds)
    count = len(next(iter(arrays.values())))
    for start in range(0, count, CHUNK):
        stop = min(start + CHUNK, count)
        vectors = {}
        for kind, array in arrays.items():
            block = np.asarray(array[start:stop], dtype=float)
            bad = np.flatnonzero(~np.isfinite(block).all(axis=1))
            if bad.size:
                raise UsageError(f"{name}: {kind}[{start + bad[0]}] holds a non-finite number")
            vectors[kind] = block * layout.scale(kind)
        q = vectors.pop("q", np.tile(layout.model.q_neutral, (stop - start, 1)))
        yield States(q=q, wrenches=dict(wrenches),
                     where=lambda i, s=start: f"{name}: state {s + i}", **vectors)


def _npz_arrays(stream, name, layout, kinds) -> dict[str, np.ndarray]:
    """The arrays of the kinds in use, checked: 2-D numeric, right width, same length."""
    import zipfile

    if not zipfile.is_zipfile(stream):
        raise UsageError(f"{name}: not an .npz (zip) archive")
    stream.seek(0)
    try:
        archive = np.load(stream, allow_pickle=False)
        names = list(archive.files)
        arrays = {kind: archive[kind] for kind in kinds if kind in names}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise UsageError(f"{name}: not a readable .npz file ({error})") from None
    if not arrays:
        raise UsageError(f"{name}: has none of the arrays {', '.join(kinds)} "
                         f"(it has: {', '.join(names) or 'nothing'})")
    counts = set()
    for kind, array in arrays.items():
        if array.ndim == 1:
            array = arrays[kind] = array[None]
        width = layout.width(kind)
        if (array.ndim != 2 or array.shape[1] != width
                or not (np.issubdtype(array.dtype, np.floating)
                        or np.issubdtype(array.dtype, np.integer))):
            raise UsageError(f"{name}: array {kind} is {array.dtype} {array.shape}, "
                             f"{layout.need(kind)}: expected (N, {width}) numbers")
        counts.add(len(array))
    if len(counts) > 1:
        shapes = ", ".join(f"{k} {a.shape}" for k, a in arrays.items())
        raise UsageError(f"{name}: arrays have different numbers of states ({shapes})")
    return arrays
