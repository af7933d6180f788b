"""How many samples or states a diagnostic or ``dyn bench`` may hold at once.

``condition``, ``verify`` and ``check-inertia`` hold all their samples in memory at once
(their statistics are over the whole set), and so does ``bench`` its batch
(:func:`treedyn.pipeline.bench.state_bytes`): what a user types is checked against
:data:`MEMORY` before anything is allocated, from estimates measured on the two-link arm
and talos (condition at 4 000 samples: 3.8 KB and 41 KB a sample; verify: 277 KB a sample
on talos), so that ``--samples 1000000000`` is one line, not an out-of-memory kill.
``check-inertia`` past its dense threshold holds no M: its samples cost
:func:`sweep_bytes`, linear in the model.
"""
from __future__ import annotations

from treedyn.pipeline.errors import UsageError

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
