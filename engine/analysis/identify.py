"""Inertial parameter identification from logged motion: tau = Y(q, v, a) pi.

Streaming: :class:`Accumulator` takes the regressor and the measured torques chunk by
chunk and keeps only

* per joint, the R factor of its stacked training rows ``[Y_j | tau_j]`` (a QR of blocks:
  each chunk's rows are stacked under the current R and factored again), (nv, P + 1,
  P + 1), so the rows of each joint can be weighted after the fact (:meth:`Problem.weighted`,
  IDIM-WLS); the R of all rows is the QR of the joints' stacked;
* per joint, the Gram matrix of the held-out rows ``[Y_j | tau_j]^T [Y_j | tau_j]``
  (nv, P + 1, P + 1), and the same for the training rows, so the torque RMS of any
  parameter vector follows per joint without the rows;

memory is bounded by the parameter count, whatever the number of states.

Held-out states (``validate`` = fraction f): blocks of :data:`BLOCK` consecutive states,
block b held out when frac((b + 1) phi) < f (phi the golden ratio: a low-discrepancy
pattern), so held-out states spread over the whole log and neighbour training states
only at block edges. Known from the stream alone; no second pass.

Identifiability (:func:`base_parameters`): the columns scaled to unit norm (units differ:
kg, kg m, kg m^2), the singular values of the scaled R give the rank and the null space;
a pivoted QR picks the independent columns. A parameter is *identifiable* when it is
orthogonal to the null space, *in combination* when it is not (only base combinations of
it are), and has *no effect* when its column is zero in this log.

A log that cannot determine anything is refused with :class:`UnfitLog` (its message says
why, in the log's terms) rather than fitted: sums of squares that overflow, torques that
are zero in every equation, every state the same (a constant log), a regressor that is
zero, or no more states than base parameters (no residual left to estimate the noise, so
no standard deviation).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import scipy.linalg

from ..rnea import rnea

BLOCK = 100
GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0


def held_out(first: int, count: int, fraction: float) -> np.ndarray:
    """(count,) bool: which of the states first .. first + count - 1 are held out."""
    if fraction <= 0.0:
        return np.zeros(count, dtype=bool)
    blocks = (np.arange(first, first + count) // BLOCK) + 1
    return np.mod(blocks * GOLDEN, 1.0) < fraction


class UnfitLog(ValueError):
    """The log determines no meaningful fit; the message says why (the caller names the
    log)."""


@dataclass
class Problem:
    """What the accumulated log holds (see the module doc)."""

    size: int  # P
    nv: int
    R: np.ndarray  # (P + 1, P + 1) upper triangular factor of the training [Y | tau]
    gram_train: np.ndarray  # (nv, P + 1, P + 1)
    gram_validate: np.ndarray  # (nv, P + 1, P + 1)
    states: int  # training states
    validate_states: int
    rows: dict = field(default_factory=dict)  # "Y" (n, P), "tau" (n,): training rows kept
    varied: bool = True  # some training state's rows differ from the first one's
    files: list = field(default_factory=list)  # per log file: (states, gram (nv, P+1, P+1))
    joint_R: np.ndarray | None = None  # (nv, P + 1, P + 1) each joint's training rows' R
    joint_weights: np.ndarray | None = None  # (nv,) what :meth:`weighted` multiplied by

    def weighted(self, sigma: np.ndarray) -> "Problem":
        """The training rows of joint j divided by ``sigma[j]`` (nv,): the R factor and the
        kept rows weighted (the Gram matrices, for residuals in N m, are not)."""
        w = 1.0 / np.asarray(sigma, dtype=float)
        R = _stacked_r(self.joint_R * w[:, None, None], self.size)
        rows = dict(self.rows)
        if rows:
            joint = w[np.arange(len(rows["tau"])) % self.nv]
            rows = {"Y": rows["Y"] * joint[:, None], "tau": rows["tau"] * joint}
        return replace(self, R=R, rows=rows, joint_weights=w)

    @property
    def equations(self) -> int:
        return self.states * self.nv


def _stacked_r(joint_R: np.ndarray, size: int) -> np.ndarray:
    """The (P + 1, P + 1) R factor of the joints' factors (nv, m, P + 1) stacked."""
    R = np.zeros((size + 1, size + 1))
    factor = scipy.linalg.qr(joint_R.reshape(-1, size + 1), mode="r", check_finite=False)[0]
    R[:min(len(factor), size + 1)] = factor[:size + 1]
    return R


