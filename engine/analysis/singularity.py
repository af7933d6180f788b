"""Why forward dynamics has no finite answer at a configuration.

ABA divides by each joint's articulated inertia D = Sᵀ IA S. Where D is not positive
definite the joint moves no mass or inertia of its own (a massless leaf, a free root
without a body), and M(q) is singular; otherwise a non-finite result overflowed.
"""
from __future__ import annotations

import numpy as np

from ..crba import crba
from ..reference import articulated_blocks


def singular_joints(model, q: np.ndarray) -> list[str]:
    """Names of the joints whose ABA D-block is not positive definite at ``q`` (nq,):
    relative to the largest finite block, an eigenvalue at or under 1e-12 of it."""
    with np.errstate(all="ignore"):
        blocks = articulated_blocks(model, q[None])
    scale = max((float(np.abs(b).max()) for b in blocks if b.size and np.isfinite(b).all()),
                default=1.0)
    return [model.joint_names[j] for j, block in enumerate(blocks) if block.size and not (
        np.isfinite(block).all() and np.linalg.eigvalsh(block[0])[0] > 1e-12 * scale)]


def mass_matrix_singular(model, q: np.ndarray) -> bool:
    """Whether M(q) is not positive definite, or not finite."""
    M = crba(model, q)
    try:
        np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        return True
    return not np.isfinite(M).all()
