"""A progress bar on stderr for long batches: states done, states/s, and the share done
with the time left when the input's size is known (an .npz's states, a text file's bytes).

Shown only when stderr is a terminal (and results do not go to a terminal on stdout, where
they would scroll through it), not with ``--quiet``, and only once a batch has run for
:data:`DELAY` seconds, so short batches print nothing. ``rich`` is imported when the bar
first appears, never on the single-state path. ``DYN_PROGRESS_DELAY`` (seconds) overrides
the delay, e.g. ``0`` in tests.
"""
from __future__ import annotations

import os
import sys
import time

DELAY = 1.0
STEPS = 1000  # the bar's length in rich's units, when the share done is known


def clock(seconds: float) -> str:
    """h:mm:ss (m:ss under an hour)."""
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def wanted(quiet: bool, results_on_stdout: bool = True) -> bool:
    """Whether a bar may be drawn: stderr is a terminal, no --quiet, and the results do not
    go to that terminal too (they go to a file, or stdout is not a terminal)."""
    if quiet:
        return False
    try:
        return sys.stderr.isatty() and not (results_on_stdout and sys.stdout.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """Counts states; draws a rich bar on stderr once the batch has run for ``delay`` s."""

    def __init__(self, enabled: bool, delay: float | None = None):
        self.enabled = enabled
        self.delay = float(os.environ.get("DYN_PROGRESS_DELAY", DELAY)) if delay is None \
            else delay
        self.start = time.perf_counter()
        self.done = 0
        self.bar = None
        self.task = None

    def advance(self, count: int, total: int | None = None,
                consumed: float | None = None) -> None:
        """``count`` more states are done, of ``total`` when the input knows it; else
        ``consumed`` is the share of the input read for them, when known (text files)."""
        self.done += count
        if not self.enabled or (self.bar is None and self.done == 0):
            return  # the bar starts with states done (formatting workers may lag behind)
        elapsed = time.perf_counter() - self.start
        if elapsed < self.delay:
            return
        share = self.done / total if total else consumed
        fields = {"states": self.done, "elapsed": elapsed,
                  "rate": self.done / elapsed if elapsed > 0 else 0.0,
                  "share": "" if share is None else f"{share:4.0%}",
                  "left": "" if not share else "ETA " + clock(elapsed * (1 - share) / share)}
        if share is not None:
            fields.update(total=STEPS, completed=round(STEPS * min(share, 1.0)))
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
                       console=Console(stderr=True), transient=False)
        self.task = self.bar.add_task("states", **{"total": None, **fields})
        self.bar.start()

    def close(self) -> None:
        """Stop drawing; the last line (states, states/s) stays on the terminal."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
