"""Physical consistency of link inertias, link by link and body by body.

Conventions
-----------
* A link's inertia is its mass ``m``, centre of mass ``c`` (3,) in the link frame and the
  rotational inertia ``I`` (3, 3) about the com in the link frame (``LinkSpec.inertia``).
* Principal moments are the eigenvalues of ``I`` in increasing order. The triangle
  inequality is ``lambda_1 + lambda_2 >= lambda_3``; its *slack* ``lambda_1 + lambda_2 -
  lambda_3`` is negative by the *deficit* when violated.
* Pseudo-inertia (Wensing, Kim & Slotine 2017) about the link origin:
  ``J = [[Sigma, h], [h^T, m]]`` with ``Ibar = I + m (|c|^2 1 - c c^T)`` (the inertia about
  the origin), ``Sigma = 1/2 tr(Ibar) 1 - Ibar`` (the second moment of the mass about the
  origin) and ``h = m c``. A mass distribution exists iff ``J >= 0``; ``J > 0`` rules out
  point, rod and flat idealisations. Moving the reference point to the com is a congruence
  that keeps that verdict and makes ``J_c = [[Sigma_c, 0], [0, m]]``, ``Sigma_c = 1/2 tr(I) 1
  - I``, whose eigenvalues are the halved triangle slacks ``(lambda_i + lambda_j -
  lambda_k) / 2``. The value reported is Sigma_c's smallest eigenvalue (kg m^2); the verdict
  uses it over ``tr(Sigma_c)``, which depends neither on the units of length nor on where
  the link origin is.
* Geometry (collision, else visual) enters as primitive solids in the link frame
  (:class:`LinkGeometry`, meshes replaced by their bounding boxes): the *uniform inertia*
  is the inertia the link's mass would have if it filled the solids at uniform density.
* ``tolerance`` is relative: a relative violation up to it is accepted, a relative margin
  below it is reported as degenerate.
* Body checks use the compact tree: a body is a moving joint's link with every link welded
  to it. "mass": a massless moving body is fine when its subtree gives its joint mass and
  inertia (the joint's diagonal block of M, armature excluded, is positive definite), as
  Pinocchio computes it; MuJoCo is stricter and refuses it unless a welded child gives it
  mass (the MJCF parser applies that rule). "articulated-inertia" is ABA's local D-block relative to
  ``lambda_max(M)`` (see :mod:`treedyn.engine.analysis.conditioning`). Both are evaluated at the
  neutral configuration and a few random ones (worst case reported).

Checks (one finding per link, or per body, and check; status pass, fail or skip)
---------------------------------------------------------------------------------
finite, mass (negative or above ``ABSURD_MASS``: error; zero, or under MINVAL, with a
non-zero tensor: warning; a massless moving body whose subtree gives its joint no inertia:
error), inertia-pd (asymmetric or
indefinite: error; semi-definite or nil: warning), triangle (deficit beyond the tolerance:
error), pseudo-inertia (J not PSD: error; only PSD: warning), plausibility (inertia >= 100x
the uniform inertia of the geometry: error; >= 10x, <= 1/100x or com far outside the
geometry: warning), about-origin (implausible as written but plausible and consistent read
about the link origin: error), orientation (axes match the geometry only without, or with
the inverse of, the inertial rpy: error; exact geometry far off: warning), density (above
``max_density``: warning), articulated-inertia (singular D-block: error; below
``min_block_ratio``: warning), merged-pseudo-inertia (pseudo-inertia of a body with
several massive links), limits (a 1-dof joint's lower limit above its upper: error).
One defect gives one finding: the checks it implies become skips naming it
(:mod:`.inertia_hierarchy`). A placeholder inertia (mass and tensor both under 1e-4 of the
model's, as 1e-6 kg links written for urdfdom and KDL) is not checked alone: its body is
judged whole. On a link under 1 % of its body's mass (or welded to the world) an
idealisation (point, rod, flat) is no defect, density is not judged, and an inconsistent
tensor is a warning when the body as a whole is consistent (or the link is welded to the
world). Semi-definite tensors still get the geometry checks. The geometry checks' errors
are warnings on a welded link holding under 1 % of its body's mass, and on a link welded
to the world (it moves nothing here; a floating base makes it part of the base body and
the check counts again).
Plausibility and about-origin are skipped where the density check finds the geometry too
small to hold the mass (a token shape; collision shapes too small give way to visual ones
that hold it, as contact spheres under a foot), and every geometry check where MuJoCo
computed the inertia from the geoms themselves. Orientation passes an inertia that is
exactly the other geometry's (visual for collision) and judges no axes against meshes'
bounding boxes, which are aligned with the mesh frame whatever the mass does.

Modules: this one holds the report types, the inertia arithmetic, the solids, the
:class:`Checker` that records findings and the checks on the inertia alone
(:class:`LinkChecks`); the geometry and body checks are in :mod:`.inertia_geometry` and
:mod:`.inertia_body`, all run by :func:`.check_inertia.check_inertia`.
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field

import numpy as np

from ..crba import crba
from ..description import Inertia, LinkSpec, Shape, SourceRef
from ..geometry import LinkGeometry, solid_corners, solid_properties
from ..model import Model
from ..reference import articulated_blocks
from ..samples import sample_configurations
from ..subtree import TreeSweeps
from .plain import plain

MINVAL = 1e-15  # MuJoCo's mjMINVAL: mass and inertia below this count as none
ROUNDING = 1e-13  # relative size of eigenvalue rounding noise (about 500 ulp)
ABSURD_MASS = 1e6  # kg: no robot link weighs a thousand tonnes
SEVERITIES = ("error", "warning", "info")
STATUSES = ("fail", "pass", "skip")
LINK_CHECKS = ("finite", "mass", "inertia-pd", "triangle", "pseudo-inertia", "plausibility",
               "about-origin", "orientation", "density")
BODY_CHECKS = ("articulated-inertia", "merged-pseudo-inertia", "limits")
CHECKS = LINK_CHECKS + BODY_CHECKS
# Checks that compare with the geometry: their errors become warnings on a link welded to a
# body it hardly changes (a sensor frame with a placeholder inertia, say).
HEURISTIC_CHECKS = ("plausibility", "about-origin", "orientation", "density")
NEGLIGIBLE_MASS = 0.01  # welded link mass / body mass below which the link hardly matters
DENSE_DOFS = 2000  # nv above which the body checks never form M (8 samples: 256 MB at 2000)
EXACT_MATCH = 0.05  # relative distance under which an inertia IS the geometry's uniform one
GHOST = ("zero mass but a non-zero inertia tensor: no body has rotational inertia without "
         "mass (MuJoCo refuses it on a moving body)")


@dataclass(frozen=True)
class CheckOptions:
    tolerance: float = 1e-6  # relative, for symmetry, definiteness and the triangle inequality
    plausible_ratio: float = 10.0  # inertia / uniform inertia above this: warning
    implausible_ratio: float = 100.0  # above this (or below its inverse): error / warning
    max_density: float = 25000.0  # kg/m^3; denser than any metal: warning
    min_block_ratio: float = 1e-8  # articulated-inertia warning threshold
    samples: int = 8  # configurations for the body checks (the neutral one first)
    dense_dofs: int = DENSE_DOFS  # above this nv, M is never formed (see Checker)
    seed: int = 0
    fix: bool = False  # attach the nearest consistent inertia to failing findings
    # how messages name the rotation the file applies to the tensor (the caller's terms)
    rotation_name: str = "the inertial rotation"


@dataclass(frozen=True)
class Fix:
    """A suggested inertia (never applied): about the com, in the link frame."""

    mass: float
    com: np.ndarray  # (3,)
    inertia: np.ndarray  # (3, 3)
    rotation: np.ndarray  # (3, 3) frame the file writes the tensor in (URDF inertial rpy)
    reason: str
    # pose in the link frame of the frame the file places <inertial> in (LinkSpec.file_*)
    file_rotation: np.ndarray = field(default_factory=lambda: np.eye(3))  # (3, 3)
    file_translation: np.ndarray = field(default_factory=lambda: np.zeros(3))  # (3,)

    def tensor_as_written(self) -> np.ndarray:
        """The tensor in the frame the file writes it in (to paste into the same element)."""
        return self.rotation.T @ self.inertia @ self.rotation

    def in_file_frame(self) -> tuple[np.ndarray, np.ndarray]:
        """(com (3,), tensor (3, 3)) in the frame the file places <inertial> in (MJCF: the
        <body> frame, where ``pos`` and ``fullinertia`` are read)."""
        R = self.file_rotation
        return R.T @ (self.com - self.file_translation), R.T @ self.inertia @ R


@dataclass(frozen=True)
class Finding:
    body: str  # the link (original name for links merged by fixed joints) or body
    check: str  # one of CHECKS
    severity: str  # one of SEVERITIES
    status: str  # one of STATUSES
    message: str
    value: object  # the measured value (float, list of floats or None)
    margin: float | None  # distance to failing (positive: passes), unit per check
    source: SourceRef  # the <inertial> (or <link>) element
    scope: str = "link"  # "link" or "body" (a moving body of the compact tree)
    links: tuple[str, ...] = ()  # for body findings: the links merged into the body
    details: dict = field(default_factory=dict)
    fix: Fix | None = None  # with CheckOptions.fix, on failing findings that have one


@dataclass(frozen=True)
class InertiaReport:
    model: str
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def failed(self, check: str | None = None) -> list[Finding]:
        return [f for f in self.findings
                if f.status == "fail" and (check is None or f.check == check)]


# ----------------------------------------------------------------------------- numbers

def symmetric(matrix: np.ndarray) -> np.ndarray:
    return 0.5 * (matrix + np.swapaxes(matrix, -1, -2))


def principal_moments(inertia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(moments ascending (3,), principal axes as columns (3, 3)) of the symmetric part;
    moments within rounding of zero (:data:`ROUNDING` of the largest) are exactly 0."""
    moments, axes = np.linalg.eigh(symmetric(inertia))
    scale = float(np.abs(moments).max(initial=0.0))
    return np.where(np.abs(moments) <= ROUNDING * scale, 0.0, moments), axes


