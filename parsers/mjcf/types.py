"""The data the modules of the MJCF compiler share: nodes, attributes, settings, bodies.

The builder (:mod:`.builder` and its parts) reads a document into these types;
:mod:`.geoms` (geoms and mesh assets) and :mod:`.fusestatic` (``compiler fusestatic``)
work on them too. They live here, in a module that imports none of those, so that each
can import them without an import cycle.

Conventions
-----------
* A :class:`Node` is an XML element with the file it was read from (includes expanded);
  its errors name that file and the element's line.
* :class:`Attributes` are one element's attributes, its own over its default class's; each
  value remembers the element that wrote it, so that an error about it points there. A
  number is a plain ASCII decimal; NaN and infinities are refused (MuJoCo only warns).
* :class:`Compiler` holds the ``<compiler>`` settings with MuJoCo's defaults.
* A pose is ``(pos, quat)`` as in :mod:`.geometry`. A :class:`BodyBuild` is one
  body while it is compiled, posed in its parent body's frame, and :class:`Inertial` is
  MuJoCo's body inertial: mass, principal frame and principal moments, the moments found
  by :func:`principal` as MuJoCo's compiler finds them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from lxml import etree

from treedyn.engine.description import SourceRef
from treedyn.engine.rotations import IDENTITY_QUAT, quat_matrix

from ..errors import WORD_CHARACTERS, ParseError, quoted
from ..numbers import INTEGER, word_problem
from . import geometry as geo

WORLD = "world"
ORIENTATION = ("quat", "axisangle", "xyaxes", "zaxis", "euler")
# the files of assets MuJoCo opens while compiling, used or not, and the compiler
# setting naming the folder each is found in
ASSET_FILES = {"mesh": (("file",), "meshdir"),
               "texture": (("file", "fileright", "fileleft", "fileup", "filedown",
                            "filefront", "fileback"), "texturedir"),
               "hfield": (("file",), "meshdir"), "skin": (("file",), "meshdir")}
ACTUATOR_TAGS = ("general", "motor", "position", "velocity", "damper", "intvelocity",
                 "orientation", "pid", "cylinder", "muscle", "adhesion", "dcmotor", "plugin")


# -- document nodes ---------------------------------------------------------------------


@dataclass
class Node:
    """An XML element with the file it came from and its children, includes expanded."""

    element: etree._Element
    file: str
    children: list["Node"] = field(default_factory=list)
    # a top-level <default> of an attached model: the root class it fills (its "main"
    # renamed by the attach prefix, which inherits nothing from the scene's "main")
    root_class: str = ""

    @property
    def tag(self) -> str:
        return self.element.tag

    @property
    def line(self) -> int:
        return self.element.sourceline or 0

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.element.get(name, default)

    def source(self) -> SourceRef:
        name = self.get("name")
        tag = quoted(self.tag, WORD_CHARACTERS, mark="")  # an unknown tag may be long
        label = f'{tag} name={quoted(name)}' if name else tag
        return SourceRef(self.file, self.line, label)

    def error(self, problem: str) -> ParseError:
        return ParseError.at(self.source(), problem)


# -- attributes with their sources ----------------------------------------------------


@dataclass(frozen=True)
class Value:
    """An attribute's text and where it was written."""

    text: str
    source: SourceRef


