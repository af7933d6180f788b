"""Body checks on the compact tree, each a function of one body's data returning its
findings: ABA's articulated inertia (D-block) of every joint, the pseudo-inertia of bodies
merged from several massive links and the joints' limits; and :class:`Samples`, the M(q)
data they (and the mass of a moving body) read, computed once per run."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..crba import crba
from ..description import Inertia
from ..inertia_forms import spatial_pseudo_inertia
from ..model import Model
from ..reference import articulated_blocks
from ..samples import sample_configurations
from ..subtree import TreeSweeps, largest_eigenvalue_bounds
from .inertia import (CheckOptions, Finding, Inputs, LinkContext, finding,
                      forms_mass_matrix, noted)
from .inertia_link import one_numbers, pseudo_findings


class Body(NamedTuple):
    """A moving body: the joint ``j`` whose body it is (an MJCF body with several joints
    is one body per joint), its links in ``model.frames`` order and those with mass."""

    joint: int
    links: tuple[str, ...]
    massive: tuple[str, ...]


class Samples:
    """M(q) at the sampled configurations: formed below ``dense_dofs`` dofs, past it only
    its diagonal blocks, ABA's D-blocks and lambda_max (:mod:`treedyn.engine.subtree`).
    lambda_max(M) (:attr:`largest`), and with it :attr:`finite`, is computed on first use
    (the eigenvalues of every sample's M, past ``dense_dofs`` Lanczos at every sample),
    which :meth:`sure_passes` spares when an upper bound of it shows every D-block
    passing."""

    def __init__(self, model: Model, options: CheckOptions):
        self.model = model
        self.q = sample_configurations(model, options.samples, options.seed)
        self.dense = forms_mass_matrix(model, options.dense_dofs)
        with np.errstate(all="ignore"):
            if self.dense:
                self.M = crba(model, self.q).reshape(len(self.q), model.nv, model.nv)
                self._finite = bool(np.all(np.isfinite(self.M)))  # huge inertias overflow M
            else:  # linear in the model's size: M's diagonal blocks, lambda_max by Lanczos
                self.sweeps = TreeSweeps(model, self.q)
                self.composite, self.d_blocks = self.sweeps.blocks()
                self._finite = bool(np.isfinite(np.concatenate(  # all joints in one call
                    [C.reshape(-1) for C in self.composite] or [np.zeros(0)])).all())
        self._largest = self._blocks = self._minima = self._lowest = None

    @property
    def largest(self) -> np.ndarray:
        """lambda_max(M) at each sample (samples,); 0 without dofs or where M overflows."""
        if self._largest is None:
            largest = np.zeros(len(self.q))
            if self.model.nv and self._finite and self.dense:
                largest = np.linalg.eigvalsh(self.M)[:, -1]
            elif self.model.nv and self._finite:
                with np.errstate(all="ignore"):
                    largest = self.sweeps.largest_eigenvalues()
                self._finite = bool(np.all(np.isfinite(largest)))
            self._largest = largest
        return self._largest

    @property
    def finite(self) -> bool:
        """Whether M(q) (past ``dense_dofs``: its diagonal blocks, and lambda_max) is finite
        at every sample."""
        self.largest  # noqa: B018 (computed once: it may find M overflowing)
        return self._finite

    def diagonal_block(self, j: int) -> np.ndarray:
        """Joint j's diagonal block of M without armature over the samples, (samples, k, k)."""
        if not self.dense:
            return self.composite[j]
        dofs = slice(self.model.idx_v[j], self.model.idx_v[j] + self.model.nv_joint[j])
        return self.M[:, dofs, dofs] - np.diag(self.model.armature[dofs])

    def joint_blocks(self) -> list[np.ndarray]:
        """ABA's D-block of every joint over the samples, (samples, k, k) each (computed
        once, on first use)."""
        if self._blocks is None and not self.dense:
            self._blocks = self.d_blocks
        elif self._blocks is None:
            with np.errstate(all="ignore"):
                self._blocks = articulated_blocks(self.model, self.q)
        return self._blocks

    def block_minima(self) -> tuple[np.ndarray, np.ndarray]:
        """(low (joints, samples), finite (joints,)): the smallest eigenvalue of every
        joint's D-block at every sample (0 where the block is not finite), for all joints
        at once (blocks of one size together), on first use."""
        if self._minima is not None:
            return self._minima
        blocks = self.joint_blocks()
        low = np.zeros((len(blocks), len(self.q)))
        finite = np.zeros(len(blocks), dtype=bool)
        sizes: dict[int, list[int]] = {}
        for j, D in enumerate(blocks):
            sizes.setdefault(D.shape[-1], []).append(j)
        for size, joints in sizes.items():
            stack = np.stack([blocks[j] for j in joints])  # (n, samples, k, k)
            ok = np.all(np.isfinite(stack), axis=(1, 2, 3))
            finite[joints] = ok
            if size and ok.any():
                low[np.array(joints)[ok]] = np.linalg.eigvalsh(stack[ok])[..., 0]
        self._minima = low, finite
        return self._minima

    def lowest(self) -> list[tuple | None]:
        """Per joint, the sample where its D-block's smallest eigenvalue is least relative
        to lambda_max(M) (ratio 0 where lambda_max is not positive): (sample, ratio, that
        eigenvalue, lambda_max there), None where the block is not finite (on first use)."""
        if self._lowest is not None:
            return self._lowest
        low, finite = self.block_minima()
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(self.largest > 0, low / self.largest, 0.0)
        worst = np.argmin(ratios, axis=1) if len(self.q) else np.zeros(len(low), int)
        rows = np.arange(len(low))
        self._lowest = [None if not ok else row for ok, row in zip(finite.tolist(), zip(
            worst.tolist(), ratios[rows, worst].tolist(), low[rows, worst].tolist(),
            self.largest[worst].tolist()))]
        return self._lowest

    def sure_passes(self, options: CheckOptions) -> bool:
        """Whether every joint's D-block passes articulated-inertia (:func:`block_passes`
        of its :meth:`lowest` ratio) and M is finite, known without lambda_max(M): from
        :func:`treedyn.engine.subtree.largest_eigenvalue_bounds` (an upper bound, so each
        ratio it gives is at most the exact one), for a tree's M (no mimic joints
        enforced) and, past ``dense_dofs``, where the Lanczos products cannot overflow (so
        lambda_max would be finite). False means "not known": :meth:`lowest` decides."""
        model = self.model
        if model.coupling is not None or not self._finite or not len(self.q) or not model.nv:
            return False
        low, finite = self.block_minima()
        if not finite.all() or not (self.dense or self.sweeps.products_bounded()):
            return False
        bound = largest_eigenvalue_bounds(model, self.diagonal_traces())
        if not np.all(np.isfinite(bound) & (bound > 0)):
            return False
        ratios = (low / bound).min(axis=1)  # (joints,), finite
        return all(block_passes(ratio, options) for ratio in ratios.tolist())

    def diagonal_traces(self) -> np.ndarray:
        """(samples, joints): the trace of every joint's diagonal block of M, armature
        included."""
        if not self.dense:
            return self.sweeps.diagonal_traces()
        traces = np.zeros((len(self.q), self.model.njoints))
        np.add.at(traces, (slice(None), self.model.dof_joint),
                  np.diagonal(self.M, axis1=1, axis2=2))
        return traces


def merged_pseudo_inertia(context: LinkContext, inputs: Inputs, body: Body) -> list[Finding]:
    """The pseudo-inertia of a body merged from two or more links with mass."""
    if len(body.massive) < 2:
        return []
    spatial = inputs.model.body_inertia[body.joint]
    values = one_numbers(Inertia.from_spatial(spatial), J=spatial_pseudo_inertia(spatial))
    return pseudo_findings(context, inputs.options, values, "merged-pseudo-inertia", None,
                           scope="body", links=body.links)


def limits(context: LinkContext, inputs: Inputs, body: Body) -> list[Finding]:
    """A 1-dof joint's position limits: lower <= upper (MuJoCo refuses the reverse)."""
    model, j, links = inputs.model, body.joint, body.links
    if model.nq_joint[j] != 1:
        return []
    k = int(model.idx_q[j])
    lower, upper = float(model.q_lower[k]), float(model.q_upper[k])
    if not (math.isfinite(lower) or math.isfinite(upper)):
        return []
    joint = model.joint_names[j]
    details = {"joint": joint, "joint_line": model.joint_sources[j].line,
               "lower": lower, "upper": upper}
    if not lower > upper:  # (a NaN limit is no contradiction)
        return [noted(context, "limits", "pass", f"joint {joint}: limits {lower:g} to "
                      f"{upper:g}", [lower, upper], upper - lower, details, "body", links)]
    return [finding(context, inputs.options, "limits", "fail", "error",
                    f"joint {joint}: lower limit {lower:g} above upper limit {upper:g}: no "
                    "position satisfies both (swapped?)", [lower, upper], upper - lower,
                    details, scope="body", links=links)]


def block_passes(ratio: float, options: CheckOptions) -> bool:
    """Whether a D-block ``ratio`` (of :meth:`Samples.lowest`) passes articulated-inertia:
    neither singular (1e-15) nor under ``min_block_ratio``."""
    return not (ratio <= 1e-15 or ratio < options.min_block_ratio)


def articulated(context: LinkContext, inputs: Inputs, body: Body) -> list[Finding]:
    model, j, samples, options = inputs.model, body.joint, inputs.samples, inputs.options
    extra = {"scope": "body", "links": body.links}
    lowest = samples.lowest()[j]
    if not samples.finite or lowest is None:
        return [finding(context, options, "articulated-inertia", "fail", "error",
                        f"joint {model.joint_names[j]}: M(q) or ABA's D-block overflows "
                        "(inertias too large for a double)", **extra)]
    joint = model.joint_names[j]
    worst, ratio, low, largest = lowest
    details = {"joint": joint, "joint_line": model.joint_sources[j].line, "d_min": low,
               "lambda_max": largest, "sample": worst}
    margin = float(np.log10(ratio / options.min_block_ratio)) if ratio > 0 else None
    if block_passes(ratio, options):
        return [noted(context, "articulated-inertia", "pass",
                      f"joint {joint}: ABA's D-block is {ratio:.3g} of lambda_max(M)", ratio,
                      margin, details, **extra)]
    if ratio <= 1e-15:
        return [finding(context, options, "articulated-inertia", "fail", "error",
                        f"joint {joint} moves (with its descendants free) no inertia along "
                        f"some direction: ABA's D-block is singular (smallest eigenvalue "
                        f"{low:.3g}), M is singular", ratio, margin, details, **extra)]
    return [finding(context, options, "articulated-inertia", "fail", "warning",
                    f"joint {joint}: ABA's D-block is {ratio:.3g} of lambda_max(M) "
                    f"({low:.3g} vs {largest:.3g}), so cond(M) >= "
                    f"{1 / ratio:.3g}: a nearly singular chain", ratio, margin, details,
                    **extra)]
