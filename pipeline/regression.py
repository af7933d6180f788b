"""The joint torque regressor and the identification over a log of states, as a library
(``dyn regressor --input`` and ``dyn identify`` call it): the states of a source streamed a
chunk at a time into the regressor's sink (:func:`write_regressor`) or into the
identification's accumulation (:func:`identify_stream`); memory is one chunk plus the
accumulated statistics, whatever the number of states.
"""
from __future__ import annotations

import itertools
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from treedyn.engine import Model, external_forces, joint_torque_regressor
from treedyn.engine.analysis.consistent import LOSSES, ScaleTooSmall, consistent_fit
from treedyn.engine.analysis.identify import (Accumulator, UnfitLog, base_parameters,
                                              joint_sigma, known_torques,
                                              ordinary_least_squares)
from treedyn.engine.analysis.identify_report import Identification
from treedyn.engine.regressor import Layout as Columns
from treedyn.engine.regressor import (VELOCITY_TERMS, layout_of, model_parameters,
                                      signed_columns, term_columns, without_rests)

from .chunks import regressor_chunk
from .cluster import expand
from .drives import Drives
from .estimated import estimated, wants_estimate
from .errors import UsageError, warn
from .layout import TIME, Layout
from .outputs import open_file, output_format
from .paths import refuse_input_as_output
from .signals import ended_by_signals
from .sinks import JsonSink, NpzSink, Sink, npz_extra
from .source import CHUNK, Input
from .stream import Progress, stopped
from .text import STDIN

KINDS = ("q", "v", "a", "tau")
MEMORY = 4 << 30  # bytes of training rows a robust fit may keep
# a chunk's Y at most: its arrays then stay below the heap's mmap threshold (.heap) and are
# reused, not mapped and zeroed afresh (panda's 33 MB chunks spent ~40 % of a run's CPU in
# the kernel; 1300 states of 8 MB about none: 2026-12-05, medians of 2)
FIT_BYTES = 8 << 20


def chunk_regressor(layout: Layout, columns: Columns, states, gravity) -> np.ndarray:
    """Y (m, nv, P) of a chunk; a state whose rows are not finite is an error naming it."""
    with np.errstate(all="ignore"):
        Y = joint_torque_regressor(layout.model, states.q, states.v, states.a, gravity,
                                   columns.shape)
    finite = np.isfinite(Y.reshape(len(Y), -1)).all(axis=1)
    if not finite.all():
        raise UsageError(f"{states.where(int(np.argmin(finite)))}: the regressor is not "
                         "finite here (it overflows)")
    return Y


def measured(layout: Layout, columns: Columns, states) -> np.ndarray:
    """The chunk's logged tau less what the parameters do not explain
    (:func:`treedyn.engine.analysis.identify.known_torques`): what Y pi must fit."""
    model = layout.model
    with np.errstate(all="ignore"):
        fext = (external_forces(model, states.wrenches, states.count) if states.wrenches
                else None)
        return states.tau - known_torques(model, columns.terms, states.q, states.a, fext)


def opened(model: Model | Layout, source) -> tuple[Layout, Input]:
    """The layout of ``model`` and the source opened (a path, ``"-"``: stdin)."""
    layout = model if isinstance(model, Layout) else Layout.of(model)
    return layout, source if isinstance(source, Input) else Input.open(os.fspath(source))


# ---------------------------------------------------------------------------- regressor
def regressor_columns(model: Model, terms) -> Columns:
    """The regressor's columns of ``terms``; a usage error for the gain term, whose column
    is a logged current (identify fits it), not a function of q, v and a."""
    columns = layout_of(model, terms)
    if "gain" in columns.terms:
        raise UsageError("dyn: --terms gain: its column is a logged current, not a function "
                         "of q, v, a (dyn identify --current fits it)")
    return columns