class Accumulator:
    """Training and held-out statistics of a log, chunk by chunk."""

    def __init__(self, size: int, nv: int, validate: float = 0.0, keep_rows: bool = False):
        self.size, self.nv, self.validate = size, nv, validate
        self.R = np.zeros((nv, 0, size + 1))  # each joint's R factor so far
        self.gram = np.zeros((2, nv, size + 1, size + 1))
        self.counts = [0, 0]
        self.seen = 0
        self.keep_rows = keep_rows
        self.kept: list[np.ndarray] = []
        self.first: np.ndarray | None = None  # (nv, P + 1): the first training state's rows
        self.varied = False
        self.files: list[list] = []  # per file: [states, gram of all its rows (nv, P+1, P+1)]

    def next_file(self) -> None:
        """The states added from here on are another file's (each file's own Gram matrices,
        training and held-out rows alike, give its residuals)."""
        self.files.append([0, np.zeros((self.nv, self.size + 1, self.size + 1))])

    def add(self, Y: np.ndarray, tau: np.ndarray) -> None:
        """Y (m, nv, P) and tau (m, nv) of the next m states of the log."""
        m = len(Y)
        aside = held_out(self.seen, m, self.validate)
        self.seen += m
        for which, mask in enumerate((~aside, aside)):
            if not mask.any():
                continue
            rows = np.concatenate([Y[mask], tau[mask][..., None]], axis=2)  # (k, nv, P+1)
            self.counts[which] += int(mask.sum())
            per_joint = np.ascontiguousarray(rows.transpose(1, 0, 2))  # (nv, k, P+1)
            gram = np.swapaxes(per_joint, 1, 2) @ per_joint
            self.gram[which] += gram
            if self.files:
                self.files[-1][0] += int(mask.sum())
                self.files[-1][1] += gram
            if which == 0:
                self._compare(rows)
                flat = rows.reshape(-1, self.size + 1)
                if self.keep_rows:
                    self.kept.append(flat.copy())
                stacked = np.concatenate([self.R, per_joint], axis=1)  # (nv, m + k, P + 1)
                self.R = np.linalg.qr(stacked, mode="r")[:, :self.size + 1]

    def _compare(self, rows: np.ndarray) -> None:
        """Notes whether the training states (k, nv, P + 1) differ from the first one."""
        if self.first is None:
            self.first = rows[0].copy()
        if not self.varied:
            self.varied = bool(np.any(rows != self.first))

    def finish(self) -> Problem:
        joint_R = np.zeros((self.nv, self.size + 1, self.size + 1))
        joint_R[:, :self.R.shape[1]] = self.R
        R = _stacked_r(joint_R, self.size)
        rows = {}
        if self.keep_rows and self.kept:
            stacked = np.vstack(self.kept)
            rows = {"Y": stacked[:, :-1], "tau": stacked[:, -1]}
        return Problem(self.size, self.nv, R, self.gram[0], self.gram[1], self.counts[0],
                       self.counts[1], rows, self.varied,
                       [(count, gram) for count, gram in self.files], joint_R)


def joint_rms(gram: np.ndarray, pi: np.ndarray, states: int) -> np.ndarray:
    """Torque RMS per joint (nv,) of the residual Y pi - tau from the Gram matrices."""
    if states == 0:
        return np.full(len(gram), np.nan)
    x = np.append(pi, -1.0)
    squares = np.einsum("a,jab,b->j", x, gram, x)
    return np.sqrt(np.maximum(squares, 0.0) / states)


# ---------------------------------------------------------------------- identifiability
@dataclass
class Base:
    """The base parameters of a log: pi_base = pi[independent] + beta pi[dependent]."""

    rank: int
    independent: np.ndarray  # (r,) parameter indices
    dependent: np.ndarray  # (P - r,) the others, no-effect ones included
    beta: np.ndarray  # (r, P - r)
    identifiable: np.ndarray  # (P,) bool: determined alone
    no_effect: np.ndarray  # (P,) bool: a zero column in this log
    singular_values: np.ndarray  # of the column-scaled regressor, descending
    condition: float  # of the base regressor, as is
    condition_scaled: float  # with unit-norm columns

    def combination(self, names, k: int, digits: int = 4) -> str:
        """Base parameter k as 'a + 0.5 b - 2 c'."""
        text = names[self.independent[k]]
        for j, coefficient in zip(self.dependent, self.beta[k]):
            if abs(coefficient) > 1e-9 * max(1.0, np.abs(self.beta[k]).max()):
                sign = "-" if coefficient < 0 else "+"
                magnitude = abs(coefficient)
                factor = "" if np.isclose(magnitude, 1.0, rtol=1e-9) else f"{magnitude:.{digits}g} "
                text += f" {sign} {factor}{names[j]}"
        return text

    def project(self, pi: np.ndarray) -> np.ndarray:
        """The base parameters (r,) of a full parameter vector pi (P,)."""
        return pi[self.independent] + self.beta @ pi[self.dependent]

    def expand(self, base: np.ndarray) -> np.ndarray:
        """A full vector (P,) with these base parameters (the dependent ones zero)."""
        pi = np.zeros(len(self.identifiable))
        pi[self.independent] = base
        return pi


