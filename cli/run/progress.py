"""A progress bar on stderr for long batches (:class:`Progress`), drawn from the figures
of :class:`treedyn.pipeline.progress.Tally`.

Shown only when stderr is a terminal (and results do not go to a terminal on stdout, where
they would scroll through it), not with ``--quiet``, and only once a batch has run for
:data:`DELAY` seconds, so short batches print nothing. ``rich`` is imported when the bar
first appears, never on the single-state path. ``DYN_PROGRESS_DELAY`` (seconds) overrides
the delay, e.g. ``0`` in tests.
"""
from __future__ import annotations

import contextlib
import os
import sys

from treedyn.pipeline.progress import Tally

from ..console import console

DELAY = 1.0


def wanted(results_on_stdout: bool = True) -> bool:
    """Whether a bar may be drawn: stderr is a terminal, no --quiet, and the results do not
    go to that terminal too (they go to a file, or stdout is not a terminal)."""
    if console.quiet:
        return False
    try:
        return sys.stderr.isatty() and not (results_on_stdout and sys.stdout.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def bar(results_on_stdout: bool = True):
    """Within: a run whose ``progress`` callback is the one given (a :class:`Progress`'s
    ``advance``, drawn when :func:`wanted`); the bar stops when the run ends, however."""
    progress = Progress(wanted(results_on_stdout))
    try:
        yield progress.advance
    finally:
        progress.close()


class Progress(Tally):
    """A rich bar on stderr once the batch has run for ``delay`` s."""

    def __init__(self, enabled: bool, delay: float | None = None):
        super().__init__(enabled, float(os.environ.get("DYN_PROGRESS_DELAY", DELAY))
                         if delay is None else delay)
        self.bar = None
        self.task = None

    def report(self, fields: dict) -> None:
        if self.bar is None:
            self.show(fields)
        else:
            self.bar.update(self.task, **fields)

    def show(self, fields: dict) -> None:
        """Start drawing (imports rich), from the current counts (no '0 states' frame); the
        bar pulses when the share done is unknown (a pipe)."""
        from rich.console import Console
        from rich.progress import BarColumn, TextColumn
        from rich.progress import Progress as Bar

        self.bar = Bar(TextColumn("dyn"), BarColumn(), TextColumn("{task.fields[share]}"),
                       TextColumn("{task.fields[states]:,} states"),
                       TextColumn("{task.fields[rate]:,.0f} states/s"),
                       TextColumn("{task.fields[elapsed]:.1f} s"),
                       TextColumn("{task.fields[left]}"),
                       console=Console(stderr=True, no_color=not console.coloured()),
                       transient=False)
        self.task = self.bar.add_task("states", **{"total": None, **fields})
        self.bar.start()

    def close(self) -> None:
        """Stop drawing; the last line (states, states/s) stays on the terminal."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
