"""Numbers as the model files write them: plain ASCII decimals, finite.

Both parsers read an attribute's words with :data:`NUMBER` (digits 0-9 only, no ``nan`` or
``inf``) and say why a word is not one with :func:`word_problem`; each adds its own
wording for the count of words and for a decimal outside the double range.
"""
from __future__ import annotations

import re

NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)  # 0-9 only
INTEGER = re.compile(r"[+-]?\d+", re.ASCII)
NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)  # urdfdom's reading
NON_FINITE_WORDS = ("nan", "inf", "infinity")  # MuJoCo's, after any signs, lower-cased


def word_problem(word: str, any_signs: bool = False) -> str:
    """Why ``word`` is not a :data:`NUMBER`: "is not finite" for a NaN or infinity spelling
    (:data:`NON_FINITE` as the URDF parser reads it, or with ``any_signs``
    :data:`NON_FINITE_WORDS` as the MJCF parser does), else "is not a number"; "" for a
    NUMBER."""
    if NUMBER.fullmatch(word):
        return ""
    if any_signs:
        non_finite = word.lower().lstrip("+-") in NON_FINITE_WORDS
    else:
        non_finite = NON_FINITE.fullmatch(word) is not None
    return "is not finite" if non_finite else "is not a number"
