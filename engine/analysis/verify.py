"""Self-check identities of RNEA, CRBA and ABA on one model at random states.

Conventions
-----------
* States: ``q`` uniform within the joint limits (random unit quaternions), ``v``, ``a``,
  ``tau`` and the external wrenches ``fext`` standard normal; ``fext`` rows are
  (force, torque) on each body in its frame about its origin.
* A residual is ``max |lhs - rhs| / max(1, max |rhs|)`` over the states (relative to the
  size of the reference, absolute below 1; when lhs is the difference of two computations,
  their sizes join the scale). It passes when it is at most the tolerance ``rtol``;
  identities that solve with M (ABA against RNEA, the factor against ABA, free fall, zero
  base actuation), forward errors, are allowed ``max(rtol, 10 eps cond(M))``; ABA against
  RNEA, whose right-hand side tau - h cancels the external wrenches, at least
  ``2 d eps max(|M^-1| max(|tau|, |h|)) / max(1, |a|)`` (elementwise absolute values; d
  the most dofs on a path from the root). M is singular
  where cond(M) >= 1 / eps: such states are left out of the first two (and reported), and
  the other two are skipped.
* Floating-base identities apply to every root joint of type ``free`` (Pinocchio LOCAL:
  linear velocity in the base frame) or ``free_world`` (MuJoCo: linear velocity in the
  joint's reference frame); they are skipped on a fixed base.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..aba import aba
from ..crba import crba
from ..factor import ltdl, ltdl_solve
from ..model import Model
from ..kinematics import body_jacobians, generalized_forces, placements
from ..rnea import rnea
from ..samples import RandomStates, random_states
from ..spatial import rotate
from .spectra import EPS, condition_numbers, singular_states

FLOATING = ("free", "free_world")
# why a check was skipped, besides its note, for callers to word in their own terms
FIXED_BASE = "fixed-base"  # the model has no floating root joint
SINGULAR = "singular"  # M is singular at the states the check needs


@dataclass(frozen=True)
class VerifyOptions:
    samples: int = 8
    seed: int = 0
    rtol: float = 1e-9


@dataclass(frozen=True)
class IdentityResult:
    name: str  # short id, e.g. "rnea-mass"
    identity: str  # the identity, for people
    residual: float  # NaN when skipped
    tolerance: float
    status: str  # "pass", "fail" or "skip"
    note: str = ""
    reason: str = ""  # FIXED_BASE, SINGULAR or "" (a skip, or a failure to compute)


@dataclass(frozen=True)
class VerifyReport:
    model: str
    states: int
    results: tuple[IdentityResult, ...]

    @property
    def ok(self) -> bool:
        return all(result.status != "fail" for result in self.results)


def residual(actual: np.ndarray, reference: np.ndarray, *terms: np.ndarray) -> float:
    """max |actual - reference| / max(1, max |reference|) (NaN anywhere gives inf).

    When ``actual`` is a difference of computed ``terms`` (RNEA with and without a change),
    its rounding is that of the terms, so they join the scale: states at |q| ~ 1e6 give
    torques of 1e13 whose difference carries errors of 1e-3.
    """
    difference = np.abs(np.asarray(actual) - np.asarray(reference))
    if not np.all(np.isfinite(difference)):
        return np.inf
    scale = max([1.0] + [float(np.max(np.abs(x), initial=0.0)) for x in (reference,) + terms])
    return float(np.max(difference, initial=0.0)) / scale


@dataclass(frozen=True)
class Measurement:
    """What one identity check measured: its residual and tolerance, or why it was skipped."""

    residual: float = float("nan")
    tolerance: float = float("nan")
    note: str = ""
    skipped: bool = False
    reason: str = ""  # FIXED_BASE, SINGULAR or ""


def _skipped(note: str, reason: str = "") -> Measurement:
    return Measurement(note=note, skipped=True, reason=reason)


def _eigen_conditions(M: np.ndarray) -> np.ndarray:
    """cond(M) (N,) of symmetric M (N, nv, nv); inf where M is not positive definite."""
    return condition_numbers(np.linalg.eigvalsh(M))


def check_rnea_mass(model: Model, s: RandomStates, rtol: float) -> Measurement:
    """RNEA(q, v, a, f) = M(q) a + RNEA(q, v, 0, f)."""
    M = crba(model, s.q)
    lhs = rnea(model, s.q, s.v, s.a, s.fext)
    rhs = np.einsum("nij,nj->ni", M, s.a) + rnea(model, s.q, s.v, None, s.fext)
    return Measurement(residual(lhs, rhs), rtol)


def check_aba_rnea(model: Model, s: RandomStates, rtol: float) -> Measurement:
    """ABA(q, v, RNEA(q, v, a, f), f) = a, states with singular M left out.

    ABA solves M a = tau - h, where tau and h carry the external wrenches: on light bodies
    (a fruit fly's legs, M ~ 1e-4) unit wrenches make them 1e4 times M a, and their
    cancellation leaves rounding of eps max(|tau_j|, |h_j|) in each dof j, once per dof on
    the path to the root in RNEA and again in ABA, which moves a by up to |M^-1| times that.
    The tolerance is the larger of that and 10 eps cond(M).
    """
    M = crba(model, s.q)
    cond = _eigen_conditions(M)
    with np.errstate(all="ignore"):
        tau = rnea(model, s.q, s.v, s.a, s.fext)
        h = rnea(model, s.q, s.v, None, s.fext)
        a = aba(model, s.q, s.v, tau, s.fext)
    usable = ~singular_states(cond) & np.all(np.isfinite(a), axis=1)
    if not usable.any():
        return _skipped(f"M is singular at all {len(cond)} states", SINGULAR)
    roundings = 2 * max_dof_depth(model)
    tolerances = {}
    for n in np.flatnonzero(usable):
        cancelled = np.maximum(np.abs(tau[n]), np.abs(h[n]))  # (nv,)
        moved = float(np.max(np.abs(np.linalg.inv(M[n])) @ cancelled))
        tolerances[n] = max(rtol, 10 * EPS * cond[n],
                            roundings * EPS * moved / max(1.0, float(np.abs(s.a[n]).max())))
    worst = max(tolerances, key=lambda n: residual(a[n], s.a[n]) / tolerances[n])
    note = f"cond(M) up to {cond[usable].max():.3g}"
    if not usable.all():
        note += f"; M singular at {int((~usable).sum())} of {len(cond)} states, left out"
    return Measurement(residual(a[worst], s.a[worst]), tolerances[worst], note)


def max_dof_depth(model: Model) -> int:
    """The most dofs on one path from the root to a leaf."""
    depth = np.zeros(model.nv, dtype=int)
    for i, parent in enumerate(model.dof_parent):
        depth[i] = 1 + (depth[parent] if parent >= 0 else 0)
    return int(depth.max(initial=0))


def check_rnea_columns(model: Model, s: RandomStates, rtol: float) -> Measurement:
    """RNEA(q, v, a + e_k) - RNEA(q, v, a) = M[:, k] for every dof k (one batched call)."""
    count, nv = len(s.q), model.nv
    M = crba(model, s.q)
    base = rnea(model, s.q, s.v, s.a)
    q = np.repeat(s.q, nv, axis=0)
    v = np.repeat(s.v, nv, axis=0)
    a = np.repeat(s.a, nv, axis=0) + np.tile(np.eye(nv), (count, 1))
    columns = (rnea(model, q, v, a) - np.repeat(base, nv, axis=0)).reshape(count, nv, nv)
    return Measurement(residual(np.swapaxes(columns, 1, 2), M), rtol)


def check_external_force(model: Model, s: RandomStates, rtol: float) -> Measurement:
    """RNEA with f minus RNEA without = -sum J_i^T f_i (J from forward kinematics)."""
    forced, free = rnea(model, s.q, s.v, s.a, s.fext), rnea(model, s.q, s.v, s.a)
    expected = -generalized_forces(body_jacobians(model, s.q), s.fext)
    return Measurement(residual(forced - free, expected, forced, free), rtol)


def check_crba_jacobians(model: Model, s: RandomStates, rtol: float) -> Measurement:
    """M = sum_i J_i^T I_i J_i + diag(armature): kinetic energy body by body."""
    J = body_jacobians(model, s.q)
    energy = (np.einsum("nisv,ist,nitw->nvw", J, model.body_inertia, J, optimize=True)
              + np.diag(model.armature))
    return Measurement(residual(crba(model, s.q), energy), rtol)


def check_factor(model: Model, s: RandomStates, rtol: float) -> Measurement:
    """Solving M a = tau - h through the tree-ordered L^T D L factor gives ABA's a (on a
    coupled model whose M is still tree-shaped; a mimic away from its master's subtree
    couples branches, and there is no such factor)."""
    if model.coupling is not None and not model.coupling.tree_sparse:
        return _skipped("mimic joints couple branches of the tree: M has no tree-ordered "
                        "factor")
    M = crba(model, s.q)
    with np.errstate(all="ignore"):
        expected = aba(model, s.q, s.v, s.tau)
        solved = ltdl_solve(model.dof_parent, ltdl(model.dof_parent, M),
                            s.tau - rnea(model, s.q, s.v))
    conds = _eigen_conditions(M)
    usable = np.all(np.isfinite(expected), axis=1) & ~singular_states(conds)
    if not usable.any():
        return _skipped("M is singular at every state")
    cond = float(conds[usable].max())
    return Measurement(residual(solved[usable], expected[usable]),
                       max(rtol, 10 * EPS * cond), f"cond(M) up to {cond:.3g}")


def floating_roots(model: Model) -> list[int]:
    return [j for j in range(model.njoints)
            if model.parent[j] < 0 and model.joint_types[j] in FLOATING]


def _base_frame_gravity(model: Model, root: int, q: np.ndarray, gravity: np.ndarray):
    """Gravity (N, 3) in the frame the root joint's linear velocity is written in."""
    if model.joint_types[root] == "free":
        R, _ = placements(model, q)
        return np.einsum("nji,j->ni", R[:, root], gravity)
    return np.broadcast_to(model.joint_models[root].rotation.T @ gravity, (len(q), 3))


