"""Excitation trajectories for identification: a finite Fourier series per joint (Swevers,
Ganseman, Tukel, De Schutter and Van Brussel, 1997), its coefficients chosen to make the
regressor well conditioned.

Each excited dof j (every revolute, continuous or prismatic joint's; other dofs stay at the
model's neutral q, at rest), with w_f = 2 pi / T and harmonics l = 1 .. L::

    q_j(t) = q0_j + sum_l  a_jl / (w_f l) sin(w_f l t) - b_jl / (w_f l) cos(w_f l t)
    v_j(t) =        sum_l  a_jl cos(w_f l t) + b_jl sin(w_f l t)
    a_j(t) =        sum_l -a_jl w_f l sin(w_f l t) + b_jl w_f l cos(w_f l t)

periodic with period T (so a log of whole periods can be averaged). The coefficients
x = (q0, a, b), per dof ``[q0_j, a_j1 .. a_jL, b_j1 .. b_jL]`` (n, 1 + 2L), are what
:func:`optimise` chooses: it minimises log cond(W) with W (S nv, r) the regressor's base
columns (the r columns that random states show independent, by identification's rule:
:func:`base_columns`) stacked over S samples of one period, the condition number of
the matrix as it is (``dyn identify``'s ``condition``), subject to, at a denser grid of
the period: the position limits, the velocity limits (|v_j| <= the joint's), an optional
acceleration limit, and optional frames above a floor (z in the world >= height). SLSQP
(``scipy.optimize.minimize``) from a random start, which is made feasible by scaling its
a, b (:func:`random_start`); the constraints are linear in x (their Jacobian is
constant) but for the floor's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.optimize

from .analysis.identify import independent_columns
from .batch.regressor import regressor
from .model import Model
from .named import Frames, frame_placements

ONE_DOF = ("revolute", "continuous", "prismatic")
MARGIN = 0.95  # share of a limit a random start uses
TIGHTER = 0.01  # the optimiser's limits are this share inside (kept between its samples)


def fourier_basis(t: np.ndarray, harmonics: int, period: float) -> tuple[np.ndarray, ...]:
    """(Bq, Bv, Ba) each (N, 1 + 2L): q_j(t) = Bq @ x_j, v_j = Bv @ x_j, a_j = Ba @ x_j for
    a dof's coefficients x_j = [q0, a_1 .. a_L, b_1 .. b_L] (module doc)."""
    w = 2 * np.pi / period * np.arange(1, harmonics + 1)  # (L,) w_f l
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))  # (N, L)
    ones, zeros = np.ones((len(t), 1)), np.zeros((len(t), 1))
    Bq = np.hstack([ones, s / w, -c / w])
    Bv = np.hstack([zeros, c, s])
    Ba = np.hstack([zeros, -s * w, c * w])
    return Bq, Bv, Ba


def excited_joints(model: Model) -> list[int]:
    """The joints an excitation moves: every revolute, continuous and prismatic one."""
    return [j for j in range(model.njoints) if model.public_type(j) in ONE_DOF
            and model.nv_joint[j] == 1]


def sample_bytes(model: Model, harmonics: int) -> int:
    """Bytes one of the objective's samples holds at once (measured: 41 KB on the two-link
    arm, 1.6 MB on panda, both below this): the regressor of the point and of every
    forward difference (1 + n (1 + 2L) states), about four copies of it, and four dense
    grid points' constraint rows (6 n of n (1 + 2L) coefficients, twice: built and
    stacked)."""
    n, width = len(excited_joints(model)), 1 + 2 * harmonics
    points = 1 + n * width
    regressor_bytes = 4 * points * model.nv * 10 * len(model.bodies) * 8
    states_bytes = points * (model.nq + 2 * model.nv) * 8
    return regressor_bytes + states_bytes + 4 * 2 * 6 * n * n * width * 8


