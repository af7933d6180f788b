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

Modules: this one holds the report types, the link context, the solids and
:func:`finding`, which makes one finding; each check is a function of its link's or
body's data returning findings: the checks on the inertia alone in :mod:`.inertia_link`,
the geometry checks in :mod:`.inertia_geometry`, the body checks in :mod:`.inertia_body`,
all listed in the one table :data:`.check_inertia.TABLE` and run by
:func:`.check_inertia.check_inertia`, whose last step, :func:`.inertia_hierarchy.settle`,
decides which finding reports a defect. Conversions between the forms of an inertia:
:mod:`treedyn.engine.inertia_forms`.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..description import Inertia, LinkSpec, Shape, SourceRef
from ..geometry import LinkGeometry, solid_corners, solid_properties
from ..model import Model
from ..inertia_forms import parallel_axis, second_moment, symmetric
from .plain import plain

MINVAL = 1e-15  # MuJoCo's mjMINVAL: mass and inertia below this count as none
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


def forms_mass_matrix(model, dense_dofs: int = DENSE_DOFS) -> bool:
    """Whether the body checks form M at their samples (at most ``dense_dofs`` dofs, or
    mimic joints coupled: M of the coupled system), else sweep the tree for its blocks."""
    return model.nv <= dense_dofs or model.coupling is not None


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


class Finding(NamedTuple):
    """One check's verdict on one link or body (a tuple: a model makes millions)."""

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
    details: dict = {}  # (never changed in place)
    fix: Fix | None = None  # with CheckOptions.fix, on failing findings that have one


class Deferred(NamedTuple):
    """Findings not made yet: ``run(*arguments)`` makes them, a list whose (check, status,
    severity) are ``kinds``, known beforehand; never a failing one."""

    run: Callable
    arguments: tuple
    kinds: tuple[tuple[str, str, str], ...]


class Findings(Sequence):
    """A report's findings in order, those of the links and bodies that only pass or skip
    (every link of a large model, nearly) made when first read. ``parts``: lists of
    findings and :class:`Deferred` ones, in order. :meth:`made` (which holds every failing
    finding) and :meth:`kinds` make none of the deferred ones."""

    def __init__(self, parts: list):
        self._parts = parts
        self._every: tuple[Finding, ...] | None = None

    def _all(self) -> tuple[Finding, ...]:
        if self._every is None:
            self._every = tuple(f for part in self._parts for f in (
                part.run(*part.arguments) if isinstance(part, Deferred) else part))
        return self._every

    def __len__(self) -> int:
        return sum(len(part.kinds if isinstance(part, Deferred) else part)
                   for part in self._parts)

    def __getitem__(self, index):
        return self._all()[index]

    def __iter__(self) -> Iterator[Finding]:
        return iter(self._all())

    def made(self) -> Iterator[Finding]:
        """The findings made already, in order: every one but the deferred passes and skips."""
        for part in self._parts:
            if not isinstance(part, Deferred):
                yield from part

    def only(self, keep: Callable, checks) -> "Findings":
        """The findings ``keep(finding)`` keeps; the deferred ones (which never fail) those
        whose check is in ``checks``, still made only when read."""
        def kept(run, *arguments):
            return [f for f in run(*arguments) if f.check in checks]

        return Findings([Deferred(kept, (part.run, *part.arguments),
                                  tuple(kind for kind in part.kinds if kind[0] in checks))
                         if isinstance(part, Deferred) else [f for f in part if keep(f)]
                         for part in self._parts])

    def kinds(self) -> Counter:
        """(check, status, severity) -> count, in the order of their first finding."""
        counts: Counter = Counter()
        run, size = (), 0  # consecutive deferred parts of equal kinds, counted at once
        for part in self._parts:
            if isinstance(part, Deferred) and part.kinds == run:
                size += 1
                continue
            for kind in run:
                counts[kind] += size
            run, size = (part.kinds, 1) if isinstance(part, Deferred) else ((), 0)
            if not isinstance(part, Deferred):
                counts.update((f.check, f.status, f.severity) for f in part)
        for kind in run:
            counts[kind] += size
        return counts


@dataclass(frozen=True)
class InertiaReport:
    model: str
    findings: Findings

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings.made())

    def failed(self, check: str | None = None) -> list[Finding]:
        return [f for f in self.findings.made()
                if f.status == "fail" and (check is None or f.check == check)]


# ----------------------------------------------------------------------------- numbers

def numbers(values, scale: float | None = None, digits: int = 6) -> list[str]:
    """``values`` printed to ``digits`` significant digits, each rounded at the scale of
    the largest (or of ``scale``): eigenvalue noise 1e-16 below it prints as 0."""
    values = np.atleast_1d(np.asarray(values, dtype=float))
    scale = float(np.abs(values).max(initial=0.0)) if scale is None else abs(scale)
    return [f"{0.0 if abs(v) <= 10.0 ** -digits * scale else v:.{digits}g}" for v in values]


def triangle_slack(moments: np.ndarray) -> float:
    """lambda_1 + lambda_2 - lambda_3 for ascending moments (negative: the deficit)."""
    return float(moments[0] + moments[1] - moments[2])


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

class LinkContext(NamedTuple):
    """What the link checks need to know about a link besides its inertia (a tuple: one
    per link, made for every link of a model)."""

    link: LinkSpec
    body: int  # the compact-tree body it belongs to (-1: welded to the world)
    main: bool  # it is the body's own link (the one its joint moves)
    geometry: LinkGeometry | None
    source: SourceRef  # the <inertial> element, else the <link>
    negligible: str = ""  # why the link hardly matters to its body ("" if it does)
    placeholder: str = ""  # why its inertia is a placeholder ("" if it is not)
    finite_values: bool = True  # mass, com and tensor are finite numbers
    finite_moment: bool = True  # and m |c|^2 (J) does not overflow a double
    numbers: object = None  # its inertia_link.LinkNumbers where the inertia is judged


@dataclass(frozen=True)
class Inputs:
    """What every check reads besides its link: the model, the options and the sampled M
    (``inertia_body.Samples``)."""

    model: Model
    options: CheckOptions
    samples: object



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


def noted(context: LinkContext, check: str, status: str, message: str, value=None,
          margin: float | None = None, details: dict | None = None, scope: str = "link",
          links: tuple[str, ...] = ()) -> Finding:
    """:func:`finding` of a pass or a skip (severity info: no fix, nothing to soften) whose
    ``value``, ``margin`` and ``details`` are plain Python already: what every link of a
    large model gets, made without :func:`finding`'s conversions."""
    return Finding(context.link.name, check, "info", status, message, value, margin,
                   context.source, scope, links, details or {})


def finding(context: LinkContext, options: CheckOptions, check: str, status: str,
            severity: str, message: str, value=None, margin=None, details=None, fix=None,
            scope="link", links=()) -> Finding:
    """One finding on ``context``'s link (or, with scope "body", its body).

    ``fix`` is a callable making the suggested Fix, called only with CheckOptions.fix. A
    heuristic check's error is a warning on a link that hardly matters to its body.
    """
    fix = fix() if callable(fix) and options.fix else None
    if fix is not None:
        fix = dataclasses.replace(fix, file_rotation=context.link.file_rotation,
                                  file_translation=context.link.file_translation)
    if severity == "error" and check in HEURISTIC_CHECKS and context.negligible:
        severity, message = "warning", f"{message} [warning only: {context.negligible}]"
    return Finding(context.link.name, check, severity, status, message,
                   None if value is None else plain(value),
                   None if margin is None else float(margin), context.source, scope,
                   tuple(links), plain(details) if details else {}, fix)
