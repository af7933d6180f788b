"""Conditioning of the mass matrix: cond(M) over configurations, and where it comes from.

Conventions
-----------
* ``cond(M) = lambda_max / lambda_min`` of the symmetric M(q) (CRBA, armature included),
  mixing the units of the dofs as they are (rad and m); inf when M is singular.
* ABA's local D-block of joint ``i`` is ``D_i = S_i^T IA_i S_i + armature_i`` with
  ``IA_i`` the articulated inertia of body ``i`` (its subtree with every descendant joint
  free), in body ``i``'s frame: the block ABA inverts. For 1-dof joints it equals the
  pivot of the tree-ordered L^T D L factor (:mod:`treedyn.engine.factor`; the blocks are
  :func:`treedyn.engine.reference.articulated_blocks`). Since
  ``lambda_min(M) <= lambda_min(D_i)``, a small ratio ``lambda_min(D_i) / lambda_max(M)``
  proves ``cond(M) >= 1 / ratio`` and names the joint responsible.
* M is *singular* at a configuration when a pivot of its tree-ordered L^T D L factor is
  at or below nv eps times its largest diagonal entry
  (:func:`treedyn.engine.analysis.singularity.singular_matrices`), checked on the models
  where that can happen (:func:`~treedyn.engine.analysis.singularity.may_be_singular`);
  cond(M) is inf there, and the joints of M's null direction are named: their motions
  coincide with nothing massive between them.
* An M that is not finite (a length, mass or inertia that overflows) is
  :class:`NotFinite`, not a report.
* Everything is batched over a leading N of configurations.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..crba import crba
from ..model import Model
from ..reference import articulated_blocks
from ..samples import sample_configurations
from .singularity import coinciding_joints, indefinite, may_be_singular, singular_matrices
from .spectra import condition_numbers, mass_matrix_eigenvalues


class NotFinite(ValueError):
    """M(q) is not finite at configuration ``sample`` (it overflows)."""

    def __init__(self, sample: int):
        super().__init__(f"M(q) is not finite at configuration {sample} (it overflows)")
        self.sample = sample


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
    singular: np.ndarray | None = None  # (N,) bool: M singular in double precision there
    coinciding: tuple[str, ...] = ()  # joints of M's null direction at the worst sample

    @property
    def singular_count(self) -> int:
        return 0 if self.singular is None else int(self.singular.sum())


def analyze(model: Model, options: ConditionOptions = ConditionOptions(),
            q: np.ndarray | None = None) -> ConditionReport:
    """cond(M) over sampled configurations (or the given q (N, nq)), D-blocks, mass ratios."""
    q = sample_configurations(model, options.samples, options.seed) if q is None else q
    with np.errstate(all="ignore"):
        M = crba(model, q).reshape(len(q), model.nv, model.nv)
    finite = np.isfinite(M).all(axis=(1, 2))
    if not finite.all():
        raise NotFinite(int(np.argmin(finite)))
    eigenvalues, weakest = mass_matrix_eigenvalues(M)
    singular = (singular_matrices(model, M) if may_be_singular(model)
                else np.zeros(len(q), dtype=bool))
    cond = np.where(singular, np.inf, condition_numbers(eigenvalues))
    worst = int(np.argmax(np.where(np.isnan(cond), np.inf, cond)))
    negative = bool(singular[worst]) and indefinite(M[worst])
    coinciding = (tuple(coinciding_joints(model, M[worst])) if singular[worst] and not negative
                  else ())
    blocks = tuple(_joint_blocks(model, q, eigenvalues[:, -1]))
    ratios = tuple(mass_ratios(model))
    # at a singular M, the singular warning replaces the one of its cond(M) = inf
    warnings = _warnings(0.0 if singular[worst] else cond[worst], blocks, ratios, options)
    if singular.any():
        warnings = (_singular_warning(singular, worst, coinciding, negative),) + warnings
    return ConditionReport(q, eigenvalues, cond, worst, weakest[worst], blocks, ratios, warnings,
                           singular, coinciding)


def _singular_warning(singular: np.ndarray, worst: int, joints: tuple[str, ...],
                      negative: bool) -> str:
    if negative:
        where = f"not even positive semi-definite at sample {worst} (a negative mass or inertia?)"
    elif len(joints) > 1:
        where = f"the motions of joints {', '.join(joints)} coincide there (sample {worst})"
    else:
        where = f"joint {joints[0]} moves no inertia there (sample {worst})" if joints else ""
    return (f"M is singular at {int(singular.sum())} of {len(singular)} configurations"
            f"{': ' + where if where else ''}; forward dynamics has no answer there")


def _joint_blocks(model: Model, q: np.ndarray, largest: np.ndarray) -> list[JointBlock]:
    result = []
    for j, D in enumerate(articulated_blocks(model, q)):
        values = np.linalg.eigvalsh(D)  # (N, k)
        low = values[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(largest > 0, low / largest, 0.0)
        result.append(JointBlock(model.joint_names[j], float(low.min()), float(ratio.min()),
                                 float(condition_numbers(values).max())))
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