@dataclass
class Excitation:
    """The trajectory's setting: which dofs move, the series, the limits, the floor."""

    model: Model
    harmonics: int
    period: float
    samples: int = 60  # S: states of a period in the objective
    acceleration_limit: float = np.inf
    floor: Frames | None = None  # frames kept above ...
    heights: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (k,) ... these z
    dofs: np.ndarray = field(init=False)  # (n,) excited dofs
    coords: np.ndarray = field(init=False)  # (n,) their q entries

    def __post_init__(self):
        model = self.model
        joints = excited_joints(model)
        if not joints:
            raise ValueError("the model has no revolute, continuous or prismatic joint to "
                             "excite")
        self.dofs = np.array([model.idx_v[j] for j in joints], dtype=int)
        self.coords = np.array([model.idx_q[j] for j in joints], dtype=int)
        self.lower, self.upper = model.q_lower[self.coords], model.q_upper[self.coords]
        limit = model.velocity_limit[self.dofs]
        self.v_max = np.where(limit > 0, limit, np.inf)
        t = np.arange(self.samples) * self.period / self.samples
        self.basis = fourier_basis(t, self.harmonics, self.period)
        grid = max(4 * self.samples, 40 * self.harmonics)
        self.dense = fourier_basis(np.arange(grid) * self.period / grid, self.harmonics,
                                   self.period)
        self.base = base_columns(self, np.random.default_rng(0))
        if self.samples * model.nv < len(self.base):
            raise ValueError(f"{self.samples} samples of {model.nv} torques are fewer "
                             f"equations than the {len(self.base)} base parameters: more "
                             "samples")

    @property
    def width(self) -> int:
        return 1 + 2 * self.harmonics

    def states(self, x: np.ndarray, basis) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q (K N, nq), v (K N, nv), a (K N, nv)) of coefficients x (K, n (1 + 2L)) or
        (n (1 + 2L),) over the N times of ``basis`` (from :func:`fourier_basis`)."""
        X = np.reshape(x, (-1, len(self.dofs), self.width))
        model, count = self.model, len(X) * len(basis[0])
        q = np.tile(model.q_neutral, (count, 1))
        v, a = np.zeros((count, model.nv)), np.zeros((count, model.nv))
        q[:, self.coords] = np.einsum("tw,kjw->ktj", basis[0], X).reshape(count, -1)
        v[:, self.dofs] = np.einsum("tw,kjw->ktj", basis[1], X).reshape(count, -1)
        a[:, self.dofs] = np.einsum("tw,kjw->ktj", basis[2], X).reshape(count, -1)
        return q, v, a

    def conditions(self, x: np.ndarray, basis=None) -> np.ndarray:
        """cond(W) (K,) of the base columns over the objective's samples (or ``basis``'s)
        for coefficients x (K, n (1 + 2L)), in one regressor call."""
        basis = self.basis if basis is None else basis
        Y = regressor(self.model, *self.states(x, basis))[:, :, self.base]
        R = np.linalg.qr(Y.reshape(len(x), -1, len(self.base)), mode="r")  # W's R: its sigma
        sigma = np.linalg.svd(R, compute_uv=False)
        with np.errstate(divide="ignore"):
            return sigma[:, 0] / sigma[:, -1]

    def condition(self, x: np.ndarray, basis=None) -> float:
        """cond(W) of one coefficient vector x (module doc)."""
        return float(self.conditions(x[None], basis)[0])

    def bounds(self, tighter: float = 0.0) -> list[tuple[np.ndarray, np.ndarray]]:
        """(low, high) (n,) each of the excited dofs' q, v and a, each limit ``tighter`` by
        that share (of the position range, of the velocity and acceleration bounds);
        infinite where there is none."""
        span = self.upper - self.lower
        inset = tighter * np.where(np.isfinite(span), span, 0.0)
        bound = np.full(len(self.dofs), self.acceleration_limit) * (1 - tighter)
        return [(self.lower + inset, self.upper - inset),
                (-self.v_max * (1 - tighter), self.v_max * (1 - tighter)), (-bound, bound)]

    def linear_constraints(self, basis=None, tighter: float = 0.0
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(G, h, joint) with the finite limits (:meth:`bounds`) as G x + h >= 0 at the
        times of ``basis`` (default: the dense grid); ``joint`` (rows,) the excited dof
        (0 .. n-1) each row constrains."""
        n = len(self.dofs)
        rows, offsets, joint = [], [], []
        for B, (low, high) in zip(self.dense if basis is None else basis, self.bounds(tighter)):
            for j in range(n):
                block = np.zeros((len(B), n * self.width))
                block[:, j * self.width:(j + 1) * self.width] = B
                for sign, limit in ((-1.0, high[j]), (1.0, low[j])):
                    if np.isfinite(limit):  # sign B x - sign limit >= 0
                        rows.append(sign * block)
                        offsets.append(np.full(len(B), -sign * limit))
                        joint.append(np.full(len(B), j))
        if not rows:
            return np.zeros((0, n * self.width)), np.zeros(0), np.zeros(0, dtype=int)
        return np.vstack(rows), np.concatenate(offsets), np.concatenate(joint)

    def clearance(self, x: np.ndarray, basis=None) -> np.ndarray:
        """(N k,) each floor frame's z above its height at the times of ``basis`` (default:
        the dense grid)."""
        q = self.states(x, self.dense if basis is None else basis)[0]
        return (frame_placements(self.model, q, self.floor)[1][:, :, 2]
                - self.heights).ravel()

    def feasible(self, x: np.ndarray, basis=None, tighter: float = 0.0,
                 tolerance: float = 1e-9) -> bool:
        """Whether x keeps every limit (:meth:`bounds`, ``tighter``) and the floor at the
        times of ``basis`` (default: the dense grid), to ``tolerance`` (in the limit's units:
        rad or m, per s, per s^2; m above the floor)."""
        basis = self.dense if basis is None else basis
        q, v, a = self.states(x, basis)
        for values, (low, high) in zip((q[:, self.coords], v[:, self.dofs], a[:, self.dofs]),
                                       self.bounds(tighter)):
            if np.any(values < low - tolerance) or np.any(values > high + tolerance):
                return False
        return self.floor is None or bool(self.clearance(x, basis).min() >= -tolerance)


