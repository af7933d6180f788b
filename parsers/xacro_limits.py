"""The bounds of a xacro expansion: what one expression, and the whole expansion, may cost.

A model file is data: an expression in it may compute, but not without end. Every bound is
checked *before* the work it bounds is done (an integer power's size from the sizes of its
operands, a repetition's length from the length and the count), so that a hostile file ends
in a refusal, not in a full memory or a hung CI job. The numbers:

* :data:`EXPANSION_SECONDS` of wall-clock time for the whole expansion;
* :data:`MAX_ELEMENTS` elements expanded (a macro that calls itself twice per level ends);
* :data:`MAX_STEPS` evaluation steps per expression (comprehensions included);
* :data:`MAX_INT_BITS` bits of an integer made by ``**``, ``*`` or ``<<``;
* :data:`MAX_CHARS` characters of a value as text (a string, or a list as ``str`` prints
  it), and :data:`MAX_ITEMS` items of a list, tuple, dict or range;
* :data:`MAX_BUILT` characters of text made by the expansion in all;
* :data:`MAX_WIDTH`: a width or precision in a format (``'%9999999d'``, ``'{:>9999999}'``).
"""
from __future__ import annotations

import math
import operator
import re
import string
import time

from .errors import quoted

EXPANSION_SECONDS = 10.0
MAX_ELEMENTS = 100_000
MAX_STEPS = 1_000_000
MAX_INT_BITS = 10_000
MAX_CHARS = 10_000_000
MAX_ITEMS = 1_000_000
MAX_BUILT = 100_000_000
MAX_WIDTH = 10_000
MAX_EXPRESSION = 100_000  # characters of one expression's text
SHOWN = 200  # characters of an expression quoted in a message

BINARY = {"Add": operator.add, "Sub": operator.sub, "Mult": operator.mul,
          "Div": operator.truediv, "FloorDiv": operator.floordiv, "Mod": operator.mod,
          "Pow": operator.pow, "LShift": operator.lshift, "RShift": operator.rshift,
          "BitOr": operator.or_, "BitXor": operator.xor, "BitAnd": operator.and_}
SEQUENCES = (str, list, tuple)
PERCENT = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d*))?[hlL]?(.)", re.S)
FIELD = re.compile(r"\d*|[A-Za-z_][A-Za-z0-9_]*")  # a format field: no attribute, no index


class Refused(Exception):
    """Something a model file may not do. ``str`` is the whole one-line problem; when it
    is about an expression, the expression (quoted, at most :data:`SHOWN` characters)
    comes first: ``expression '...' uses attribute '__class__', which ...``."""

    def __init__(self, reason: str, expression: str | None = None):
        super().__init__(reason)
        self.reason, self.expression = reason, expression

    def __str__(self) -> str:
        if self.expression is None:
            return self.reason
        return f"expression {shown(self.expression)} {self.reason}"


def shown(text: str) -> str:
    """``text`` between single quotes as a message quotes it: :func:`.errors.quoted`, at
    most :data:`SHOWN` characters, control characters escaped."""
    return quoted(text, SHOWN, "'")


class Budget:
    """What the whole expansion has spent: time (against a deadline set at the start),
    elements expanded, text built."""

    def __init__(self, seconds: float = EXPANSION_SECONDS):
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.elements = 0
        self.built = 0

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise Refused(f"runs past the {self.seconds:g} s the expansion of a model file "
                          "may take")

    def element(self) -> None:
        """One more element expanded."""
        self.elements += 1
        if self.elements > MAX_ELEMENTS:
            raise Refused(f"the expansion makes more than {MAX_ELEMENTS} elements "
                          "(the limit for a model file)")
        self.check_time()

    def text(self, value: object) -> None:
        """``value`` (a result of the expansion) counted against the text limits."""
        if isinstance(value, str):
            self.built += len(value)
            if len(value) > MAX_CHARS:
                raise Refused(f"makes a text of {len(value)} characters (more than "
                              f"{MAX_CHARS})")
            if self.built > MAX_BUILT:
                raise Refused(f"the expansion makes more than {MAX_BUILT} characters of "
                              "text (the limit for a model file)")


