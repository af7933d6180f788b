"""The size of the compiled document, known before anything is expanded.

``<include>`` and ``<attach>`` copy elements in as the document is read; ``<replicate>``
repeats its contents ``count`` times while the tree is compiled. MuJoCo's reader bounds
none of these (a ``count`` of 10^8 ran for minutes, growing), so dyn caps the elements of the
compiled document -- every element once per copy it is compiled as -- at
:data:`MAX_ELEMENTS`, counted on the read document before any replicate is expanded: a
replicate's share is its ``count`` times the elements it holds (inner replicates'
counts multiplied in; an empty replicate's copies count as one element each), and the
first replicate whose share passes the cap is named.
"""
from __future__ import annotations

from ..errors import quoted
from ..numbers import INTEGER
from .types import Node

MAX_ELEMENTS = 100_000  # elements of the compiled document, every copy counted
HUGE = 10 ** 18  # a count of more than 18 digits


def check_size(root: Node) -> None:
    """ParseError unless the document under ``root`` compiles to at most
    :data:`MAX_ELEMENTS` elements: at the replicate whose copies pass the cap, else at
    the root."""
    if _size(root) > MAX_ELEMENTS:
        raise root.error(f"the model holds more than {MAX_ELEMENTS} elements once its "
                         f"includes, attached models and replicates are expanded (the most "
                         f"dyn compiles)")


def _size(node: Node) -> int:
    """Elements ``node`` compiles to (itself and its contents, each copy counted); stops
    early, above :data:`MAX_ELEMENTS`, once the sum is known to pass it."""
    inner = 0
    for child in node.children:
        inner += _size(child)
        if inner > MAX_ELEMENTS:
            break
    if node.tag != "replicate":
        return 1 + inner
    text = node.get("count", "")
    count = _count(text)
    each = max(inner, 1)  # an empty copy costs too
    if count * each > MAX_ELEMENTS:
        product = f"{count} x {each} = {count * each}" if count < HUGE else "over 10^18"
        raise node.error(f"count={quoted(text)} copies of {each} element{'s' if each > 1 else ''}"
                         f" each (inner replicates' copies counted) make {product} elements, "
                         f"more than the {MAX_ELEMENTS} dyn compiles")
    return 1 + count * inner


def _count(text: str) -> int:
    """A replicate's ``count`` as far as the cap needs it: a whole number (one of more
    than 18 digits as :data:`HUGE`), 0 for anything else (the tree reports what is
    wrong)."""
    word = text.strip()
    if not INTEGER.fullmatch(word) or word.startswith("-"):
        return 0
    digits = word.lstrip("+").lstrip("0")
    return HUGE if len(digits) > 18 else int(digits or "0")
