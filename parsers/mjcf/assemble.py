"""The compiled bodies as a :class:`TreeDescription`: links, joint chains and geometry.

A body with several joints gets an intermediate massless link per joint; the last fixed
joint ``<body>/anchor`` leads to the body's own link (see ``docs/mjcf.md``).
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from treedyn.engine.description import (
    Inertia,
    JointSpec,
    LinkSpec,
    Shape,
    SiteSpec,
    SourceRef,
    TreeDescription,
)
from treedyn.engine.rotations import IDENTITY_QUAT, quat_matrix

from treedyn.engine.names import unique
from . import geometry as geo
from .state import BuildState
from .types import WORLD, BodyBuild, Inertial, JointBuild, Pose

ENGINE_TYPE = {"hinge": "revolute", "slide": "prismatic", "ball": "ball", "free": "free_world"}


class Assembly(BuildState):
    """Links and joints in MuJoCo's order, from the compiled bodies."""

    def _description(self) -> TreeDescription:
        """Links (world, bodies, intermediate joint links) and joints in MuJoCo's order."""
        links = [LinkSpec(WORLD, Inertia.zero(), SourceRef(self.path, 0, "worldbody"),
                          has_inertial=False)]
        joints: list[JointSpec] = []
        for body in self.bodies[1:]:
            self._align_free(body)
            links.append(self._link(body))
        taken = {link.name for link in links}
        for body in self.bodies[1:]:
            chain_links, chain_joints = self._joint_chain(body, taken)
            links.extend(chain_links)
            joints.extend(chain_joints)
        return TreeDescription(
            name=self.root.get("model") or Path(self.path).stem,
            format="mjcf",
            links=links,
            joints=joints,
            world_link=WORLD,
            gravity=np.zeros(3) if "gravity" in self.disabled else np.array(self.gravity, float),
            source=self.path,
            ignored={kind: count for kind, count in sorted(self.ignored.items()) if count},
            files=tuple(mesh.path for mesh in self.meshes.values() if mesh.path),
            sites=self._sites(),
        )

    def _sites(self) -> tuple[SiteSpec, ...]:
        """The named sites of every body (world included), posed in its link frame."""
        sites = []
        for body in self.bodies:
            to_link = _inverse(body.link_offset)
            for name, pose, where in body.site_poses:
                translation, quat = geo.compose(to_link, pose)
                sites.append(SiteSpec(name, body.name if body.id else WORLD,
                                      quat_matrix(quat), np.asarray(translation, float), where))
        return tuple(sites)

    def _align_free(self, body: BodyBuild) -> None:
        """alignfree: a childless free body's frame becomes its inertial frame.

        With ``fusestatic`` the body's fused children are gone by then, so it is aligned on
        the fused inertia, as in MuJoCo.
        """
        if len(body.joints) != 1 or body.joints[0].kind != "free":
            return
        align = body.joints[0].align
        if align == "false" or (align == "auto" and not self.compiler.alignfree):
            return
        if body.children:
            return
        inertia = body.inertia
        body.link_offset = (inertia.pos, inertia.quat)
        body.pose = geo.compose(body.pose, body.link_offset)
        body.inertia = Inertial(inertia.mass, np.zeros(3), IDENTITY_QUAT.copy(),
                                inertia.moments)

    def _link(self, body: BodyBuild) -> LinkSpec:
        """The body's link: compiled inertia, where it was written, and the body's geoms.

        When the compiled inertia is the explicit ``<inertial>`` (not replaced by geoms),
        ``inertial_source`` is that element and ``inertial_rotation`` the frame its tensor
        was written in (in the link frame); otherwise they are the body and the identity.
        """
        props = body.inertia.properties()
        has_inertial = body.inertial is not None or body.inertia.mass > 0
        to_link = _inverse(body.link_offset)
        inertial_source, written = body.source(), np.eye(3)
        if body.uses_inertial:
            inertial_source = body.inertial_node.source()
            written = quat_matrix(to_link[1]) @ body.inertial_written
        return LinkSpec(body.name, Inertia(props.mass, props.com, props.inertia),
                        body.source(), has_inertial=has_inertial,
                        inertial_source=inertial_source, inertial_rotation=written,
                        geometry=self._geometry(body, to_link),
                        inertia_from_geometry=body.inertia_from_geoms,
                        file_rotation=quat_matrix(to_link[1]), file_translation=to_link[0])

    def _geometry(self, body: BodyBuild, to_link: Pose) -> tuple[Shape, ...]:
        """The body's geoms as Shapes in its link frame, in document order.

        ``to_link`` is the pose of the body frame in the link frame.
        """
        shapes = []
        for attrs, frame in body.geoms:
            if id(attrs) in self.dropped:
                continue
            shape = self._geom(attrs).shape()
            if shape is not None:
                outer = geo.compose(to_link, frame) if frame is not None else to_link
                shapes.append(_placed(shape, outer))
        return tuple(shapes)

    def _joint_chain(self, body: BodyBuild,
                     taken: set[str]) -> tuple[list[LinkSpec], list[JointSpec]]:
        """Intermediate links and the joints from the parent body's link to this body's link.

        Intermediate link names are made unique against ``taken`` (which they join) by
        appending ``_``.
        """
        parent = body.parent.name
        pos, quat = body.pose
        rotation = quat_matrix(quat)
        if not body.joints:
            return [], [JointSpec(f"{body.name}/weld", "fixed", parent, body.name, rotation,
                                  pos, source=body.source())]
        links: list[LinkSpec] = []
        specs: list[JointSpec] = []
        previous_link, previous_anchor = parent, None
        for index, joint in enumerate(body.joints):
            anchor = joint.pos if joint.kind in ("hinge", "ball") else np.zeros(3)
            last = index == len(body.joints) - 1
            child = body.name if last and not np.any(anchor) else f"{body.name}/{joint.name}"
            if child != body.name:
                child = unique(child, taken)
                taken.add(child)
                links.append(LinkSpec(child, Inertia.zero(), joint.node.source(),
                                      has_inertial=False, body=body.name))
            if previous_anchor is None:
                placement = (rotation, pos + rotation @ anchor)
                if joint.kind == "free":
                    placement = (np.eye(3), np.zeros(3))
            else:
                placement = (np.eye(3), anchor - previous_anchor)
            specs.append(self._joint_spec(joint, body, previous_link, child, placement))
            previous_link, previous_anchor = child, anchor
        if previous_link != body.name:
            specs.append(JointSpec(f"{body.name}/anchor", "fixed", previous_link, body.name,
                                   np.eye(3), -previous_anchor, source=body.source()))
        return links, specs

    def _joint_spec(self, joint: JointBuild, body: BodyBuild, parent: str, child: str,
                    placement) -> JointSpec:
        """The JointSpec of one MuJoCo joint placed in ``parent`` at ``placement``."""
        lower, upper = (joint.range if joint.limited and joint.kind in ("hinge", "slide")
                        else (-math.inf, math.inf))
        if joint.kind == "free":
            neutral = np.concatenate([body.pose[0], body.pose[1]])
        elif joint.kind == "ball":
            neutral = IDENTITY_QUAT.copy()
        else:
            neutral = np.array([joint.ref])
        return JointSpec(
            name=joint.name,
            type=ENGINE_TYPE[joint.kind],
            parent=parent,
            child=child,
            rotation=placement[0],
            translation=placement[1],
            axis=joint.axis if joint.kind in ("hinge", "slide") else np.array([0.0, 0.0, 1.0]),
            ref=joint.ref if joint.kind in ("hinge", "slide") else 0.0,
            armature=joint.armature,
            damping=joint.damping,
            friction=joint.frictionloss,
            lower=lower,
            upper=upper,
            neutral=neutral,
            source=joint.node.source(),
            **_effort(joint),
        )


