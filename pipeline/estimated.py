"""A log of positions only (q, tau and the time t, no v or a) made rows of the
identification: v and a estimated from q, then tau and every regressor column low-passed
alike (Gautier's parallel filtering), a chunk at a time (the numerics:
:mod:`treedyn.engine.analysis.lowpass`).

The sample rate is the first chunk's median step of t; every step must be within
:data:`JITTER` of it (a filter of uniform samples: uneven times are refused, not
resampled). The default cut-off, :data:`CUTOFF` Hz (at most a fifth of the sample rate),
suits a robot arm's identification trajectories, whose positions carry their content
below about 5 Hz (Fourier series of a 0.1 Hz fundamental, a few harmonics): the order-4
zero-phase Butterworth keeps 5 Hz to 2e-5 and takes quantisation and sensor noise above
20 Hz away from the differences, which amplify noise by (2 pi f)^2 for a.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from treedyn.engine.analysis.lowpass import (ORDER, ZeroPhase, design, differences, edge,
                                             padding)

from .errors import UsageError, warn
from .vectors import States

CUTOFF = 20.0  # Hz (module doc)
JITTER = 0.01  # largest relative deviation of a time step from the log's sample period


@dataclass(frozen=True)
class Estimation:
    """How v and a were estimated from a log's q (its report's ``estimated``)."""

    rate: float  # Hz, the log's sample rate
    cutoff: float  # Hz
    method: str = f"Butterworth order {ORDER}, zero phase (sosfiltfilt); central differences"

    def document(self) -> dict:
        return {"rate": self.rate, "cutoff": self.cutoff, "method": self.method}


def wants_estimate(states: States) -> bool:
    """Whether a log's first chunk is one of positions only: no v, no a, a time t."""
    return states.v is None and states.a is None and states.t is not None


def estimated(name: str, chunks: Iterator[States], rows, size: int, cutoff: float | None,
              block: int, record: list) -> Iterator[tuple]:
    """(Y, tau) of the log ``name`` of positions (its States ``chunks``), filtered as the
    module doc says: ``rows(states)`` gives a chunk's (Y (m, nv, P), tau (m, nv)) from
    its q, v, a and tau (P = ``size``). The states of the filter's transient at each end
    (:func:`~treedyn.engine.analysis.lowpass.edge`) are left out. ``record`` gets the
    :class:`Estimation`."""
    period = positions = parallel = None
    previous, total = None, 0
    for states in chunks:
        t = states.t[:, 0]
        if positions is None:
            estimation = _settings(name, t, cutoff)
            record.append(estimation)
            sos = design(estimation.cutoff, estimation.rate)
            positions, parallel = ZeroPhase(sos, 1, block), ZeroPhase(sos, 0, block)
            period, low, high = 1.0 / estimation.rate, states.q[0], states.q[0]
        _check_steps(name, t, previous, period, total)
        if states.tau is None:
            raise UsageError(f"{name}: the log has no tau: identification needs the measured "
                             "joint forces (arrays or columns tau)")
        if states.wrenches:
            raise UsageError(f"{states.where(0)}: external forces (\"fext\") in a log of "
                             "positions are not read: give v and a with them")
        previous, total = t[-1], total + len(t)
        low, high = np.minimum(low, states.q.min(axis=0)), np.maximum(high, states.q.max(axis=0))
        for window in positions.push(states.q, np.column_stack([t, states.tau])):
            yield from _filtered(parallel, window, rows, size, False, name)
    if positions is None:
        return
    least = 2 * edge(positions.sos) + padding(positions.sos) + 1
    if total < least:
        raise UsageError(f"{name}: too short for the filter: {total} states; estimating v and "
                         f"a from q at this cut-off needs at least {least}")
    if np.array_equal(low, high):
        raise UsageError(f"{name}: q is the same in all {total} states: no motion to estimate "
                         "v and a from (a static log determines no more than one state does)")
    for window in positions.finish():
        yield from _filtered(parallel, window, rows, size, True, name)
    for fx, _, lo, hi, _ in parallel.finish():
        yield _split(fx[lo:hi], size)
    warn(f"{name}: v and a estimated from q at {estimation.rate:.6g} Hz: {estimation.method}, "
         f"cut-off {estimation.cutoff:.6g} Hz; tau and the regressor low-passed alike")


def _filtered(parallel: ZeroPhase, window: tuple, rows, size: int, final: bool, name: str):
    """The rows of a window of filtered q: v and a by differences, (Y, tau) of them
    filtered again (the parallel filter)."""
    fq, extra, lo, hi, start = window
    ends = edge(parallel.sos)  # the transient of each end of the log
    lo = max(lo, ends - start)
    hi = min(hi, len(fq) - ends) if final else hi
    if hi <= lo:
        return
    v, a = differences(fq, extra[:, 0], lo, hi)
    states = States(q=fq[lo:hi], v=v, a=a, tau=extra[lo:hi, 1:],
                    where=lambda i: f"{name}: state {start + lo + i}")
    Y, tau = rows(states)
    for fx, _, l2, h2, _ in parallel.push(np.concatenate([Y.reshape(len(Y), -1), tau], axis=1),
                                          np.zeros((len(Y), 0))):
        yield _split(fx[l2:h2], size)


def _split(flat: np.ndarray, size: int) -> tuple:
    """(Y (m, nv, P), tau (m, nv)) of filtered rows [Y flattened | tau]."""
    nv = flat.shape[1] // (size + 1)
    return flat[:, :nv * size].reshape(len(flat), nv, size), flat[:, nv * size:]


def _settings(name: str, t: np.ndarray, cutoff: float | None) -> Estimation:
    """The sample rate of the first chunk's times and the cut-off (checked below half)."""
    steps = np.diff(t)
    if not len(steps) or not np.median(steps) > 0:
        raise UsageError(f"{name}: its times t do not increase: v and a cannot be "
                         "estimated from q")
    rate = float(f"{1.0 / float(np.median(steps)):.12g}")  # (1 / 0.001: 1000, not 999.99..)
    chosen = min(CUTOFF, rate / 5.0) if cutoff is None else cutoff
    if not chosen > 0.0:
        raise UsageError(f"dyn: --cutoff {chosen:g}: not a positive frequency (Hz)")
    if not chosen < rate / 2.0:
        raise UsageError(f"{name}: a cut-off of {chosen:.6g} Hz is not below half the log's "
                         f"sample rate ({rate:.6g} Hz): lower --cutoff")
    return Estimation(rate, chosen)


def _check_steps(name: str, t: np.ndarray, previous, period: float, done: int) -> None:
    """Every time step within :data:`JITTER` of the sample period (a usage error naming
    the first state that is not)."""
    steps = np.diff(t if previous is None else np.concatenate([[previous], t]))
    bad = np.flatnonzero(~(np.abs(steps - period) <= JITTER * period))
    if bad.size:
        state = done + int(bad[0]) + (1 if previous is None else 0)
        raise UsageError(f"{name}: state {state}: its time step {steps[bad[0]]:.6g} s is not "
                         f"within {JITTER:.0%} of the log's sample period {period:.6g} s "
                         "(v and a are estimated from evenly sampled q)")
