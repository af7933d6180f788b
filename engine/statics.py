"""Statics against effort limits: for each actuated dof, the largest |g_i(q)| over the joint
ranges, where it occurs, and the largest payload the joint can hold (``dyn statics``).

Conventions
-----------
* ``g(q)`` is the generalized gravity, :func:`~treedyn.engine.rnea.generalized_gravity`
  (inverse dynamics at v = a = 0); a payload of mass ``m`` at a point of a body adds
  ``m s(q)`` with ``s = -J_p^T g_world`` (the point's Jacobian, per kilogram), computed as
  ``g`` of the model with 1 kg more at that point minus ``g``.
* The varied joints: every revolute, continuous and prismatic joint with a coordinate over
  its range; a joint without limits (continuous) over a full turn [-pi, pi], periodic.
  Other joints are held at the neutral configuration: a free-flyer's base fixed (the
  identity for a URDF ``free_flyer``, the file's pose for an MJCF ``<freejoint>``), ball and
  planar joints, and a prismatic joint without limits (``notes`` says so).
* g_i depends only on the joints on the path from the root to dof i and those in i's
  subtree (a prismatic joint above i moves its subtree without turning it: not even on
  those); the others are left at the neutral configuration in the argmax.
* Search: a Latin hypercube of ``samples`` configurations over the varied joints, one
  batched evaluation of g for all dofs at once; the ``starts`` best samples of each dof
  are refined all at once by projected Newton steps (:func:`ascend`; periodic joints
  unbounded and wrapped to (-pi, pi] after): one batched evaluation of g per step for
  every start, where scipy's L-BFGS-B, one start at a time or stacked, took hundreds of
  evaluations.
* Certified: ``bound`` is a rigorous upper bound of max |g_i| -- each body's (and the
  payload's) weight times the longest its centre can be from joint i's axis (the sum of
  the joint offsets and prismatic travels between them, plus its com offset) -- reached by
  a stretched arm held horizontal. ``certified`` when the maximum found is within 1e-6
  relative of it; otherwise the maximum found is attained (at ``q``) and so a lower bound
  of the true maximum, and the true one lies in [max, bound].
* Payload capacity: the largest mass ``m >= 0`` at the payload point with
  ``|g_i(q) + m s_i(q)| <= limit_i`` at every configuration, i.e. the minimum over q of
  ``(limit_i - sign(s_i) g_i) / |s_i|`` (found by the same search). It is at least
  ``(limit_i - max|g_i|) / max|s_i|``, the bound a worst case taken separately for the
  robot and the payload gives; 0 when the robot alone exceeds the limit, +inf when the
  joint does not carry the point (s_i = 0) or has no limit. With a payload given, g
  includes it; the capacity is then the total mass the point may hold.
"""
from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from .coupling import couple
from .description import Inertia, JointSpec, LinkSpec
from .model import ONE_DOF_TYPES, Model, build_model
from .names import unique
from .rnea import generalized_gravity

TOLERANCE = 1e-6  # relative: "certified" when the maximum found is this close to the bound
STEP = 1e-4  # the search's finite-difference step (rad or m)
# the largest load (N m or N) whose second differences (4 |g| / STEP^2) a double holds
LARGEST_LOAD = float(np.finfo(float).max) * STEP ** 2 / 4


class LoadOverflow(ValueError):
    """The gravity loads (with the payload) pass the largest double: no number to report."""


class Payload(NamedTuple):
    """A point mass: ``mass`` kg at ``point`` (3,) in the frame of body ``body``."""

    mass: float
    body: int
    point: np.ndarray


class DofStatics(NamedTuple):
    """One actuated dof's statics (see the module doc)."""

    dof: int
    max_abs: float  # max |g_i| found
    q: np.ndarray  # (nq,) where it occurs (the joints g_i does not depend on: neutral)
    varied: tuple[int, ...]  # the joints g_i depends on that were varied
    bound: float  # rigorous upper bound of max |g_i|
    certified: bool
    limit: float
    ratio: float  # max_abs / limit (inf for a zero limit, 0 without one)
    capacity: float  # the largest payload mass at the payload point (inf: no limit)
    capacity_q: np.ndarray | None  # (nq,) where the capacity is decided


class Statics(NamedTuple):
    dofs: tuple[DofStatics, ...]
    payload: Payload | None
    notes: tuple[str, ...]