def _regular_aba(model: Model, q, v, tau) -> tuple[np.ndarray | None, float]:
    """(ABA's a (N, nv), the largest cond(M)), or (None, inf) when M is singular at some
    state or a is not finite."""
    with np.errstate(all="ignore"):
        a = aba(model, q, v, tau)
    conds = _eigen_conditions(crba(model, q))
    if not np.all(np.isfinite(a)) or singular_states(conds).any():
        return None, np.inf
    return a, float(conds.max())


def check_free_fall(model: Model, s: RandomStates, rtol: float) -> Measurement:
    """v = 0, tau = 0: every floating tree falls rigidly: base a = (g, 0), joints a = 0."""
    roots = floating_roots(model)
    if not roots:
        return _skipped("fixed base (no floating root joint)", FIXED_BASE)
    a, cond = _regular_aba(model, s.q, None, None)
    if a is None:
        return _skipped("M is singular at some state", SINGULAR)
    values, references = [], []
    for root in roots:
        dofs = _subtree_dofs(model, root)
        base = slice(model.idx_v[root], model.idx_v[root] + 6)
        if np.any(model.armature[base]):
            return _skipped("the floating joint has armature")
        expected = np.zeros((len(s.q), len(dofs)))
        expected[:, :3] = _base_frame_gravity(model, root, s.q, model.gravity)
        values.append(a[:, dofs])
        references.append(expected)
    return Measurement(residual(np.hstack(values), np.hstack(references)),
                       max(rtol, 10 * EPS * cond), f"cond(M) up to {cond:.3g}")  # an ABA solve


