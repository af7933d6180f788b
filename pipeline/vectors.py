"""One state typed on the command line (``--q``, ``--v``, ``--a``, ``--tau``, ``--fext``,
``--gravity``), checked and turned into engine units, and the :class:`States` every
reader yields."""

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from treedyn.engine import Model
from treedyn.parsers.numbers import NON_FINITE, NUMBER

from . import naming
from .errors import warn
from .errors import UsageError
from .naming import listing
from .layout import Layout, suggest

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
        if not (NUMBER.fullmatch(word) or NON_FINITE.fullmatch(word)):  # 0-9 only, as JSON:
            raise UsageError(f"{where}: '{word}' is not a number")  # not 1_000, not full width
        values[k] = float(word)
    check_finite(values, where)
    return values


def number(word: str) -> float:
    """``word`` as a number in the syntax of :func:`parse_numbers` (digits 0-9, as JSON:
    not 1_000, not full width), else NaN; callers say what they expected."""
    word = word.strip()
    return float(word) if NUMBER.fullmatch(word) or NON_FINITE.fullmatch(word) else math.nan


def name_value(spec: str) -> tuple[str, float]:
    """``NAME=VALUE`` (split at the last '=') as (NAME, VALUE), VALUE NaN unless a finite
    :func:`number`."""
    name, _, text = spec.rpartition("=")
    value = number(text)
    return name, value if math.isfinite(value) else math.nan


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
    for pair in (p.strip() for p in naming.split_pairs(text)):
        if not pair:
            raise UsageError(f"{option}: an empty place between commas in "
                             f"'{naming.shown(text)}'")
        split = naming.split_name(pair)
        if split is None:
            raise UsageError(f"{option}: a double quote is not closed in "
                             f"'{naming.shown(pair)}'")
        name, sep, value = split
        if not sep or not name:
            raise UsageError(f"{option}: '{naming.shown(pair)}' is not joint=value "
                             "(give all numbers, or only name=value pairs; a name with "
                             "',' or '=' goes in double quotes)")
        i = layout.index(name, kind, option)
        if i in seen:
            raise UsageError(f"{option}: '{naming.shown(name)}' is given twice")
        seen.add(i)
        number = parse_numbers(value, f"{option} {naming.shown(name)}")
        if number.size != 1:
            raise UsageError(f"{option} {naming.shown(name)}: has {amount(number.size)}, "
                             "a name=value pair takes one (name:k=value for entry k of a "
                             "multi-dof joint)")
        vector[i] = number[0] * layout.scale(kind)[i]
    return vector


def parse_payload(text: str | None):
    """``--payload KG[@FRAME[:x,y,z]]`` as a PayloadSpec; None: no payload. The offset is
    the part after the last ':' when it holds a ',' (a frame may be 'joint:NAME'; one whose
    name holds ',' takes an offset, ':0,0,0'): three finite :func:`number` s, else a usage
    error saying so."""
    from treedyn.engine.analysis.statics import PayloadSpec

    if text is None:
        return PayloadSpec()
    mass_text, _, where = text.partition("@")
    frame, offset = where or None, (0.0, 0.0, 0.0)
    head, _, tail = where.rpartition(":")
    if head and "," in tail:
        offset = tuple(number(x) for x in tail.split(","))
        if len(offset) != 3 or not all(map(math.isfinite, offset)):
            raise UsageError(f"dyn: --payload {text!r}: the offset must be three finite "
                             "numbers x,y,z (metres in the frame's axes)")
        frame = head
    mass = number(mass_text)
    if not (math.isfinite(mass) and mass >= 0):
        raise UsageError(f"dyn: --payload {text!r}: expected KG[@FRAME[:x,y,z]] with a mass "
                         ">= 0 in kg and an offset in metres in the frame's axes")
    return PayloadSpec(mass, frame, offset)


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
        raise UsageError(f"{where}: unknown body '{naming.shown(name)}' in model "
                         f"{naming.shown(model.name)}"
                         + suggest(name, names))
    if model.frame(name).joint < 0:
        warn(f"{where.removeprefix('dyn: ')}: '{naming.shown(name)}' is welded to the world; "
             "a wrench on it has no effect")


def parse_fext(items: Sequence[str] | None, model: Model) -> dict[str, np.ndarray]:
    """{link: (6,) wrench} from repeated ``--fext BODY=fx,fy,fz,tx,ty,tz`` (summed per link)."""
    wrenches: dict[str, np.ndarray] = {}
    for item in items or ():
        # the numbers hold no '=': a body named with ',' or '=' needs no quotes (they are
        # read as in --q all the same)
        split = naming.split_name(item) if item.strip().startswith('"') else \
            tuple(s.strip() for s in item.rpartition("="))
        if split is None or not split[1] or not split[0]:
            raise UsageError("dyn: --fext expects BODY=fx,fy,fz,tx,ty,tz, got "
                             f"'{naming.shown(item)}'")
        name, _, numbers = split
        check_frame(model, name, "dyn: --fext")
        name_shown = naming.shown(name)
        wrench = parse_numbers(numbers, f"dyn: --fext {name_shown}")
        if wrench.size != 6:
            raise UsageError(f"dyn: --fext {name_shown} has {amount(wrench.size)}, it needs 6 "
                             "(fx,fy,fz,tx,ty,tz)")
        with np.errstate(over="ignore"):
            total = wrenches.get(name, 0.0) + wrench
        if not np.isfinite(total).all():
            raise UsageError(f"dyn: --fext {name_shown}: the repeated wrenches on it add up to "
                             "more than a float holds")
        wrenches[name] = total
    return wrenches


