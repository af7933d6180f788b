"""Warnings for the person at the terminal: one reporter for the whole run.

A warning is one ``dyn: warning: ...`` line on stderr, unless the command runs with
``--quiet``; a worker process keeps its warnings instead (:meth:`Console.capture`), and
the parent prints them in order with the results they belong to.
"""
from __future__ import annotations

import sys


class Console:
    """Where warnings go: stderr, nowhere (``quiet``) or a list (``captured``)."""

    def __init__(self) -> None:
        self.quiet = False  # --quiet: no warnings (errors are always printed)
        self.captured: list[str] | None = None  # a list: warnings kept, not printed

    def reset(self, quiet: bool = False) -> None:
        """A new command: warnings shown (or not, with ``quiet``), none captured."""
        self.quiet, self.captured = quiet, None

    def capture(self, into: list[str] | None) -> None:
        """Keep warnings in ``into`` from now on (None: print them again)."""
        self.captured = into

    def warn(self, message: str) -> None:
        if self.captured is not None:
            self.captured.append(message)
        elif not self.quiet and sys.stderr is not None:
            try:
                print(f"dyn: warning: {message}", file=sys.stderr)
            except (OSError, ValueError):  # stderr closed or full: not worth the run
                pass


console = Console()


def warn(message: str) -> None:
    """A warning line on stderr (results stay on stdout): :meth:`Console.warn`."""
    console.warn(message)