def common_body(model: Model) -> int:
    """The default payload body: the deepest body supporting every other body of its
    tree -- a serial arm's last link, the hand of a gripper -- (-1 when several bodies hang
    from the world)."""
    roots = np.flatnonzero(model.parent == -1)
    if len(roots) != 1:
        return -1
    body = int(roots[0])
    while True:
        children = np.flatnonzero(model.parent == body)
        if len(children) != 1:
            return body
        body = int(children[0])


def payload_model(model: Model, payload: Payload) -> Model:
    """The model with 1 kg more at the payload point (its g minus the model's is s)."""
    description = model.description
    name = unique("payload", {link.name for link in description.links})
    full = model.coupling.full if model.coupling is not None else model
    parent = full.body_frames[payload.body]
    link = LinkSpec(name, Inertia(1.0, np.zeros(3), np.zeros((3, 3))))
    joint = JointSpec(name, "fixed", parent, name, translation=np.asarray(payload.point, float))
    heavier = build_model(dataclasses.replace(description, links=[*description.links, link],
                                              joints=[*description.joints, joint]))
    if model.coupling is None:
        return heavier
    return couple(heavier)


def statics(model: Model, payload: Payload | None = None, samples: int = 2048,
            starts: int = 8, seed: int = 0) -> Statics:
    """The statics of every actuated dof (module doc); ``payload``: its point also sets
    where the capacity is computed (None: 0 kg at :func:`common_body`'s origin).
    :class:`LoadOverflow` when the loads (their bound, or a sample's) pass
    :data:`LARGEST_LOAD`: they, or their finite differences, overflow."""
    if payload is None:
        body = common_body(model)
        payload = Payload(0.0, body, np.zeros(3)) if body >= 0 else None
    space = Space.of(model)
    # a payload on the world (body -1) loads no joint
    heavier = payload_model(model, payload) if payload is not None and payload.body >= 0 \
        else None

    def loads(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(g (N, nv) of the robot alone, s (N, nv): per kg at the point; zeros without)."""
        g = generalized_gravity(model, q)
        if heavier is None:
            return g, np.zeros_like(g)
        s = generalized_gravity(heavier, q) - g
        return g, np.where(np.abs(s) <= noise, 0.0, s)

    # s below this is rounding (of g's size) where the point does not load the joint
    noise = 1e-9 * float(np.linalg.norm(model.gravity))

    mass = payload.mass if payload is not None else 0.0
    dofs = np.flatnonzero(model.actuated)
    relevant = dependence(model)  # (nv, nj) bool
    with np.errstate(over="ignore"):  # (a bound past a double: refused below)
        bounds = upper_bounds(model, payload)
    Q = space.sample(samples, seed)
    G, S = loads(Q)
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.isfinite(G + mass * S).all()
    if not np.all(bounds[dofs] <= LARGEST_LOAD):
        raise LoadOverflow(f"the gravity loads pass {LARGEST_LOAD:.2g} (N m or N), the most "
                           "the search's finite differences hold: too large to compute")
    if not finite:  # (a point so far out that its inertia about the body overflows)
        raise LoadOverflow("the gravity loads overflow on the way (a mass or distance past "
                           "what a double holds squared): too large to compute")
    problems = []
    for i in dofs:
        mask = relevant[i][space.joints]
        loaded = G[:, i] + mass * S[:, i]
        problems += [Problem(int(i), "max", float(np.sign(loaded[k]) or 1.0), Q[k], mask)
                     for k in np.argsort(-np.abs(loaded))[:starts]]
        limit = model.effort_limit[i]
        if np.isfinite(limit) and np.any(S[:, i] != 0):
            h = capacity_of(G[:, i], S[:, i], limit)
            problems += [Problem(int(i), "capacity", 1.0, Q[k], mask)
                         for k in np.argsort(h)[:starts]]
    solved = refine(space, loads, mass, problems)
    return Statics(tuple(_dof(model, space, i, relevant[i], solved, bounds[i])
                         for i in dofs), payload, space.notes)


def search_bytes(model: Model, samples: int = 2048, starts: int = 8) -> int:
    """An upper bound of the bytes :func:`statics` holds at once, computed in time linear in
    the model: the samples' loads; per problem (``2 starts`` a dof) a gradient and Hessian
    over the varied joints; and one round of finite-difference steps, ``1 + 2m + m(m-1)/2``
    configurations for a dof whose g depends on m joints (:func:`dependence`, bounded
    here by its non-prismatic ancestors and its subtree). Quadratic in m: a long chain
    is far more costly than a star of the same size."""
    nj = model.njoints
    dofs = np.flatnonzero(model.actuated)
    if model.coupling is not None:
        m = np.full(len(dofs), nj, dtype=np.int64)
    else:
        above = np.zeros(nj, dtype=np.int64)  # non-prismatic joints above each joint
        for j, k in enumerate(model.parent.tolist()):
            if k >= 0:
                above[j] = above[k] + (model.joint_types[k] != "prismatic")
        m = (above + model.subtree_end - np.arange(nj))[model.dof_joint[dofs]]
    problems = 2 * starts * len(dofs)
    rows = int((1 + 2 * m + m * (m - 1) // 2).sum()) * 2 * starts
    return 8 * (4 * samples * model.nv + problems * nj * (nj + 1)
                + rows * (model.nq + 4 * model.nv))


def capacity_of(g: np.ndarray, s: np.ndarray, limit: float) -> np.ndarray:
    """(limit - sign(s) g) / |s| (inf where s = 0), clipped at 0: the mass at which |g + m
    s| reaches the limit at each configuration."""
    with np.errstate(divide="ignore", invalid="ignore"):
        h = (limit - np.sign(s) * g) / np.abs(s)
    return np.where(s == 0, np.inf, np.maximum(h, 0.0))


class Problem(NamedTuple):
    dof: int
    kind: str  # "max": maximise sign * g_i; "capacity": minimise the capacity
    sign: float
    start: np.ndarray  # (nq,)
    mask: np.ndarray  # (nvar,) bool: the varied joints g_i depends on


def _dof(model, space, i, relevant, solved, bound) -> DofStatics:
    best = max((p for p in solved if p[0].dof == i and p[0].kind == "max"),
               key=lambda p: p[1])
    max_abs, q = best[1], space.neutral_outside(best[2], relevant)
    capacities = [p for p in solved if p[0].dof == i and p[0].kind == "capacity"]
    limit = float(model.effort_limit[i])
    capacity, capacity_q = np.inf, None
    if capacities and np.isfinite(limit):
        worst = min(capacities, key=lambda p: p[1])
        capacity, capacity_q = worst[1], space.neutral_outside(worst[2], relevant)
    bound = max(bound, max_abs)
    ratio = 0.0 if max_abs == 0 else np.inf if limit == 0 else max_abs / limit
    varied = tuple(int(j) for j in space.joints if relevant[j])
    return DofStatics(int(i), max_abs, q, varied, bound,
                      bound - max_abs <= TOLERANCE * bound, limit, float(ratio),
                      float(capacity), capacity_q)


def dependence(model: Model) -> np.ndarray:
    """(nv, nj) bool: the joints g_i may depend on -- those above dof i's joint but prismatic
    ones, its own, those below it; every joint for a coupled model."""
    nj = model.njoints
    if model.coupling is not None:
        return np.ones((model.nv, nj), dtype=bool)
    joints = np.zeros((nj, nj), dtype=bool)
    for j in range(nj):
        joints[j, j:model.subtree_end[j]] = True
        k = model.parent[j]
        while k >= 0:
            joints[j, k] = model.joint_types[k] != "prismatic"
            k = model.parent[k]
    return joints[model.dof_joint]


@dataclasses.dataclass
class Space:
    """The varied joints: their q entries, bounds, and which are periodic."""

    model: Model
    joints: np.ndarray  # (nvar,) joint indices
    index: np.ndarray  # (nvar,) their q entries
    lower: np.ndarray  # (nvar,)
    upper: np.ndarray
    periodic: np.ndarray  # (nvar,) bool
    notes: tuple[str, ...]

    @staticmethod
    def of(model: Model) -> "Space":
        joints, notes = [], []
        for j, kind in enumerate(model.joint_types):
            if kind not in ONE_DOF_TYPES or model.nq_joint[j] != 1:
                continue
            k = model.idx_q[j]
            finite = np.isfinite(model.q_lower[k]) and np.isfinite(model.q_upper[k])
            if kind == "prismatic" and not finite:
                notes.append(f"joint {model.joint_names[j]}: a prismatic joint without limits "
                             "is held at its neutral position")
                continue
            joints.append(j)
        joints = np.array(joints, dtype=int)
        index = model.idx_q[joints]
        finite = np.isfinite(model.q_lower[index]) & np.isfinite(model.q_upper[index])
        return Space(model, joints, index, np.where(finite, model.q_lower[index], -np.pi),
                     np.where(finite, model.q_upper[index], np.pi), ~finite, tuple(notes))

    def sample(self, count: int, seed: int) -> np.ndarray:
        """(count, nq) Latin hypercube over the varied joints, the rest neutral."""
        from scipy.stats import qmc
        Q = np.tile(self.model.q_neutral, (count, 1))
        if len(self.joints):
            unit = qmc.LatinHypercube(d=len(self.joints), seed=seed).random(count)
            Q[:, self.index] = self.lower + unit * (self.upper - self.lower)
        return Q

    def neutral_outside(self, q: np.ndarray, relevant: np.ndarray) -> np.ndarray:
        """q with the joints g_i does not depend on at their neutral values, periodic ones
        wrapped to (-pi, pi]."""
        out = self.model.q_neutral.copy()
        keep = relevant[self.joints]
        x = q[self.index]
        x = np.where(self.periodic, np.pi - np.mod(np.pi - x, 2 * np.pi), x)
        out[self.index[keep]] = x[keep]
        return out


def refine(space: Space, loads, mass: float, problems: list[Problem]) -> list[tuple]:
    """[(problem, value, q)]: each problem's start refined (:func:`ascend`), all at once;
    value is max |g_i + mass s_i| or the capacity at the q found."""
    n = len(problems)
    if n == 0:
        return []
    base = np.array([p.start for p in problems])  # (n, nq)
    dofs = np.array([p.dof for p in problems])
    signs = np.array([p.sign for p in problems])
    capacity = np.array([p.kind == "capacity" for p in problems])
    limits = space.model.effort_limit[dofs]

    def objective(X: np.ndarray, which: np.ndarray) -> np.ndarray:
        """(M,) objectives to maximise at the varied joints' X (M, d) of problems ``which``
        (M,): sign g_i (with the payload), or minus the capacity."""
        Q = base[which]
        Q[:, space.index] = X
        g, s = (v[np.arange(len(which)), dofs[which]] for v in loads(Q))
        h = capacity_of(g, s, limits[which]) if capacity.any() else 0.0
        return np.where(capacity[which], -h, signs[which] * (g + mass * s))

    masks = np.array([p.mask for p in problems]).reshape(n, len(space.joints))
    X, f = ascend(objective, base[:, space.index], masks, space.lower, space.upper,
                  space.periodic)
    Q = base.copy()
    Q[:, space.index] = X
    return [(p, float(-v if c else v), Q[k])
            for k, (p, v, c) in enumerate(zip(problems, f, capacity))]


def stencil(mask: np.ndarray, h: float) -> np.ndarray:
    """(1 + 2k + k(k-1)/2, d) the steps that give the gradient and Hessian over the k
    variables of ``mask`` by finite differences: 0, +h e_a, -h e_a, h (e_a + e_b) (a < b)."""
    d = len(mask)
    unit = np.eye(d)[np.flatnonzero(mask)]  # (k, d)
    a, b = np.triu_indices(len(unit), 1)
    return np.concatenate([np.zeros((1, d)), h * unit, -h * unit, h * (unit[a] + unit[b])])


def derivatives(f: np.ndarray, mask: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(gradient (d,), Hessian (d, d)) from the values ``f`` at :func:`stencil`'s steps,
    zero outside ``mask``."""
    d, free = len(mask), np.flatnonzero(mask)
    k = len(free)
    plus, minus = f[1:k + 1], f[k + 1:2 * k + 1]
    gradient, hessian = np.zeros(d), np.zeros((d, d))
    gradient[free] = (plus - minus) / (2 * h)
    block = np.diag((plus - 2 * f[0] + minus) / h ** 2)
    a, b = np.triu_indices(k, 1)
    block[a, b] = block[b, a] = (f[2 * k + 1:] - plus[a] - plus[b] + f[0]) / h ** 2
    hessian[np.ix_(free, free)] = block
    return gradient, hessian


def ascend(objective, X: np.ndarray, masks: np.ndarray, lower: np.ndarray,
           upper: np.ndarray, periodic: np.ndarray, iterations: int = 60
           ) -> tuple[np.ndarray, np.ndarray]:
    """(X (n, d), f (n,)): n maximisations at once, from X, by Newton steps with a
    Levenberg-Marquardt shift (``(mu I - H) p = grad`` over the free variables: those of
    ``masks`` not held at a bound the gradient pushes against), projected onto the bounds;
    a step is kept only when f grows, else mu grows tenfold; a problem whose kept step no
    longer raises f is done. Gradient and Hessian by finite differences over each
    problem's own variables (step 1e-4: gradient error ~1e-8 relative, ~1e-16 in f at the
    optimum); periodic variables are unbounded here. ``objective(X (M, d), which (M,))
    -> (M,)`` evaluates problem ``which[m]`` at ``X[m]``, all in one batch."""
    n, d = X.shape
    h = STEP
    steps = [stencil(mask, h) for mask in masks]
    low = np.where(periodic, -np.inf, lower)
    high = np.where(periodic, np.inf, upper)
    mu = np.full(n, 1e-6)
    best, f_best = X.copy(), np.full(n, -np.inf)
    gradient, hessian = np.zeros((n, d)), np.zeros((n, d, d))
    candidate, running = X.copy(), np.ones(n, dtype=bool)
    for _ in range(iterations):
        active = np.flatnonzero(running)
        if not len(active):
            break
        counts = [len(steps[p]) for p in active]
        F = objective(np.concatenate([candidate[p] + steps[p] for p in active]),
                      np.repeat(active, counts))
        for p, f in zip(active, np.split(F, np.cumsum(counts)[:-1])):
            g, H = derivatives(f, masks[p], h)
            if not (np.isfinite(f[0]) and np.all(np.isfinite(g)) and f[0] >= f_best[p]):
                mu[p] *= 10  # rejected: a shorter step from the best point
                continue
            running[p] = f_best[p] == -np.inf or f[0] > f_best[p] + 1e-15 * abs(f_best[p])
            best[p], f_best[p], gradient[p], hessian[p] = candidate[p], f[0], g, H
            mu[p] /= 3
        running &= mu < 1e12
        candidate = _step(best, gradient, hessian, mu, masks, low, high)
    return best, f_best


def _step(X, g, H, mu, masks, low, high) -> np.ndarray:
    """The projected Levenberg-Marquardt Newton step of :func:`ascend` from X (n, d)."""
    n, d = X.shape
    free = masks & ~(((X <= low) & (g < 0)) | ((X >= high) & (g > 0)))  # (n, d)
    A = -H * (free[:, :, None] & free[:, None, :]) + np.eye(d) * (~free)[:, None, :]
    A = np.where(np.isfinite(A), A, 0.0)
    smallest = np.linalg.eigvalsh(A)[:, 0]
    scale = 1e-12 * (1 + np.abs(np.diagonal(A, axis1=1, axis2=2)).max(axis=1))
    shift = np.maximum(mu, np.maximum(0.0, -smallest) + scale)
    A = A + shift[:, None, None] * np.eye(d)
    p = np.linalg.solve(A, (g * free)[..., None])[..., 0]
    return np.clip(X + p, low, high)


def upper_bounds(model: Model, payload: Payload | None) -> np.ndarray:
    """(nv,) a rigorous upper bound of max_q |g_i(q) + m s_i(q)| (module doc)."""
    if model.coupling is not None:
        c = model.coupling
        return np.abs(c.G).T @ upper_bounds(c.full, payload)
    weight = float(np.linalg.norm(model.gravity))
    nj = model.njoints
    offsets = np.linalg.norm(model.joint_arrays.translation, axis=1)  # (nj,)
    travel = np.zeros(nj)
    for j, kind in enumerate(model.joint_types):
        if kind == "prismatic":
            k = model.idx_q[j]
            travel[j] = max(abs(model.q_lower[k] - model.joint_arrays.ref[j]),
                            abs(model.q_upper[k] - model.joint_arrays.ref[j]))
    com = np.linalg.norm(model.body_com, axis=1)
    bounds = np.full(model.nv, np.inf)
    for j in range(nj):
        if model.nv_joint[j] != 1:
            continue
        reach = np.zeros(nj)  # body origin's largest distance from joint j's origin
        for b in range(j + 1, model.subtree_end[j]):
            reach[b] = reach[model.parent[b]] + offsets[b] + travel[b]
        below = slice(j, model.subtree_end[j])
        mass = model.body_mass[below]
        extra = payload is not None and j <= payload.body < model.subtree_end[j]
        if model.joint_types[j] == "prismatic":
            total = mass.sum() + (payload.mass if extra else 0.0)
        else:
            total = np.dot(mass, reach[below] + com[below])
            if extra:
                total += payload.mass * (reach[payload.body] + distance(payload.point))
        bounds[model.idx_v[j]] = weight * total
    return bounds


def distance(point: np.ndarray) -> float:
    """|point|, without overflow (numpy's norm squares first; hypot where that overflows)."""
    norm = float(np.linalg.norm(point))
    return norm if np.isfinite(norm) else math.hypot(*point)