class Attributes:
    """Resolved attributes of one element (its own merged over its default class)."""

    def __init__(self, values: dict[str, Value], owner: SourceRef):
        self.values = values
        self.owner = owner

    def has(self, key: str) -> bool:
        return key in self.values

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.values.get(key)
        return default if value is None else value.text

    def error(self, key: str, problem: str) -> ParseError:
        """The error about attribute ``key`` where it was written (else at the element)."""
        value = self.values.get(key)
        if value is None:
            return ParseError(problem, self.owner.file, self.owner.line, self.owner.element)
        return ParseError(f'{key}={quoted(value.text)}: {problem}', value.source.file,
                          value.source.line or self.owner.line, self.owner.element)

    def numbers(self, key: str, count: int, default=None, exact: bool = True) -> np.ndarray:
        """``count`` finite numbers (``exact=False``: 1 to ``count``); ``default`` if absent."""
        value = self.values.get(key)
        if value is None:
            if default is None:
                raise ParseError(f"required attribute {key} is missing", self.owner.file,
                                 self.owner.line, self.owner.element)
            return np.array(default, dtype=float)
        words = value.text.split()
        if len(words) > count or (exact and len(words) < count) or not words:
            expected = f"{count}" if exact else f"1 to {count}"
            raise self.error(key, f"expected {expected} number{'s' if count > 1 else ''}, "
                                  f"got {len(words)}")
        for word in words:
            problem = word_problem(word, any_signs=True)
            if problem:
                raise self.error(key, f'{quoted(word, WORD_CHARACTERS)} {problem}')
        numbers = np.array([float(word) for word in words])
        if not np.all(np.isfinite(numbers)):
            raise self.error(key, "number out of double range")
        return numbers

    def number(self, key: str, default: float | None = None) -> float:
        fallback = None if default is None else (default,)
        return float(self.numbers(key, 1, fallback)[0])

    def integers(self, key: str, count: int, default) -> list[int]:
        value = self.values.get(key)
        if value is None:
            return list(default)
        words = value.text.split()
        if len(words) != count:
            raise self.error(key, f"expected {count} integer{'s' if count > 1 else ''}, "
                                  f"got {len(words)}")
        for word in words:
            if not INTEGER.fullmatch(word):
                raise self.error(key, f'{quoted(word, WORD_CHARACTERS)} is not an integer')
        return [int(word) for word in words]

    def integer(self, key: str, default: int) -> int:
        return self.integers(key, 1, (default,))[0]

    def keyword(self, key: str, choices: tuple[str, ...], default: str) -> str:
        text = self.text(key)
        if text is None:
            return default
        if text not in choices:
            raise self.error(key, f"expected one of {', '.join(choices)}")
        return text

    def boolean(self, key: str, default: bool) -> bool:
        return self.keyword(key, ("false", "true"), "true" if default else "false") == "true"


def own_values(node: Node) -> dict[str, Value]:
    """The element's own attribute values, each written at the element."""
    source = node.source()
    return {key: Value(text, source) for key, text in node.element.attrib.items()}


def own_attributes(node: Node) -> Attributes:
    """The element's own attributes (for elements that take no defaults)."""
    return Attributes(own_values(node), node.source())


# -- compiler settings ------------------------------------------------------------------


@dataclass
class Compiler:
    """The ``<compiler>`` settings that matter for the tree, with MuJoCo's defaults."""

    degree: bool = True
    eulerseq: str = "xyz"
    autolimits: bool = True
    inertiafromgeom: str = "auto"
    inertiagrouprange: tuple[int, int] = (0, 5)
    boundmass: float = 0.0
    boundinertia: float = 0.0
    balanceinertia: bool = False
    settotalmass: float = -1.0
    alignfree: bool = False
    fusestatic: bool = False
    fitaabb: bool = False
    discardvisual: bool = False
    strippath: bool = False
    meshdir: str = ""
    texturedir: str = ""

    def read(self, node: Node) -> None:
        """Apply one ``<compiler>`` element (later elements override earlier ones)."""
        attrs = own_attributes(node)
        if attrs.text("coordinate", "local") == "global":
            raise attrs.error("coordinate", "global coordinates are not supported by MuJoCo")
        attrs.keyword("coordinate", ("local", "global"), "local")
        self.degree = attrs.keyword("angle", ("radian", "degree"),
                                    "degree" if self.degree else "radian") == "degree"
        sequence = attrs.text("eulerseq", self.eulerseq)
        if len(sequence) != 3 or any(c not in "xyzXYZ" for c in sequence):
            raise attrs.error("eulerseq", "expected 3 letters from x, y, z, X, Y, Z")
        self.eulerseq = sequence
        self.autolimits = attrs.boolean("autolimits", self.autolimits)
        self.inertiafromgeom = attrs.keyword("inertiafromgeom", ("false", "true", "auto"),
                                             self.inertiafromgeom)
        self.inertiagrouprange = tuple(attrs.integers("inertiagrouprange", 2,
                                                      self.inertiagrouprange))
        self.boundmass = attrs.number("boundmass", self.boundmass)
        self.boundinertia = attrs.number("boundinertia", self.boundinertia)
        self.balanceinertia = attrs.boolean("balanceinertia", self.balanceinertia)
        self.settotalmass = attrs.number("settotalmass", self.settotalmass)
        self.alignfree = attrs.boolean("alignfree", self.alignfree)
        self.fusestatic = attrs.boolean("fusestatic", self.fusestatic)
        self.fitaabb = attrs.boolean("fitaabb", self.fitaabb)
        self.discardvisual = attrs.boolean("discardvisual", self.discardvisual)
        self.strippath = attrs.boolean("strippath", self.strippath)
        if attrs.has("assetdir"):
            self.meshdir = self.texturedir = attrs.text("assetdir")
        if attrs.has("meshdir"):
            self.meshdir = attrs.text("meshdir")
        if attrs.has("texturedir"):
            self.texturedir = attrs.text("texturedir")

    def in_inertia_group(self, group: int) -> bool:
        return self.inertiagrouprange[0] <= group <= self.inertiagrouprange[1]