def random_states(excitation: Excitation, rng: np.random.Generator, count: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q (count, nq), v, a (count, nv)): random positions, normal v and a of the excited
    dofs, the others at the neutral q and at rest."""
    model = excitation.model
    q = np.tile(model.q_neutral, (count, 1))
    q[:, excitation.coords] = model.random_configuration(rng, count)[:, excitation.coords]
    v, a = np.zeros((count, model.nv)), np.zeros((count, model.nv))
    v[:, excitation.dofs] = rng.normal(size=(count, len(excitation.dofs)))
    a[:, excitation.dofs] = rng.normal(size=(count, len(excitation.dofs)))
    return q, v, a


def base_columns(excitation: Excitation, rng: np.random.Generator, count: int = 200,
                 tolerance: float = 1e-8) -> np.ndarray:
    """The regressor's columns (r,) independent over random states of the excited dofs
    (:func:`random_states`), by identification's rule
    (:func:`~treedyn.engine.analysis.identify.independent_columns` of the stacked
    regressor's R, rank at ``tolerance``): the columns ``dyn identify`` takes as base
    parameters from these states."""
    W = regressor(excitation.model, *random_states(excitation, rng, count))
    W = W.reshape(-1, W.shape[-1])
    R = scipy.linalg.qr(W, mode="r", check_finite=False)[0]  # W's column space and norms
    return np.sort(independent_columns(R, tolerance).independent)


def random_start(excitation: Excitation, rng: np.random.Generator) -> np.ndarray:
    """Random coefficients x: q0 the middle of each joint's range (its neutral q when
    unlimited), a_jl, b_jl normal over l, scaled together to use MARGIN of the tightest
    limit (then halved until the floor holds). ValueError when no scale keeps the floor."""
    n, L = len(excitation.dofs), excitation.harmonics
    middle = (excitation.lower + excitation.upper) / 2
    q0 = np.where(np.isfinite(middle), middle, excitation.model.q_neutral[excitation.coords])
    X = np.hstack([q0[:, None], rng.normal(size=(n, 2 * L)) / np.tile(np.arange(1, L + 1), 2)])
    return scaled(excitation, X.ravel(), MARGIN, np.inf)


def scaled(excitation: Excitation, x: np.ndarray, margin: float = 1.0, most: float = 1.0,
           basis=None) -> np.ndarray:
    """x with each dof's a, b scaled by s_j (its q0 kept) to ``margin`` of the largest
    s_j <= ``most`` that keeps its limits at the times of ``basis`` (default: the dense
    grid), then all halved until the floor holds there. ValueError when no scale keeps
    the floor."""
    G, h, joint = excitation.linear_constraints(basis)
    x0 = np.zeros_like(x)
    x0[::excitation.width] = x[::excitation.width]
    # G (x0 + s d) + h >= 0 for every row: s <= (G x0 + h) / (-G d) where G d < 0
    room, push = G @ x0 + h, -(G @ (x - x0))
    bounded = push > 0
    ratio = np.maximum(room[bounded], 0.0) / push[bounded]
    per_dof = np.full(len(excitation.dofs), np.inf)
    np.minimum.at(per_dof, joint[bounded], ratio)
    per_dof = np.minimum(per_dof, most)
    scale = np.repeat(margin * np.where(np.isfinite(per_dof), per_dof, 1.0), excitation.width)
    for _ in range(30):
        candidate = x0 + scale * (x - x0)
        if excitation.floor is None or excitation.clearance(candidate, basis).min() >= 0:
            return candidate
        scale /= 2
    raise ValueError("the floor cannot be kept: a frame is below it at the middle of the "
                     "joints' ranges")


def optimise(excitation: Excitation, x0: np.ndarray, iterations: int = 100) -> np.ndarray:
    """Coefficients from x0 that minimise log cond(W) within the constraints (module doc);
    the best feasible point SLSQP visited (x0 when it found none better)."""
    G, h, _ = excitation.linear_constraints(tighter=TIGHTER)
    constraints = [{"type": "ineq", "fun": lambda x: G @ x + h, "jac": lambda x: G}]
    if excitation.floor is not None:
        constraints.append({"type": "ineq", "fun": excitation.clearance})
    best = [np.log(excitation.condition(x0)), x0]

    def objective(x):
        """log cond(W) and its gradient by forward differences, in one regressor call."""
        steps = 1e-6 * np.maximum(1.0, np.abs(x))
        values = np.log(excitation.conditions(np.vstack([x, x + np.diag(steps)])))
        values = np.where(np.isfinite(values), values, 1e3)
        if values[0] < best[0] and excitation.feasible(x, tighter=TIGHTER):
            best[:] = values[0], x.copy()
        return values[0], (values[1:] - values[0]) / steps

    scipy.optimize.minimize(objective, x0, jac=True, method="SLSQP",
                            constraints=constraints,
                            options={"maxiter": iterations, "ftol": 1e-6})
    return best[1]


@dataclass
class Trajectory:
    """An optimised excitation: its coefficients and conditioning."""

    excitation: Excitation
    coefficients: np.ndarray  # (n, 1 + 2L): [q0, a_1 .. a_L, b_1 .. b_L] per excited dof
    condition: float  # cond(W) over the objective's samples
    start_condition: float  # that of the random start (seeded)

    def states(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q (N, nq), v (N, nv), a (N, nv)) at the times t (N,) (s)."""
        basis = fourier_basis(t, self.excitation.harmonics, self.excitation.period)
        return self.excitation.states(self.coefficients.ravel(), basis)


class NoMotion(ValueError):
    """The limits leave the excited joints (almost) still: the base regressor's condition
    number is not finite, so the trajectory excites nothing."""


def excite(excitation: Excitation, seed: int = 0, iterations: int = 100,
           times: np.ndarray | None = None) -> Trajectory:
    """A random start (``seed``) optimised (:func:`optimise`); with ``times`` (N,) the
    result's a, b scaled down where the limits or the floor would not hold at them.
    NoMotion when the result's condition number is not finite."""
    x0 = random_start(excitation, np.random.default_rng(seed))
    x = optimise(excitation, x0, iterations)
    if times is not None:
        basis = fourier_basis(times, excitation.harmonics, excitation.period)
        if not excitation.feasible(x, basis):
            x = scaled(excitation, x, 1.0, 1.0, basis)
    condition = excitation.condition(x)
    if not np.isfinite(condition):
        raise NoMotion("the limits leave no motion to excite: the base regressor's condition "
                       "number is not finite")
    return Trajectory(excitation, x.reshape(len(excitation.dofs), excitation.width),
                      condition, excitation.condition(x0))
