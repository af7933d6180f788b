"""States per chunk of a stream: arithmetic of the model's size and a byte budget, so that
memory stays small whatever the model and the output format (the caller passes the most
it wants, ``TREEDYN_STREAM_CHUNK`` for ``dyn``); and how many samples or states a
diagnostic or a benchmark may hold at once (:data:`MEMORY`).

``condition``, ``verify`` and ``check-inertia`` hold all their samples in memory at once
(their statistics are over the whole set), and so does ``bench`` its batch
(:func:`treedyn.pipeline.bench.state_bytes`): what a user asks for is checked against
:data:`MEMORY` before anything is allocated, from estimates measured on the two-link arm
and talos (condition at 4 000 samples: 3.8 KB and 41 KB a sample; verify: 277 KB a sample
on talos), so that a billion samples is one line, not an out-of-memory kill.
``check-inertia`` past its dense threshold holds no M: its samples cost
:func:`sweep_bytes`, linear in the model.
"""
from __future__ import annotations

from math import prod

from .compute import Computation, computation_of
from .errors import UsageError
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
    """States per chunk of a state command's row (:mod:`.kinematics`, coriolis, centroidal,
    energy): ``chunk``, fewer when a chunk's work (the bodies' poses and spatial inertias,
    about 48 doubles per body and state; every dof's motion, 12 per dof) and its results
    with their temporaries (``shape`` per state, six times: C's products are nv x nv each)
    would pass :data:`WORK_BYTES`; down to one state, not :data:`RESULT_FLOOR`, since a
    state this large amortises the per-level work alone."""
    per_state = 8 * (48 * model.njoints + 12 * max(model.nv, 1) + 6 * prod(shape))
    return max(1, min(chunk, WORK_BYTES // per_state))


def regressor_chunk(model, parameters: int, chunk: int = CHUNK) -> int:
    """States per chunk of the regressor (nv x ``parameters`` rows a state): ``chunk``,
    fewer when a chunk's rows would pass :data:`ROW_BYTES`."""
    per_state = 8 * max(int(model.nv) * parameters, 1)
    return max(8, min(chunk, ROW_BYTES // per_state))


MEMORY = 4 << 30  # bytes one run may hold in samples or states


def sample_bytes(model, jacobians: bool = False) -> int:
    """Bytes a sample of a diagnostic holds: M and the articulated inertias, and for
    ``verify`` (``jacobians``) also the body Jacobians and the identities' terms."""
    nv, nj = int(model.nv), int(model.njoints)
    if jacobians:
        return 8 * (6 * nv * nv + 4 * 36 * nj + 4 * 6 * nj * nv) + 4096
    return 8 * (2 * nv * nv + 2 * 36 * nj) + 4096


def sweep_bytes(model) -> int:
    """Bytes a sample of ``check-inertia`` holds on a model past its dense threshold (M is
    never formed): per joint its transform, placement, two blocks and their overhead."""
    return 600 * int(model.njoints) + 48 * int(model.nv) + 4096


def check_bytes(model) -> int:
    """Bytes a sample of ``check-inertia`` holds: M's (:func:`sample_bytes`) where its
    body checks form M, else a sweep's (:func:`sweep_bytes`)."""
    from treedyn.engine.analysis.inertia import forms_mass_matrix

    return sample_bytes(model) if forms_mass_matrix(model) else sweep_bytes(model)


def diff_bytes(old, new) -> int:
    """Bytes a sample of ``diff`` holds: both models' M, their compared blocks and the
    changes, about four diagnostics' samples of each."""
    return 4 * (sample_bytes(old) + sample_bytes(new))


def refuse_search_past_memory(model, samples: int) -> None:
    """A usage error when ``statics`` from ``samples`` starts would hold more than
    :data:`MEMORY` at once (:func:`treedyn.engine.statics.search_bytes`: linear in the
    samples, quadratic in the joints a torque depends on): naming ``--samples`` when fewer
    would do, the model when even one sample is too many."""
    from treedyn.engine.statics import search_bytes

    need, base = search_bytes(model, samples), search_bytes(model, 0)
    each = search_bytes(model, 1) - base
    if base + each > MEMORY:
        raise UsageError(f"dyn: {model.source}: statics of this model would hold about "
                         f"{need / 2 ** 30:.3g} GiB at once ({model.nv} dofs), more than the "
                         f"{MEMORY / 2 ** 30:g} GiB a run may hold: it is too large for it")
    if need > MEMORY:
        raise UsageError(f"dyn: --samples {samples} would hold about {need / 2 ** 30:.3g} GiB "
                         f"at once, more than the {MEMORY / 2 ** 30:g} GiB a run may hold; "
                         f"at most {(MEMORY - base) // each} on this model")


def refuse_past_memory(count: int, each: int, option: str) -> None:
    """A usage error when ``count`` items of ``each`` bytes pass :data:`MEMORY`."""
    if count * each > MEMORY and each > MEMORY:  # not even one (M of a large model)
        raise UsageError(f"dyn: {option} {count} would hold about "
                         f"{count * each / 2 ** 30:.3g} GiB at once, and even one more than "
                         f"the {MEMORY / 2 ** 30:g} GiB a run may hold: this model is too "
                         "large for it (M alone is nv x nv)")
    if count * each > MEMORY:
        raise UsageError(f"dyn: {option} {count} would hold about "
                         f"{count * each / 2 ** 30:.3g} GiB at once; at most "
                         f"{MEMORY // each} on this model")