def binary(name: str, left: object, right: object) -> object:
    """``left <op> right`` for the operator of ``ast`` class ``name``, refused before it is
    computed when its result would be over the bounds."""
    if name == "Pow" and _integer(left) and _integer(right) and right > 0 and abs(left) > 1:
        bits = math.ceil(right * math.log2(abs(left)))
        if bits > MAX_INT_BITS:
            raise Refused(f"computes an integer of about {bits} bits (more than {MAX_INT_BITS})")
    elif name == "LShift" and _integer(left) and _integer(right) and right > 0:
        if left.bit_length() + right > MAX_INT_BITS:
            raise Refused(f"computes an integer of about {left.bit_length() + right} bits "
                          f"(more than {MAX_INT_BITS})")
    elif name == "Mult":
        if _integer(left) and _integer(right):
            if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise Refused(f"computes an integer of more than {MAX_INT_BITS} bits")
        elif isinstance(left, SEQUENCES) and _integer(right):
            repeated(left, right)
        elif isinstance(right, SEQUENCES) and _integer(left):
            repeated(right, left)
    elif name == "Add" and isinstance(left, SEQUENCES) and isinstance(right, SEQUENCES):
        sized(left, len(left) + len(right))
    elif name == "Mod" and isinstance(left, str):
        percent_format(left, right)
    elif name not in BINARY:
        raise Refused(f"uses the operator {name}, which model files may not use")
    return BINARY[name](left, right)


def _integer(value: object) -> bool:
    return isinstance(value, int)


def repeated(sequence, count: int) -> None:
    """Refused when ``sequence * count`` would be over the bounds."""
    sized(sequence, len(sequence) * max(count, 0))


def sized(kind, length: int) -> None:
    """Refused when a value like ``kind`` of ``length`` characters or items would be over
    the bounds."""
    if isinstance(kind, str) and length > MAX_CHARS:
        raise Refused(f"makes a text of {length} characters (more than {MAX_CHARS})")
    if not isinstance(kind, str) and length > MAX_ITEMS:
        raise Refused(f"makes a sequence of {length} items (more than {MAX_ITEMS})")


def percent_format(text: str, values: object) -> None:
    """Refused when a ``%`` format takes its width from an argument (``*``), has one over
    :data:`MAX_WIDTH`, or would make over :data:`MAX_CHARS` characters of ``values``."""
    fields, widths = 0, 0
    for match in PERCENT.finditer(text):
        fields += match.group(3) != "%"
        widths += sum(_width(number) for number in match.group(1, 2))
    parts = values if isinstance(values, tuple) else (values,)
    _formatted(text, fields, widths, parts)


def brace_format(text: str, values: tuple) -> None:
    """Refused when a ``str.format`` field reaches into an attribute or an index
    (``{0.__class__}``, ``{0[x]}``), nests a field in its spec, has a width over
    :data:`MAX_WIDTH`, or the whole would make over :data:`MAX_CHARS` characters."""
    fields, widths = 0, 0
    for _literal, field, spec, _conversion in string.Formatter().parse(text):
        if field is None:
            continue
        if not FIELD.fullmatch(field):
            raise Refused(f"formats the field {shown('{' + field + '}')}: only plain fields "
                          "({}, {0}, {name}) are allowed in model files")
        if "{" in (spec or ""):
            raise Refused("nests a field in a format spec, which model files may not do")
        fields += 1
        widths += sum(_width(number) for number in re.findall(r"\d+", spec or ""))
    _formatted(text, fields, widths, values)


def _formatted(text: str, fields: int, widths: int, values) -> None:
    """Refused when ``fields`` fields of ``widths`` in all, each maybe the largest of
    ``values`` (a field may repeat one: ``'{0}{0}'``), would make too long a text."""
    largest = max((weight(value) for value in values), default=0)
    if len(text) + widths + fields * (largest + 330) > MAX_CHARS:  # 330: digits of a float
        raise Refused(f"formats a text of more than {MAX_CHARS} characters")


def _width(number: str | None) -> int:
    if number == "*":
        raise Refused("takes a format width from an argument ('*'), which model files "
                      "may not do")
    if number and int(number) > MAX_WIDTH:
        raise Refused(f"formats with a width or precision of {int(number)} (more than "
                      f"{MAX_WIDTH})")
    return int(number) if number else 0


def weight(value: object, limit: int = MAX_CHARS) -> int:
    """About the number of characters ``str(value)`` has, counted up to ``limit`` (a
    nested value whose parts repeat may be far larger than its ``len``); Refused above."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += 2 + 2 * len(item)
            stack.extend(item)
        elif isinstance(item, dict):
            total += 2 + 4 * len(item)
            stack.extend(dict.keys(item))
            stack.extend(dict.values(item))
        elif isinstance(item, int):
            total += 1 + item.bit_length() // 3
        else:
            total += 24
        if total > limit:
            raise Refused(f"makes a value of more than {limit} characters as text")
    return total
