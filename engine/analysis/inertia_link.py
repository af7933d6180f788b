"""Link checks on the inertia alone: mass, inertia-pd, triangle, pseudo-inertia (the finite
check is the dispatcher's, :mod:`.check_inertia`). Conventions in :mod:`.inertia`."""
from __future__ import annotations

import numpy as np

from ..description import Inertia, LinkSpec
from .inertia import (GHOST, MINVAL, Checker, Fix, LinkContext, nearest_consistent,
                      negligible_inertia, principal_moments, pseudo_inertia,
                      pseudo_inertia_margin, triangle_slack, uniform_inertia)


class LinkChecks(Checker):
    """The checks of one link's mass and rotational inertia."""

    def mass(self, context: LinkContext) -> None:
        link, mass = context.link, context.link.inertia.mass
        welded = ("welded to the world" if context.body < 0 else
                  f"welded to body {self.model.body_names[context.body]}")
        if mass < 0:
            self.add(context, "mass", "fail", "error", f"negative mass {mass:g} kg",
                     mass, mass, fix=lambda: _negative_mass_fix(link))
        elif context.main:
            self.moving_body_mass(context)
        elif mass == 0 and np.any(link.inertia.inertia):
            self.add(context, "mass", "fail", "warning", GHOST, mass, 0.0)
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
        ghost = context.link.inertia.mass == 0 and np.any(context.link.inertia.inertia)
        if body_mass > MINVAL:
            merged = "" if body_mass == context.link.inertia.mass else (
                f" ({body_mass:g} kg with the links welded to it)")
            if ghost:
                self.add(context, "mass", "fail", "warning", f"{GHOST}; the body has{merged}",
                         0.0, body_mass, details={"body_mass": body_mass})
                return
            self.add(context, "mass", "pass", "info",
                     f"{context.link.inertia.mass:g} kg{merged}, moved by joint {joint}",
                     context.link.inertia.mass, body_mass, details={"body_mass": body_mass})
            return
        if not self.finite:
            self.add(context, "mass", "skip", "info", "skipped: M(q) overflows")
            return
        dofs = slice(model.idx_v[j], model.idx_v[j] + model.nv_joint[j])
        block = self.M[:, dofs, dofs] - np.diag(model.armature[dofs])
        smallest = float(np.linalg.eigvalsh(block)[:, 0].min())
        details = {"body_mass": body_mass, "joint": joint, "subtree_inertia": smallest}
        if smallest > MINVAL and ghost:
            self.add(context, "mass", "fail", "warning",
                     f"{GHOST}; its subtree gives joint {joint} mass and inertia", body_mass,
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
        text = "principal moments " + ", ".join(f"{m:.6g}" for m in moments) + " kg m^2"
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
                     f"triangle inequality violated: {moments[0]:.6g} + {moments[1]:.6g} < "
                     f"{moments[2]:.6g} by {-slack:.3g} kg m^2 ({-relative * 100:.3g} %)",
                     slack, relative, details,
                     lambda: _consistent_fix(context, self.options.tolerance))
        else:
            self.add(context, "triangle", "pass", "info",
                     f"{moments[0]:.6g} + {moments[1]:.6g} >= {moments[2]:.6g} "
                     f"(slack {relative * 100:.3g} %)", slack, relative, details)

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
        text = f"smallest eigenvalue of the second moment about the com {smallest:.3g} kg m^2"
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
