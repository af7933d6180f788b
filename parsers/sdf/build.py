"""An SDFormat document's links and joints as a :class:`TreeDescription` (see docs/sdf.md).

Frames: a link's frame in the description is its SDFormat link frame when no joint moves
it (a root), else the frame of the joint whose child it is (the description's child
frame IS the joint frame); its inertia, shapes and frames are re-expressed there. A joint
is placed in its parent's description frame by the world poses of both at zero motion
(:mod:`.frames`), as Drake and libsdformat place them.
"""
from __future__ import annotations

import math

import numpy as np
from lxml import etree

from treedyn.engine.description import (GRAVITY, Inertia, JointSpec, LinkSpec, Shape,
                                        SiteSpec, SourceRef, TreeDescription)
from treedyn.engine.rotations import matrix_quat

from ..errors import ParseError, quoted
from ..packages import PackagePaths, resolve_uri
from .document import Document, Scope
from .frames import WORLD, Frames
from .values import (Pose, child, compose, floats, here, inverse, scalar, text_of, vector)

TYPES = {"revolute": "revolute", "continuous": "continuous", "prismatic": "prismatic",
         "fixed": "fixed", "ball": "ball"}
AXIS_TYPES = ("revolute", "continuous", "prismatic")
LIMITED = ("revolute", "prismatic")
MOMENTS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


