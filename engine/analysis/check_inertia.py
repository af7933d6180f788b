"""check_inertia: every link and body check of :mod:`.inertia` on a model, as data."""
from __future__ import annotations

import numpy as np

from ..description import LinkSpec
from ..model import Model
from .inertia import (NEGLIGIBLE_MASS, CheckOptions, InertiaReport, LinkContext, LinkGeometry,
                      pseudo_inertia)
from .inertia_body import BodyChecks
from .inertia_geometry import GeometryChecks


class InertiaChecker(BodyChecks, GeometryChecks):
    """Runs the checks of one link (:meth:`link`) and of every body (:meth:`bodies`)."""

    def link(self, context: LinkContext) -> None:
        inertia = context.link.inertia
        values = np.concatenate([[inertia.mass], inertia.com, np.ravel(inertia.inertia)])
        if not np.all(np.isfinite(values)):
            self.add(context, "finite", "fail", "error",
                     "mass, com or inertia is not a finite number")
            return
        with np.errstate(over="ignore", invalid="ignore"):
            J = pseudo_inertia(inertia.mass, inertia.com, inertia.inertia)
        if not np.all(np.isfinite(J)):
            self.add(context, "finite", "fail", "error",
                     f"mass x com distance^2 overflows a double (mass {inertia.mass:g} kg, com "
                     f"{np.abs(inertia.com).max():g} m from the link origin along an axis)")
            return
        self.add(context, "finite", "pass", "info", "all numbers finite")
        self.mass(context)
        if not context.link.has_inertial:
            return
        if inertia.mass == 0 and not np.any(inertia.inertia):
            return
        self.inertia_pd(context)
        self.triangle(context)
        self.pseudo_inertia(context)
        self.geometry_checks(context)


def check_inertia(model: Model, geometry: dict[str, LinkGeometry] | None = None,
                  options: CheckOptions = CheckOptions()) -> InertiaReport:
    """Every link and body check on ``model`` (its description's links, merged or not)."""
    geometry = geometry or {}
    checker = InertiaChecker(model, options)
    body_of = {frame.name: frame.joint for frame in model.frames}
    contexts: dict[str, LinkContext] = {}
    for link in model.description.links:
        if link.name not in body_of or (not link.has_inertial and not link.source.line
                                        and body_of[link.name] < 0):
            continue  # a world link a parser (or a free-flyer root) made up
        body = body_of[link.name]
        main = body >= 0 and model.body_names[body] == link.name
        source = link.inertial_source if link.inertial_source.line else link.source
        contexts[link.name] = LinkContext(link, body, main, geometry.get(link.name), source,
                                          _negligible(model, link, body, main))
        checker.link(contexts[link.name])
    for j, name in enumerate(model.body_names):
        if name not in contexts:
            link = next(spec for spec in model.description.links if spec.name == name)
            contexts[name] = LinkContext(link, j, True, None, link.source)
    checker.bodies(contexts)
    return InertiaReport(model.name, tuple(checker.findings))


def _negligible(model: Model, link: LinkSpec, body: int, main: bool) -> str:
    """Why a welded link hardly matters to the body it is welded to, or to the dynamics
    ("" if it matters)."""
    if body < 0:
        return "welded to the world, it does not enter the dynamics"
    if main:
        return ""
    body_mass = float(model.body_mass[body])
    if body_mass > 0 and abs(link.inertia.mass) <= NEGLIGIBLE_MASS * body_mass:
        share = 100 * abs(link.inertia.mass) / body_mass
        return f"{share:.2g} % of the mass of body {model.body_names[body]}"
    return ""
