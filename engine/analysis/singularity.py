"""Why forward dynamics has no finite answer at a configuration, and which states have a
singular mass matrix.

ABA divides by each joint's articulated inertia D = Sᵀ IA S. Where D is not positive
definite the joint moves no mass or inertia of its own (a massless leaf, a free root
without a body), and M(q) is singular; otherwise a non-finite result overflowed.

M(q) can also be singular with every D-block finite and positive in exact arithmetic
rounding to noise: two joints whose motions coincide with nothing massive between them
(a ring on its own axis, on a massless floating base: the base's rotation about that axis
and the ring's joint are one motion). Such a state is told by the pivots of M's
tree-ordered L^T D L factor (:func:`treedyn.engine.factor.singular_pivots`: at or below
nv eps times M's largest diagonal entry), and the joints by M's null direction.

That can only happen where a body lacks mass or rotational inertia along some direction
and its joint has no armature: when every moving body has a positive definite inertia (or
its joint positive armature), M is positive definite at every q (the topmost joint that
moves in a direction of zero kinetic energy would move its own body).
:func:`may_be_singular` tells the models whose states need the check.
"""
from __future__ import annotations

import numpy as np

from ..crba import crba
from ..factor import ltdl, singular_pivots
from ..reference import articulated_blocks

RELATIVE = 1e-9  # a body's smallest inertia, or an armature, below this of the largest


def singular_joints(model, q: np.ndarray) -> list[str]:
    """Names of the joints whose ABA D-block is not positive definite at ``q`` (nq,):
    relative to the largest finite block, an eigenvalue at or under 1e-12 of it."""
    with np.errstate(all="ignore"):
        blocks = articulated_blocks(model, q[None])
    scale = max((float(np.abs(b).max()) for b in blocks if b.size and np.isfinite(b).all()),
                default=1.0)
    return [model.joint_names[j] for j, block in enumerate(blocks) if block.size and not (
        np.isfinite(block).all() and np.linalg.eigvalsh(block[0])[0] > 1e-12 * scale)]


def may_be_singular(model) -> bool:
    """Whether M(q) can be singular somewhere: a moving body whose mass, or smallest
    rotational inertia about its com, is at or below RELATIVE times the largest body's,
    on a joint without positive armature on every dof (module doc). Cheap: per body."""
    full = model.coupling.full if model.coupling is not None else model
    if full.njoints == 0:
        return False
    with np.errstate(invalid="ignore"):
        moments = np.linalg.eigvalsh(full.body_rotational_inertia)  # (nj, 3) ascending
    if not (np.isfinite(moments).all() and np.isfinite(full.body_mass).all()):
        return True
    mass_scale = RELATIVE * max(float(full.body_mass.max()), 0.0)
    scale = RELATIVE * max(float(moments[:, -1].max()), 0.0)
    for j in range(full.njoints):
        if full.body_mass[j] > mass_scale and moments[j, 0] > scale:
            continue
        dofs = slice(full.idx_v[j], full.idx_v[j] + full.nv_joint[j])
        if model.coupling is None and full.nv_joint[j] and np.all(full.armature[dofs] > scale):
            continue
        return True
    return False


def singular_matrices(model, M: np.ndarray) -> np.ndarray:
    """(N,) bool: the mass matrices M (N, nv, nv) that are singular in double precision
    (a pivot of their L^T D L factor at or below nv eps max_j M_jj, or not finite). In tree
    order; a coupled model's M (mimic joints, no tree order) is factored densely."""
    if M.shape[-1] == 0:
        return np.zeros(len(M), dtype=bool)
    parents = (np.arange(M.shape[-1]) - 1 if model.coupling is not None
               else model.dof_parent)
    with np.errstate(all="ignore"):
        pivots = singular_pivots(ltdl(parents, M), M)
    return pivots.any(axis=-1) | ~np.isfinite(M).all(axis=(-2, -1))


BLOCK = 1024  # states whose M are formed at once by singular_states


def singular_states(model, q: np.ndarray) -> np.ndarray:
    """(N,) bool: the states q (N, nq) whose M(q) is singular in double precision
    (:func:`singular_matrices`), M formed for BLOCK states at a time."""
    singular = np.zeros(len(q), dtype=bool)
    with np.errstate(all="ignore"):
        for start in range(0, len(q), BLOCK):
            M = crba(model, q[start:start + BLOCK])  # (B, nv, nv)
            singular[start:start + BLOCK] = singular_matrices(model, M)
    return singular


def indefinite(M: np.ndarray) -> bool:
    """Whether one M (nv, nv) has an eigenvalue below -nv eps max_j M_jj: a negative mass
    or inertia, not a singularity from rounding."""
    scale = float(np.abs(np.diagonal(M)).max(initial=0.0))
    return bool(np.linalg.eigvalsh(M)[0] < -len(M) * np.finfo(float).eps * scale)


def null_direction(M: np.ndarray) -> np.ndarray:
    """The direction (nv,) that a singular M (nv, nv) does not resist, largest component
    +-1: the eigenvector of the smallest eigenvalue of M scaled to a unit diagonal (so that
    dofs of different units weigh alike), scaled back."""
    diagonal = np.diagonal(M).copy()
    scale = 1.0 / np.sqrt(np.where(diagonal > 0, diagonal, 1.0))
    _, vectors = np.linalg.eigh(M * scale[:, None] * scale[None, :])
    x = vectors[:, 0] * scale
    return x / x[np.argmax(np.abs(x))]


def coinciding_joints(model, M: np.ndarray, share: float = 0.05) -> list[str]:
    """The joints that move in M's null direction (:func:`null_direction`), largest part
    first: those whose largest component there is at least ``share`` of the largest."""
    x = np.abs(null_direction(M))
    dof_joint = _dof_joints(model)
    parts = {}
    for dof, size in enumerate(x):
        name = dof_joint[dof]
        parts[name] = max(parts.get(name, 0.0), float(size))
    return [name for name, size in sorted(parts.items(), key=lambda item: -item[1])
            if size >= share]


def _dof_joints(model) -> list[str]:
    """The joint of each dof (nv,): a coupled model's dofs are its masters'."""
    names = [""] * model.nv
    for j, name in enumerate(model.joint_names):
        for k in range(model.nv_joint[j]):
            names[model.idx_v[j] + k] = name
    return names