def check_zero_base_actuation(model: Model, s: RandomStates, rtol: float) -> Measurement:
    """tau_base = 0, other tau random: the base still accelerates, and m c'' = m g."""
    roots = floating_roots(model)
    if not roots:
        return _skipped("fixed base (no floating root joint)", FIXED_BASE)
    tau = s.tau.copy()
    for root in roots:
        tau[:, model.idx_v[root]:model.idx_v[root] + 6] = 0.0
    a, cond = _regular_aba(model, s.q, s.v, tau)
    if a is None:
        return _skipped("M is singular at some state", SINGULAR)
    momentum_rate = rnea(model, s.q, s.v, a, gravity=np.zeros(3)) - model.armature * a
    values, references, moving = [], [], True
    for root in roots:
        base = slice(model.idx_v[root], model.idx_v[root] + 3)
        mass = float(model.body_mass[root:model.subtree_end[root]].sum())
        values.append(momentum_rate[:, base])
        references.append(mass * _base_frame_gravity(model, root, s.q, model.gravity))
        moving &= bool(np.all(np.abs(a[:, model.idx_v[root]:model.idx_v[root] + 6]).max(axis=1)
                              > 0))
    note = f"cond(M) up to {cond:.3g}" if moving else "a base did not accelerate"
    value = residual(np.hstack(values), np.hstack(references)) if moving else np.inf
    return Measurement(value, max(rtol, 10 * EPS * cond), note)  # a is an ABA solve


