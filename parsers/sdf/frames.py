"""SDFormat's frames (pose frame semantics, 1.7+): every link, joint, ``<frame>`` and
model frame of a document, and their poses in the world at zero joint motion.

* A frame is named ``prefix + name`` (``arm::hand`` in the nested model ``arm``); a name
  in a scope is read in that scope: ``world``, ``__model__`` (the scope's model frame),
  ``name``, ``nested::name``, ``nested::__model__`` (= ``nested``). Links, joints, frames
  and nested models of one model share one namespace: a second use of a name is refused.
* Default ``relative_to`` (a ``<pose>`` without it): a link, a frame without
  ``attached_to`` and a nested model are posed in their model's frame; a frame with
  ``attached_to`` in that frame; a joint in its child's frame; the top model in the
  world. A ``relative_to`` is read in the scope the element is written in (a nested
  model's in its parent's). A cycle of ``relative_to`` is refused.
* The link a frame is attached to: a link's is itself, a joint's is its child link, a
  ``<frame>``'s that of its ``attached_to`` (its model frame by default), a model frame's
  that of its ``canonical_link`` (default: its first link, else its first nested
  model's).
* SDFormat 1.4 to 1.6 have neither ``relative_to`` nor ``<frame>`` semantics: their
  defaults are the same, and a ``<pose frame="...">`` naming a frame is refused.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from lxml import etree

from treedyn.engine.description import SourceRef

from ..errors import ParseError, quoted
from .document import Scope
from .values import Pose, child, compose, here, pose_value, text_of

WORLD = "world"
KINDS = ("link", "joint", "frame")  # the elements of a model that are frames


@dataclass
class Frame:
    name: str  # scoped
    kind: str  # "link", "joint", "frame", "model" or "world"
    scope: Scope  # the model it belongs to (a model frame: the model itself)
    element: etree._Element | None
    pose: etree._Element | None  # its <pose>
    pose_owner: SourceRef  # the element the <pose> belongs to, in the file it is written in
    pose_scope: Scope | None  # the scope its relative_to is read in
    default: str  # the frame its pose is relative to when no relative_to is given
    attached: str  # what it is attached to (see link_of), a scoped name


class Frames:
    """The frames of ``scopes`` (the top model first)."""

    def __init__(self, scopes: list[Scope]):
        self.frames: dict[str, Frame] = {}
        self.scopes = scopes
        self._world: dict[str, Pose] = {WORLD: (np.eye(3), np.zeros(3))}
        self._placing: set[str] = set()
        for scope in scopes:
            self._add_scope(scope)
        for scope in scopes:
            for element in scope.element.iterchildren(*KINDS):
                self._add_element(scope, element)

    # -- building ----------------------------------------------------------------------

    def _add_scope(self, scope: Scope) -> None:
        parent = scope.parent
        owner = SourceRef(scope.pose_file or scope.file, scope.source.line, scope.source.element)
        frame = Frame(scope.frame, "model", scope, scope.element, scope.pose, owner, parent,
                      parent.frame if parent is not None else WORLD, "")
        if parent is not None:
            self._unique(parent, scope.name, scope.source)
        self.frames[scope.frame] = frame

    def _add_element(self, scope: Scope, element: etree._Element) -> None:
        source = scope.at(element)
        name = element.get("name")
        if not name:
            raise ParseError.at(source, f"<{element.tag}> has no name")
        if name == WORLD or (name.startswith("__") and name.endswith("__")):
            raise ParseError.at(source, f"the name {quoted(name)} is reserved in SDFormat")
        self._unique(scope, name, source)
        pose = child(element, "pose")
        if pose is not None and (pose.get("frame") or "").strip():
            raise ParseError.at(here(pose, source), "<pose frame=...> (SDFormat 1.5, 1.6) "
                                "is not supported: use relative_to (1.7)")
        default, attached = scope.frame, ""
        if element.tag == "frame":
            given = element.get("attached_to", "").strip()
            attached = self.name(scope, given, source) if given else scope.frame
            default = attached
        elif element.tag == "joint":
            default = attached = self.endpoint(scope, element, "child", source)
        self.frames[scope.prefix + name] = Frame(scope.prefix + name, element.tag, scope,
                                                 element, pose, source, scope, default,
                                                 attached)

    def _unique(self, scope: Scope, name: str, source: SourceRef) -> None:
        scoped = scope.prefix + name
        first = self.frames.get(scoped)
        if first is not None:
            raise ParseError.at(source, f"the name {quoted(name)} is taken (line "
                                        f"{first.pose_owner.line}): the links, joints, "
                                        "frames and models of a model need distinct names")

    # -- names -------------------------------------------------------------------------

    def name(self, scope: Scope, text: str, source: SourceRef) -> str:
        """The scoped name of the frame ``text`` names in ``scope`` (see the module notes);
        a name that is no frame yet is taken as given (checked when it is used)."""
        if text == WORLD:
            return WORLD
        if text == "__model__":
            return scope.frame
        if text.endswith("::__model__"):
            text = text[:-len("::__model__")]
        if not text:
            raise ParseError.at(source, "an empty frame name")
        return scope.prefix + text

    def endpoint(self, scope: Scope, joint: etree._Element, tag: str,
                 source: SourceRef) -> str:
        """The scoped frame a joint's ``<parent>`` or ``<child>`` names."""
        element = child(joint, tag)
        text = text_of(element)
        if not text:
            raise ParseError.at(source, f"<joint> has no <{tag}>")
        return self.name(scope, text, source)

    def known(self, name: str, source: SourceRef) -> Frame:
        frame = self.frames.get(name)
        if frame is None:
            raise ParseError.at(source, f"{quoted(name)} names no link, joint, frame or "
                                        "model of this model")
        return frame

    def link_of(self, name: str, source: SourceRef) -> str:
        """The scoped name of the link frame ``name`` is attached to, or ``world``."""
        for _step in range(len(self.frames) + 1):
            if name == WORLD:
                return WORLD
            frame = self.known(name, source)
            if frame.kind == "link":
                return name
            name = frame.attached if frame.kind != "model" else self._canonical(frame.scope,
                                                                                 source)
        raise ParseError.at(source, f"the frames attached to {quoted(name)} form a cycle")

    def _canonical(self, scope: Scope, source: SourceRef) -> str:
        given = scope.element.get("canonical_link", "").strip()
        if given:
            return self.name(scope, given, source)
        link = next(scope.element.iterchildren("link"), None)
        if link is not None:
            return scope.prefix + link.get("name")
        nested = next((other for other in self.scopes if other.parent is scope), None)
        if nested is None:
            raise ParseError.at(scope.source, "the model has no link to attach its frame to")
        return nested.frame

    # -- poses -------------------------------------------------------------------------

    def world(self, name: str, source: SourceRef) -> Pose:
        """The pose of frame ``name`` in the world at zero joint motion: its chain of
        ``relative_to`` followed down to a frame already placed (a loop, not a call per
        frame: a chain of thousands of frames is read like a short one), then composed
        back up, each frame's pose read on the way."""
        chain = []  # (name, its <pose>, that pose's owner), from ``name`` down
        while name not in self._world:
            frame = self.known(name, source)
            if name in self._placing:
                raise ParseError.at(frame.pose_owner, "the poses' relative_to form a cycle "
                                    f"through {quoted(name)}")
            self._placing.add(name)
            chain.append((name, frame.pose, frame.pose_owner))
            name, source = self.base(frame.pose, frame.default, frame.pose_scope,
                                     frame.pose_owner)
        pose = self._world[name]
        for placed, element, owner in reversed(chain):
            pose = compose(pose, pose_value(element, owner))
            self._world[placed] = pose
            self._placing.discard(placed)
        return pose

    def base(self, pose: etree._Element | None, default: str, scope: Scope | None,
             owner: SourceRef) -> tuple[str, SourceRef]:
        """(the frame a ``<pose>`` (None: none) read in ``scope`` is relative to: its
        ``relative_to`` or else the frame ``default``, where that is named)."""
        given = "" if pose is None else pose.get("relative_to", "").strip()
        base = default
        if given:
            base = self.name(scope, given, here(pose, owner)) if scope is not None else given
        return base, owner if pose is None else here(pose, owner)

    def placed(self, pose: etree._Element | None, default: str, scope: Scope | None,
               owner: SourceRef) -> Pose:
        """The world pose of a ``<pose>`` (identity when None) read in ``scope``, relative
        to its ``relative_to`` or else to the frame ``default``."""
        return compose(self.world(*self.base(pose, default, scope, owner)),
                       pose_value(pose, owner))
