"""The physically consistent fit: every body's parameters through the log-Cholesky
parametrization (:mod:`.log_cholesky`), so each identified pseudo-inertia is positive
definite by construction, solved with ``scipy.optimize.least_squares``.

Cost (a maximum a posteriori estimate; sigma the residual standard deviation of the
ordinary least squares, per equation)::

    |Y pi(theta) - tau|^2 / sigma^2
      + w sum_b |L_b^-1 (J_b(theta) - J_b,file) L_b^-T|_F^2      (J_b,file = L_b L_b^T)
      + w sum_k (c_k (x_k - x_k,file))^2                          (per-joint terms)

with w the prior weight, in equations: the second term is the change of each
pseudo-inertia relative to the file's (frame independent; about 1 for a body whose mass
doubles), weighed like w measurements one sigma off; it fixes the directions the log
cannot see and barely moves those it determines (their weight grows with the log).
c_k = rms(Y_k) / sigma makes a per-joint term's change comparable (kept non-negative but
for the ``signed`` columns, e.g. a torque offset). The data term uses the accumulated R
factor (|R [pi; -1]|^2 is the residual's squares), so it costs P residuals whatever the
log's length. Bodies the file gives no positive mass stay as the file has them (a massless
body has no log-Cholesky parameters). Per-joint terms (armature, viscous, Coulomb
friction) are linear and kept non-negative, the ``signed`` ones (offsets) free.

Robust losses (scipy's names: soft_l1, huber, cauchy, arctan) are applied by iteratively
reweighted least squares on the training rows, reweighting only the data term (the
prior stays quadratic; sigma is then the residuals' robust spread, 1.4826 MAD): weight rho'((r / f)^2) per equation, f the loss scale (given,
or 1.345 times the robust spread of each round's residuals, 1.4826 MAD). A given scale is in
N m, so rows weighted per joint (:meth:`Problem.weighted`) take it weighted alike; one so
far below the residuals that the log would weigh fewer equations (the sum of the rows'
rho') than the base parameters it determines is refused (:class:`ScaleTooSmall`): the fit
would be the prior's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize

from ..inertia_forms import nearest_definite, pseudo_inertia
from .identify import Problem
from .log_cholesky import parameters_and_jacobian, theta_of

LOSSES = ("linear", "soft_l1", "huber", "cauchy", "arctan")


@dataclass
class Fit:
    pi: np.ndarray  # (P,) identified parameters
    fitted: np.ndarray  # (nb,) bool: the body was fitted (positive mass in the file)
    cost: float  # final cost (see the module doc)
    iterations: int  # function evaluations of the last solve
    converged: bool
    message: str
    reweightings: int = 0  # robust loss: IRLS rounds


def _weight(loss: str, z: np.ndarray) -> np.ndarray:
    """rho'(z) of scipy's losses, z = (r / f)^2."""
    if loss == "soft_l1":
        return 1.0 / np.sqrt(1.0 + z)
    if loss == "huber":
        return np.where(z <= 1.0, 1.0, 1.0 / np.sqrt(np.maximum(z, 1.0)))
    if loss == "cauchy":
        return 1.0 / (1.0 + z)
    if loss == "arctan":
        return 1.0 / (1.0 + z * z)
    return np.ones_like(z)


class _Prior:
    """The file's bodies: which are fitted, their whitened pseudo-inertias, the start."""

    def __init__(self, pi_file: np.ndarray, nb: int, signed=(), known=((), ())):
        bodies = pi_file[:10 * nb].reshape(nb, 10)
        self.fitted = bodies[:, 0] > 0
        J = nearest_definite(pseudo_inertia(bodies[self.fitted])) if self.fitted.any() else np.zeros((0, 4, 4))
        self.J = J
        L = np.linalg.cholesky(J) if len(J) else J
        self.Linv = np.array([scipy.linalg.solve_triangular(l, np.eye(4), lower=True) for l in L])
        self.theta0 = theta_of(J) if len(J) else np.zeros((0, 10))
        upper = np.triu_indices(4)
        self.rows, self.cols = upper
        self.factor = np.where(self.rows == self.cols, 1.0, np.sqrt(2.0))
        self.signed = np.asarray(signed, dtype=int)  # per-joint columns that may be negative
        # (indices, values) of the parameters known beforehand: held at their values
        self.known = (np.asarray(known[0], dtype=int), np.asarray(known[1], dtype=float))

    def residual(self, J: np.ndarray) -> np.ndarray:
        """(nf, 10) whitened differences (upper entries, Frobenius weights)."""
        D = self.Linv @ (J - self.J) @ np.swapaxes(self.Linv, -1, -2)
        return D[:, self.rows, self.cols] * self.factor