def regressor_document(layout: Layout, states, terms=(), gravity=None) -> dict:
    """``dyn regressor``'s JSON document of one state: Y (nv x P), the dofs, the
    parameters' names and the model's values pi of them (Y pi is inverse dynamics)."""
    columns = regressor_columns(layout.model, terms)
    Y = joint_torque_regressor(layout.model, states.q, states.v, states.a, gravity, terms)[0]
    return {"Y": Y.tolist(), "dofs": list(layout.v_labels), "parameters": list(columns.names),
            "pi": model_parameters(layout.model, columns).tolist()}


def write_regressor(model: Model | Layout, source: Input | str | os.PathLike,
                    sink: Sink | str | os.PathLike | None = None, terms=(), gravity=None,
                    chunk: int = CHUNK, progress: Progress | None = None) -> Sink:
    """Y of every state of ``source`` (q, v, a; any input format) into ``sink``: a
    :class:`~.sinks.Sink`, an .npz path (arrays Y (N x nv x P), parameters, pi, dofs), a
    .jsonl path, or None for JSON Lines on stdout. ``terms``: the per-joint columns
    (names of ``JOINT_TERMS``, or a ``JointTerms``); ``progress`` as for
    :func:`.stream.run`. Returns the closed sink; an interrupted or failed run keeps what :func:`.stream.stopped` says."""
    layout, source = opened(model, source)
    columns = regressor_columns(layout.model, terms)
    if not isinstance(sink, Sink):
        sink = regressor_sink(None if sink is None else os.fspath(sink), layout, columns,
                              "-" if source.name == STDIN else source.name)
    if isinstance(sink, NpzSink):
        sink.total = lambda: source.total
    warned = False
    try:
        with ended_by_signals():  # SIGTERM, SIGHUP: the output kept as for Ctrl-C
            for states in source.chunks(layout, KINDS[:3], {},
                                        regressor_chunk(layout.model, columns.size, chunk)):
                needs_velocity(source.name, columns, states)
                if states.wrenches and not warned:
                    warn(f"{source.name}: its external forces do not enter the regressor "
                         "(tau + sum J^T f_ext = Y pi): not used")
                    warned = True
                sink.put(chunk_regressor(layout, columns, states, gravity), states)
                if progress is not None:
                    progress(states.count, source.total, source.consumed())
            sink.close()
    except BaseException as error:
        raise stopped(sink, error) from None
    return sink


def needs_velocity(name: str, columns: Columns, states) -> None:
    """A usage error when the chunk has no v and a term of ``columns`` needs it."""
    needing = [t for t in columns.terms if t in VELOCITY_TERMS]
    if needing and states.v is None:
        raise UsageError(f"{name}: the log has no v: the term {needing[0]} needs the joint "
                         "velocities (arrays or columns v)")


def regressor_sink(path: str | None, layout: Layout, columns: Columns,
                   input_name: str | None = None) -> Sink:
    """The regressor's sink: an .npz or a .jsonl file at ``path`` (not the input file
    ``input_name``, ``"-"``: stdin), or JSON Lines on stdout (``path`` None)."""
    refuse_input_as_output(input_name, path)
    kind = "json" if path is None else output_format(path, None)
    if kind not in ("npz", "json"):
        raise UsageError(f"{path}: the regressor is written as .npz (arrays Y, "
                         f"parameters, pi, dofs) or JSON Lines (.jsonl), not {kind}")
    if kind == "npz":
        extra = npz_extra(layout.v_labels)
        extra["parameters"] = np.array(columns.names, dtype=str)
        extra["pi"] = model_parameters(layout.model, columns)
        return open_file(path, True, lambda stream: NpzSink(
            stream, "Y", (layout.model.nv, columns.size), extra, path))

    def json_lines(stream) -> Sink:
        return JsonSink(stream, "Y", None, path)

    return json_lines(sys.stdout) if path is None else open_file(path, False, json_lines)