def check_armature(model: Model, s: RandomStates, rtol: float) -> Measurement:
    """Adding armature d changes RNEA by d * a and CRBA by diag(d), and ABA still inverts."""
    rng = np.random.default_rng(len(s.q))
    extra = rng.uniform(0.1, 1.0, size=model.nv)
    changed = dataclasses.replace(model, armature=model.armature + extra)
    tau_changed, tau = rnea(changed, s.q, s.v, s.a), rnea(model, s.q, s.v, s.a)
    M_changed, M = crba(changed, s.q), crba(model, s.q)
    value = max(residual(tau_changed - tau, extra * s.a, tau_changed, tau),
                residual(M_changed - M, np.broadcast_to(np.diag(extra), M.shape), M_changed, M))
    return Measurement(value, rtol)


def check_power(model: Model, s: RandomStates, rtol: float) -> Measurement:
    """v^T (h(q, v) - g(q)) = 1/2 v^T (dM/dt) v: the velocity terms against CRBA.

    Kinetic energy T = 1/2 v^T M v changes at the rate v^T (tau - g) along a motion, so the
    power of the Coriolis and centrifugal forces equals half the rate of change of M seen
    by v. dM/dt is a central difference of CRBA along the motion with velocity v (step
    FD_STEP, O(step^2) = 1e-10 relative), so RNEA's velocity terms are checked against the
    mass matrix, which crba-jacobians checks against forward kinematics. Held to
    max(rtol, 1e-7) of the kinetic-energy scale max(1, max v^T M v). Angles are taken
    modulo 2 pi first: drawn within limits of +-1e16 (iris' rotors), a step of 1e-5 would
    not change them at all.
    """
    q = s.q.copy()
    for j, joint in enumerate(model.joint_models):
        for k in joint.angle_q[:model.nq_joint[j]]:  # none for a mimic joint (coupled)
            q[:, model.idx_q[j] + k] = np.remainder(q[:, model.idx_q[j] + k], 2 * np.pi)
    with np.errstate(all="ignore"):
        bias = rnea(model, q, s.v, None, gravity=np.zeros(3))
        ahead = crba(model, moved(model, q, s.v, FD_STEP))
        behind = crba(model, moved(model, q, s.v, -FD_STEP))
        M = crba(model, q)
    power = np.einsum("ni,ni->n", s.v, bias)
    rate = np.einsum("ni,nij,nj->n", s.v, (ahead - behind) / (2 * FD_STEP), s.v) / 2
    energy = np.einsum("ni,nij,nj->n", s.v, M, s.v)
    return Measurement(residual(power, rate, energy), max(rtol, 1e-7))


FD_STEP = 1e-5  # time step of the central difference of M (velocities are O(1))


