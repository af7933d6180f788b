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
from dataclasses import replace

import numpy as np

from treedyn.engine import Model, external_forces, joint_torque_regressor
from treedyn.engine.analysis.consistent import LOSSES, consistent_fit
from treedyn.engine.analysis.identify import (Accumulator, UnfitLog, base_parameters,
                                              joint_sigma, known_torques,
                                              ordinary_least_squares)
from treedyn.engine.analysis.identify_report import Identification
from treedyn.engine.regressor import Layout as Columns
from treedyn.engine.regressor import layout_of, model_parameters

from .chunks import regressor_chunk
from .estimated import estimated, wants_estimate
from .heap import for_many_states
from .cluster import expand
from .errors import UsageError, warn
from .layout import TIME, Layout
from .outputs import open_target, output_format
from .paths import same_file
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
                                   columns.terms)
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
def write_regressor(model: Model | Layout, source: Input | str | os.PathLike,
                    sink: Sink | str | os.PathLike | None = None, terms=(), gravity=None,
                    chunk: int = CHUNK, progress: Progress | None = None) -> Sink:
    """Y of every state of ``source`` (q, v, a; any input format) into ``sink``: a
    :class:`~.sinks.Sink`, an .npz path (arrays Y (N x nv x P), parameters, pi, dofs), a
    .jsonl path, or None for JSON Lines on stdout. ``terms``: the per-joint columns
    ("armature", "viscous", "coulomb"); ``progress`` as for :func:`.stream.run`. Returns
    the closed sink; an interrupted or failed run keeps what :func:`.stream.stopped` says."""
    layout, source = opened(model, source)
    columns = layout_of(layout.model, terms)
    if not isinstance(sink, Sink):
        sink = regressor_sink(None if sink is None else os.fspath(sink), layout, columns,
                              "-" if source.name == STDIN else source.name)
    if isinstance(sink, NpzSink):
        sink.total = lambda: source.total
    warned = False
    try:
        for states in source.chunks(layout, KINDS[:3], {},
                                    regressor_chunk(layout.model, columns.size, chunk)):
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


def regressor_sink(path: str | None, layout: Layout, columns: Columns,
                   input_name: str | None = None) -> Sink:
    """The regressor's sink: an .npz or a .jsonl file at ``path`` (not the input file
    ``input_name``, ``"-"``: stdin), or JSON Lines on stdout (``path`` None)."""
    if path is not None and input_name is not None and same_file(input_name, path):
        raise UsageError(f"dyn: --output {path} is the input file; write to another file")
    kind = "json" if path is None else output_format(path, None)
    if kind not in ("npz", "json"):
        raise UsageError(f"{path}: the regressor is written as .npz (arrays Y, "
                         f"parameters, pi, dofs) or JSON Lines (.jsonl), not {kind}")
    stream, temporary, existed = ((sys.stdout, None, False) if path is None
                                  else open_target(path, kind == "npz"))
    if kind == "npz":
        extra = npz_extra(layout.v_labels)
        extra["parameters"] = np.array(columns.names, dtype=str)
        extra["pi"] = model_parameters(layout.model, columns)
        sink = NpzSink(stream, "Y", (layout.model.nv, columns.size), extra, path)
    else:
        sink = JsonSink(stream, "Y", None, path)
    sink.temporary, sink.existed = temporary, existed
    return sink