# ----------------------------------------------------------------------------- identify
def identify_stream(model: Model | Layout, source, terms=(), gravity=None,
                    validate: float | str | os.PathLike = 0.0, prior_weight: float = 1.0,
                    loss: str = "linear", loss_scale: float | None = None,
                    tolerance: float = 1e-8, chunk: int = CHUNK,
                    progress: Progress | None = None, memory: int = MEMORY,
                    drives: Drives = Drives(), cutoff: float | None = None,
                    weights: str = "auto") -> Identification:
    """Inertial parameters fitted to the log ``source`` (q, v, a and the measured tau;
    external forces, when it has them, are subtracted as -J^T f): the log accumulated a
    chunk at a time (``validate``: the share of states held out, or a log of its own read
    as the inputs are, estimation included), then the base parameters
    (rank at ``tolerance``), ordinary least squares and the consistent fit (weighted toward
    the model's inertias by ``prior_weight``, with the robust ``loss``; one that is not
    linear keeps the training rows, at most ``memory`` bytes of them). ``source``: one log
    (a path, ``"-"``: stdin, an :class:`Input`) or a sequence of them, each its own
    trajectory, their equations accumulated together (the report has each one's states
    and residuals). A log of q, tau and the times t without v and a has them estimated
    (:mod:`.estimated`; ``cutoff`` Hz). ``weights`` "auto": each joint's rows weighted
    by the inverse of its residual standard deviation in a first fit, then fitted again
    (IDIM-WLS; the consistent fit too), "none": not. ``drives``: a log of currents,
    parameters known beforehand (:mod:`.drives`).
    A usage error (:class:`~.errors.UsageError`) naming the log when the logs determine
    nothing (:class:`~treedyn.engine.analysis.identify.UnfitLog`'s reason)."""
    if loss not in LOSSES:
        raise UsageError(f"dyn: --loss: unknown loss '{loss}' (known: {', '.join(LOSSES)})")
    if weights not in ("auto", "none"):
        raise UsageError(f"dyn: --weights: '{weights}' is not auto or none")
    if not 0.0 <= prior_weight < np.inf:
        raise UsageError(f"dyn: --prior-weight {prior_weight}: not a finite number >= 0")
    if loss_scale is not None and not 0.0 < loss_scale < np.inf:
        raise UsageError(f"dyn: --loss-scale {loss_scale}: not a positive number")
    layout = model if isinstance(model, Layout) else Layout.of(model)
    columns = layout_of(layout.model, terms)
    rows = Rows(layout, columns, gravity, drives, drives.columns(columns))
    held = None if isinstance(validate, (int, float)) else validate
    fraction = 0.0 if held is not None else float(validate)
    accumulator = Accumulator(columns.size, layout.model.nv, fraction,
                              keep_rows=loss != "linear")
    names, estimations = accumulate(accumulator, rows, as_sources(source), chunk, cutoff,
                                    (loss, memory), progress)
    problem = accumulator.finish()
    if held is not None:
        problem = held_out_file(problem, rows, held, chunk, cutoff)
    named = names[0] if len(names) == 1 else "the logs"
    if problem.states == 0:
        raise UsageError(f"{named}: no states to fit"
                         + (" (all are held out: lower --validate)" if accumulator.seen else ""))
    try:
        base = base_parameters(problem, tolerance)
    except UnfitLog as error:  # the log determines nothing: one line, not a fit
        raise UsageError(f"{named}: {error}") from None
    restless = without_rests(columns, base.identifiable | base.no_effect)  # (still: no effect)
    if restless:
        warn(f"{named}: coulomb+, coulomb- and offset are not separable at "
             f"{', '.join(restless[:3])}{' ...' if len(restless) > 3 else ''}: the log never "
             "holds it still (v = 0); only their combinations are determined (see base)")
    settings = {"terms": list(columns.terms),
                "validate": fraction if held is None else os.fspath(held),
                "prior_weight": prior_weight, "loss": loss, "loss_scale": loss_scale,
                "tolerance": tolerance, "cutoff": cutoff, "weights": weights}
    logs = [{"file": name, "estimated": None if how is None else how.document()}
            for name, how in zip(names, estimations)]
    return fits(rows, problem, base, settings, logs)


