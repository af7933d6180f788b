"""A motion written as a log the commands read back (``dyn excite``'s output): the states
q, v, a (and tau, when given) and their time t, in one file, complete or not at all (the
sinks' temporary and rename, :mod:`.outputs`).

* ``.npz``: arrays ``q`` (N, nq), ``v``, ``a``, ``tau`` (N, nv), ``t`` (N,), ``dofs`` (nv,);
* ``.csv``: columns ``q:<label>`` .., ``v:<label>`` .., ``a:<label>`` .., ``tau:<label>``
  .., ``t``;
* ``.jsonl``: one object per state, ``{"q": [..], "v": [..], "a": [..], "tau": [..], "t":
  x}``.

A command that does not use the time ``t`` does not warn about it (:data:`.layout.TIME`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from treedyn.engine import Model, rnea
from treedyn.engine.excitation import Excitation, NoMotion, Trajectory, excite, sample_bytes
from treedyn.engine.named import Frames, frame_set

from .chunks import MEMORY, refuse_past_memory
from .errors import UsageError
from .layout import TIME, Layout
from .naming import q_labels
from .outputs import csv_header, open_file, output_format
from .paths import writing
from .signals import ended_by_signals
from .sinks import CsvSink, NpzSink, Sink, TextSink, npz_extra, numbers_text
from .vectors import name_value


class StatesLines(TextSink):
    """JSON Lines of whole states: rows of the ``kinds`` side by side, parted at
    ``widths``, then t when ``times``; spaced as :class:`~.sinks.JsonSink` spaces its
    lines, each kind's rows cut from one text of its block (:func:`~.sinks.numbers_text`)."""

    def __init__(self, stream, kinds, widths, path: str | None = None, times: bool = True):
        super().__init__(stream, path)
        self.kinds, self.cuts, self.times = kinds, np.cumsum(widths), times

    def text(self, result) -> str:
        if not len(result):
            return ""
        blocks = np.split(result, self.cuts, axis=1)  # (N, width) each, then t's (N, 1)
        fields = [[b'"%s": [%s]' % (kind.encode(), row) for row in
                   numbers_text(block).replace(b",", b", ")[2:-2].split(b"], [")]
                  for kind, block in zip(self.kinds, blocks)]
        if self.times:
            fields.append([b'"%s": %s' % (TIME.encode(), t) for t in
                           numbers_text(blocks[-1][:, 0])[1:-1].split(b",")])
        return b"".join(b"{" + b", ".join(state) + b"}\n" for state in zip(*fields)).decode()


def write_states(path: str, states: dict, t: np.ndarray | None = None,
                 layout: Layout | None = None) -> Sink:
    """The ``states`` ({"q": (N, nq), "v", "a", "tau": (N, nv), any of them}) and, when
    given, their times t (N,) into the file ``path`` (.npz, .csv or .jsonl: module doc),
    through the output's temporary (:func:`.outputs.open_file`); with ``layout``, the
    CSV columns are named by the dofs (``q:<label>``) and an .npz holds ``dofs``, else
    they are numbered (``q0``, ``q1``, ...). Returns the closed sink."""
    kind = output_format(path, None)
    if kind not in ("npz", "csv", "json"):
        raise UsageError(f"{path}: a motion is written as .npz, .csv or .jsonl, not {kind}")
    timed = {} if t is None else {TIME: t}
    rows = np.hstack([*states.values(), *(x[:, None] for x in timed.values())])
    if kind == "npz":
        first, *others = states
        extra = npz_extra(layout.v_labels) if layout is not None else {}
        extra.update({k: states[k] for k in others}, **timed)
        rows = states[first]

        def make(stream) -> Sink:
            return NpzSink(stream, first, rows.shape[1:], extra, path)
    elif kind == "csv":
        header = [name for k, x in states.items() for name in (
            [f"{k}{i}" for i in range(x.shape[1])] if layout is None else csv_header(
                k, q_labels(layout.model) if k == "q" else layout.v_labels))]

        def make(stream) -> Sink:
            return CsvSink(stream, header + list(timed), path)
    else:
        def make(stream) -> Sink:
            return StatesLines(stream, tuple(states), [x.shape[1] for x in states.values()],
                               path, times=bool(timed))
    sink = open_file(path, kind == "npz", make)
    with ended_by_signals():  # SIGTERM, SIGHUP: the temporary removed, as for Ctrl-C
        sink.write_whole(rows, None)
    return sink


class Plan(NamedTuple):
    """``dyn excite``'s settings (its options' meanings)."""

    period: float = 10.0
    harmonics: int = 5
    rate: float = 100.0
    duration: float | None = None  # None: one period
    acceleration_limit: float | None = None
    floor: tuple = ()  # "FRAME=HEIGHT" texts
    samples: int = 60
    iterations: int = 100
    seed: int = 0
    torques: bool = False
    noise: float = 0.0