def consistent_fit(problem: Problem, pi_file: np.ndarray, nb: int, sigma: float,
                   prior_weight: float = 1.0, loss: str = "linear",
                   loss_scale: float | None = None, rounds: int = 30, signed=(),
                   determined: int = 1, known=((), ())) -> Fit:
    """The consistent fit (module doc): sigma (N m) the residual standard deviation per
    equation; ``loss_scale`` in N m (default 1.345 times the robust spread, 1.4826 MAD,
    of each round's residuals; ScaleTooSmall when it leaves the log fewer equations'
    weight than the ``determined`` parameters, its base parameters' count); ``signed``:
    per-joint columns that may be negative; ``known``: (indices, values) of parameters
    known beforehand, whose columns the data no longer holds: held at their values (rows
    of weight :data:`HOLD`, then set exactly), not pulled by their body's prior."""
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; known: {', '.join(LOSSES)}")
    prior = _Prior(pi_file, nb, signed, known)
    if loss == "linear" or not problem.rows:
        return _solve(problem.R, problem.size, pi_file, nb, prior, prior_weight, sigma,
                      problem.equations)
    Y, tau = problem.rows["Y"], problem.rows["tau"]
    fit = _solve(problem.R, problem.size, pi_file, nb, prior, prior_weight, sigma,
                      problem.equations)
    unit = _row_weights(problem, len(tau))  # a row's N m in the fit's units
    if loss_scale is not None:
        check_scale(loss, Y @ fit.pi - tau, loss_scale, unit, determined)
    for round_ in range(rounds):
        r = Y @ fit.pi - tau
        spread = robust_spread(r)
        scale = 1.345 * spread if loss_scale is None else loss_scale * unit
        w = np.sqrt(_weight(loss, (r / scale) ** 2))
        A = np.column_stack([Y * w[:, None], tau * w])
        R = scipy.linalg.qr(A, mode="r", check_finite=False)[0][:problem.size + 1]
        R = np.vstack([R, np.zeros((problem.size + 1 - len(R), problem.size + 1))])
        previous = fit.pi
        fit = _solve(R, problem.size, pi_file, nb, prior, prior_weight, spread,
                     problem.equations, start=fit)
        fit.reweightings = round_ + 1
        if np.linalg.norm(fit.pi - previous) <= 1e-10 * max(np.linalg.norm(previous), 1e-300):
            break
    return fit


class ScaleTooSmall(ValueError):
    """A loss scale so far below the residuals that the whole log would weigh fewer
    equations than the ``determined`` parameters it fits: the fit would be the prior's.
    ``spread``: the residuals' robust spread, ``least``: the smallest scale that gives the
    log that weight (both N m)."""

    def __init__(self, scale: float, spread: float, least: float, determined: int):
        super().__init__(f"a loss scale of {scale:g} N m is far below the residuals' robust "
                         f"spread ({spread:.3g} N m): the log would weigh fewer equations "
                         f"than the {determined} parameters it determines, and the fit keep "
                         f"the prior's (at least {least:.3g} N m)")
        self.scale, self.spread, self.least = scale, spread, least
        self.determined = determined