@dataclass(frozen=True)
class Rows:
    """What turns a chunk of states into the identification's rows (:meth:`__call__`)."""

    layout: Layout
    columns: Columns
    gravity: np.ndarray | None
    drives: Drives
    known: tuple  # (indices, values) of the parameters known beforehand

    def __call__(self, states) -> tuple:
        """(Y (m, nv, P), the target (m, nv): what Y pi must fit) of a chunk."""
        Y = chunk_regressor(self.layout, self.columns, states, self.gravity)
        return Y, self.drives.target(self.columns, self.known, Y, states.tau,
                                     measured(self.layout, self.columns, states))


def accumulate(accumulator: Accumulator, rows: Rows, sources: list, chunk: int,
               cutoff: float | None, robust: tuple, progress: Progress | None) -> tuple:
    """Every log's rows into ``accumulator``, each chunk factored on a second thread while
    the next one is read and its regressor computed; (the logs' names, how each was
    estimated). ``robust``: (loss, memory) for :func:`check_kept`."""
    names, estimations = [], []
    with ThreadPoolExecutor(1) as worker:
        for index, one in enumerate(sources):
            _, one = opened(rows.layout, one)
            names.append(one.name)
            accumulator.next_file()
            pending, done = None, 0
            for Y, tau in log_rows(rows, one, chunk, cutoff, estimations):
                if pending is not None:
                    pending.result()
                    check_kept(accumulator, one.name, *robust)
                pending = worker.submit(accumulator.add, Y, tau)
                done += len(Y)
                if progress is not None:
                    progress(len(Y), *shares(one, done, index, len(sources)))
            if pending is not None:
                pending.result()
                check_kept(accumulator, one.name, *robust)
    return names, estimations


def fits(rows: Rows, problem, base, settings: dict, logs: list) -> Identification:
    """OLS (weighted by each joint's sigma with ``settings["weights"]`` auto) and the
    consistent fit of an accumulated log; the :class:`Identification`."""
    columns, drives, known = rows.columns, rows.drives, rows.known
    model = rows.layout.model
    ols = ordinary_least_squares(problem, base)
    sigma, fitted = None, problem
    if settings["weights"] == "auto":
        sigma = joint_sigma(problem, base, ols)
        fitted = problem.weighted(sigma)
        ols = replace(ordinary_least_squares(fitted, base), unweighted=ols.sigma)
    pi_file = model_parameters(model, columns)
    prior = pi_file.copy()
    prior[known[0]] = known[1]  # the prior holds the known parameters
    if "gain" in columns.terms:  # the file has no gain: the prior is the data's estimate
        gains = term_columns(columns, "gain")
        prior[gains] = ols.full(base)[gains]
    try:
        fit = consistent_fit(fitted, prior, len(columns.bodies), ols.sigma,
                             settings["prior_weight"], settings["loss"],
                             settings["loss_scale"], signed=signed_columns(columns),
                             determined=base.rank, known=known)
    except ScaleTooSmall as error:
        raise UsageError(f"dyn: --loss-scale {error.scale:g}: far below the residuals' "
                         f"robust spread ({error.spread:.3g} N m): the log would weigh fewer "
                         f"equations than its {error.determined} base parameters and the fit "
                         f"keep the file's; give at least {error.least:.3g}") from None
    if drives.current or drives.known:
        settings.update(current=drives.current, known=dict(drives.known))
    for name in ("stribeck", "smooth"):
        if name in columns.terms:
            settings[f"{name}_velocity"] = getattr(columns.shape, f"{name}_velocity")
    return Identification(model, columns, problem, base, ols, fit, pi_file, settings, logs,
                          sigma)


def held_out(text: str) -> float | str:
    """``--validate``: a fraction of the states (0 to 0.9), or else a log's file name."""
    try:
        fraction = float(text)
    except ValueError:
        return text
    if not 0.0 <= fraction <= 0.9:  # (nan too)
        raise UsageError(f"dyn: --validate {text}: not a fraction from 0 to 0.9 (nor a file)")
    return fraction


