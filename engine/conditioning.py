"""Conditioning of the mass matrix: cond(M) over configurations, and where it comes from.

Conventions
-----------
* ``cond(M) = lambda_max / lambda_min`` of the symmetric M(q) (CRBA, armature included),
  mixing the units of the dofs as they are (rad and m); inf when M is singular.
* ABA's local D-block of joint ``i`` is ``D_i = S_i^T IA_i S_i + armature_i`` with
  ``IA_i`` the articulated inertia of body ``i`` (its subtree with every descendant joint
  free), in body ``i``'s frame: the block ABA inverts. For 1-dof joints it equals the
  pivot of the tree-ordered L^T D L factor (:mod:`treedyn.engine.factor`). Since
  ``lambda_min(M) <= lambda_min(D_i)``, a small ratio ``lambda_min(D_i) / lambda_max(M)``
  proves ``cond(M) >= 1 / ratio`` and names the joint responsible.
* Everything is batched over a leading N of configurations.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .crba import crba
from .model import Model
from .spatial import inertia_to_parent
from .state import joint_transforms, states


def articulated_blocks(model: Model, q) -> list[np.ndarray]:
    """ABA's D-blocks, one (N, k, k) array per joint (k = the joint's nv), for q (N, nq).

    A singular block (a joint that moves no inertia) is passed on to the parent with a
    pseudo-inverse, so the other blocks stay finite.
    """
    batch, q = states(model, q)[:2]
    Xup = joint_transforms(model, q)
    IA = np.repeat(model.body_inertia[None], batch.count, axis=0)  # (N, nj, 6, 6)
    blocks: list[np.ndarray] = [np.zeros(0)] * model.njoints
    for i in reversed(range(model.njoints)):
        dofs = slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i])
        S = Xup.S[i]
        U = IA[:, i] @ S  # (N, 6, k)
        blocks[i] = np.swapaxes(S, -1, -2) @ U + np.diag(model.armature[dofs])
        p = model.parent[i]
        if p >= 0:
            reduced = IA[:, i] - U @ np.linalg.pinv(blocks[i]) @ np.swapaxes(U, 1, 2)
            IA[:, p] += inertia_to_parent(Xup.E[i], Xup.r[i], reduced)
    return blocks


EIGEN_BLOCK_BYTES = 64 << 20  # the eigenvectors computed at once stay under this


def mass_matrix_eigenvalues(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues ascending (N, nv), unit eigenvector of the smallest one (N, nv)) of
    symmetric M (N, nv, nv).

    ``numpy.linalg.eigh`` runs over a block of matrices at a time (one LAPACK call per
    matrix either way) and only the smallest eigenvalue's vector of each is kept: all of
    them would be another N x nv x nv array, 800 MB for 100 samples of 1000 dofs.
    """
    count, nv = M.shape[0], M.shape[-1]
    eigenvalues, weakest = np.empty((count, nv)), np.empty((count, nv))
    step = max(1, EIGEN_BLOCK_BYTES // (8 * max(nv, 1) ** 2))
    for start in range(0, count, step):
        values, vectors = np.linalg.eigh(M[start:start + step])
        eigenvalues[start:start + step] = values
        weakest[start:start + step] = vectors[..., 0]
    return eigenvalues, weakest


def condition_numbers(eigenvalues: np.ndarray) -> np.ndarray:
    """lambda_max / lambda_min per row of ascending eigenvalues; inf when not positive."""
    low, high = eigenvalues[..., 0], eigenvalues[..., -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(low > 0, high / np.where(low > 0, low, 1.0), np.inf)


@dataclass(frozen=True)
class ConditionOptions:
    """Sampling and the thresholds above (or below) which a warning is raised."""

    samples: int = 100
    seed: int = 0
    max_cond: float = 1e8
    max_mass_ratio: float = 1e3
    min_block_ratio: float = 1e-8


@dataclass(frozen=True)
class JointBlock:
    """ABA's D-block of one joint over the samples (worst values)."""

    joint: str
    d_min: float  # smallest eigenvalue of D over the samples
    ratio: float  # min over samples of lambda_min(D) / lambda_max(M): cond(M) >= 1 / ratio
    d_cond: float  # largest cond(D) over the samples (1 for 1-dof joints)


@dataclass(frozen=True)
class MassRatio:
    """Masses of a parent body and its child (both moving bodies of the compact tree)."""

    parent: str
    child: str
    parent_mass: float
    child_mass: float

    @property
    def ratio(self) -> float:
        """max(parent/child, child/parent); inf when exactly one of them is massless."""
        small = min(self.parent_mass, self.child_mass)
        large = max(self.parent_mass, self.child_mass)
        if large <= 0.0:
            return 1.0
        return large / small if small > 0.0 else np.inf


@dataclass(frozen=True)
class ConditionReport:
    q: np.ndarray  # (N, nq) the sampled configurations (the neutral one first)
    eigenvalues: np.ndarray  # (N, nv) ascending
    cond: np.ndarray  # (N,)
    worst: int  # index of the sample with the largest cond(M)
    weakest: np.ndarray  # (nv,) unit eigenvector of lambda_min at the worst sample
    blocks: tuple[JointBlock, ...]
    mass_ratios: tuple[MassRatio, ...]
    warnings: tuple[str, ...]


def sample_configurations(model: Model, samples: int, seed: int) -> np.ndarray:
    """(samples, nq): the neutral configuration, then random ones within the limits."""
    rng = np.random.default_rng(seed)
    random = model.random_configuration(rng, max(samples - 1, 0))
    return np.vstack([model.q_neutral[None], random])[:max(samples, 1)]


def analyze(model: Model, options: ConditionOptions = ConditionOptions(),
            q: np.ndarray | None = None) -> ConditionReport:
    """cond(M) over sampled configurations (or the given q (N, nq)), D-blocks, mass ratios."""
    q = sample_configurations(model, options.samples, options.seed) if q is None else q
    M = crba(model, q).reshape(len(q), model.nv, model.nv)
    eigenvalues, weakest = mass_matrix_eigenvalues(M)
    cond = condition_numbers(eigenvalues)
    worst = int(np.argmax(np.where(np.isnan(cond), np.inf, cond)))
    blocks = tuple(_joint_blocks(model, q, eigenvalues[:, -1]))
    ratios = tuple(mass_ratios(model))
    warnings = _warnings(cond[worst], blocks, ratios, options)
    return ConditionReport(q, eigenvalues, cond, worst, weakest[worst], blocks, ratios, warnings)


def _joint_blocks(model: Model, q: np.ndarray, largest: np.ndarray) -> list[JointBlock]:
    result = []
    for j, D in enumerate(articulated_blocks(model, q)):
        values = np.linalg.eigvalsh(D)  # (N, k)
        low, high = values[:, 0], values[:, -1]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(largest > 0, low / largest, 0.0)
            d_cond = np.where(low > 0, high / np.where(low > 0, low, 1.0), np.inf)
        result.append(JointBlock(model.joint_names[j], float(low.min()), float(ratio.min()),
                                 float(d_cond.max())))
    return result


def mass_ratios(model: Model) -> list[MassRatio]:
    """Parent/child mass pairs of the moving bodies, largest ratio first.

    Bodies are the file's (:attr:`Model.bodies`): the joints of an MJCF body with several
    joints are one body, not a chain of massless ones.
    """
    mass = {body.name: float(model.body_mass[list(body.joints)].sum()) for body in model.bodies}
    pairs = []
    for body in model.bodies:
        parent = model.parent[body.joints[0]]
        if parent >= 0:
            above = model.body_names[parent]
            pairs.append(MassRatio(above, body.name, mass[above], mass[body.name]))
    return sorted(pairs, key=lambda pair: -pair.ratio)


def _warnings(worst_cond: float, blocks, ratios, options: ConditionOptions) -> tuple[str, ...]:
    warnings = []
    if not worst_cond <= options.max_cond:
        warnings.append(f"cond(M) reaches {worst_cond:.3g} (threshold {options.max_cond:.3g})")
    for block in blocks:
        if block.ratio < options.min_block_ratio:
            warnings.append(f"joint {block.joint}: its articulated inertia is "
                            f"{block.ratio:.3g} of lambda_max(M) (threshold "
                            f"{options.min_block_ratio:.3g}), so cond(M) >= "
                            f"{_inverse(block.ratio):.3g}")
    for pair in ratios:
        if pair.ratio > options.max_mass_ratio:
            warnings.append(f"bodies {pair.parent} -> {pair.child}: mass ratio "
                            f"{pair.ratio:.3g} ({pair.parent_mass:.3g} kg / "
                            f"{pair.child_mass:.3g} kg; threshold {options.max_mass_ratio:.3g})")
    return tuple(warnings)


def _inverse(value: float) -> float:
    return np.inf if value <= 0 else 1.0 / value