# -- the body tree --------------------------------------------------------------------

Pose = tuple  # (pos (3,), quat (4,))
IDENTITY_POSE: Pose = (np.zeros(3), IDENTITY_QUAT)
# MuJoCo's rule for free joints, checked when a body is read and after fusestatic
FREE_PROBLEM = "a free joint is allowed only in a child of the world body (a top-level body)"


@dataclass
class JointBuild:
    """A compiled joint: type, anchor and axis in the body frame, limits in q units."""

    node: Node
    kind: str
    pos: np.ndarray
    axis: np.ndarray
    ref: float = 0.0
    limited: bool = False
    range: tuple[float, float] = (0.0, 0.0)
    armature: float = 0.0
    damping: float = 0.0  # the linear damping coefficient (damping's first number)
    frictionloss: float = 0.0
    align: str = "auto"
    name: str = ""
    # actuatorfrcrange when actuatorfrclimited (None: not limited), and the force interval
    # of each actuator with a joint transmission on it (None: one not force-limited)
    force_range: tuple[float, float] | None = None
    drives: list = field(default_factory=list)  # [(interval or None, its Node)]


@dataclass
class Inertial:
    """MuJoCo's body inertial: mass, frame (ipos, iquat) and principal moments."""

    mass: float
    pos: np.ndarray
    quat: np.ndarray  # (4,) the principal frame in the body frame, with MuJoCo's sign
    moments: np.ndarray  # (3,)

    @property
    def rotation(self) -> np.ndarray:
        """(3, 3) principal axes in the body frame (columns)."""
        return quat_matrix(self.quat)

    def properties(self) -> geo.MassProperties:
        return geo.MassProperties(self.mass, self.pos,
                                  self.rotation @ np.diag(self.moments) @ self.rotation.T)


@dataclass
class BodyBuild:
    """A body being compiled: pose, joints, geoms and inertia (id = MuJoCo's body id)."""

    node: Node | None
    id: int
    parent: "BodyBuild | None"
    pose: Pose  # in the parent body's frame, frames included
    own_pose: Pose  # from the body's own attributes (MuJoCo's placeholder inertial frame)
    name: str = ""
    mocap: bool = False
    gravcomp: float = 0.0
    fuse: bool = True  # the body's fuse attribute is not "false"
    keeps_forces: bool = False  # a sleep policy or a plugin, which fusing would drop
    sites: list[str] = field(default_factory=list)  # names of its sites (for sensors)
    # named sites: name, pose in the body frame (frames included) and the <site> element
    site_poses: list[tuple[str, Pose, SourceRef]] = field(default_factory=list)
    joints: list[JointBuild] = field(default_factory=list)
    geoms: list[tuple[Attributes, Pose | None]] = field(default_factory=list)
    inertial: Inertial | None = None  # explicit <inertial>
    inertial_node: Node | None = None  # its element
    # Rotation (body frame) of the frame the explicit tensor is written in: the inertial's
    # orientation for diaginertia, the enclosing frames' for fullinertia.
    inertial_written: np.ndarray = field(default_factory=lambda: np.eye(3))
    children: list["BodyBuild"] = field(default_factory=list)
    inertia: Inertial | None = None  # compiled
    uses_inertial: bool = False  # the compiled inertia is the explicit <inertial>'s
    inertia_from_geoms: bool = False  # the compiled inertia is its geoms'
    bounds_changed: bool = False  # boundmass/boundinertia/balanceinertia changed it
    # inertiafromgeom="true" and fusestatic: the sum of its inertia and the fused bodies'
    fused_sum: Inertial | None = None
    # Pose of the link frame in the body frame (alignfree moves it to the inertial frame).
    link_offset: Pose = IDENTITY_POSE

    @property
    def static(self) -> bool:
        """Welded to the world: no joints here or in any ancestor."""
        body = self
        while body is not None and body.id > 0:
            if body.joints:
                return False
            body = body.parent
        return True

    def source(self) -> SourceRef:
        if self.node is None:
            return SourceRef()
        return self.node.source()


# -- inertia helpers --------------------------------------------------------------------


def principal(inertia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(moments in decreasing order (3,), quat of the principal axes), as MuJoCo finds them."""
    return geo.principal_axes(inertia, geo.BODY_TOLERANCE)