def check_kept(accumulator: Accumulator, name: str, loss: str, memory: int) -> None:
    """A usage error once a robust loss's kept rows pass ``memory`` bytes."""
    row_bytes = 8 * (accumulator.size + 1) * accumulator.nv
    if accumulator.keep_rows and accumulator.counts[0] * row_bytes > memory:
        raise UsageError(f"{name}: --loss {loss} keeps every training row in memory: at most "
                         f"{memory // row_bytes} states on this model (or --loss linear, "
                         "which streams)")


def held_out_file(problem, rows: Rows, path, chunk: int, cutoff: float | None):
    """``problem`` with the held-out statistics of the log ``path`` (read as the inputs
    are: v and a estimated where it has only q and t), its Gram matrices per joint."""
    _, source = opened(rows.layout, path)
    aside = Accumulator(problem.size, problem.nv, validate=1.0)  # (every state held out)
    for Y, tau in log_rows(rows, source, chunk, cutoff):
        aside.add(Y, tau)
    return replace(problem, gram_validate=aside.gram[1], validate_states=aside.counts[1])


def as_sources(source) -> list:
    """One log or a sequence of them as a list; an empty sequence is a usage error."""
    if isinstance(source, (str, os.PathLike, Input)):
        return [source]
    sources = list(source)
    if not sources:
        raise UsageError("dyn: identify needs at least one log")
    return sources


def shares(source: Input, done: int, index: int, count: int) -> tuple:
    """(total, consumed) for a progress callback: one log's own, or of ``count`` logs
    the share read (this one, the ``index``-th, by its states or bytes)."""
    if count == 1:
        return source.total, source.consumed()
    part = done / source.total if source.total else source.consumed()
    return None, None if part is None else (index + min(part, 1.0)) / count


def expand_logs(patterns) -> list[str]:
    """The log files of ``patterns`` (each a file, ``"-"``, or a shell-style glob whose
    matches are sorted; a pattern matching nothing is a usage error), in the order given."""
    files: list[str] = []
    for pattern in patterns:
        files += expand(pattern)  # (a name without glob characters, "-" too, as given)
    if files.count("-") > 1:
        raise UsageError("dyn: --input -: stdin can be read once")
    return files


def log_rows(rows: Rows, source: Input, chunk: int, cutoff: float | None = None,
             record: list | None = None):
    """(Y (m, nv, P), the target (m, nv)) of each chunk of one log (``rows``); a log of
    positions only (q, tau and t) through :func:`.estimated.estimated` (``cutoff`` Hz, or
    its default; ``record`` gets how, a log of v and a gets None)."""
    model, size = rows.layout.model, rows.columns.size
    states_at_once = min(regressor_chunk(model, size, chunk),
                         max(8, FIT_BYTES // (8 * model.nv * size)))
    chunks = source.chunks(rows.layout, (*KINDS, TIME), {}, states_at_once)
    first = next(chunks, None)
    if first is None:
        return
    record = [] if record is None else record
    rest = itertools.chain([first], chunks)
    if wants_estimate(first):
        if model.nq != model.nv:
            raise UsageError(f"{source.name}: v and a are estimated from q only where every "
                             "coordinate is a dof's (this model's q has quaternions)")
        yield from estimated(source.name, rest, rows, size, cutoff, states_at_once, record)
        return
    record.append(None)
    for states in rest:
        check_log(source.name, states)
        yield rows(states)


def check_log(name: str, states) -> None:
    """A usage error unless the chunk holds tau, v and a (the fit needs every term)."""
    if states.tau is None:
        raise UsageError(f"{name}: the log has no tau: identification needs the measured "
                         "joint forces (arrays or columns tau)")
    if states.v is None or states.a is None:  # not a static fit of zeros
        missing = "v" if states.v is None else "a"
        raise UsageError(f"{name}: the log has no {missing}: identification needs q, v and "
                         f"a of every state (arrays or columns {missing}), or q and the "
                         "times t to estimate both from")
