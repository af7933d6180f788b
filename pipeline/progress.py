"""Progress accounting of a run over many states (:class:`Tally`): states done, states/s,
and the share done with the time left when the input's size is known (an .npz's states, a
text file's bytes). Its :meth:`Tally.advance` is the ``progress`` callback of
:func:`.stream.run`; what it reports, a subclass shows (``dyn``: a bar on stderr).
"""
from __future__ import annotations

import time

STEPS = 1000  # the share done in these units, when known


def clock(seconds: float) -> str:
    """h:mm:ss (m:ss under an hour)."""
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Tally:
    """Counts states; once the run has lasted ``delay`` seconds, gives the figures to
    :meth:`report` after each chunk (from the first state done: formatting workers may
    lag behind the chunks, and a run that has done nothing has nothing to report)."""

    def __init__(self, enabled: bool, delay: float):
        self.enabled, self.delay = enabled, delay
        self.start = time.perf_counter()
        self.done = 0
        self.reported = False

    def advance(self, count: int, total: int | None = None,
                consumed: float | None = None) -> None:
        """``count`` more states are done, of ``total`` when the input knows it; else
        ``consumed`` is the share of the input read for them, when known (text files)."""
        self.done += count
        if not self.enabled or (not self.reported and self.done == 0):
            return
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
        self.report(fields)
        self.reported = True

    def report(self, fields: dict) -> None:
        """The figures (states, elapsed, rate, share, left; total and completed in
        :data:`STEPS` when the share is known): a subclass shows them."""

    def close(self) -> None:
        """The run is over: a subclass that shows the figures stops showing them."""