def floor_frames(model: Model, specs) -> tuple[Frames | None, np.ndarray]:
    """(Frames, heights (k,)) of the ``FRAME=HEIGHT`` texts (None, () when none)."""
    if not specs:
        return None, np.zeros(0)
    names, heights = [], []
    for spec in specs:
        name, height = name_value(spec)
        if not np.isfinite(height):
            raise UsageError(f"dyn: --floor {spec!r}: expected FRAME=HEIGHT (metres, the "
                             "world's z, a finite number)")
        names.append(name)
        heights.append(height)
    try:
        return frame_set(model, names), np.array(heights)
    except KeyError as error:
        raise UsageError(f"dyn: {model.source}: --floor: no link, body, joint or site named "
                         f"{error.args[0]!r}") from None


def sample_times(model: Model, plan: Plan) -> np.ndarray:
    """The log's times (N,) of ``plan``, checked: at most :data:`MEMORY` of states, at
    least two, the harmonics below half the rate, the objective's samples within
    :data:`MEMORY` (:func:`~treedyn.engine.excitation.sample_bytes`); --noise with
    --torques. A usage error naming the options otherwise."""
    length = "--duration" if plan.duration is not None else "--period"  # (one by default)
    count = (plan.duration or plan.period) * plan.rate
    held = count * (4 * model.nv + 1) * 8  # q, v, a, tau and t of every state, at once
    if not held <= MEMORY:
        raise UsageError(f"dyn: {length} x --rate gives {count:.3g} states, about "
                         f"{held / 2 ** 30:.3g} GiB at once: more than the "
                         f"{MEMORY / 2 ** 30:g} GiB a run may hold")
    times = np.arange(int(round(count))) / plan.rate
    if len(times) < 2 or (plan.noise and not plan.torques):
        raise UsageError("dyn: --noise needs --torques" if len(times) > 1 else
                         f"dyn: {length} x --rate gives fewer than 2 states")
    highest = plan.harmonics / plan.period  # Hz
    if not highest < plan.rate / 2:
        raise UsageError(f"dyn: --harmonics {plan.harmonics} of --period {plan.period:g} s "
                         f"reach {highest:.6g} Hz, not below half of --rate {plan.rate:g} Hz: "
                         "the log would alias them (a longer --period, fewer --harmonics or "
                         "a higher --rate)")
    each = sample_bytes(model, plan.harmonics)
    if each > MEMORY:  # (refuse_past_memory's reason would be M's)
        raise UsageError(f"dyn: {model.source}: one sample of the objective would hold about "
                         f"{each / 2 ** 30:.3g} GiB at --harmonics {plan.harmonics}, more "
                         f"than the {MEMORY / 2 ** 30:g} GiB a run may hold: fewer --harmonics")
    refuse_past_memory(plan.samples, each, "--samples")
    return times


def limiting(plan: Plan) -> str:
    """The options that may hold the joints still, in words (for :class:`NoMotion`)."""
    options = [f"--acceleration-limit {plan.acceleration_limit:g}"
               ] if plan.acceleration_limit is not None else []
    options += ["--floor"] if plan.floor else []
    return (f"set by {' and '.join(options) or 'the joint limits of the model'} at --period "
            f"{plan.period:g} s")


def excitation_log(model: Model, path: str, plan: Plan) -> tuple[Trajectory, int]:
    """An excitation (:mod:`treedyn.engine.excitation`) of ``model`` as ``plan`` says,
    written at ``plan.rate`` into the log ``path`` (:func:`write_states`; with
    ``plan.torques`` tau, the model's inverse dynamics plus normal noise of deviation
    ``plan.noise`` seeded by ``plan.seed``). Returns the trajectory and the states
    written."""
    writing(path)  # (refused before the search when the run reads that file)
    frames, heights = floor_frames(model, plan.floor)
    times = sample_times(model, plan)
    limit = np.inf if plan.acceleration_limit is None else plan.acceleration_limit
    try:
        setting = Excitation(model, plan.harmonics, plan.period, plan.samples, limit, frames,
                             heights)
        trajectory = excite(setting, plan.seed, plan.iterations, times)
    except NoMotion as error:
        raise UsageError(f"dyn: {model.source}: {error} ({limiting(plan)})") from None
    except ValueError as error:
        raise UsageError(f"dyn: {model.source}: {error}") from None
    states = dict(zip(("q", "v", "a"), trajectory.states(times)))
    if plan.torques:
        noise = np.random.default_rng(plan.seed).normal(size=states["v"].shape)
        states["tau"] = rnea(model, *states.values()) + plan.noise * noise
    write_states(path, states, times, Layout.of(model))
    return trajectory, len(times)