def numbers(values, scale: float | None = None, digits: int = 6) -> list[str]:
    """``values`` printed to ``digits`` significant digits, each rounded at the scale of
    the largest (or of ``scale``): eigenvalue noise 1e-16 below it prints as 0."""
    values = np.atleast_1d(np.asarray(values, dtype=float))
    scale = float(np.abs(values).max(initial=0.0)) if scale is None else abs(scale)
    return [f"{0.0 if abs(v) <= 10.0 ** -digits * scale else v:.{digits}g}" for v in values]


def triangle_slack(moments: np.ndarray) -> float:
    """lambda_1 + lambda_2 - lambda_3 for ascending moments (negative: the deficit)."""
    return float(moments[0] + moments[1] - moments[2])


def parallel_axis(mass: float, com: np.ndarray) -> np.ndarray:
    """m (|c|^2 1 - c c^T): what moving the reference point from the com to the origin adds."""
    com = np.asarray(com, dtype=float)
    return mass * (com @ com * np.eye(3) - np.outer(com, com))


def second_moment(inertia: np.ndarray) -> np.ndarray:
    """Sigma = 1/2 tr(I) 1 - I: the mass's second moment for a rotational inertia I."""
    return 0.5 * np.trace(inertia) * np.eye(3) - inertia


def pseudo_inertia(mass: float, com: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    """J (4, 4) about the link origin, from the inertia about the com (see module doc)."""
    return spatial_pseudo_inertia(Inertia(mass, np.asarray(com, dtype=float),
                                          np.asarray(inertia, dtype=float)).spatial())


def spatial_pseudo_inertia(spatial: np.ndarray) -> np.ndarray:
    """J (4, 4) about the origin from a spatial inertia (6, 6) about the origin (angular,
    linear), whatever the sign of its mass."""
    about_origin = symmetric(spatial[:3, :3])
    J = np.empty((4, 4))
    J[:3, :3] = second_moment(about_origin)
    J[:3, 3] = J[3, :3] = [spatial[2, 4], spatial[0, 5], spatial[1, 3]]
    J[3, 3] = spatial[3, 3]
    return J


def pseudo_inertia_margin(inertia: np.ndarray) -> tuple[float, float]:
    """(smallest eigenvalue of Sigma_c in kg m^2, the same over tr(Sigma_c)), for m > 0 and
    the rotational inertia ``inertia`` about the com.

    J about the origin is congruent to [[Sigma_c, 0], [0, m]], so with m > 0 it is positive
    (semi-)definite exactly when Sigma_c is; the ratio is dimensionless and the same
    wherever the link origin is. Sigma_c comes from the tensor about the com directly (not
    from J, where m |c|^2 would swamp it for a com far from the origin).
    """
    sigma = np.linalg.eigvalsh(second_moment(symmetric(inertia)))
    spread = float(sigma.sum())
    smallest = float(sigma[0])
    return smallest, (smallest / spread if spread > 0 else (-np.inf if smallest < 0 else 0.0))


def nearest_consistent(inertia: np.ndarray, margin: float = 1e-5) -> np.ndarray:
    """The rotational inertia nearest (Frobenius) to ``inertia`` meeting the strict triangle
    inequality: every ``sigma_k = (lambda_i + lambda_j - lambda_k) / 2 >= margin tr(I)``.

    The feasible set is convex and rotation invariant, so the nearest point keeps the
    principal axes; the moments are projected onto the polyhedral cone by trying every
    set of active constraints (3 constraints: 8 sets) and keeping the closest feasible one.
    """
    moments, axes = principal_moments(inertia)
    scale = max(abs(float(moments.sum())), np.finfo(float).tiny)
    floor = margin * scale
    A = 0.5 * np.ones((3, 3)) - np.eye(3)  # sigma = A @ moments
    best, best_distance = None, np.inf
    for active in itertools.product((False, True), repeat=3):
        rows = A[list(active)]
        candidate = moments
        if rows.size:
            candidate = moments - rows.T @ np.linalg.solve(rows @ rows.T,
                                                           rows @ moments - floor)
        if np.all(A @ candidate >= floor - 1e-12 * scale):
            distance = float(np.linalg.norm(candidate - moments))
            if distance < best_distance:
                best, best_distance = candidate, distance
    return axes @ np.diag(best) @ axes.T


def equivalent_box(moments: np.ndarray, mass: float) -> np.ndarray:
    """Edge lengths (3,) of the uniform box with these principal moments (0 where impossible).

    A box of edges (a, b, c) has I_x = m (b^2 + c^2) / 12, so a^2 = 6 (I_y + I_z - I_x) / m.
    """
    if mass <= 0:
        return np.zeros(3)
    squares = 6.0 * (moments.sum() - 2.0 * moments) / mass
    return np.sqrt(np.clip(squares, 0.0, None))


@dataclass(frozen=True)
class UniformInertia:
    """Uniform-density mass properties of a set of solids, per unit mass."""

    volume: float
    centroid: np.ndarray  # (3,) link frame
    inertia: np.ndarray  # (3, 3) per unit mass about the centroid, link frame
    low: np.ndarray  # (3,) bounding box of the solids in the link frame
    high: np.ndarray  # (3,)


def uniform_inertia(solids: tuple[Shape, ...]) -> UniformInertia | None:
    """Uniform-density properties of the union of ``solids`` (overlaps counted twice)."""
    parts = [solid_properties(solid) for solid in solids]
    volume = sum(part[0] for part in parts)
    if not volume > 0:
        return None
    centroid = sum(part[0] * part[1] for part in parts) / volume
    inertia = sum(part[0] * (part[2] + parallel_axis(1.0, part[1] - centroid))
                  for part in parts) / volume
    corners = np.vstack([solid_corners(solid) for solid in solids])
    return UniformInertia(volume, centroid, inertia, corners.min(axis=0), corners.max(axis=0))


# ----------------------------------------------------------------------------- link checks

@dataclass(frozen=True)
class LinkContext:
    """What the link checks need to know about a link besides its inertia."""

    link: LinkSpec
    body: int  # the compact-tree body it belongs to (-1: welded to the world)
    main: bool  # it is the body's own link (the one its joint moves)
    geometry: LinkGeometry | None
    source: SourceRef  # the <inertial> element, else the <link>
    negligible: str = ""  # why the link hardly matters to its body ("" if it does)
    placeholder: str = ""  # why its inertia is a placeholder ("" if it is not)



class Checker:
    """What every check needs (the model, options, sampled M: past ``dense_dofs`` only its
    blocks and lambda_max, from :mod:`treedyn.engine.subtree`) and ``add``, which records
    one finding; the checks are mixins of it (:mod:`.check_inertia`)."""

    def __init__(self, model: Model, options: CheckOptions):
        self.model, self.options = model, options
        self.findings: list[Finding] = []
        self.q = sample_configurations(model, options.samples, options.seed)
        self.dense = model.nv <= options.dense_dofs or model.coupling is not None
        with np.errstate(all="ignore"):
            if self.dense:
                self.M = crba(model, self.q).reshape(len(self.q), model.nv, model.nv)
                self.finite = bool(np.all(np.isfinite(self.M)))  # huge inertias overflow M
            else:  # linear in the model's size: M's diagonal blocks, lambda_max by Lanczos
                self.sweeps = TreeSweeps(model, self.q)
                self.composite, self.d_blocks = self.sweeps.blocks()
                self.finite = all(np.all(np.isfinite(C)) for C in self.composite)
        largest = np.zeros(len(self.q))
        if model.nv and self.finite and self.dense:
            largest = np.linalg.eigvalsh(self.M)[:, -1]
        elif model.nv and self.finite:
            with np.errstate(all="ignore"):
                largest = self.sweeps.largest_eigenvalues()
            self.finite = bool(np.all(np.isfinite(largest)))
        self.largest = largest

    def diagonal_block(self, j: int) -> np.ndarray:
        """Joint j's diagonal block of M without armature over the samples, (samples, k, k)."""
        if not self.dense:
            return self.composite[j]
        dofs = slice(self.model.idx_v[j], self.model.idx_v[j] + self.model.nv_joint[j])
        return self.M[:, dofs, dofs] - np.diag(self.model.armature[dofs])

    def joint_blocks(self) -> list[np.ndarray]:
        """ABA's D-block of every joint over the samples, (samples, k, k) each."""
        if not self.dense:
            return self.d_blocks
        with np.errstate(all="ignore"):
            return articulated_blocks(self.model, self.q)

    def add(self, context: LinkContext, check: str, status: str, severity: str, message: str,
            value=None, margin=None, details=None, fix=None, scope="link", links=()) -> None:
        """Record a finding on ``context``'s link (or, with scope "body", its body).

        ``fix`` is a callable making the suggested Fix, called only with CheckOptions.fix.
        """
        fix = fix() if callable(fix) and self.options.fix else None
        if fix is not None:
            fix = dataclasses.replace(fix, file_rotation=context.link.file_rotation,
                                      file_translation=context.link.file_translation)
        if severity == "error" and check in HEURISTIC_CHECKS and context.negligible:
            severity, message = "warning", f"{message} [warning only: {context.negligible}]"
        self.findings.append(Finding(
            body=context.link.name, check=check, severity=severity, status=status,
            message=message, value=plain(value),
            margin=None if margin is None else float(margin), source=context.source,
            scope=scope, links=tuple(links),
            details=plain(details or {}), fix=fix))


def ghost_mass(inertia: Inertia) -> bool:
    """No mass to speak of (0 <= m <= MINVAL, MuJoCo's "none") beside a non-zero tensor."""
    return bool(0 <= inertia.mass <= MINVAL and np.any(inertia.inertia))


def ghost_text(mass: float) -> str:
    if mass == 0:
        return GHOST
    return (f"mass {mass:.3g} kg is below {MINVAL:g} kg (none, to MuJoCo) but the inertia "
            "tensor is not zero: no body has rotational inertia without mass")


def negligible_inertia(inertia: Inertia) -> bool:
    """The rotational inertia is nil: below MINVAL + m (1 um)^2 in every direction."""
    floor = MINVAL + 1e-12 * max(inertia.mass, 0.0)
    return bool(np.all(np.abs(np.linalg.eigvalsh(symmetric(inertia.inertia))) <= floor))


class LinkChecks(Checker):
    """The checks of one link's mass and rotational inertia."""

    def mass(self, context: LinkContext) -> None:
        link, mass = context.link, context.link.inertia.mass
        welded = ("welded to the world" if context.body < 0 else
                  f"welded to body {self.model.body_names[context.body]}")
        if mass < 0:
            self.add(context, "mass", "fail", "error", f"negative mass {mass:g} kg",
                     mass, mass, fix=lambda: _negative_mass_fix(link))
        elif mass > ABSURD_MASS:
            self.add(context, "mass", "fail", "error",
                     f"absurd mass {mass:.3g} kg (above {ABSURD_MASS:g} kg; no robot link "
                     "weighs a thousand tonnes): a units mistake, or a stand-in for infinity?",
                     mass, ABSURD_MASS - mass)
        elif context.main:
            self.moving_body_mass(context)
        elif ghost_mass(link.inertia):
            self.add(context, "mass", "fail", "warning", ghost_text(mass), mass, 0.0)
        elif mass == 0:
            note = "no <inertial>" if not link.has_inertial else "zero mass"
            self.add(context, "mass", "pass", "info", f"{note}: a massless frame {welded}",
                     mass, 0.0)
        else:
            self.add(context, "mass", "pass", "info", f"{mass:g} kg, {welded}", mass, mass)

    def moving_body_mass(self, context: LinkContext) -> None:
        """The mass of the body a joint moves (its link with the links welded to it)."""
        model, j = self.model, context.body
        body_mass = float(model.body_mass[j])
        joint = model.joint_names[j]
        ghost = ghost_mass(context.link.inertia)
        ghost_note = ghost_text(context.link.inertia.mass)
        if body_mass > MINVAL:
            merged = "" if body_mass == context.link.inertia.mass else (
                f" ({body_mass:g} kg with the links welded to it)")
            if ghost:
                self.add(context, "mass", "fail", "warning",
                         f"{ghost_note}; the body has{merged}", 0.0, body_mass,
                         details={"body_mass": body_mass})
                return
            self.add(context, "mass", "pass", "info",
                     f"{context.link.inertia.mass:g} kg{merged}, moved by joint {joint}",
                     context.link.inertia.mass, body_mass, details={"body_mass": body_mass})
            return
        if not self.finite:
            self.add(context, "mass", "skip", "info", "skipped: M(q) overflows")
            return
        block = self.diagonal_block(j)
        smallest = float(np.linalg.eigvalsh(block)[:, 0].min())
        details = {"body_mass": body_mass, "joint": joint, "subtree_inertia": smallest}
        if smallest > MINVAL and ghost:
            self.add(context, "mass", "fail", "warning",
                     f"{ghost_note}; its subtree gives joint {joint} mass and inertia", body_mass,
                     smallest, details=details)
        elif smallest > MINVAL:
            self.add(context, "mass", "pass", "info",
                     f"massless moving body, but its subtree gives joint {joint} mass and "
                     f"inertia (smallest eigenvalue {smallest:.3g}): the dynamics are defined, "
                     "as Pinocchio computes them (MuJoCo would refuse a massless moving body "
                     "without a welded child that has mass)",
                     body_mass, smallest, details=details)
        else:
            self.add(context, "mass", "fail", "error",
                     f"moving body without mass: joint {joint} moves no mass or inertia along "
                     "some of its directions (M is singular there)", body_mass, smallest,
                     details=details)

    def inertia_pd(self, context: LinkContext) -> None:
        inertia, tol = context.link.inertia.inertia, self.options.tolerance
        asymmetry = float(np.linalg.norm(inertia - inertia.T) /
                          max(np.linalg.norm(inertia), np.finfo(float).tiny))
        moments, _ = principal_moments(inertia)
        largest = float(moments[-1])
        if negligible_inertia(context.link.inertia):
            self.add(context, "inertia-pd", "fail", "warning",
                     "zero rotational inertia (a point mass)", moments, 0.0,
                     {"principal_moments": moments}, lambda: _consistent_fix(context, tol))
            return
        relative = float(moments[0] / largest) if largest > 0 else -np.inf
        details = {"principal_moments": moments, "asymmetry": asymmetry}
        text = "principal moments " + ", ".join(numbers(moments)) + " kg m^2"
        fix = lambda: _consistent_fix(context, tol)  # noqa: E731
        if asymmetry > tol:
            self.add(context, "inertia-pd", "fail", "error",
                     f"not symmetric (relative asymmetry {asymmetry:.3g})", moments, -asymmetry,
                     details, fix)
        elif relative < -tol:
            self.add(context, "inertia-pd", "fail", "error",
                     f"not positive definite: {text}", moments, relative, details, fix)
        elif relative <= tol:
            self.add(context, "inertia-pd", "fail", "warning",
                     f"only semi-definite (a point mass, rod or zero inertia): {text}",
                     moments, relative, details, fix)
        else:
            self.add(context, "inertia-pd", "pass", "info", f"positive definite: {text}",
                     moments, relative, details)

    def triangle(self, context: LinkContext) -> None:
        moments, _ = principal_moments(context.link.inertia.inertia)
        if negligible_inertia(context.link.inertia) or moments[-1] <= 0:
            self.add(context, "triangle", "skip", "info", "no rotational inertia to check")
            return
        slack = triangle_slack(moments)
        relative = slack / float(moments[-1])
        details = {"principal_moments": moments, "deficit": max(-slack, 0.0),
                   "deficit_percent": max(-relative, 0.0) * 100}
        if relative < -self.options.tolerance:
            self.add(context, "triangle", "fail", "error",
                     "triangle inequality violated: {} + {} < {}".format(*numbers(moments)) +
                     f" by {numbers([-slack], moments[2], 3)[0]} kg m^2 "
                     f"({-relative * 100:.3g} %)",
                     slack, relative, details,
                     lambda: _consistent_fix(context, self.options.tolerance))
        else:
            self.add(context, "triangle", "pass", "info",
                     "{} + {} >= {}".format(*numbers(moments)) +
                     f" (slack {numbers([relative * 100], 100, 3)[0]} %)", slack, relative,
                     details)

    def pseudo_inertia(self, context: LinkContext) -> None:
        link = context.link
        if link.inertia.mass == 0:
            self.add(context, "pseudo-inertia", "skip", "info", "skipped: no mass (see mass)")
            return
        self.add_pseudo_inertia(context, link.inertia, "pseudo-inertia",
                                lambda: _consistent_fix(context, self.options.tolerance))

    def add_pseudo_inertia(self, context, inertia: Inertia, check, fix, J=None,
                           **extra) -> None:
        """The pseudo-inertia finding of ``inertia`` (``J`` given when the mass is not
        positive: an Inertia about the com then has lost the first moment)."""
        tol = self.options.tolerance
        J = pseudo_inertia(inertia.mass, inertia.com, inertia.inertia) if J is None else J
        if J[3, 3] == 0:  # a merged body whose masses cancel: J = [[Sigma, h], [h^T, 0]]
            smallest = float(np.linalg.eigvalsh(J)[0])
            if smallest < 0:
                self.add(context, check, "fail", "error",
                         f"pseudo-inertia J is not positive semi-definite (zero mass, smallest "
                         f"eigenvalue {smallest:.3g}): no mass distribution has this inertia",
                         smallest, None, {"eigenvalues": np.linalg.eigvalsh(J)}, fix, **extra)
            else:
                self.add(context, check, "skip", "info", "skipped: no mass (see mass)", **extra)
            return
        if J[3, 3] < 0:
            self.add(context, check, "fail", "error",
                     f"pseudo-inertia J is not positive semi-definite (mass {J[3, 3]:g} kg): "
                     "no mass distribution has this inertia", J[3, 3], None,
                     {"eigenvalues": np.linalg.eigvalsh(J)}, fix, **extra)
            return
        smallest, margin = pseudo_inertia_margin(inertia.inertia)
        if negligible_inertia(inertia):  # a point mass: J = [[0, 0], [0, m]] about the com
            smallest, margin = 0.0, 0.0
        details = {"eigenvalues": np.linalg.eigvalsh(J), "normalized_min": margin}
        scale = max(float(np.trace(inertia.inertia)), 0.0)
        text = ("smallest eigenvalue of the second moment about the com "
                f"{numbers([smallest], scale, 3)[0]} kg m^2")
        if margin < -tol:
            self.add(context, check, "fail", "error",
                     f"pseudo-inertia J is not positive semi-definite ({text}): no mass "
                     "distribution has this inertia", smallest, margin, details, fix, **extra)
        elif margin <= tol:
            state = ("only semi-definite" if margin >= 0 else
                     f"not positive semi-definite, within the tolerance {tol:g}")
            self.add(context, check, "fail", "warning",
                     f"pseudo-inertia J is {state} ({text}): a point, rod or flat "
                     "idealisation", smallest, margin, details, fix, **extra)
        else:
            self.add(context, check, "pass", "info",
                     f"pseudo-inertia J positive definite ({text}, {margin:.3g} of its trace)",
                     smallest, margin, details, **extra)


def _consistent_fix(context: LinkContext, tolerance: float) -> Fix | None:
    """The nearest consistent inertia; for a nil one, the geometry's uniform inertia."""
    link, inertia = context.link, context.link.inertia
    if not inertia.mass > 0:
        return None
    if negligible_inertia(inertia):
        geometry = context.geometry
        uniform = uniform_inertia(geometry.solids) if geometry and geometry.solids else None
        if uniform is None:
            return None  # no size to go by
        return Fix(inertia.mass, inertia.com, inertia.mass * uniform.inertia,
                   link.inertial_rotation,
                   f"uniform density filling the {geometry.role} geometry, same mass")
    # sigma_min >= margin tr(I) passes the triangle and pseudo-inertia checks (which want
    # sigma_min > tolerance tr(I) / 2) at ``tolerance``; the sigmas sum to tr(I) / 2, so no
    # inertia meets a margin above 1/6: capped there, the fix passes up to tolerance ~0.3
    margin = min(tolerance, 0.16)
    return Fix(inertia.mass, inertia.com, nearest_consistent(inertia.inertia, margin),
               link.inertial_rotation, "nearest inertia (Frobenius) meeting the strict "
               "triangle inequality, same mass and com")


def _negative_mass_fix(link: LinkSpec) -> Fix:
    inertia = link.inertia
    tensor = inertia.inertia if np.trace(inertia.inertia) >= 0 else -inertia.inertia
    return Fix(-inertia.mass, inertia.com, nearest_consistent(tensor), link.inertial_rotation,
               "the sign of the mass flipped (a sign typo?)")
