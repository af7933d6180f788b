"""Velocities and accelerations of a log of positions, and Gautier's parallel filtering,
over a stream of rows in bounded memory.

Positions q sampled at times t (nearly uniform) are low-passed without phase shift
(``scipy.signal.sosfiltfilt`` of a Butterworth filter, :func:`design`), then
differentiated by the three-point central differences at the sample times (the
non-uniform formulas, exact for a parabola through three samples):

    h1 = t_i - t_{i-1},  h2 = t_{i+1} - t_i
    v_i = (h1^2 q_{i+1} + (h2^2 - h1^2) q_i - h2^2 q_{i-1}) / (h1 h2 (h1 + h2))
    a_i = 2 (h1 q_{i+1} - (h1 + h2) q_i + h2 q_{i-1}) / (h1 h2 (h1 + h2))

at each end of a log the samples of the filter's end transient (:func:`edge`) are left
out, the first and the last among them having no difference.

Streaming (:class:`ZeroPhase`): the rows arrive a block at a time; each window filtered
is the rows not yet given out plus :func:`settle` rows before them (or the log's first
row) and its results are given out up to :func:`settle` rows before its end (or the
log's last row). A zero-phase filter's forward pass started ``n`` rows early, and its
backward pass ``n`` rows late, differ from the whole log's by a transient that decays as
r^n (r the largest pole radius): past :func:`settle` rows it is below 1e-13 of the
signal, so the streamed result equals ``sosfiltfilt`` of the whole log to that, at its
two ends too (a window that starts at the log's first row, or ends at its last, pads them
as the whole log's filter does).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.signal

ORDER = 4  # Butterworth order: -80 dB/decade past the cut-off, zero phase doubles it
DECAY = 1e-13  # the transient left at a window's edges, relative to the signal


def design(cutoff: float, rate: float) -> np.ndarray:
    """The second-order sections of a Butterworth low-pass of :data:`ORDER`, cut-off
    ``cutoff`` Hz at the sample rate ``rate`` Hz (``cutoff`` below rate / 2)."""
    return scipy.signal.butter(ORDER, cutoff, fs=rate, output="sos")


def padding(sos: np.ndarray) -> int:
    """The rows ``sosfiltfilt`` pads each end with (its default ``padlen``): a log needs
    more rows than this."""
    zeros = min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum()))
    return 3 * (2 * len(sos) + 1 - zeros)


def radius(sos: np.ndarray) -> float:
    """The largest pole radius of the sections: a transient decays as radius^n."""
    return max(float(np.abs(np.roots([1.0, *section[4:]])).max()) for section in sos)


def decay_rows(sos: np.ndarray, log_level: float) -> int:
    """Rows after which a transient decays to exp(``log_level``) of itself: log_level /
    log(r), r the :func:`radius`; a radius that rounds to 1 (a cut-off a tiny share of the
    rate) is taken as the largest double below 1, so the count is finite (and huge)."""
    r = min(radius(sos), 1.0 - np.finfo(float).epsneg)
    return int(np.ceil(log_level / np.log(r)))


def settle(sos: np.ndarray) -> int:
    """Rows after which the filter's transient is below :data:`DECAY`: 1.5 log(DECAY) /
    log(r) (the margin for the factors of repeated sections), plus the padding."""
    return decay_rows(sos, 1.5 * np.log(DECAY)) + padding(sos)


def edge(sos: np.ndarray) -> int:
    """Rows at each end of a log whose differences are left out: the filter pads a log's
    ends by their odd extension, which keeps q and v continuous but not a, and the
    transient of that jump decays to 1e-6 of it after log(1e-6) / log(r) rows."""
    return max(decay_rows(sos, np.log(1e-6)), 1)


class ZeroPhase:
    """``sosfiltfilt`` along the rows of a stream (module doc): :meth:`push` blocks of
    rows ``x`` (n, k) with rows ``extra`` (n, ...) riding along unfiltered, then
    :meth:`finish`; each yields windows ``(fx, extra, lo, hi, start)``, whose rows
    ``lo:hi`` are the next results (every row given out once, in order; the window's row 0
    is the stream's row ``start``)."""

    def __init__(self, sos: np.ndarray, keep: int = 1, block: int = 4096):
        self.sos = sos
        self.overlap = settle(sos)
        self.keep = keep  # rows before the next result kept beyond the overlap
        self.block = block  # rows to gather before a window is filtered
        self.x: np.ndarray | None = None
        self.extra: np.ndarray | None = None
        self.first = 0  # the stream's index of the buffer's first row
        self.done = 0  # rows given out

    def push(self, x: np.ndarray, extra: np.ndarray) -> Iterator[tuple]:
        if self.x is None:
            self.x, self.extra = x, extra
        else:
            self.x = np.concatenate([self.x, x])
            self.extra = np.concatenate([self.extra, extra])
        if self.first + len(self.x) - self.overlap - self.done >= self.block:
            yield self._window(final=False)

    def finish(self) -> Iterator[tuple]:
        if self.x is not None and self.first + len(self.x) > self.done:
            yield self._window(final=True)

    def _window(self, final: bool) -> tuple:
        end = self.first + len(self.x)
        stop = end if final else end - self.overlap
        fx = scipy.signal.sosfiltfilt(self.sos, self.x, axis=0)
        window = (fx, self.extra, self.done - self.first, stop - self.first, self.first)
        self.done = stop
        cut = max(stop - self.overlap - self.keep, self.first) - self.first
        self.x, self.extra, self.first = self.x[cut:], self.extra[cut:], self.first + cut
        return window


def differences(q: np.ndarray, t: np.ndarray, lo: int, hi: int) -> tuple:
    """(v, a) (hi - lo, n) at the rows lo..hi - 1 of ``q`` (N, n), sampled at ``t`` (N,),
    by the three-point formulas of the module doc (each row needs its two neighbours:
    0 < lo, hi < N)."""
    h1 = (t[lo:hi] - t[lo - 1:hi - 1])[:, None]
    h2 = (t[lo + 1:hi + 1] - t[lo:hi])[:, None]
    before, here, after = q[lo - 1:hi - 1], q[lo:hi], q[lo + 1:hi + 1]
    scale = h1 * h2 * (h1 + h2)
    v = (h1 * h1 * after + (h2 * h2 - h1 * h1) * here - h2 * h2 * before) / scale
    a = 2.0 * (h1 * after - (h1 + h2) * here + h2 * before) / scale
    return v, a