class Builder:
    def __init__(self, document: Document, path: str, paths: PackagePaths):
        self.document, self.path, self.paths = document, path, paths
        self.frames = Frames(document.scopes)
        self.notes: list[str] = []
        self.parent_joint: dict[str, str] = {}  # child link -> its joint
        self.placed: dict[str, Pose] = {WORLD: (np.eye(3), np.zeros(3))}  # link -> X_WD

    def build(self) -> TreeDescription:
        elements = [(scope, element) for scope in self.document.scopes
                    for element in scope.element.iterchildren("link", "joint")]
        joints = [self._ends(scope, element) for scope, element in elements
                  if element.tag == "joint"]
        names = [(scope, scope.prefix + element.get("name"), element)
                 for scope, element in elements if element.tag == "link"]
        for scope, name, element in names:
            joint = self.parent_joint.get(name)
            self.placed[name] = self.frames.world(joint or name, scope.at(element))
        specs = [self._root(scope, name, element) for scope, name, element in names
                 if name not in self.parent_joint]
        specs += [self._joint(*ends) for ends in joints]
        links = [LinkSpec(WORLD, Inertia.zero(), has_inertial=False)]
        links += [self._link(scope, name, element) for scope, name, element in names]
        top = self.document.scopes[0]
        gravity = self.document.gravity
        return TreeDescription(
            name=top.name, format="sdf", links=links, joints=specs, world_link=WORLD,
            gravity=np.array(GRAVITY) if gravity is None else gravity, source=self.path,
            notes=tuple(self.notes), files=tuple(dict.fromkeys(self.document.files)),
            sites=tuple(self._sites()))

    # -- joints ------------------------------------------------------------------------

    def _ends(self, scope: Scope, element: etree._Element) -> tuple:
        """(scope, element, parent link, child link) of a ``<joint>``, checked."""
        source = scope.at(element)
        kind = element.get("type", "").strip()
        if kind not in TYPES:
            known = "revolute, continuous, prismatic, fixed and ball joints"
            what = f"a {kind} joint is not supported" if kind else "<joint> has no type"
            raise ParseError.at(source, f"{what} (dyn reads {known})")
        if scope.static:
            raise ParseError.at(source, "a joint in a static model (its links are welded "
                                        "to the world): make the model not static")
        frames = self.frames
        parent = frames.link_of(frames.endpoint(scope, element, "parent", source), source)
        name = frames.endpoint(scope, element, "child", source)
        child_link = frames.link_of(name, source)
        if child_link == WORLD:
            raise ParseError.at(source, "the world cannot be a joint's <child>")
        if child_link == parent:
            raise ParseError.at(source, f"<parent> and <child> are the same link "
                                        f"{quoted(parent)}")
        first = self.parent_joint.get(child_link)
        if first is not None:
            raise ParseError.at(source, f"link {quoted(child_link)} is already the child of "
                                        f"joint {quoted(first)}: dyn reads trees only")
        joint_name = scope.prefix + element.get("name")
        self.parent_joint[child_link] = joint_name
        return scope, element, parent, child_link

    def _joint(self, scope: Scope, element: etree._Element, parent: str,
               child_link: str) -> JointSpec:
        source = scope.at(element)
        name = scope.prefix + element.get("name")
        kind = TYPES[element.get("type").strip()]
        joint = self.frames.world(name, source)
        rotation, translation = compose(inverse(self.placed[parent]), joint)
        extra: dict = {}
        axis_element = child(element, "axis")
        axis = np.array([0.0, 0.0, 1.0])
        if kind in AXIS_TYPES:
            axis = self._axis(scope, axis_element, joint[0], source)
            extra = _limits(kind, axis_element, source)
        if kind == "ball":  # q = (qw, qx, qy, qz), as the floating links' quaternions
            extra["neutral"] = np.array([1.0, 0.0, 0.0, 0.0])
        return JointSpec(name=name, type=kind, parent=parent, child=child_link,
                         rotation=rotation, translation=translation, axis=axis,
                         source=source, **extra)

    def _axis(self, scope: Scope, axis: etree._Element | None, joint_rotation: np.ndarray,
              source: SourceRef) -> np.ndarray:
        """The unit axis in the joint frame: ``<xyz>`` (0 0 1 by default) expressed in the
        joint frame, or in ``expressed_in`` (1.7+), or in the model frame in SDFormat 1.4
        and with ``<use_parent_model_frame>`` (1.5, 1.6)."""
        if axis is None:
            return np.array([0.0, 0.0, 1.0])
        xyz = child(axis, "xyz")
        value = np.array([0.0, 0.0, 1.0]) if xyz is None else np.array(floats(xyz, source, (3,)))
        frame = ""
        if xyz is not None and xyz.get("expressed_in", "").strip():
            frame = self.frames.name(scope, xyz.get("expressed_in").strip(), here(xyz, source))
        elif scope.version == (1, 4) or text_of(child(axis, "use_parent_model_frame")) in (
                "true", "1"):
            frame = scope.frame
        if frame:
            value = joint_rotation.T @ self.frames.world(frame, source)[0] @ value
        norm = math.sqrt(float(value @ value))
        if norm < 1e-12:
            raise ParseError.at(here(xyz, source), "the joint axis <xyz> has zero length")
        return value / norm

    def _root(self, scope: Scope, name: str, element: etree._Element) -> JointSpec:
        """The joint of a link no joint moves: welded to the world in a static model, else
        floating (``free_world``: q = (x, y, z, qw, qx, qy, qz) of the link frame in the
        world, its pose in the file as the neutral configuration)."""
        rotation, translation = self.placed[name]
        source = scope.at(element)
        if scope.static:
            return JointSpec(name=name, type="fixed", parent=WORLD, child=name,
                             rotation=rotation, translation=translation, source=source)
        return JointSpec(name=name, type="free_world", parent=WORLD, child=name,
                         neutral=np.concatenate([translation, matrix_quat(rotation)]),
                         source=source)

    # -- links -------------------------------------------------------------------------

    def _link(self, scope: Scope, name: str, element: etree._Element) -> LinkSpec:
        source = scope.at(element)
        to_link = inverse(self.placed[name])
        link = compose(to_link, self.frames.world(name, source))  # the link frame in D
        inertial = child(element, "inertial")
        shapes = tuple(self._shapes(scope, name, element, to_link))
        if inertial is None:  # SDFormat's default, as Drake and Gazebo read it
            inertia = Inertia(1.0, link[1], link[0] @ link[0].T)
            return LinkSpec(name, inertia, source, has_inertial=False, geometry=shapes,
                            file_rotation=link[0], file_translation=link[1])
        where = here(inertial, source)
        if inertial.get("auto", "false").strip().lower() in ("true", "1"):
            raise ParseError.at(where, '<inertial auto="true"> is not supported: give the '
                                       "mass and inertia")
        frame = compose(to_link, self.frames.placed(child(inertial, "pose"), name, scope,
                                                    where))
        mass = scalar(inertial, "mass", 1.0, where)
        tensor_element = child(inertial, "inertia")
        values = dict(ixx=1.0, ixy=0.0, ixz=0.0, iyy=1.0, iyz=0.0, izz=1.0)
        if tensor_element is not None:
            values = {key: scalar(tensor_element, key, value, where)
                      for key, value in values.items()}
        ixx, ixy, ixz, iyy, iyz, izz = (values[key] for key in MOMENTS)
        tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        inertia = Inertia(mass, frame[1], frame[0] @ tensor @ frame[0].T)
        return LinkSpec(name, inertia, source, inertial_source=SourceRef(
            where.file, where.line, "inertial"), inertial_rotation=frame[0], geometry=shapes,
            file_rotation=link[0], file_translation=link[1])

    def _shapes(self, scope: Scope, name: str, element: etree._Element, to_link: Pose):
        """The ``<collision>`` and ``<visual>`` shapes of a link, posed in its frame."""
        for holder in element.iterchildren("collision", "visual"):
            source = scope.at(holder)
            geometry = child(holder, "geometry")
            shape = None if geometry is None else next(geometry.iterchildren(etree.Element),
                                                       None)
            if shape is None or shape.tag not in SHAPES:
                continue
            kind, size = SHAPES[shape.tag](shape, source)
            mesh, scale = "", np.ones(3)
            if kind == "mesh":
                uri = text_of(child(shape, "uri"))
                found = resolve_uri(uri, scope.file, self.paths) if uri else None
                mesh = uri if found is None else str(found)  # the including file's
                scale = vector(shape, "scale", (1.0, 1.0, 1.0), source)
            pose = compose(to_link, self.frames.placed(child(holder, "pose"), name, scope,
                                                       source))
            yield Shape(kind, np.array(size, dtype=float), pose[0], pose[1], holder.tag, mesh,
                        scale, source)

    def _sites(self):
        """The ``<frame>`` s of the models as sites on the links they are attached to."""
        for name, frame in self.frames.frames.items():
            if frame.kind != "frame":
                continue
            link = self.frames.link_of(name, frame.pose_owner)
            if link == WORLD:
                continue
            pose = compose(inverse(self.placed[link]), self.frames.world(name,
                                                                           frame.pose_owner))
            yield SiteSpec(name, link, pose[0], pose[1])