def check_log(problem: Problem) -> None:
    """UnfitLog when the accumulated log cannot be fitted at all (module doc): its sums
    overflow, its torques are zero, or all its states are one."""
    P = problem.size
    if not (np.isfinite(problem.R).all() and np.isfinite(problem.gram_train).all()
            and np.isfinite(problem.gram_validate).all()):
        raise UnfitLog("its numbers are too large: the sums of squares of the torques or "
                       "of the regressor overflow (beyond 1e308)")
    if not np.any(problem.R[:, P]):
        raise UnfitLog(f"the torques to fit are zero in all {problem.states} states: they "
                       "determine no inertia (is tau the measured joint torque?)")
    if problem.states > 1 and not problem.varied:
        raise UnfitLog(f"all {problem.states} states are the same (q, v, a and tau): a "
                       "constant log determines no more than one state does")


@dataclass
class Columns:
    """The independent columns of a matrix A (m, P) (module doc): its columns scaled to unit
    norm, the rank where their singular values pass a tolerance times the largest, and a
    pivoted QR's choice of that many columns."""

    norms: np.ndarray  # (P,) A's column norms
    no_effect: np.ndarray  # (P,) bool: a zero column
    live: np.ndarray  # (l,) the other columns
    scaled: np.ndarray  # (m, l) A's live columns over their norms
    sigma: np.ndarray  # (min(m, l),) singular values of ``scaled``, descending
    null: np.ndarray  # (l, l - r) its null space
    rank: int  # r
    order: np.ndarray  # (l,) the pivoting's order of the live columns: r independent first
    R: np.ndarray  # (min(m, l), l) the pivoted QR's R of the (tie-biased) scaled columns
    bias: np.ndarray  # (l,) the columns' tie-breaking factors in that QR

    @property
    def independent(self) -> np.ndarray:
        """(r,) the chosen columns of A, in the pivoting's order."""
        return self.live[self.order[:self.rank]]


def independent_columns(A: np.ndarray, tolerance: float = 1e-8) -> Columns:
    """The one rank rule of the regressor's columns (:class:`Columns`): A is the regressor,
    or any factor with its column space and norms (the R of its QR)."""
    norms = np.linalg.norm(A, axis=0)
    no_effect = norms <= 1e-12 * max(norms.max(initial=0.0), np.finfo(float).tiny)
    live = np.flatnonzero(~no_effect)
    scaled = A[:, live] / norms[live]
    _, sigma, Vt = np.linalg.svd(scaled)
    rank = int(np.sum(sigma > tolerance * sigma[0])) if sigma.size and sigma[0] > 0 else 0
    # ties of the pivoting (columns equal up to sign: link2.m and -link1.mz) go to the
    # earlier column whatever the roundoff of the accumulation: a bias of 1e-9
    bias = 1.0 + 1e-9 * np.arange(len(live), 0, -1) / max(len(live), 1)
    if rank:
        _, R, order = scipy.linalg.qr(scaled * bias, mode="economic", pivoting=True)
    else:
        R, order = np.zeros((0, len(live))), np.arange(len(live))
    return Columns(norms, no_effect, live, scaled, sigma, Vt[rank:].T, rank, order, R, bias)


def base_parameters(problem: Problem, tolerance: float = 1e-8) -> Base:
    """The base parameters of the training rows: rank where singular values of the
    column-scaled regressor pass ``tolerance`` times the largest (see the module doc,
    :func:`independent_columns`). UnfitLog (:func:`check_log`) for a log that determines
    nothing, or too short to estimate its noise: no more states than base parameters."""
    check_log(problem)
    P = problem.size
    RY = problem.R[:P, :P]
    columns = independent_columns(RY, tolerance)
    rank, live, order, R2 = columns.rank, columns.live, columns.order, columns.R
    if rank == 0:
        raise UnfitLog("its regressor is zero: the motion (q, v, a) and gravity move no "
                       "parameter")
    if problem.states <= rank:
        raise UnfitLog(f"too short: {problem.states} state{'s' if problem.states > 1 else ''}"
                       f" for the {rank} base parameters its motion determines; "
                       "identification needs more states than base parameters (else there "
                       "is no residual to estimate the noise)")
    null = columns.null  # (len(live), P_live - r)
    identifiable = np.zeros(P, dtype=bool)
    identifiable[live] = np.linalg.norm(null, axis=1) < 1e-6 if null.size else True
    independent = columns.independent
    dependent_live = live[order[rank:]]
    beta_live = scipy.linalg.solve_triangular(R2[:rank, :rank], R2[:rank, rank:])
    unit = columns.norms[live] / columns.bias  # the columns' scale in the factored matrix
    beta_live = beta_live * unit[order[rank:]] / unit[order[:rank]][:, None]
    # the triangular solve leaves ~1e-17 where a coefficient is exactly zero: below the
    # threshold that names the combination (Base.combination), a coefficient is zero, so
    # the file's base parameters are the combination their names say (a zero stays 0.0)
    scale = np.maximum(1.0, np.abs(beta_live).max(axis=1, initial=0.0))[:, None]
    beta_live = np.where(np.abs(beta_live) > 1e-9 * scale, beta_live, 0.0)
    no_effect = columns.no_effect
    dependent = np.concatenate([dependent_live, np.flatnonzero(no_effect)]).astype(int)
    beta = np.hstack([beta_live, np.zeros((rank, int(no_effect.sum())))])
    base_sigma = np.linalg.svd(RY[:, independent], compute_uv=False)
    return Base(rank, independent, dependent, beta, identifiable, no_effect, columns.sigma,
                _ratio(base_sigma), _ratio(np.linalg.svd(columns.scaled[:, order[:rank]],
                                                         compute_uv=False)))


