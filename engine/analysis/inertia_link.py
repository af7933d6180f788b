"""The checks of one link's numbers alone: finite, mass, inertia-pd, triangle and
pseudo-inertia, each a function of the link's data (:class:`.inertia.LinkContext`, its
:class:`LinkNumbers` computed for every link at once) and the run's :class:`.inertia.Inputs`
returning its findings."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..description import Inertia, LinkSpec
from ..inertia_forms import (nearest_consistent, principal_moments, pseudo_inertia_of,
                             second_moment, symmetric)
from .inertia import (ABSURD_MASS, HEURISTIC_CHECKS, MINVAL, Finding, Fix, Inputs,
                      LinkContext, finding, ghost_mass, noted, ghost_text, negligible_inertia, numbers,
                      triangle_slack, uniform_inertia)
from .inertia_hierarchy import CONSISTENCY
from .plain import plain


class LinkNumbers(NamedTuple):
    """What the checks read of one inertia (m, c, I about the com), computed in bulk."""

    moments: np.ndarray  # (3,) principal moments, rounding noise zeroed
    negligible: bool  # the rotational inertia is nil (see :func:`numbers_of`)
    sigma: np.ndarray  # (3,) eigenvalues of Sigma_c = 1/2 tr(I) 1 - I, ascending
    J: np.ndarray  # (4, 4) the pseudo-inertia about the origin
    trace: float  # tr(I)


def numbers_of(mass: np.ndarray, com: np.ndarray, inertia: np.ndarray) -> list[LinkNumbers]:
    """:class:`LinkNumbers` of inertias (n,), (n, 3), (n, 3, 3) of finite numbers whose J
    is finite. Nil: every eigenvalue below MINVAL + m (1 um)^2 in magnitude."""
    if not len(mass):
        return []
    moments = principal_moments(inertia)[0]
    floor = MINVAL + 1e-12 * np.maximum(mass, 0.0)
    eigen = np.linalg.eigvalsh(symmetric(inertia))
    negligible = np.all(np.abs(eigen) <= floor[:, None], axis=1)
    sigma = np.linalg.eigvalsh(second_moment(symmetric(inertia)))
    J = pseudo_inertia_of(mass, com, inertia)
    trace = np.trace(inertia, axis1=-2, axis2=-1).tolist()
    return [LinkNumbers(*row) for row in zip(moments, negligible.tolist(), sigma, J, trace)]


def one_numbers(inertia: Inertia, J: np.ndarray | None = None) -> LinkNumbers:
    numbers = numbers_of(np.array([inertia.mass]), inertia.com[None], inertia.inertia[None])[0]
    return numbers if J is None else numbers._replace(J=J)


def pseudo_inertia_margin(inertia: np.ndarray) -> tuple[float, float]:
    """(smallest eigenvalue of Sigma_c in kg m^2, the same over tr(Sigma_c)), for m > 0 and
    the rotational inertia ``inertia`` about the com (:func:`sigma_margin`)."""
    return sigma_margin(np.linalg.eigvalsh(second_moment(symmetric(inertia))))


def sigma_margin(sigma: np.ndarray) -> tuple[float, float]:
    """:func:`pseudo_inertia_margin` of Sigma_c's eigenvalues ``sigma``.

    J about the origin is congruent to [[Sigma_c, 0], [0, m]], so with m > 0 it is positive
    (semi-)definite exactly when Sigma_c is; the ratio is dimensionless and the same
    wherever the link origin is. Sigma_c comes from the tensor about the com directly (not
    from J, where m |c|^2 would swamp it for a com far from the origin).
    """
    spread = float(sigma.sum())
    smallest = float(sigma[0])
    return smallest, (smallest / spread if spread > 0 else (-np.inf if smallest < 0 else 0.0))


def adder(context: LinkContext, options, out: list[Finding]):
    """``add(check, status, ...)`` appending :func:`.inertia.finding` to ``out``."""
    return lambda *args, **keywords: out.append(finding(context, options, *args, **keywords))


def finite(context: LinkContext, inputs: Inputs) -> list[Finding]:
    inertia = context.link.inertia
    if not context.finite_values:
        return [finding(context, inputs.options, "finite", "fail", "error",
                        "mass, com or inertia is not a finite number")]
    if not context.finite_moment:
        return [finding(context, inputs.options, "finite", "fail", "error",
                        f"mass x com distance^2 overflows a double (mass {inertia.mass:g} kg, "
                        f"com {np.abs(inertia.com).max():g} m from the link origin along an "
                        "axis)")]
    return [noted(context, "finite", "pass", "all numbers finite")]


def mass(context: LinkContext, inputs: Inputs) -> list[Finding]:
    out: list[Finding] = []
    add = adder(context, inputs.options, out)
    link, mass = context.link, context.link.inertia.mass
    welded = ("welded to the world" if context.body < 0 else
              f"welded to body {inputs.model.body_names[context.body]}")
    if mass < 0:
        add("mass", "fail", "error", f"negative mass {mass:g} kg",
            mass, mass, fix=lambda: _negative_mass_fix(link))
    elif mass > ABSURD_MASS:
        add("mass", "fail", "error",
            f"absurd mass {mass:.3g} kg (above {ABSURD_MASS:g} kg; no robot link "
            "weighs a thousand tonnes): a units mistake, or a stand-in for infinity?",
            mass, ABSURD_MASS - mass)
    elif context.main:
        return moving_body_mass(context, inputs)
    elif ghost_mass(link.inertia):
        add("mass", "fail", "warning", ghost_text(mass), mass, 0.0)
    elif mass == 0:
        note = "no <inertial>" if not link.has_inertial else "zero mass"
        add("mass", "pass", "info", f"{note}: a massless frame {welded}",
            mass, 0.0)
    else:
        add("mass", "pass", "info", f"{mass:g} kg, {welded}", mass, mass)
    return out


def moving_body_mass(context: LinkContext, inputs: Inputs) -> list[Finding]:
    """The mass of the body a joint moves (its link with the links welded to it)."""
    out: list[Finding] = []
    model, j = inputs.model, context.body
    body_mass = float(model.body_mass[j])
    joint = model.joint_names[j]
    ghost = ghost_mass(context.link.inertia)
    merged = "" if body_mass == context.link.inertia.mass else (
        f" ({body_mass:g} kg with the links welded to it)")
    if body_mass > MINVAL and not ghost:
        return [noted(context, "mass", "pass",
                      f"{context.link.inertia.mass:g} kg{merged}, moved by joint {joint}",
                      plain(context.link.inertia.mass), body_mass, {"body_mass": body_mass})]
    add = adder(context, inputs.options, out)
    ghost_note = ghost_text(context.link.inertia.mass)
    if body_mass > MINVAL:
        add("mass", "fail", "warning", f"{ghost_note}; the body has{merged}", 0.0, body_mass,
            details={"body_mass": body_mass})
        return out
    if not inputs.samples.finite:
        add("mass", "skip", "info", "skipped: M(q) overflows")
        return out
    block = inputs.samples.diagonal_block(j)
    smallest = float(np.linalg.eigvalsh(block)[:, 0].min())
    details = {"body_mass": body_mass, "joint": joint, "subtree_inertia": smallest}
    if smallest > MINVAL and ghost:
        add("mass", "fail", "warning",
            f"{ghost_note}; its subtree gives joint {joint} mass and inertia", body_mass,
            smallest, details=details)
    elif smallest > MINVAL:
        add("mass", "pass", "info",
            f"massless moving body, but its subtree gives joint {joint} mass and "
            f"inertia (smallest eigenvalue {smallest:.3g}): the dynamics are defined, "
            "as Pinocchio computes them (MuJoCo would refuse a massless moving body "
            "without a welded child that has mass)",
            body_mass, smallest, details=details)
    else:
        add("mass", "fail", "error",
            f"moving body without mass: joint {joint} moves no mass or inertia along "
            "some of its directions (M is singular there)", body_mass, smallest,
            details=details)
    return out


def inertia_pd(context: LinkContext, inputs: Inputs) -> list[Finding]:
    out: list[Finding] = []
    add = adder(context, inputs.options, out)
    inertia, tol = context.link.inertia.inertia, inputs.options.tolerance
    asymmetry = float(np.linalg.norm(inertia - inertia.T) /
                      max(np.linalg.norm(inertia), np.finfo(float).tiny))
    moments = context.numbers.moments
    largest = float(moments[-1])
    if context.numbers.negligible:
        add("inertia-pd", "fail", "warning",
            "zero rotational inertia (a point mass)", moments, 0.0,
            {"principal_moments": moments}, lambda: _consistent_fix(context, tol))
        return out
    relative = float(moments[0] / largest) if largest > 0 else -np.inf
    details = {"principal_moments": moments, "asymmetry": asymmetry}
    text = "principal moments " + ", ".join(numbers(moments)) + " kg m^2"
    fix = lambda: _consistent_fix(context, tol)  # noqa: E731
    if asymmetry > tol:
        add("inertia-pd", "fail", "error",
            f"not symmetric (relative asymmetry {asymmetry:.3g})", moments, -asymmetry,
            details, fix)
    elif relative < -tol:
        add("inertia-pd", "fail", "error",
            f"not positive definite: {text}", moments, relative, details, fix)
    elif relative <= tol:
        add("inertia-pd", "fail", "warning",
            f"only semi-definite (a point mass, rod or zero inertia): {text}",
            moments, relative, details, fix)
    else:
        add("inertia-pd", "pass", "info", f"positive definite: {text}",
            moments, relative, details)
    return out


def triangle(context: LinkContext, inputs: Inputs) -> list[Finding]:
    out: list[Finding] = []
    add = adder(context, inputs.options, out)
    moments = context.numbers.moments
    if context.numbers.negligible or moments[-1] <= 0:
        add("triangle", "skip", "info", "no rotational inertia to check")
        return out
    slack = triangle_slack(moments)
    relative = slack / float(moments[-1])
    details = {"principal_moments": moments, "deficit": max(-slack, 0.0),
               "deficit_percent": max(-relative, 0.0) * 100}
    if relative < -inputs.options.tolerance:
        add("triangle", "fail", "error",
            "triangle inequality violated: {} + {} < {}".format(*numbers(moments)) +
            f" by {numbers([-slack], moments[2], 3)[0]} kg m^2 "
            f"({-relative * 100:.3g} %)",
            slack, relative, details,
            lambda: _consistent_fix(context, inputs.options.tolerance))
    else:
        add("triangle", "pass", "info",
            "{} + {} >= {}".format(*numbers(moments)) +
            f" (slack {numbers([relative * 100], 100, 3)[0]} %)", slack, relative,
            details)
    return out


def pseudo_inertia(context: LinkContext, inputs: Inputs) -> list[Finding]:
    out: list[Finding] = []
    add = adder(context, inputs.options, out)
    link = context.link
    if link.inertia.mass == 0:
        add("pseudo-inertia", "skip", "info", "skipped: no mass (see mass)")
        return out
    return pseudo_findings(context, inputs.options, context.numbers, "pseudo-inertia",
                           lambda: _consistent_fix(context, inputs.options.tolerance))
    return out


def pseudo_findings(context: LinkContext, options, values: LinkNumbers, check: str, fix,
                    **extra) -> list[Finding]:
    """The pseudo-inertia finding of an inertia's ``values`` (J as given: with a mass that
    is not positive, an Inertia about the com has lost the first moment)."""
    out: list[Finding] = []
    add = adder(context, options, out)
    tol, J = options.tolerance, values.J
    if J[3, 3] == 0:  # a merged body whose masses cancel: J = [[Sigma, h], [h^T, 0]]
        smallest = float(np.linalg.eigvalsh(J)[0])
        if smallest < 0:
            add(check, "fail", "error",
                f"pseudo-inertia J is not positive semi-definite (zero mass, smallest "
                f"eigenvalue {smallest:.3g}): no mass distribution has this inertia",
                smallest, None, {"eigenvalues": np.linalg.eigvalsh(J)}, fix, **extra)
        else:
            add(check, "skip", "info", "skipped: no mass (see mass)", **extra)
        return out
    if J[3, 3] < 0:
        add(check, "fail", "error",
            f"pseudo-inertia J is not positive semi-definite (mass {J[3, 3]:g} kg): "
            "no mass distribution has this inertia", J[3, 3], None,
            {"eigenvalues": np.linalg.eigvalsh(J)}, fix, **extra)
        return out
    smallest, margin = sigma_margin(values.sigma)
    if values.negligible:  # a point mass: J = [[0, 0], [0, m]] about the com
        smallest, margin = 0.0, 0.0
    details = {"eigenvalues": np.linalg.eigvalsh(J), "normalized_min": margin}
    scale = max(values.trace, 0.0)
    text = ("smallest eigenvalue of the second moment about the com "
            f"{numbers([smallest], scale, 3)[0]} kg m^2")
    if margin < -tol:
        add(check, "fail", "error",
            f"pseudo-inertia J is not positive semi-definite ({text}): no mass "
            "distribution has this inertia", smallest, margin, details, fix, **extra)
    elif margin <= tol:
        state = ("only semi-definite" if margin >= 0 else
                 f"not positive semi-definite, within the tolerance {tol:g}")
        add(check, "fail", "warning",
            f"pseudo-inertia J is {state} ({text}): a point, rod or flat "
            "idealisation", smallest, margin, details, fix, **extra)
    else:
        add(check, "pass", "info",
            f"pseudo-inertia J positive definite ({text}, {margin:.3g} of its trace)",
            smallest, margin, details, **extra)
    return out


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


def placeholder(context: LinkContext, inputs: Inputs) -> list[Finding]:
    """A placeholder inertia is not checked alone: its body is judged whole."""
    message = f"skipped: a placeholder inertia ({context.placeholder})"
    return [noted(context, check, "skip", message) for check in (*CONSISTENCY, *HEURISTIC_CHECKS)]
