"""The numbers of URDF attributes: read and checked as :mod:`treedyn.parsers.urdf` needs
them, and whether urdfdom (ROS, Pinocchio) reads the same text.

A text is *plain* when it is exactly ``count`` :data:`~treedyn.parsers.numbers.NUMBER` s
joined by single spaces, all finite: then dyn and urdfdom read it alike and no check has
more to say. Nearly every attribute of a real (or generated) file is plain, and the same
texts recur ("0 0 0", "1"), so :func:`plain` remembers the texts it has read; every other
text takes the slow path, which says precisely what is wrong.
"""
from __future__ import annotations

import math
import re

import numpy as np
from lxml import etree

from treedyn.engine.description import SourceRef

from .errors import WORD_CHARACTERS, ParseError, quoted
from .numbers import NUMBER, word_problem

_PLAIN = {count: re.compile(" ".join([NUMBER.pattern] * count), re.ASCII) for count in (1, 3)}
_READ: dict[tuple[str, int], tuple[float, ...] | None] = {}  # (text, count) -> plain()
_READ_LIMIT = 1 << 16  # texts remembered at most (then forgotten all at once)


def plain(text: str, count: int) -> tuple[float, ...] | None:
    """The ``count`` numbers of ``text`` if it is plain (see the module notes), else None."""
    key = (text, count)
    try:
        return _READ[key]
    except KeyError:
        pass
    pattern = _PLAIN.get(count) or re.compile(" ".join([NUMBER.pattern] * count), re.ASCII)
    values = None
    if pattern.fullmatch(text):
        values = tuple(float(word) for word in text.split(" "))
        if not all(map(math.isfinite, values)):
            values = None
    if len(_READ) >= _READ_LIMIT:
        _READ.clear()
    _READ[key] = values
    return values


def numbers(element: etree._Element, attribute: str, count: int, default,
            owner: SourceRef) -> np.ndarray:
    """The ``count`` finite numbers of a space-separated attribute; ``default`` if absent.

    ``default=None`` makes the attribute required."""
    return np.array(floats(element, attribute, count, default, owner), dtype=float)


def number(element: etree._Element, attribute: str, default: float | None,
           owner: SourceRef) -> float:
    """:func:`numbers` of one number, as a float."""
    fallback = None if default is None else (default,)
    return float(floats(element, attribute, 1, fallback, owner)[0])


def floats(element: etree._Element, attribute: str, count: int, default,
           owner: SourceRef) -> tuple[float, ...] | list[float]:
    """:func:`numbers` as floats (``default`` itself when absent)."""
    text = element.get(attribute)
    if text is None:
        if default is None:
            raise element_error(element, owner, f"<{element.tag}> has no {attribute} attribute")
        return default
    values = plain(text, count)
    if values is not None:
        return values
    words = text.split()  # every word in one pass, and where that fails _number_problem
    if len(words) == count and all(map(NUMBER.fullmatch, words)):  # says what is wrong
        values = [float(word) for word in words]
        if all(map(math.isfinite, values)):
            return values
    raise element_error(element, owner, f'{element.tag} {attribute}={quoted(text)}: '
                                        f"{_number_problem(words, count)}")


def _number_problem(words: list[str], count: int) -> str:
    """Why ``words`` are not ``count`` finite numbers ("" when they are)."""
    if len(words) != count:
        expected = "1 number" if count == 1 else f"{count} numbers separated by spaces"
        return f"expected {expected}, got {len(words)}"
    for word in words:
        problem = word_problem(word)
        if problem:
            return f'{quoted(word, WORD_CHARACTERS)} {problem}'
        if not math.isfinite(float(word)):
            return f'{quoted(word, WORD_CHARACTERS)} is not finite (out of double range)'
    return ""


def urdfdom_reads(text: str, count: int) -> bool:
    """Whether urdfdom reads ``count`` numbers from ``text``: split at spaces only, each
    piece a number that may follow whitespace but not be followed by any (its strToDouble
    reads a std::istringstream to the end)."""
    if plain(text, count) is not None:
        return True
    pieces = [piece for piece in text.split(" ") if piece] if count > 1 else [text]
    return len(pieces) == count and all(piece.lstrip() == piece.strip() for piece in pieces)


def urdfdom_number(text: str) -> bool:
    """Whether urdfdom reads ``text`` as one finite number, as a joint's sub-elements need."""
    return plain(text, 1) is not None or bool(
        urdfdom_reads(text, 1) and NUMBER.fullmatch(text.strip()) and math.isfinite(float(text)))


def element_error(element: etree._Element, owner: SourceRef, problem: str) -> ParseError:
    """A problem found in ``element`` (a part of ``owner``), located at its own line."""
    return ParseError(problem, owner.file, source_line(element) or owner.line, owner.element)


def source_line(element: etree._Element) -> int:
    """The element's 1-based source line, 0 when unknown."""
    return element.sourceline or 0
