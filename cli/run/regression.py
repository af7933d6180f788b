"""``dyn regressor`` and ``dyn identify`` run to their end: a log's states streamed through
the existing ``--input`` readers (:class:`treedyn.pipeline.source.Input`), a chunk at a
time, into the regressor's sink or the identification's accumulator; memory is one chunk
plus the accumulated statistics, whatever the number of states.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treedyn.engine import Model, external_forces, rnea
from treedyn.engine.analysis.consistent import consistent_fit
from treedyn.engine.analysis.identify import Accumulator, base_parameters, ordinary_least_squares
from treedyn.engine.analysis.identify_report import Identification
from treedyn.engine.batch.regressor import regressor
from treedyn.engine.regressor import Layout as Columns
from treedyn.engine.regressor import layout_of, model_parameters

from ..console import warn
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from treedyn.pipeline.paths import same_file
from treedyn.pipeline.sinks import JsonSink, NpzSink, npz_extra
from treedyn.pipeline.source import Input
from ..settings import STREAM_CHUNK
from .budget import MEMORY
from .progress import Progress, wanted
from treedyn.pipeline.outputs import open_target, output_format
from treedyn.pipeline.stream import stopped

CHUNK_BYTES = 32 << 20  # a chunk's regressor rows stay about this size
KINDS = ("q", "v", "a", "tau")


def states_per_chunk(model: Model, columns: Columns) -> int:
    """States per chunk: the stream's STREAM_CHUNK, fewer when (nv x P) rows would pass CHUNK_BYTES."""
    per_state = 8 * max(model.nv * columns.size, 1)
    return max(8, min(STREAM_CHUNK, CHUNK_BYTES // per_state))


def chunk_regressor(layout: Layout, columns: Columns, states, gravity) -> np.ndarray:
    """Y (m, nv, P) of a chunk; a state whose rows are not finite is an error naming it."""
    with np.errstate(all="ignore"):
        Y = regressor(layout.model, states.q, states.v, states.a, gravity, columns.terms)
    finite = np.isfinite(Y.reshape(len(Y), -1)).all(axis=1)
    if not finite.all():
        raise UsageError(f"{states.where(int(np.argmin(finite)))}: the regressor is not "
                         "finite here (it overflows)")
    return Y


def known_torques(layout: Layout, columns: Columns, states, gravity) -> np.ndarray:
    """The part of the logged tau the parameters do not explain (m, nv): the file's
    armature a when armature is not identified, and the external forces' -J^T f."""
    model = layout.model
    known = np.zeros((states.count, model.nv))
    if "armature" not in columns.terms and states.a is not None and np.any(model.armature):
        known += model.armature * states.a
    if states.wrenches:
        with np.errstate(all="ignore"):
            fext = external_forces(model, states.wrenches, states.count)
            known += (rnea(model, states.q, states.v, states.a, fext, gravity)
                      - rnea(model, states.q, states.v, states.a, None, gravity))
    return known


# ---------------------------------------------------------------------------- regressor
@dataclass
class RegressorRequest:
    layout: Layout
    terms: tuple
    input: str
    output: str | None
    gravity: np.ndarray | None
    quiet: bool = False


def write_regressor(request: RegressorRequest) -> int:
    """Stream Y of every state of the input into the output (.npz, or JSON Lines on
    stdout or to a .jsonl); the number of states written."""
    layout = request.layout
    columns = layout_of(layout.model, request.terms)
    extra = npz_extra(layout.v_labels)
    extra["parameters"] = np.array(columns.names, dtype=str)
    extra["pi"] = model_parameters(layout.model, columns)
    source = Input.open(request.input)
    sink = _regressor_sink(request, layout, columns, extra)
    if isinstance(sink, NpzSink):
        sink.total = lambda: source.total
    progress = Progress(wanted(request.quiet, results_on_stdout=request.output is None))
    warned = False
    try:
        for states in source.chunks(layout, KINDS[:3], {}, states_per_chunk(layout.model, columns)):
            if states.wrenches and not warned:
                warn(f"{request.input}: its external forces do not enter the regressor "
                     "(tau + sum J^T f_ext = Y pi): not used")
                warned = True
            sink.put(chunk_regressor(layout, columns, states, request.gravity), states)
            progress.advance(states.count, source.total, source.consumed())
        progress.close()
        sink.close()
    except BaseException as error:
        progress.close()
        raise stopped(sink, error) from None
    return sink.count


def _regressor_sink(request: RegressorRequest, layout: Layout, columns: Columns, extra: dict):
    if request.output is not None and same_file(request.input, request.output):
        raise UsageError(f"dyn: --output {request.output} is the input file; write to "
                         "another file")
    kind = "json" if request.output is None else output_format(request.output, None)
    if kind not in ("npz", "json"):
        raise UsageError(f"{request.output}: the regressor is written as .npz (arrays Y, "
                         f"parameters, pi, dofs) or JSON Lines (.jsonl), not {kind}")
    import sys

    stream, temporary, existed = ((sys.stdout, None, False) if request.output is None
                                  else open_target(request.output, kind == "npz"))
    if kind == "npz":
        sink = NpzSink(stream, "Y", (layout.model.nv, columns.size), extra, request.output)
    else:
        sink = JsonSink(stream, "Y", None, request.output)
    sink.temporary, sink.existed = temporary, existed
    return sink


# ----------------------------------------------------------------------------- identify
@dataclass
class IdentifyRequest:
    layout: Layout
    terms: tuple
    input: str
    gravity: np.ndarray | None
    validate: float
    prior_weight: float
    loss: str
    loss_scale: float | None
    tolerance: float
    quiet: bool = False


def identify(request: IdentifyRequest) -> Identification:
    """Accumulate the log, then the base parameters, OLS and the consistent fit."""
    layout, model = request.layout, request.layout.model
    columns = layout_of(model, request.terms)
    robust = request.loss != "linear"
    accumulator = Accumulator(columns.size, model.nv, request.validate, keep_rows=robust)
    source = Input.open(request.input)
    progress = Progress(wanted(request.quiet, results_on_stdout=True))
    row_bytes = 8 * (columns.size + 1) * model.nv
    try:
        for states in source.chunks(layout, KINDS, {}, states_per_chunk(model, columns)):
            if states.tau is None:
                raise UsageError(f"{request.input}: the log has no tau: identification "
                                 "needs the measured joint forces (arrays or columns tau)")
            if states.v is None or states.a is None:  # not a static fit of zeros
                missing = "v" if states.v is None else "a"
                raise UsageError(f"{request.input}: the log has no {missing}: identification "
                                 "needs q, v and a of every state (arrays or columns "
                                 f"{missing}; they are not estimated from q)")
            Y = chunk_regressor(layout, columns, states, request.gravity)
            tau = states.tau - known_torques(layout, columns, states, request.gravity)
            accumulator.add(Y, tau)
            if robust and accumulator.counts[0] * row_bytes > MEMORY:
                raise UsageError(f"{request.input}: --loss {request.loss} keeps every "
                                 f"training row in memory: at most {MEMORY // row_bytes} "
                                 "states on this model (or --loss linear, which streams)")
            progress.advance(states.count, source.total, source.consumed())
    finally:
        progress.close()
    problem = accumulator.finish()
    if problem.states == 0:
        raise UsageError(f"{request.input}: no states to fit"
                         + (" (all are held out: lower --validate)" if accumulator.seen else ""))
    base = base_parameters(problem, request.tolerance)
    ols = ordinary_least_squares(problem, base)
    pi_file = model_parameters(model, columns)
    fit = consistent_fit(problem, pi_file, len(columns.bodies), ols.sigma, request.prior_weight,
                         request.loss, request.loss_scale)
    settings = {"terms": list(columns.terms), "validate": request.validate,
                "prior_weight": request.prior_weight, "loss": request.loss,
                "loss_scale": request.loss_scale, "tolerance": request.tolerance}
    return Identification(model, columns, problem, base, ols, fit, pi_file, settings)
