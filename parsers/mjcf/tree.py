"""The kinematic tree: bodies, frames, ``<replicate>``, joints and explicit inertials.

Bodies are numbered depth-first in document order (MuJoCo's body ids) and their joints
follow in that order; ``<frame>`` composes its pose into everything it contains and
``<replicate>`` repeats its contents (see ``docs/mjcf.md``, "Kinematic tree").
"""
from __future__ import annotations

import math

import numpy as np

from treedyn.engine.rotations import (EPS, GeometryError, euler_quat, normalized, quat_matrix,
                                      zaxis_quat)

from ..errors import quoted
from . import geometry as geo
from .defaults import DefaultClass
from .state import BuildState
from .types import (
    FREE_PROBLEM,
    ORIENTATION,
    Attributes,
    BodyBuild,
    Inertial,
    JointBuild,
    Node,
    Pose,
    own_attributes,
    principal,
)

IGNORED_BODY_ELEMENTS = ("site", "camera", "light", "plugin")
UNSUPPORTED_BODY_ELEMENTS = ("attach", "composite", "flexcomp")
JOINT_TYPES = ("free", "ball", "slide", "hinge")
SLEEP_POLICIES = ("auto", "never", "allowed", "init")  # <body sleep>


class Tree(BuildState):
    """Reads ``<worldbody>`` into :class:`BodyBuild` objects (``self.bodies``)."""

    def _contents(self, node: Node, body: BodyBuild, frame: Pose | None,
                  cls: DefaultClass) -> None:
        """Read the children of a body or frame ``node`` into ``body``."""
        for child in node.children:
            tag = child.tag
            own_class = self.defaults.find(child.get("class"), child) \
                if child.get("class") is not None else None
            element_class = own_class or cls
            if tag == "body":
                self._body(child, body, frame, element_class)
            elif tag == "frame":
                self._frame(child, body, frame, element_class)
            elif tag == "replicate":
                self._replicate(child, body, frame, element_class)
            elif tag == "joint":
                self._joint(child, body, frame, element_class.resolve("joint", child))
            elif tag == "freejoint":
                self._freejoint(child, body)
            elif tag == "geom":
                attrs = element_class.resolve("geom", child)
                body.geoms.append((attrs, frame))
                self.all_geoms.append((body, attrs, self._register("geom", child)))
                self._check_assets(attrs, child)
            elif tag == "inertial":
                self._inertial(child, body, frame)
            elif tag in IGNORED_BODY_ELEMENTS:
                self.ignored[tag] += 1
                name = self._register(tag, child) if tag != "plugin" else ""
                if tag == "site":
                    site = element_class.resolve("site", child)
                    self._check_assets(site, child)
                    if name:
                        body.sites.append(name)
                        body.site_poses.append((name, self._site_pose(site, frame),
                                                child.source()))
                body.keeps_forces |= tag == "plugin"
            elif tag in UNSUPPORTED_BODY_ELEMENTS:
                raise child.error(f"<{tag}> is not supported")
            else:
                raise child.error(f"unknown element <{tag}> in <{node.tag}>")

    def _site_pose(self, attrs: Attributes, frame: Pose | None) -> Pose:
        """A named site's pose in its body frame: pos and orientation, or ``fromto``'s
        midpoint with z along from - to (as MuJoCo places a site), through ``frame``."""
        pose = self._own_pose(attrs)
        if attrs.has("fromto"):
            ends = attrs.numbers("fromto", 6)
            vector = ends[:3] - ends[3:]
            if float(np.linalg.norm(vector)) >= EPS:
                pose = ((ends[:3] + ends[3:]) / 2, zaxis_quat(normalized(vector)))
        return within(frame, pose)

    def _own_pose(self, attrs: Attributes) -> Pose:
        """An element's ``pos`` and orientation, in its parent's frame."""
        return attrs.numbers("pos", 3, (0.0, 0.0, 0.0)), self._orientation(attrs)

    def _childclass(self, node: Node, cls: DefaultClass) -> DefaultClass:
        name = node.get("childclass")
        return cls if name is None else self.defaults.find(name, node, "childclass")

    def _frame(self, node: Node, body: BodyBuild, frame: Pose | None,
               cls: DefaultClass) -> None:
        """A ``<frame>``: its pose composes into everything it contains."""
        attrs = own_attributes(node)
        self._contents(node, body, within(frame, self._own_pose(attrs)),
                       self._childclass(node, cls))

    def _replicate(self, node: Node, body: BodyBuild, frame: Pose | None,
                   cls: DefaultClass) -> None:
        """``count`` copies of the contents, each offset and turned from the previous one.

        Copy i sits at ``euler_quat(i * euler)`` and at the previous copy's position plus
        the previous copy's rotation applied to ``offset``. Names get ``sep`` and the copy
        number zero-padded to the digits of ``count``; inner replicates' suffixes come
        first.
        """
        attrs = own_attributes(node)
        if not attrs.has("count"):
            raise node.error("required attribute count is missing")
        count = attrs.integer("count", 0)
        if count < 0:
            raise attrs.error("count", "count cannot be negative")
        offset = attrs.numbers("offset", 3, (0.0, 0.0, 0.0))
        euler = attrs.numbers("euler", 3, (0.0, 0.0, 0.0))
        for child in node.children:
            if child.tag in ("joint", "freejoint"):
                raise child.error("joints cannot be direct children of <replicate>; wrap them "
                                  "in a <body>")
        inner_class = self._childclass(node, cls)
        outer_suffix = self.suffix
        pos = np.zeros(3)
        width = len(str(max(count, 1)))
        suffixes = tuple(f"{attrs.text('sep', '')}{i:0{width}d}" for i in range(count))
        template = self.names.open_replicate()
        for i, suffix in enumerate(suffixes):
            self.names.in_template = template and i == 0
            compiler = self._compiler_of(node.file)
            quat = euler_quat(i * euler, compiler.eulerseq, compiler.degree)
            pose = (pos, quat)
            self.suffix = suffix + outer_suffix
            self._contents(node, body, within(frame, pose), inner_class)
            pos = pos + quat_matrix(quat) @ offset
        self.suffix = outer_suffix
        self.names.close_replicate(template, suffixes)

    def _named(self, name: str) -> str:
        """An element's name inside the current replicate copies ("" stays unnamed)."""
        return name + self.suffix if name else ""

    def _register(self, kind: str, node: Node) -> str:
        """Check and record the name of a tree element; returns its name in the model."""
        written = node.get("name", "")
        final = self._named(written)
        self.names.add(kind, written, final, node)
        return final

    def _body(self, node: Node, parent: BodyBuild, frame: Pose | None,
              cls: DefaultClass) -> None:
        """A child ``<body>``, numbered depth-first, with its contents."""
        attrs = own_attributes(node)
        own_pose = self._own_pose(attrs)
        pose = within(frame, own_pose)
        body = BodyBuild(node, len(self.bodies), parent, pose, own_pose,
                         name=self._register("body", node),
                         mocap=attrs.boolean("mocap", False),
                         gravcomp=attrs.number("gravcomp", 0.0),
                         fuse=attrs.keyword("fuse", ("false", "auto"), "auto") == "auto",
                         keeps_forces=attrs.keyword("sleep", SLEEP_POLICIES, "auto") != "auto")
        self._count_passive("body", attrs, ("gravcomp",))
        self.bodies.append(body)
        parent.children.append(body)
        self._contents(node, body, None, self._childclass(node, cls))
        self._check_joints(body)
        if body.keeps_forces and not (body.joints and parent.id == 0):
            raise attrs.error("sleep", "a sleep policy is allowed only on a moving top-level "
                                       "body (a child of the world with joints), as in MuJoCo")

    def _joint(self, node: Node, body: BodyBuild, frame: Pose | None,
               attrs: Attributes) -> None:
        """A ``<joint>`` (defaults applied): anchor and axis in the body frame, q units."""
        if body.id == 0:
            raise node.error("the world body cannot have joints")
        kind = attrs.keyword("type", JOINT_TYPES, "hinge")
        self._count_passive("joint", attrs, ("stiffness", "damping", "springdamper",
                                             "frictionloss"))
        pos = attrs.numbers("pos", 3, (0.0, 0.0, 0.0))
        axis = attrs.numbers("axis", 3, (0.0, 0.0, 1.0))
        if frame is not None:
            rotation = quat_matrix(frame[1])
            pos, axis = frame[0] + rotation @ pos, rotation @ axis
        if kind in ("hinge", "slide"):
            try:
                axis = normalized(axis)
            except GeometryError:
                raise attrs.error("axis", "axis has zero length") from None
        ref = attrs.number("ref", 0.0)
        joint = JointBuild(node, kind, pos if kind != "free" else np.zeros(3), axis,
                           ref=math.radians(ref) if kind == "hinge" and
                           self._compiler_of(node.file).degree else ref,
                           armature=attrs.number("armature", 0.0),
                           damping=_first_number(attrs, "damping", 3),
                           frictionloss=_first_number(attrs, "frictionloss", 1),
                           name=self._register("joint", node))
        if kind != "free":
            self._limits(joint, attrs)
        body.joints.append(joint)

    def _limits(self, joint: JointBuild, attrs: Attributes) -> None:
        """MuJoCo's limit rules; the range is converted to radians for hinge and ball joints.
        The actuator force range (``actuatorfrcrange``) follows the same rules."""
        compiler = self._compiler_of(joint.node.file)
        force = limited_range(attrs, "actuatorfrclimited", "actuatorfrcrange", compiler)
        joint.force_range = force[1:] if force[0] else None
        joint.limited, low, high = limited_range(attrs, "limited", "range", compiler)
        if not joint.limited:
            return
        if joint.kind != "ball" and low >= high:
            raise attrs.error("range", "range[0] must be smaller than range[1] for a "
                                       "limited joint") if attrs.has("range") \
                else joint.node.error("a limited joint needs a range")
        if joint.kind == "ball" and low != 0:
            raise attrs.error("range", "range[0] must be 0 for a ball joint")
        if compiler.degree and joint.kind in ("hinge", "ball"):
            low, high = math.radians(low), math.radians(high)
        joint.range = (low, high)

    def _freejoint(self, node: Node, body: BodyBuild) -> None:
        """A ``<freejoint>``: a free joint that takes no defaults (armature 0)."""
        if body.id == 0:
            raise node.error("the world body cannot have joints")
        attrs = own_attributes(node)
        attrs.integer("group", 0)
        align = attrs.keyword("align", ("false", "true", "auto"), "auto")
        body.joints.append(JointBuild(node, "free", np.zeros(3), np.array([0.0, 0.0, 1.0]),
                                      align=align, name=self._register("joint", node)))

    def _check_joints(self, body: BodyBuild) -> None:
        """MuJoCo's joint rules: free alone in a top-level body, <= 6 dofs, no ball+rotation."""
        kinds = [joint.kind for joint in body.joints]
        if "free" in kinds:
            free = body.joints[kinds.index("free")]
            if len(kinds) > 1:
                raise free.node.error("a free joint must be the only joint of its body")
            if body.parent.id != 0 and not self.compiler.fusestatic:
                raise free.node.error(FREE_PROBLEM)
        dofs = sum({"free": 6, "ball": 3}.get(kind, 1) for kind in kinds)
        if dofs > 6:
            raise body.node.error(f"body has {dofs} degrees of freedom; at most 6 are allowed")
        for i, joint in enumerate(body.joints):
            if joint.kind in ("ball", "hinge") and "ball" in kinds[:i]:
                raise joint.node.error("a ball joint cannot be followed by another rotational "
                                       "joint in the same body")
        if body.mocap and (body.joints or body.parent.id != 0):
            raise body.node.error("a mocap body must be a child of the world without joints")

    def _inertial(self, node: Node, body: BodyBuild, frame: Pose | None) -> None:
        """An explicit ``<inertial>``; ``fullinertia`` is diagonalised like MuJoCo does."""
        if body.id == 0:
            raise node.error("the world body cannot have an inertial")
        attrs = own_attributes(node)
        pos = attrs.numbers("pos", 3)
        mass = attrs.number("mass")
        if attrs.has("fullinertia"):
            if attrs.has("diaginertia"):
                raise attrs.error("fullinertia", "fullinertia and diaginertia cannot both be "
                                                 "given")
            given = [key for key in ORIENTATION if attrs.has(key)]
            if given:
                raise attrs.error(given[0], "fullinertia and an inertial orientation cannot "
                                            "both be given")
            xx, yy, zz, xy, xz, yz = attrs.numbers("fullinertia", 6)
            moments, quat = principal(np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))
            if moments[2] < EPS and self.compiler.boundinertia <= 0:
                raise attrs.error("fullinertia", "inertia must have positive eigenvalues")
            written = np.eye(3)
        else:
            moments = attrs.numbers("diaginertia", 3, (0.0, 0.0, 0.0))
            quat = self._orientation(attrs)
            written = quat_matrix(quat)
        if frame is not None:
            pos, quat = geo.compose(frame, (pos, quat))
            written = quat_matrix(frame[1]) @ written
        body.inertial = Inertial(mass, pos, quat, moments)
        body.inertial_node = node
        body.inertial_written = written

    def _check_assets(self, attrs: Attributes, node: Node) -> None:
        """The material and height field a geom or site names exist."""
        for key, known in (("material", self.materials), ("hfield", self.hfields)):
            name = attrs.text(key)
            if name is not None and name not in known:
                raise attrs.error(key, f'unknown {key} {quoted(name)}')


