"""Model text written by a converter, and what it could not carry."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Converted:
    """Model text written by a converter, and what it could not carry."""

    text: str
    notes: tuple[str, ...]
