"""Joint armature from actuators and fixed tendons, and the names other sections refer to.

Actuators with a joint transmission add ``armature * gear[0]^2`` (and their force range
``gear[0] * forcerange`` to the joint's ``drives``, for its effort limit), single-joint fixed
tendons (and their actuators) ``armature * coef^2``; armature on any other tendon couples
joints and is refused. Tendons and actuators are copied for ``<replicate>`` and checked
by :mod:`.references`.
"""
from __future__ import annotations

import math
from collections import Counter

from . import references as refs
from .state import BuildState
from .tree import limited_range
from .types import ACTUATOR_TAGS, WORLD, Node, own_attributes


class Armature(BuildState):
    """Tendons and actuators: their armature, and the references of the other sections."""

    def _actuator_armature(self, tendon_sections: list[Node],
                           actuator_sections: list[Node]) -> None:
        """Joint armature contributed by actuators (armature * gear^2) and fixed tendons,
        after the tendons and actuators are copied for ``<replicate>`` and checked (see
        :mod:`.references`)."""
        tendons = [self._tendon(node) for section in tendon_sections
                   for node in section.children]
        actuators = [self._actuator(node) for section in actuator_sections
                     for node in section.children
                     if node.tag in ACTUATOR_TAGS and node.tag != "plugin"]
        tendons, actuators = refs.replicated(tendons, actuators, self.names.replications)
        joints = {joint.name: joint for body in self.bodies for joint in body.joints}
        refs.check(tendons, actuators, self.names,
                   {name: joints[name].kind for name in self.names.named("joint")})
        self.compiled_names = {"tendon": {tendon.name for tendon in tendons},
                               "actuator": {actuator.name for actuator in actuators}}
        for actuator in actuators:
            if actuator.kind == "joint":
                joints[actuator.target].drives.append((actuator.force, actuator.node))
        reflected: Counter[str] = Counter()
        for actuator in actuators:
            if actuator.reflected == 0:
                continue
            if actuator.kind == "joint":
                joints[actuator.target].armature += actuator.reflected
            elif actuator.kind == "tendon":
                reflected[actuator.target] += actuator.reflected
            else:
                raise actuator.node.error("actuator armature is supported for joint and "
                                          "fixed-tendon transmissions only")
        for tendon in tendons:
            total = tendon.armature + (reflected[tendon.name] if tendon.name else 0.0)
            if total == 0:
                continue
            if not tendon.fixed or len(tendon.path) != 1:
                raise tendon.node.error("armature on a tendon that spans several joints (or a "
                                        "spatial tendon) couples joints and is not supported")
            entry = tendon.path[0]
            joints[entry.target].armature += total * entry.coef * entry.coef

    def _check_references(self, sections: dict[str, list[Node]]) -> None:
        """Names in ``<sensor>``, ``<equality>`` and ``<contact>`` exist (see
        :func:`.references.check_references`)."""
        known = {kind: self.names.named(kind) for kind in refs.TREE_KINDS}
        for replication in self.names.replications:
            for kind, names in replication.template.items():
                known[kind] |= names
        known["body"].add(WORLD)
        for kind in ("tendon", "actuator"):
            known[kind] = self.compiled_names[kind] | {
                node.get("name") for section in sections[kind] for node in section.children}
        known.update(mesh=set(self.meshes), hfield=set(self.hfields), texture=self.textures,
                     material=set(self.materials))
        refs.check_references([node for tag in ("sensor", "equality", "contact")
                               for section in sections[tag] for node in section.children],
                              known)

    def _tendon(self, node: Node) -> refs.Tendon:
        """A tendon's name, path (joints; sites and geoms of spatial ones) and armature."""
        attrs = self._default_class(node).resolve("tendon", node)
        path = []
        for child in node.children:
            entry = own_attributes(child)
            if child.tag == "joint":
                path.append(refs.PathEntry("joint", entry.text("joint", ""),
                                           entry.number("coef", 1.0), child))
            elif child.tag in ("site", "geom"):
                path.append(refs.PathEntry(child.tag, entry.text(child.tag, ""), 1.0, child))
        return refs.Tendon(node, node.get("name", ""), node.tag == "fixed", path,
                           attrs.number("armature", 0.0), attrs)

    def _actuator(self, node: Node) -> refs.Actuator:
        """An actuator's transmission and its ``armature * gear[0]^2``."""
        attrs = self._default_class(node).resolve("actuator", node)
        armature = attrs.number("armature", 0.0)
        gear = attrs.numbers("gear", 6, (1.0, 0, 0, 0, 0, 0), exact=False)[0]
        kind, target = refs.transmission(node)
        return refs.Actuator(node, node.get("name", ""), kind, target, armature * gear * gear,
                             self._actuator_force(node, attrs, gear))

    def _actuator_force(self, node: Node, attrs, gear: float) -> tuple[float, float] | None:
        """(low, high) of the force an actuator applies along its transmission, ``gear *``
        its force range: ``forcerange`` when forcelimited, within ``gain * ctrlrange`` when
        the force is ``gain * ctrl`` (a ``<motor>``, or a ``<general>`` with a fixed gain,
        no bias and no activation dynamics) and ctrllimited; None when neither bounds it."""
        compiler = self._compiler_of(node.file)
        low, high = -math.inf, math.inf
        limited, lower, upper = limited_range(attrs, "forcelimited", "forcerange", compiler)
        if limited:
            low, high = lower, upper
        gain = direct_gain(node.tag, attrs)
        limited, lower, upper = limited_range(attrs, "ctrllimited", "ctrlrange", compiler)
        if gain is not None and limited:
            low, high = (max(low, min(gain * lower, gain * upper)),
                         min(high, max(gain * lower, gain * upper)))
        if low == -math.inf and high == math.inf:
            return None
        return min(gear * low, gear * high), max(gear * low, gear * high)


def direct_gain(tag: str, attrs) -> float | None:
    """The gain of an actuator whose force is ``gain * ctrl`` (MuJoCo's motor: 1; a general
    actuator with gaintype fixed, biastype none and dyntype none: gainprm[0]), else None."""
    if tag == "motor":
        return 1.0
    if tag == "general" and (attrs.text("gaintype", "fixed"), attrs.text("biastype", "none"),
                             attrs.text("dyntype", "none")) == ("fixed", "none", "none"):
        return float(attrs.numbers("gainprm", 10, (1.0,), exact=False)[0])
    return None
