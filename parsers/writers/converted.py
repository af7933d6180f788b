"""A model converted to another format: its text, and notes on what it does not carry."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Converted:
    """The converted model's ``text``; ``notes``: one line each (file:line: what), what the
    target format cannot hold or holds differently, for the caller to report."""

    text: str
    notes: list[str] = field(default_factory=list)
