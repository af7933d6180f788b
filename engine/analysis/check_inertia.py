"""check_inertia: every link and body check of :mod:`.inertia` on a model, as data."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..description import LinkSpec
from ..model import Model
from .inertia import (ABSURD_MASS, HEURISTIC_CHECKS, MINVAL, NEGLIGIBLE_MASS, CheckOptions,
                      InertiaReport, LinkContext, LinkGeometry, pseudo_inertia)
from .inertia_body import BodyChecks
from .inertia_geometry import GeometryChecks
from .inertia_hierarchy import CONSISTENCY, suppress_link


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
        start = len(self.findings)
        self.mass(context)
        if not context.link.has_inertial or inertia.mass > ABSURD_MASS:
            return
        if inertia.mass == 0 and not np.any(inertia.inertia):
            return
        if context.placeholder:
            for check in (*CONSISTENCY, *HEURISTIC_CHECKS):
                self.add(context, check, "skip", "info",
                         f"skipped: a placeholder inertia ({context.placeholder})")
            return
        self.inertia_pd(context)
        self.triangle(context)
        self.pseudo_inertia(context)
        suppress_link(self.findings, start)
        if context.negligible:
            self.judged_with_body(context, start)
        self.geometry_checks(context)

    def judged_with_body(self, context: LinkContext, start: int) -> None:
        """On a link that hardly matters to its body (or is welded to the world): an
        idealisation (point, rod, flat) is no defect; an inconsistent tensor is a warning
        on a link welded to the world (excused on a welded link when the body as a whole
        is consistent, see :meth:`BodyChecks.excuse_negligible`)."""
        for n in range(start, len(self.findings)):
            finding = self.findings[n]
            if finding.check not in CONSISTENCY or finding.status != "fail":
                continue
            if finding.severity == "warning":
                self.findings[n] = dataclasses.replace(
                    finding, status="skip", severity="info", fix=None,
                    message=f"not a defect here ({context.negligible}): {finding.message}")
            elif context.body < 0:
                self.findings[n] = dataclasses.replace(
                    finding, severity="warning",
                    message=f"{finding.message} [warning only: {context.negligible}]")


def check_inertia(model: Model, geometry: dict[str, LinkGeometry] | None = None,
                  options: CheckOptions = CheckOptions()) -> InertiaReport:
    """Every link and body check on ``model`` (its description's links, merged or not)."""
    geometry = geometry or {}
    checker = InertiaChecker(model, options)
    body_of = {frame.name: frame.joint for frame in model.frames}
    contexts: dict[str, LinkContext] = {}
    scale = _model_scale(model)
    for link in model.description.links:
        if link.name not in body_of or (not link.has_inertial and not link.source.line
                                        and body_of[link.name] < 0):
            continue  # a world link a parser (or a free-flyer root) made up
        body = body_of[link.name]
        main = body >= 0 and model.body_names[body] == link.name
        source = link.inertial_source if link.inertial_source.line else link.source
        contexts[link.name] = LinkContext(link, body, main, geometry.get(link.name), source,
                                          _negligible(model, link, body, main),
                                          _placeholder(model, link, body, scale))
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


PLACEHOLDER_SHARE = 1e-4  # a link's share of the model's mass and inertia below which it is
# a placeholder (urdfdom and KDL want an <inertial> on every link: 1e-6 kg, 1e-6 kg m^2)


def _model_scale(model: Model) -> tuple[float, float]:
    """(total mass kg, total trace of the rotational inertias kg m^2) of the model's links."""
    links = [spec.inertia for spec in model.description.links if spec.has_inertial]
    with np.errstate(all="ignore"):
        mass = float(sum(max(float(i.mass), 0.0) for i in links))
        trace = float(sum(abs(float(np.trace(i.inertia))) for i in links))
    return mass, trace


def _placeholder(model: Model, link: LinkSpec, body: int, scale: tuple[float, float]) -> str:
    """Why the link's inertia is a placeholder ("" if it is not): a positive mass and a
    tensor that are both under :data:`PLACEHOLDER_SHARE` of the model's, whatever their
    form. Its own consistency does not matter; the body it belongs to is judged whole
    (merged-pseudo-inertia, articulated-inertia)."""
    inertia = link.inertia
    total_mass, total_trace = scale
    trace = abs(float(np.trace(inertia.inertia)))
    if not (link.has_inertial and not link.inertia_from_geometry
            and MINVAL < inertia.mass <= PLACEHOLDER_SHARE * total_mass
            and trace <= PLACEHOLDER_SHARE * total_trace):
        return ""
    where = ("welded to the world" if body < 0 else
             f"judged as part of body {model.body_names[body]}")
    return (f"{inertia.mass:g} kg, {inertia.mass / total_mass:.2g} of the model's mass, "
            f"with a negligible tensor: {where}")