def moved(model: Model, q: np.ndarray, v: np.ndarray, t: float) -> np.ndarray:
    """q (N, nq) after moving for time t along a curve whose velocity at q is v (N, nv).

    1-dof joints add t v; a quaternion turns by exp(t w / 2) about its child-frame angular
    velocity w; a free joint's origin moves by t R v_lin (Pinocchio, v_lin in the child
    frame) or t v_lin (MuJoCo, parent frame); a planar joint's (x, y) by t R(theta) (vx, vy).
    Only the tangent matters for a central difference, so the curve need not be the motion
    at constant v.
    """
    q = q.copy()
    for j, joint in enumerate(model.joint_models):
        qj = q[:, model.idx_q[j]:model.idx_q[j] + model.nq_joint[j]]
        vj = v[:, model.idx_v[j]:model.idx_v[j] + model.nv_joint[j]]
        kind = model.joint_types[j]
        if kind in ("spherical", "ball"):
            qj[:] = _turned(qj, vj, t, joint.scalar_first)
        elif kind in ("free", "free_world"):
            linear = vj[:, :3] if kind == "free_world" else rotate(joint.rotation_of(qj), vj[:, :3])
            qj[:, :3] += t * linear
            qj[:, 3:] = _turned(qj[:, 3:], vj[:, 3:], t, joint.scalar_first)
        elif kind == "planar":
            c, s_ = np.cos(qj[:, 2]), np.sin(qj[:, 2])
            qj[:, 0] += t * (c * vj[:, 0] - s_ * vj[:, 1])
            qj[:, 1] += t * (s_ * vj[:, 0] + c * vj[:, 1])
            qj[:, 2] += t * vj[:, 2]
        else:
            qj += t * vj
    return q


def _turned(quat: np.ndarray, w: np.ndarray, t: float, scalar_first: bool) -> np.ndarray:
    """quat (N, 4) times exp(t w / 2) (the child turns by t w in its own frame)."""
    if scalar_first:
        qw, qv = quat[:, :1], quat[:, 1:]
    else:
        qw, qv = quat[:, 3:], quat[:, :3]
    angle = np.linalg.norm(w, axis=1, keepdims=True) * t / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        axis = np.where(angle != 0, w * t / 2 / np.where(angle != 0, angle, 1), 0.0)
    dw, dv = np.cos(angle), np.sin(angle) * axis
    w_new = qw * dw - np.einsum("ni,ni->n", qv, dv)[:, None]
    v_new = qw * dv + dw * qv + np.cross(qv, dv)
    return np.hstack([w_new, v_new]) if scalar_first else np.hstack([v_new, w_new])


def _subtree_dofs(model: Model, root: int) -> np.ndarray:
    return np.arange(model.idx_v[root], model.idx_v[root] + model.nv_subtree[root])


IDENTITIES = {  # name -> (identity, check)
    "rnea-mass": ("RNEA(q,v,a) = M(q) a + h(q,v)", check_rnea_mass),
    "aba-rnea": ("ABA(q,v,RNEA(q,v,a)) = a", check_aba_rnea),
    "rnea-columns": ("RNEA(a + e_k) - RNEA(a) = M[:, k] for every dof k", check_rnea_columns),
    "external-force": ("an external force changes tau by -J^T f", check_external_force),
    "crba-jacobians": ("M = sum J_i^T I_i J_i + armature (kinetic energy)",
                       check_crba_jacobians),
    "factor-aba": ("L^T D L solve of M a = tau - h equals ABA", check_factor),
    "free-fall": ("tau = 0, v = 0: the floating base falls at g, joints still", check_free_fall),
    "zero-base-actuation": ("tau_base = 0 still accelerates the floating base: total force "
                            "m c'' = m g", check_zero_base_actuation),
    "armature": ("armature d: RNEA changes by d a and CRBA by diag(d)", check_armature),
    "power": ("v^T (h(q,v) - g(q)) = 1/2 v^T dM/dt v (velocity terms against CRBA)",
              check_power),
}


def verify(model: Model, options: VerifyOptions = VerifyOptions()) -> VerifyReport:
    """Every identity of :data:`IDENTITIES` at ``options.samples`` random states."""
    states = random_states(model, options.samples, options.seed)
    results = []
    for name, (identity, check) in IDENTITIES.items():
        measured = (check(model, states, options.rtol) if model.nv else
                   _skipped("the model has no degrees of freedom"))
        status = ("skip" if measured.skipped else
                  "pass" if measured.residual <= measured.tolerance else "fail")
        results.append(IdentityResult(name, identity, measured.residual, measured.tolerance,
                                      status, measured.note, measured.reason))
    return VerifyReport(model.name, options.samples, tuple(results))