def _effort(joint: JointBuild) -> dict:
    """The JointSpec fields of a joint's effort limit (docs/mjcf.md): the force range its
    actuators can apply, the sum of their ``gear[0] * forcerange`` (unlimited if one is
    not force-limited), within its ``actuatorfrcrange`` when limited, as MuJoCo clamps
    both; the limit is that range's symmetric part, the largest f with [-f, f] inside it
    (0 when it does not hold 0). A joint is actuated when an actuator drives it or it
    has an actuator force range (MuJoCo writes a URDF effort limit as one); MJCF has no
    velocity limit."""
    low, high = -math.inf, math.inf
    if joint.drives and all(force is not None for force, _ in joint.drives):
        low, high = (sum(force[k] for force, _ in joint.drives) for k in (0, 1))
    if joint.force_range is not None:
        low, high = max(low, joint.force_range[0]), min(high, joint.force_range[1])
    source = joint.node.source() if joint.force_range is not None or not joint.drives \
        else joint.drives[0][1].source()
    return {"effort": max(0.0, min(-low, high)), "actuated": bool(joint.drives) or joint.force_range is not None,
            "limit_source": source}


def _inverse(pose: Pose) -> Pose:
    """The pose of the parent frame in the child frame of ``pose``."""
    pos, quat = pose
    return -(quat_matrix(quat).T @ pos), quat * np.array([1.0, -1.0, -1.0, -1.0])


def _placed(shape: Shape, pose: Pose) -> Shape:
    """``shape``, posed in a frame F, re-posed in the frame in which F has ``pose``."""
    rotation = quat_matrix(pose[1])
    return dataclasses.replace(shape, rotation=rotation @ shape.rotation,
                               translation=pose[0] + rotation @ shape.translation)