def _ratio(sigma: np.ndarray) -> float:
    if not sigma.size or sigma[-1] <= 0:
        return float("inf")
    return float(sigma[0] / sigma[-1])


# ------------------------------------------------------------------------------- OLS
@dataclass
class LeastSquares:
    """Ordinary least squares on the base parameters."""

    base: np.ndarray  # (r,)
    std: np.ndarray  # (r,) standard deviations (residual variance times (W^T W)^-1)
    sigma: float  # residual standard deviation per equation (N m; weighted: none)
    unweighted: float | None = None  # a weighted fit's first, unweighted, sigma (N m)

    def full(self, base: Base) -> np.ndarray:
        return base.expand(self.base)


def ordinary_least_squares(problem: Problem, base: Base) -> LeastSquares:
    """min |Y_base x - tau| through the accumulated R: |R x - z|^2 + the rest."""
    P, r = problem.size, base.rank
    A = problem.R[:P, base.independent]
    z = problem.R[:P, P]
    Q, R1 = np.linalg.qr(A)
    x = scipy.linalg.solve_triangular(R1, Q.T @ z) if r else np.zeros(0)
    residual = float(problem.R[P, P] ** 2 + np.sum((A @ x - z) ** 2))
    dof = max(problem.equations - r, 1)
    sigma = np.sqrt(residual / dof)
    inverse = scipy.linalg.solve_triangular(R1, np.eye(r)) if r else np.zeros((0, 0))
    std = sigma * np.linalg.norm(inverse, axis=1)
    return LeastSquares(x, std, float(sigma))


def joint_sigma(problem: Problem, base: Base, first: LeastSquares) -> np.ndarray:
    """IDIM-WLS's weights (Gautier): each joint's residual standard deviation (nv,) of the
    first (unweighted) fit, sigma_j^2 = |Y_j x - tau_j|^2 / N * (nv N) / (nv N - r); the
    rows of joint j are then divided by sigma_j. Floored at 1e-3 of the largest (a joint
    fitted exactly would otherwise take all the weight); ones when every residual is zero."""
    rms = joint_rms(problem.gram_train, first.full(base), problem.states)
    sigma = rms * np.sqrt(problem.equations / max(problem.equations - base.rank, 1))
    largest = float(sigma.max(initial=0.0))
    if not np.isfinite(largest) or largest <= 0.0:
        return np.ones(problem.nv)
    return np.maximum(sigma, 1e-3 * largest)


def external_torques(model, q: np.ndarray, fext: np.ndarray) -> np.ndarray:
    """-sum_i J_i^T f_i (N, nv): the joint forces of the external wrenches ``fext``
    ((N, nj, 6) or (nj, 6), per body in its frame, as :func:`treedyn.engine.rnea` takes
    them) at ``q``. RNEA at rest without gravity: every other term of tau is zero there and
    tau is linear in fext, so this is the fext part of any state's RNEA."""
    return rnea(model, q, None, None, fext, np.zeros(3))


def known_torques(model, terms, q: np.ndarray, a: np.ndarray | None,
                  fext: np.ndarray | None) -> np.ndarray:
    """The part of a logged tau (N, nv) that the parameters of the columns ``terms`` do
    not explain, to subtract before fitting tau = Y pi: the model's armature times ``a``
    when armature is not identified, and the external forces' -J^T f (``fext`` None:
    none)."""
    known = np.zeros((len(q), model.nv))
    if "armature" not in terms and a is not None and np.any(model.armature):
        known += model.armature * a
    if fext is not None:
        known += external_torques(model, q, fext)
    return known