# ----------------------------------------------------------------------------- identify
def identify_stream(model: Model | Layout, source, terms=(), gravity=None,
                    validate: float | str | os.PathLike = 0.0, prior_weight: float = 1.0,
                    loss: str = "linear", loss_scale: float | None = None,
                    tolerance: float = 1e-8, chunk: int = CHUNK,
                    progress: Progress | None = None, memory: int = MEMORY,
                    cutoff: float | None = None, weights: str = "auto") -> Identification:
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
    (IDIM-WLS; the consistent fit too), "none": not.
    A usage error (:class:`~.errors.UsageError`) naming the log when the logs determine
    nothing (:class:`~treedyn.engine.analysis.identify.UnfitLog`'s reason)."""
    if loss not in LOSSES:
        raise UsageError(f"dyn: --loss: unknown loss '{loss}' (known: {', '.join(LOSSES)})")
    layout = model if isinstance(model, Layout) else Layout.of(model)
    model = layout.model
    columns = layout_of(model, terms)
    sources = as_sources(source)
    held = None if isinstance(validate, (int, float)) else validate
    fraction = 0.0 if held is not None else float(validate)
    accumulator = Accumulator(columns.size, model.nv, fraction, keep_rows=loss != "linear")
    names, estimations = [], []
    with for_many_states(), ThreadPoolExecutor(1) as worker:  # (factoring beside regressor)
        for index, one in enumerate(sources):
            _, one = opened(layout, one)
            names.append(one.name)
            accumulator.next_file()
            pending, done = None, 0
            for Y, tau in log_rows(layout, columns, one, gravity, chunk, cutoff, estimations):
                if pending is not None:
                    pending.result()
                    check_kept(accumulator, one.name, loss, memory)
                pending = worker.submit(accumulator.add, Y, tau)
                done += len(Y)
                if progress is not None:
                    progress(len(Y), *shares(one, done, index, len(sources)))
            if pending is not None:
                pending.result()
                check_kept(accumulator, one.name, loss, memory)
    problem = accumulator.finish()
    if held is not None:
        problem = held_out_file(problem, layout, columns, held, gravity, chunk, cutoff)
    if problem.states == 0:
        raise UsageError(f"{names[0] if len(names) == 1 else 'the logs'}: no states to fit"
                         + (" (all are held out: lower --validate)" if accumulator.seen else ""))
    try:
        base = base_parameters(problem, tolerance)
    except UnfitLog as error:  # the log determines nothing: one line, not a fit
        raise UsageError(f"{names[0] if len(names) == 1 else 'the logs'}: {error}") from None
    ols = ordinary_least_squares(problem, base)
    sigma, fitted = None, problem
    if weights == "auto":
        sigma = joint_sigma(problem, base, ols)
        fitted = problem.weighted(sigma)
        ols = replace(ordinary_least_squares(fitted, base), unweighted=ols.sigma)
    elif weights != "none":
        raise UsageError(f"dyn: --weights: '{weights}' is not auto or none")
    pi_file = model_parameters(model, columns)
    fit = consistent_fit(fitted, pi_file, len(columns.bodies), ols.sigma, prior_weight,
                         loss, loss_scale)
    settings = {"terms": list(columns.terms),
                "validate": fraction if held is None else os.fspath(held),
                "prior_weight": prior_weight, "loss": loss, "loss_scale": loss_scale,
                "tolerance": tolerance, "cutoff": cutoff, "weights": weights}
    logs = [{"file": name, "estimated": None if how is None else how.document()}
            for name, how in zip(names, estimations)]
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


def held_out_file(problem, layout: Layout, columns: Columns, path, gravity, chunk: int,
                  cutoff: float | None):
    """``problem`` with the held-out statistics of the log ``path`` (read as the inputs
    are: v and a estimated where it has only q and t), its Gram matrices per joint."""
    _, source = opened(layout, path)
    gram, count = np.zeros_like(problem.gram_validate), 0
    for Y, tau in log_rows(layout, columns, source, gravity, chunk, cutoff):
        rows = np.concatenate([Y, tau[..., None]], axis=2).transpose(1, 0, 2)  # (nv, m, P+1)
        gram += np.swapaxes(rows, 1, 2) @ rows
        count += len(Y)
    return replace(problem, gram_validate=gram, validate_states=count)


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
        files += [pattern] if pattern == STDIN or pattern == "-" else expand(pattern)
    if files.count("-") > 1:
        raise UsageError("dyn: --input -: stdin can be read once")
    return files


def log_rows(layout: Layout, columns: Columns, source: Input, gravity, chunk: int,
             cutoff: float | None = None, record: list | None = None):
    """(Y (m, nv, P), tau (m, nv): what Y pi must fit) of each chunk of one log; a log of
    positions only (q, tau and t) through :func:`.estimated.estimated` (``cutoff`` Hz, or
    its default; ``record`` gets how, a log of v and a gets None)."""
    size = min(regressor_chunk(layout.model, columns.size, chunk),
               max(8, FIT_BYTES // (8 * layout.model.nv * columns.size)))
    chunks = source.chunks(layout, (*KINDS, TIME), {}, size)
    first = next(chunks, None)
    if first is None:
        return
    if record is None:
        record = []
    rest = itertools.chain([first], chunks)

    def rows(states):
        return (chunk_regressor(layout, columns, states, gravity),
                measured(layout, columns, states))

    if wants_estimate(first):
        if layout.model.nq != layout.model.nv:
            raise UsageError(f"{source.name}: v and a are estimated from q only where every "
                             "coordinate is a dof's (this model's q has quaternions)")
        yield from estimated(source.name, rest, rows, columns.size, cutoff, size, record)
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