def _limits(kind: str, axis: etree._Element | None, source: SourceRef) -> dict:
    """JointSpec's limits of an ``<axis>``: ``<limit>`` lower and upper (revolute and
    prismatic), effort and velocity (negative: none); ``<dynamics>`` damping and friction
    where JointSpec holds them."""
    limit = None if axis is None else child(axis, "limit")
    values: dict = {}
    if limit is not None:
        where = here(limit, source)
        if kind in LIMITED:
            values["lower"] = scalar(limit, "lower", -math.inf, where)
            values["upper"] = scalar(limit, "upper", math.inf, where)
        for key in ("effort", "velocity"):
            value = scalar(limit, key, -1.0, where)
            values[key] = math.inf if value < 0 else value
        values["limit_source"] = where
    dynamics = None if axis is None else child(axis, "dynamics")
    for key in ("damping", "friction"):
        if dynamics is not None:
            values[key] = scalar(dynamics, key, 0.0, here(dynamics, source))
    return values


def _sizes(*tags: str, count: int = 1):
    """A reader of a shape's size: the numbers of its children ``tags`` (``count`` numbers
    in one child when there is one tag)."""
    def read(shape: etree._Element, source: SourceRef) -> list[float]:
        values = []
        for tag in tags:
            element = child(shape, tag)
            values += [0.0] * count if element is None else floats(element, source, (count,))
        return values
    return read


SHAPES = {
    "box": lambda shape, source: ("box", _sizes("size", count=3)(shape, source)),
    "cylinder": lambda shape, source: ("cylinder", _sizes("radius", "length")(shape, source)),
    "sphere": lambda shape, source: ("sphere", _sizes("radius")(shape, source)),
    "capsule": lambda shape, source: ("capsule", _sizes("radius", "length")(shape, source)),
    "ellipsoid": lambda shape, source: ("ellipsoid", _sizes("radii", count=3)(shape, source)),
    "mesh": lambda shape, source: ("mesh", []),
}
