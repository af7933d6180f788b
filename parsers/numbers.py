"""Numbers as the model files write them: plain ASCII decimals, finite.

Both parsers read an attribute's words with :data:`NUMBER` (digits 0-9 only, no ``nan`` or
``inf``) and say why a word is not one with :func:`word_problem`; each adds its own
wording for the count of words and for a decimal outside the double range.
"""
from __future__ import annotations

import re

NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)  # 0-9 only
INTEGER = re.compile(r"[+-]?\d+", re.ASCII)
NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def word_problem(word: str, any_signs: bool = False) -> str:
    """Why ``word`` is not a :data:`NUMBER`: "is not finite" for a NaN or infinity spelling
    (after one optional sign as urdfdom reads it, or after any number of signs with
    ``any_signs``, as the MJCF parser reads it), else "is not a number"; "" for a NUMBER."""
    if NUMBER.fullmatch(word):
        return ""
    bare = word.lstrip("+-") if any_signs else word
    return "is not finite" if NON_FINITE.fullmatch(bare) else "is not a number"
