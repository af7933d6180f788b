"""States per chunk of a stream: arithmetic of the model's size and a byte budget, so that
memory stays small whatever the model and the output format (the caller passes the most
it wants, ``TREEDYN_STREAM_CHUNK`` for ``dyn``)."""
from __future__ import annotations

from math import prod

from .compute import Computation, computation_of
from .source import CHUNK

RESULT_BYTES = 8 << 20  # a chunk's results stay about this size ...
RESULT_FLOOR = 32  # ... but hold at least this many states: the engine's per-level work is
# amortised over the states of a chunk
ROW_BYTES = 32 << 20  # a chunk's regressor rows stay about this size (at least 8 states)


def computation_chunk(command: str | Computation, model, chunk: int = CHUNK) -> int:
    """States per chunk of ``command`` (a name of ``COMPUTATIONS``, or a row): ``chunk``,
    fewer when a chunk's results would pass :data:`RESULT_BYTES` (mass matrices of large
    models)."""
    per_state = 8 * prod(computation_of(command).shape(max(int(model.nv), 1)))
    return min(chunk, max(RESULT_FLOOR, RESULT_BYTES // per_state))


WORK_BYTES = 64 << 20  # a chunk's work arrays (poses, motions, results) stay about this size


def kinematics_chunk(model, shape: tuple[int, ...], chunk: int = CHUNK) -> int:
    """States per chunk of a named frame's row (:mod:`.kinematics`): ``chunk``, fewer when
    a chunk's work (the bodies' poses, 12 doubles per body and state, twice; every dof's
    motion, 6 per dof, twice) and its results (``shape`` per state, twice) would pass
    :data:`WORK_BYTES`."""
    per_state = 8 * (24 * model.njoints + 12 * max(model.nv, 1) + 2 * prod(shape))
    return max(RESULT_FLOOR, min(chunk, WORK_BYTES // per_state))


def regressor_chunk(model, parameters: int, chunk: int = CHUNK) -> int:
    """States per chunk of the regressor (nv x ``parameters`` rows a state): ``chunk``,
    fewer when a chunk's rows would pass :data:`ROW_BYTES`."""
    per_state = 8 * max(int(model.nv) * parameters, 1)
    return max(8, min(chunk, ROW_BYTES // per_state))
