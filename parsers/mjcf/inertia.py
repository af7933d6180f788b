"""Body inertias as MuJoCo's compiler makes them: from geoms or ``<inertial>``, bounded,
checked, and scaled by ``settotalmass``."""
from __future__ import annotations

import numpy as np

from treedyn.engine.rotations import EPS

from . import geometry as geo
from .state import BuildState
from .types import Attributes, BodyBuild, Inertial, Pose, principal


class Inertias(BuildState):
    """The compiled inertial of every body (``BodyBuild.inertia``)."""

    def _body_inertia(self, body: BodyBuild) -> Inertial:
        """The body's compiled inertial (MuJoCo's inertiafromgeom, bounds and checks)."""
        mode = self.compiler.inertiafromgeom
        explicit = body.inertial is not None
        infer = not explicit or mode == "true"
        parts = [part for attrs, frame in body.geoms
                 if (part := self._geom_inertial(body, attrs, frame, infer)) is not None]
        inertial = body.inertial
        if (mode == "true" or (mode == "auto" and not explicit)) and parts:
            inertial = _inertial_of(parts)
        body.uses_inertial = explicit and inertial is body.inertial
        body.inertia_from_geoms = bool(parts) and inertial is not body.inertial
        if inertial is None:
            inertial = Inertial(0.0, body.own_pose[0], body.own_pose[1],
                                np.zeros(3))
        return self._bounded(body, inertial)

    def _bounded(self, body: BodyBuild, inertial: Inertial) -> Inertial:
        """boundmass/boundinertia, sign checks and A + B >= C (or balanceinertia)."""
        mass = max(inertial.mass, self.compiler.boundmass)
        moments = np.maximum(inertial.moments, self.compiler.boundinertia)
        if mass < 0 or np.any(moments < 0):
            raise body.node.error("mass and inertia cannot be negative")
        a, b, c = moments
        # MuJoCo's test is strict. Moments written as diaginertia are the file's numbers in
        # both programs; computed ones (geoms, fullinertia's eigenvalues) may differ from
        # MuJoCo's in the last bits, so a plate at A + B = C gets that much slack.
        written = inertial is body.inertial and body.inertial_node.get("fullinertia") is None
        slack = 0.0 if written else 1e-12 * max(a, b, c)
        if a + b < c - slack or a + c < b - slack or b + c < a - slack:
            if not self.compiler.balanceinertia:
                raise body.node.error(f"principal moments of inertia {float(a)}, {float(b)}, {float(c)} "
                                      "violate A + B >= C (compiler balanceinertia averages "
                                      "them)")
            moments = np.full(3, moments.sum() / 3)
        body.bounds_changed = bool(mass != inertial.mass or np.any(moments != inertial.moments))
        return Inertial(mass, inertial.pos, inertial.quat, moments)

    def _geom_inertial(self, body: BodyBuild, attrs: Attributes, frame: Pose | None,
                       infer: bool) -> Inertial | None:
        """A geom's inertial in the body frame when it counts for the body's inertia."""
        if id(attrs) in self.discarded:
            return None
        geom = self._geom(attrs)
        if geom.kind in ("plane", "hfield") and not (body.static or body.mocap):
            raise attrs.error("type", f"{geom.kind} geoms are allowed only in static bodies")
        group = attrs.integer("group", 0)
        if not (infer and self.compiler.in_inertia_group(group)):
            geom.validate()
            return None
        part = geom.inertial()
        if part is None or part.mass <= EPS:
            return None
        if id(attrs) in self.dropped and self.compiler.inertiafromgeom == "true":
            raise body.node.error(f"discardvisual drops the visual geom at line "
                                  f"{attrs.owner.line}, which has mass, from a body whose "
                                  'inertia inertiafromgeom="true" takes from its geoms '
                                  '(MuJoCo refuses this; "auto" keeps the inertia)')
        if frame is None:
            return part
        pos, quat = geo.compose(frame, (part.pos, part.quat))
        return Inertial(part.mass, pos, quat, part.moments)

    def _check_moving_bodies(self) -> None:
        """MuJoCo: a body with joints needs mass and inertia, itself or in a welded descendant."""
        def valid(body: BodyBuild) -> bool:
            inertia = body.inertia
            if inertia.mass >= geo.MINVAL and np.all(inertia.moments >= geo.MINVAL):
                return True
            return any(valid(child) for child in body.children if not child.joints)

        for body in self.bodies[1:]:
            if body.joints and not valid(body):
                raise body.node.error("a moving body needs positive mass and inertia (add "
                                      "geoms, an <inertial>, or compiler boundmass/"
                                      "boundinertia)")

    def _scale_total_mass(self) -> None:
        """settotalmass: scale every body's mass and inertia to the given total."""
        target = self.compiler.settotalmass
        if target <= 0:
            return
        total = sum(body.inertia.mass for body in self.bodies[1:])
        scale = max(geo.MINVAL, target / max(geo.MINVAL, total))
        for body in self.bodies[1:]:
            inertia = body.inertia
            body.inertia = Inertial(inertia.mass * scale, inertia.pos, inertia.quat,
                                    inertia.moments * scale)


def _inertial_of(parts: list[Inertial]) -> Inertial:
    """Body inertial from its geoms: one geom is copied, several are combined."""
    if len(parts) == 1:
        return parts[0]
    total = geo.combine([part.properties() for part in parts])
    moments, quat = principal(total.inertia)
    return Inertial(total.mass, total.com, quat, moments)