@dataclass
class States:
    """A chunk of states in engine units. ``None`` vectors mean zeros (v, a, tau)."""

    q: np.ndarray  # (n, nq)
    v: np.ndarray | None = None  # (n, nv)
    a: np.ndarray | None = None
    tau: np.ndarray | None = None
    t: np.ndarray | None = None  # (n, 1) the log's time (s), when the reader is asked for it
    wrenches: dict[str, np.ndarray] = field(default_factory=dict)  # link -> (n, 6) or (6,)
    where: Callable[[int], str] = lambda i: "dyn"  # location of state i, for errors and tables

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


def refuse_beside_input(vectors: dict[str, str | None]) -> None:
    """The one refusal of a state's vectors given on the command line (``vectors``: name ->
    text, None where not given) beside an input of many states: the input file holds them."""
    typed = [name for name, text in vectors.items() if text is not None]
    if typed:
        raise UsageError(f"dyn: {' and '.join('--' + name for name in typed)} cannot be "
                         f"combined with --input (put {' and '.join(typed)} in the input file)")


def warn_unlikely_q(layout: Layout, q: np.ndarray) -> None:
    """Warnings for a command-line q that is probably not what was meant: an angle beyond
    2 pi and outside its joint's limits (degrees without --degrees?), and a quaternion that
    is the identity written in the other order (x, y, z, w against MuJoCo's w, x, y, z), and
    one that is all zeros."""
    model = layout.model
    if not layout.degrees:
        suspects = [j for j in range(model.njoints) if model.nq_joint[j] == 1
                    and model.public_type(j) in ("revolute", "continuous")
                    and abs(q[model.idx_q[j]]) > 2 * math.pi
                    and not model.q_lower[model.idx_q[j]] <= q[model.idx_q[j]]
                    <= model.q_upper[model.idx_q[j]]]
        if suspects:
            listed = listing([f"{model.joint_names[j]} = {q[model.idx_q[j]]:.10g}"
                              for j in suspects], 3)
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
        if not np.any(block):  # MuJoCo (and dyn) take a zero quaternion as the identity
            order, identity = (("w, x, y, z", "1, 0, 0, 0") if w_first
                               else ("x, y, z, w", "0, 0, 0, 1"))
            warn(f"{model.joint_names[j]}: its quaternion ({order}) is all zeros, no "
                 f"orientation at all; it is taken as the identity ({identity})")
        elif np.array_equal(block, other_identity):
            order, identity = (("w, x, y, z", "1, 0, 0, 0") if w_first
                               else ("x, y, z, w", "0, 0, 0, 1"))
            warn(f"{model.joint_names[j]}: its quaternion ({order}) = "
                 f"({', '.join(f'{x:g}' for x in block)}) is a half turn, not the identity "
                 f"({identity}); this model's order is {order}")


def pop_q(vectors: dict, layout, count: int) -> np.ndarray:
    """The chunk's q, taken out of ``vectors``; the neutral configuration if it has none."""
    if "q" in vectors:
        return vectors.pop("q")
    return np.tile(layout.model.q_neutral, (count, 1))


# fext, fext0..fext5 (named as q0..), fext:b, fext_b; not fextra
FORCE_NAME = re.compile(r"fext\d*(?:$|[^a-z0-9])", re.IGNORECASE)


def warn_unused_kinds(unused: Sequence[str], kinds: Sequence[str], where: str,
                      what: tuple[str, str]) -> None:
    """A warning for the vectors of ``unused`` kinds that a file holds and this command does
    not read (it reads ``kinds``): ``a`` given to forward dynamics, which computes it,
    ``tau`` to inverse dynamics, ``v``, ``a``, ``tau`` or ``fext`` to the mass matrix.
    Computing without them in silence would look like an answer to what the file asks.
    ``what`` names one and several of them (``("key", "keys")``)."""
    if unused:
        listed = listing([f'"{kind}"' for kind in unused], 4)
        reads = listing([f'"{kind}"' for kind in kinds], 5)
        warn(f"{where}: {what[len(unused) > 1]} {listed} not read: this command reads {reads}")


def warn_ignored_forces(names: Sequence[str], where: str, what: str) -> None:
    """A warning for columns or arrays named like external forces (``fext...``): only
    --fext and JSON Lines' "fext" objects apply forces, so their numbers are not used."""
    forces = [title.strip() for title in names if FORCE_NAME.match(title.strip())]
    if forces:
        listed = listing([repr(title) for title in forces], 3)
        warn(f"{where}: {what}{'s' if len(forces) > 1 else ''} {listed} ignored: only --fext "
             f'and the "fext" objects of JSON Lines input apply external forces')