def _first_number(attrs: Attributes, key: str, count: int) -> float:
    """The first of up to ``count`` numbers of ``key`` (0 when absent or blank, as MuJoCo
    reads it): ``damping`` holds the linear coefficient and then MuJoCo 4's polynomial
    terms, which no description field carries."""
    text = attrs.text(key)
    if text is None or not text.split():
        return 0.0
    return float(attrs.numbers(key, count, exact=False)[0])


def limited_range(attrs: Attributes, flag: str, key: str, compiler) -> tuple[bool, float, float]:
    """(limited, low, high) of a range attribute ``key`` and its ``flag`` (false, true or
    auto), by MuJoCo's rules: auto is limited when low < high, and a range given under
    auto needs ``autolimits``."""
    low, high = attrs.numbers(key, 2, (0.0, 0.0))
    limited = attrs.keyword(flag, ("false", "true", "auto"), "auto")
    if limited == "auto" and not compiler.autolimits and not (low == 0 and high == 0):
        raise attrs.error(key, f'a {key} needs {flag}="true" or "false" when the '
                               'compiler has autolimits="false"')
    return limited == "true" or (limited == "auto" and low < high), float(low), float(high)


def within(frame: Pose | None, pose: Pose) -> Pose:
    """``pose``, given in ``frame`` (a ``<frame>``'s or a replicate's; None: none), in the
    body's frame."""
    return geo.compose(frame, pose) if frame is not None else pose