def robust_spread(r: np.ndarray) -> float:
    """1.4826 MAD of the residuals r (n,), at least the smallest positive double."""
    return max(1.4826 * float(np.median(np.abs(r - np.median(r)))), np.finfo(float).tiny)


def _row_weights(problem: Problem, rows: int) -> np.ndarray:
    """(rows,) what each kept row was multiplied by (:meth:`Problem.weighted`; ones)."""
    if problem.joint_weights is None:
        return np.ones(rows)
    return problem.joint_weights[np.arange(rows) % problem.nv]


def data_weight(loss: str, r: np.ndarray, scale) -> float:
    """The equations the rows of residuals r weigh together at the loss ``scale`` (a number
    or one per row): the sum of rho'((r / scale)^2), each 1 at full weight."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        z = np.where(r == 0.0, 0.0, (r / scale) ** 2)
        return float(_weight(loss, z).sum())


def check_scale(loss: str, r: np.ndarray, scale: float, unit: np.ndarray,
                determined: int = 1) -> None:
    """ScaleTooSmall when the loss ``scale`` (N m; a row's N m are ``unit`` (n,) of the
    residuals r (n,)) gives the rows fewer equations' weight (:func:`data_weight`) than
    the ``determined`` parameters (at most the rows); ValueError unless it is a positive
    number."""
    if not 0.0 < scale < np.inf:
        raise ValueError(f"the loss scale must be a positive number, not {scale!r}")
    need = min(max(determined, 1), len(r))
    if data_weight(loss, r, scale * unit) >= need:
        return
    low, high = np.log(scale), np.log(max(float(np.abs(r / unit).max()), scale)) + 20.0
    for _ in range(60):  # the weight grows with the scale: bisect its logarithm
        middle = (low + high) / 2
        low, high = (middle, high) if data_weight(loss, r, np.exp(middle) * unit) < need \
            else (low, middle)
    raise ScaleTooSmall(scale, robust_spread(r / unit), float(np.exp(high)), need)


HOLD = 1e6  # the weight of a known parameter's row, per its own size


def _held(prior: _Prior, body_cols: np.ndarray, terms: np.ndarray, pi_file: np.ndarray):
    """(slots, values, weights) of the known parameters among the fitted ones: their
    places in the order of the solver's parameters (the fitted bodies' 10 each, then the
    per-joint terms), their values, and :data:`HOLD` over their size (at least 1e-3 of
    the file's largest inertial parameter, so a known 0 is held in the same units)."""
    place = {int(k): p for p, k in enumerate(np.concatenate([body_cols, terms]))}
    chosen = [(place[int(k)], float(v)) for k, v in zip(*prior.known) if int(k) in place]
    slots = np.array([p for p, _ in chosen], dtype=int)
    values = np.array([v for _, v in chosen], dtype=float)
    floor = 1e-3 * max(float(np.abs(pi_file).max(initial=0.0)), np.finfo(float).tiny)
    return slots, values, HOLD / np.maximum(np.abs(values), floor)


def _solve(R: np.ndarray, P: int, pi_file: np.ndarray, nb: int, prior: _Prior,
           prior_weight: float, sigma: float, equations: int,
           start: Fit | None = None) -> Fit:
    """One least-squares solve of the cost on the factor R (P + 1, P + 1) of
    ``equations`` rows."""
    RY, z = R[:P, :P], R[:P, P]
    equations = max(equations, 1)
    # the data term's unit: sigma, floored by the torques' and the file's predicted torques'
    # size, so that torques that vanish against the model's do not overflow the cost
    tau_norm = max(sigma, 1e-12 * float(np.linalg.norm(R[:, P])),
                   1e-12 * float(np.linalg.norm(RY @ pi_file)), np.finfo(float).tiny)
    body_cols = (10 * np.flatnonzero(prior.fitted)[:, None] + np.arange(10)).ravel()
    terms = np.arange(10 * nb, P)
    nf = int(prior.fitted.sum())
    c = np.linalg.norm(RY[:, terms], axis=0) / tau_norm / np.sqrt(equations)
    root_w = np.sqrt(prior_weight)
    slots, targets, hold = _held(prior, body_cols, terms, pi_file)  # x's own order

    def unpack(x):
        pi = pi_file.copy()
        pis, dpi = parameters_and_jacobian(x[:10 * nf].reshape(nf, 10))
        pi[body_cols] = pis.ravel()
        pi[terms] = x[10 * nf:]
        return pi, pis, dpi

    def residual(x):
        pi, pis, _ = unpack(x)
        data = (RY @ pi - z) / tau_norm
        inertia = root_w * prior.residual(pseudo_inertia(pis)).ravel()
        linear = root_w * c * (x[10 * nf:] - pi_file[terms])
        known = hold * (np.concatenate([pis.ravel(), x[10 * nf:]])[slots] - targets)
        return np.concatenate([data, inertia, linear, known])

    def jacobian(x):
        _, pis, dpi = unpack(x)  # dpi (nf, 10, 10)
        Jd = np.zeros((P, len(x)))
        for b in range(nf):
            Jd[:, 10 * b:10 * b + 10] = RY[:, body_cols[10 * b:10 * b + 10]] @ dpi[b]
        Jd[:, 10 * nf:] = RY[:, terms]
        Jd /= tau_norm
        Jp = np.zeros((10 * nf, len(x)))
        for b in range(nf):
            dJ = pseudo_inertia(dpi[b].T)  # (10, 4, 4): d J / d theta_k
            D = prior.Linv[b] @ dJ @ prior.Linv[b].T
            Jp[10 * b:10 * b + 10, 10 * b:10 * b + 10] = (
                D[:, prior.rows, prior.cols] * prior.factor).T * root_w
        Jl = np.zeros((len(terms), len(x)))
        Jl[:, 10 * nf:] = np.diag(root_w * c)
        Jk = np.zeros((len(slots), len(x)))
        for row, slot in enumerate(slots):  # d(body parameter)/d theta, or 1 for a term's
            if slot < 10 * nf:
                b = slot // 10
                Jk[row, 10 * b:10 * b + 10] = hold[row] * dpi[b][slot % 10]
            else:
                Jk[row, slot] = hold[row]
        return np.vstack([Jd, Jp, Jl, Jk])

    lower = np.concatenate([np.full(10 * nf, -np.inf),
                            np.where(np.isin(terms, prior.signed), -np.inf, 0.0)])
    if start is None:
        x0 = np.concatenate([prior.theta0.ravel(), np.maximum(pi_file[terms], lower[10 * nf:])])
    else:
        x0 = np.concatenate([theta_of(pseudo_inertia(start.pi[body_cols].reshape(nf, 10)))
                             .ravel() if nf else np.zeros(0), start.pi[terms]])
    if not len(x0):
        return Fit(pi_file.copy(), prior.fitted, 0.0, 0, True, "nothing to fit")
    full = hold.copy()
    for step in (1e-4, 1e-2, 1.0) if len(slots) else (1.0,):  # known parameters: held
        hold[:] = full * step  # harder each solve, from the last one's result
        with np.errstate(over="ignore", invalid="ignore"):  # (a trial step that overflows
            result = scipy.optimize.least_squares(  # is not finite: trf shortens it)
                residual, x0, jac=jacobian, bounds=(lower, np.inf), method="trf",
                x_scale="jac", xtol=1e-10, ftol=1e-10, gtol=1e-10, max_nfev=1000)
        x0 = result.x
    pi, _, _ = unpack(result.x)
    pi[prior.known[0]] = prior.known[1]  # (held to about 1e-12 of themselves: now exact)
    return Fit(pi, prior.fitted, float(2 * result.cost), int(result.nfev),
               bool(result.status > 0), str(result.message))
