"""MJCF parser: a MuJoCo ``<mujoco>`` file to a format-neutral :class:`TreeDescription`.

The semantics are those of MuJoCo's compiler (checked against ``mujoco`` 4.0); q is
MuJoCo's ``qpos`` and v its ``qvel``, in MuJoCo's joint order.

Document
--------
* ``<include file>`` is replaced by the children of the included file's root element.
  The file is looked up relative to the main model's directory first and then relative
  to the including file's directory (MuJoCo's order). A file may be included once; an
  include cycle, a repeated include, a missing or empty file is a ParseError.
* Sections are read in MuJoCo's order (compiler, option, default, asset, ..., worldbody),
  each kind in document order, so later settings win.

Compiler and option
-------------------
``angle`` (degrees by default: euler, axisangle, hinge ref and hinge/ball range),
``eulerseq``, ``autolimits``, ``inertiafromgeom`` (false/true/auto), ``inertiagrouprange``,
``boundmass``, ``boundinertia``, ``balanceinertia``, ``settotalmass``, ``alignfree``,
``fusestatic``, ``fitaabb``, ``discardvisual``, ``strippath``, ``meshdir``/``assetdir``.
``<option gravity>`` (default 0 0 -9.81); ``<flag gravity="disable">`` makes it zero;
``<option density viscosity>`` only decide which static bodies ``fusestatic`` keeps.

Defaults
--------
``<default>`` classes nest; a class starts as a copy of its parent and its own attributes
override. An element takes its ``class``, else the ``childclass`` of the nearest enclosing
body or frame that has one, else ``main``. Attributes it sets override the class's, except
that a shorter geom ``size`` (and actuator ``gear``) replaces only the leading numbers, and
any orientation attribute replaces the class's orientation as a whole. ``<freejoint>``
takes no defaults.

Kinematic tree
--------------
* Bodies are numbered depth-first in document order (MuJoCo's body ids, counting only the
  bodies that ``fusestatic`` keeps) and their joints
  follow in that body order, each body's joints in document order (MuJoCo's joint ids).
* A body's pose is ``pos`` and one orientation form (``quat`` w x y z, ``axisangle``,
  ``euler``, ``xyaxes``, ``zaxis``); ``<frame>`` elements compose their pose into
  everything they contain (bodies, joints, geoms, inertials). ``<replicate>`` repeats its
  contents ``count`` times, copy i turned by ``i * euler`` and moved by ``offset`` (in the
  previous copy's frame) from the previous one; names get ``sep`` and the copy number
  (zero-padded to the digits of ``count``), inner suffixes first. Tendons and actuators
  that reference a replicated element are copied with it (:mod:`.mjcf_references`).
* Names are unique per kind (body, joint, geom, site, camera, light, tendon, actuator),
  checked as MuJoCo checks them: when an element is read, before replicate suffixes, and
  in the compiled model.
* No joint: the body is welded to its parent (a ``fixed`` joint named ``<body>/weld``).
* Joints of one body act in document order. A hinge rotates about its axis through its
  ``pos`` anchor, a ball about its anchor, a slide translates along its axis; anchors and
  axes are in the body frame after the earlier joints of the body. Each joint moves an
  intermediate massless link ``<body>/<joint>`` whose frame is the body frame (after that
  joint) shifted to the joint's anchor; a final fixed joint ``<body>/anchor`` leads to the
  body's own link, which carries the inertia. When the last joint's anchor is the body
  origin, that joint moves the body's link directly.
* ``hinge`` -> ``revolute`` and ``slide`` -> ``prismatic`` with ``ref`` (q = ref at the
  model pose, the neutral q); ``range`` applies to q when the joint is limited
  (``limited`` true, or auto with ``autolimits`` and a range). ``ball`` -> ``ball``
  (q = w x y z, neutral 1 0 0 0). ``free``/``<freejoint>`` -> ``free_world`` from the
  world, allowed only alone in a child of the world, neutral = the body's pos and quat.
* Joint armature adds the ``armature`` of actuators with a joint transmission times
  gear[0]^2, and that of single-joint fixed tendons (and their actuators) times coef^2;
  armature on other tendons is an error (it couples joints). Tendon paths and actuator
  transmissions must name existing elements, as MuJoCo requires (an actuator given both a
  joint and a tendon acts on the tendon, MuJoCo's precedence).
* Unnamed bodies are named ``body<id>`` and unnamed joints ``joint<id>`` (MuJoCo's ids),
  with ``_`` appended while the name is taken.

Inertia
-------
* ``<inertial>``: ``mass``, ``pos``, orientation, ``diaginertia`` or ``fullinertia``.
* From geoms where ``inertiafromgeom`` says so (true: always when the body has geoms with
  mass; auto: when there is no ``<inertial>``): geoms whose ``group`` is in
  ``inertiagrouprange`` and whose mass exceeds 1e-14. A geom's mass is ``mass``, or
  ``density`` (1000) times its volume (its area with ``shellinertia``); sizes come from
  ``size`` or ``fromto``. Mesh geoms use the mesh asset's ``inertia`` mode (legacy by
  default) on the scaled STL/OBJ/``.msh``/XML vertices (see :mod:`.mesh` and
  :func:`.mjcf_geometry.mesh_inertia`); a primitive type with a ``mesh`` is fitted to the
  mesh's equivalent-inertia box (or its bounding box with ``fitaabb``).
* As in MuJoCo, every mesh asset is compiled, used or not, before any geom: a mesh MuJoCo
  cannot process (too few vertices, coplanar vertices without faces, zero volume, faces
  turned inconsistently under ``inertia="exact"``, ...) is an error. Its convex hull is
  built when it has no faces, for ``inertia="convex"``, and when a colliding mesh geom (or
  one in a contact ``<pair>``) uses it. Every geom is compiled too, world geoms and those
  whose inertia is not needed included (a primitive fitted to a mesh must get positive
  sizes). With ``discardvisual``, visual geoms are left out of the model; when none of them
  counts for a body's inertia, they and the meshes only they use are not compiled at all
  (MuJoCo 4.0). Builtin and plugin meshes are checked only where a geom needs them. See
  :mod:`.mjcf_meshes`.
* Principal axes (meshes, bodies with several geoms, ``fullinertia``) are found with
  MuJoCo's Jacobi iteration and its stopping rule, whose small residual MuJoCo drops
  (:func:`.mjcf_geometry.principal_axes`); the compiled inertia is MuJoCo's to rounding.
* The body's principal moments are raised to ``boundinertia`` and its mass to
  ``boundmass``; moments violating A + B >= C are an error unless ``balanceinertia``
  averages them. A body without any inertia takes MuJoCo's placeholder inertial frame
  (its own ``pos``/orientation). A moving body needs mass and inertia (itself or a welded
  descendant). ``settotalmass`` then scales all masses and inertias; ``alignfree`` (or
  ``<freejoint align>``) moves a childless free body's frame to its inertial frame.
* ``fusestatic`` merges static bodies into their parents after the bodies' inertias are
  compiled and before the names ``body<id>``, the moving-body check, ``settotalmass`` and
  ``alignfree`` (see :func:`.mjcf_fusestatic.fuse_static` for MuJoCo's rules), so the
  bodies, their ids and inertias are MuJoCo's. A fused body's geoms join its parent's link.

Geometry
--------
Every body's link keeps its geoms as ``LinkSpec.geometry`` (for the diagnostics only), in
document order and posed in the link frame (enclosing frames, ``fromto`` and ``alignfree``
applied): primitives with the :class:`~treedyn.engine.description.Shape` sizes (MuJoCo's
half sizes doubled where the Shape wants full lengths; ellipsoids keep their semi-axes),
mesh geoms as their mesh file (meshdir/assetdir applied) with the asset's scale, refpos
and refquat folded into the pose, primitives fitted to a mesh as the fitted primitive.
Planes and height fields are left out, and so are visual geoms under ``discardvisual``.
A geom is "visual" when its contype and conaffinity (after defaults) are both 0, else
"collision". Geoms of a body with several joints belong to the body's own link, not to
the chain's intermediate links.
``LinkSpec.inertial_source`` is the ``<inertial>`` element when the compiled inertia is the
explicit one, else the body, and ``inertial_rotation`` the frame its tensor is written in
(the inertial's orientation for ``diaginertia``, the enclosing frames' for
``fullinertia``).

Everything else (actuators, tendons, equality, sensors, contact, keyframes, visual,
textures, materials, sites, cameras, lights, ...) is ignored and counted in
``TreeDescription.ignored``; the names it uses must exist, as MuJoCo requires (the
materials of geoms and sites, textures of materials, the elements sensors, equality
constraints and contact pairs name: :func:`.mjcf_references.check_references`). Not
supported (a ParseError): ``<attach>``, ``<flexcomp>``, ``<composite>``, sdf geoms,
builtin meshes, and armature on tendons that couple joints.
Errors are ParseError with file, line and element; NaN and infinite numbers are errors
(MuJoCo only warns). Before anything is compiled, the document is checked against MuJoCo's
schema (:mod:`.mjcf_schema`): unknown attributes and misplaced or repeated elements are
errors, as they are in MuJoCo.
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from lxml import etree

from treedyn.engine.description import (
    Inertia, JointSpec, LinkSpec, Shape, SourceRef, TreeDescription,
)

from . import mjcf_geometry as geo
from . import mjcf_references as refs
from . import mjcf_schema
from .errors import ParseError
from .mjcf_fusestatic import fuse_static
from .mjcf_meshes import GeomCompiler, MeshAsset, compile_meshes
from .mjcf_types import (
    FREE_PROBLEM, IDENTITY_POSE, NUMBER, Attributes, BodyBuild, Compiler, Inertial,
    JointBuild, Node, Pose, Value, own_attributes, own_values, principal,
)
from .xml_text import parse as parse_xml, without_declaration

GRAVITY = (0.0, 0.0, -9.81)
WORLD = "world"
ORIENTATION = ("quat", "axisangle", "xyaxes", "zaxis", "euler")
PARTIAL = {("geom", "size"), ("actuator", "gear")}  # shorter values replace leading numbers
ACTUATOR_TAGS = ("general", "motor", "position", "velocity", "damper", "intvelocity",
                 "orientation", "pid", "cylinder", "muscle", "adhesion", "dcmotor", "plugin")
DEFAULT_KINDS = {"joint": "joint", "geom": "geom", "mesh": "mesh", "tendon": "tendon",
                 "site": "site", "material": "material",
                 **{tag: "actuator" for tag in ACTUATOR_TAGS if tag != "plugin"}}
SECTION_ORDER = ("compiler", "option", "size", "visual", "statistic", "default", "extension",
                 "custom", "asset", "contact", "deformable", "equality", "tendon", "actuator",
                 "sensor", "keyframe", "worldbody")
COUNTED_SECTIONS = ("contact", "deformable", "equality", "tendon", "actuator", "sensor",
                    "keyframe")
IGNORED_BODY_ELEMENTS = ("site", "camera", "light", "plugin")
UNSUPPORTED_BODY_ELEMENTS = ("attach", "composite", "flexcomp")
JOINT_TYPES = ("free", "ball", "slide", "hinge")
SLEEP_POLICIES = ("auto", "never", "allowed", "init")  # <body sleep>
ENGINE_TYPE = {"hinge": "revolute", "slide": "prismatic", "ball": "ball", "free": "free_world"}

# passive-force attributes -> the <flag> switches that turn all of their forces off
PASSIVE_FLAGS = {"stiffness": ("spring",), "damping": ("damper",),
                 "springdamper": ("spring", "damper"), "frictionloss": ("frictionloss",),
                 "gravcomp": ("gravity",)}
SWITCHES = ("gravity", "spring", "damper", "frictionloss")  # the <flag>s the parser reads
MAX_DEPTH = 500  # levels of nested elements in one file, its root being 1: MuJoCo's limit
MAX_TOTAL_DEPTH = 1000  # levels in the whole document, includes expanded: dyn's own limit
DEPTH_PROBLEM = f"elements nested more than {MAX_DEPTH} deep (MuJoCo's XML reader refuses such files too)"


def parse_mjcf(path: str) -> TreeDescription:
    """The description of the MJCF file at ``path``; ParseError if unreadable or invalid."""
    path = str(path)
    limit = sys.getrecursionlimit()  # the document and the tree are read recursively,
    sys.setrecursionlimit(max(limit, 4 * MAX_TOTAL_DEPTH + 1000))  # a few calls per level
    try:
        document = _Document(path)
        mjcf_schema.check(document.root)
        description = _Builder(document.root, path).build()
        meshes = dict.fromkeys(os.path.realpath(f) for f in description.files)  # in order
        return dataclasses.replace(description, files=(*document.included, *meshes))
    finally:
        sys.setrecursionlimit(limit)


# -- document: XML nodes with their file, includes expanded ---------------------------


class _Document:
    """The main file with every ``<include>`` replaced by the included elements."""

    def __init__(self, path: str):
        self.model_dir = os.path.dirname(os.path.abspath(path))
        self.included: dict[str, SourceRef] = {}
        main = os.path.realpath(path)
        self.included[main] = SourceRef(path, 0, "")
        element = _read_xml(path, None)
        self.root = self._node(element, path, os.path.dirname(os.path.abspath(path)), [main],
                               1, 1)

    def _node(self, element: etree._Element, file: str, directory: str,
              stack: list[str], depth: int, total: int) -> Node:
        node = Node(element, file)
        if depth > MAX_DEPTH:
            raise node.error(DEPTH_PROBLEM)
        if total > MAX_TOTAL_DEPTH:
            raise node.error(f"elements nested more than {MAX_TOTAL_DEPTH} deep across "
                             f"included files (the most dyn reads)")
        node.children = self._children(element, file, directory, stack, depth, total)
        return node

    def _children(self, element: etree._Element, file: str, directory: str,
                  stack: list[str], depth: int, total: int) -> list[Node]:
        """Child nodes of ``element`` (at ``depth`` in its file, the root's being 1, and
        ``total`` in the document, includes expanded), each ``<include>`` replaced by
        what it includes."""
        nodes: list[Node] = []
        for child in element.iterchildren(etree.Element):
            if child.tag == "include":
                nodes.extend(self._include(Node(child, file), directory, stack, total))
            else:
                nodes.append(self._node(child, file, directory, stack, depth + 1, total + 1))
        return nodes

    def _include(self, include: Node, directory: str, stack: list[str],
                 total: int) -> list[Node]:
        if len(include.element):
            raise include.error("<include> cannot have child elements")
        name = include.get("file")
        if not name:
            raise include.error("file attribute is missing")
        path = self._locate(include, name, directory)
        real = os.path.realpath(path)
        if real in stack:
            cycle = " -> ".join(os.path.basename(p) for p in stack[stack.index(real):] + [real])
            raise include.error(f"include cycle ({cycle})")
        if real in self.included:
            first = self.included[real]
            where = f" (first included at {first.file}:{first.line})" if first.line else ""
            raise include.error(f'file "{name}" is already included{where}')
        self.included[real] = include.source()
        root = _read_xml(path, include)
        if next(root.iterchildren(etree.Element), None) is None:
            raise include.error(f'included file "{name}" has no elements')
        # its own root is level 1 of its file (MuJoCo's XML reader limits each file alone)
        return self._children(root, path, os.path.dirname(path), stack + [real], 1, total)

    def _locate(self, include: Node, name: str, directory: str) -> str:
        """The included file: absolute, else in the model directory, else beside the includer."""
        if os.path.isabs(name):
            candidates = [name]
        else:
            candidates = [os.path.join(self.model_dir, name), os.path.join(directory, name)]
        for candidate in candidates:
            if os.path.isfile(candidate):
                return candidate
        raise include.error(f'included file "{name}" not found (looked in '
                            f"{' and '.join(dict.fromkeys(candidates))})")


def _read_xml(path: str, include: Node | None) -> etree._Element:
    """Root element of an XML file; errors name the file (and the include that asked)."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as error:
        if include is not None:
            raise include.error(f'cannot read included file "{path}" ({error.strerror})') \
                from None
        raise ParseError(f"cannot read file ({error.strerror})", path) from None
    # huge_tree: libxml2 refuses documents nested deeper than 256 elements without it, and
    # a chain of bodies nests one level per body (MuJoCo reads such files); a declaration
    # libxml2 refuses (version="0.0", a blank line before it) is skipped, as tinyxml2 does
    try:
        return parse_xml(data, None, huge_tree=True)
    except etree.XMLSyntaxError as strict:
        error = strict
        text, encoding = without_declaration(data, None)
        if text is not None and text != data:
            try:
                return parse_xml(text, encoding, huge_tree=True)
            except etree.XMLSyntaxError as later:
                error = later
        if "Excessive depth" in (error.msg or ""):  # libxml2 stops at 2048 levels even so
            raise ParseError(DEPTH_PROBLEM, path, error.lineno or 0) from None
        raise ParseError(f"not well-formed XML ({error.msg})", path, error.lineno or 0) \
            from None


# -- defaults -----------------------------------------------------------------------------


def merge_values(base: dict[str, Value], own: dict[str, Value], kind: str) -> dict[str, Value]:
    """``own`` over a copy of ``base`` with MuJoCo's rules for orientation and partial vectors."""
    merged = dict(base)
    if any(key in own for key in ORIENTATION):
        for key in ORIENTATION:
            merged.pop(key, None)
    for key, value in own.items():
        if key in ("name", "class"):
            continue
        if (kind, key) in PARTIAL and key in merged:
            words = value.text.split()
            old = merged[key].text.split()
            value = Value(" ".join(words + old[len(words):]), value.source)
        merged[key] = value
    return merged


@dataclass
class DefaultClass:
    """A default class: per element kind, the attribute values it sets."""

    name: str
    values: dict[str, dict[str, Value]] = field(default_factory=dict)

    def child(self, name: str) -> "DefaultClass":
        return DefaultClass(name, {kind: dict(v) for kind, v in self.values.items()})

    def resolve(self, kind: str, node: Node) -> Attributes:
        """Attributes of ``node`` (a ``kind`` element) over this class's values."""
        return Attributes(merge_values(self.values.get(kind, {}), own_values(node), kind),
                          node.source())


class Defaults:
    """All default classes by name, read from the ``<default>`` sections in order."""

    def __init__(self):
        self.classes: dict[str, DefaultClass] = {"main": DefaultClass("main")}

    @property
    def main(self) -> DefaultClass:
        return self.classes["main"]

    def read_top(self, node: Node) -> None:
        name = node.get("class")
        if name is not None and name != "main":
            raise node.error('the top-level default class is "main" and cannot be renamed')
        self._read(node, self.main)

    def _read(self, node: Node, target: DefaultClass) -> None:
        for child in node.children:
            kind = DEFAULT_KINDS.get(child.tag)
            if kind is not None:
                target.values[kind] = merge_values(target.values.get(kind, {}),
                                                   own_values(child), kind)
        for child in node.children:
            if child.tag != "default":
                continue
            name = child.get("class")
            if not name:
                raise child.error("a nested default needs a non-empty class attribute")
            if name in self.classes:
                raise child.error(f'repeated default class name "{name}"')
            self.classes[name] = target.child(name)
            self._read(child, self.classes[name])

    def find(self, name: str, node: Node, key: str = "class") -> DefaultClass:
        found = self.classes.get(name)
        if found is None:
            raise node.error(f'{key}="{name}": unknown default class')
        return found


class _Builder:
    """Reads the sections of one document and assembles the TreeDescription."""

    def __init__(self, root: Node, path: str):
        if root.tag != "mujoco":
            raise ParseError(f"root element is <{root.tag}>, expected <mujoco>", path,
                             root.line)
        self.root = root
        self.path = path
        self.model_dir = os.path.dirname(os.path.abspath(path))
        self.compiler = Compiler()
        self.defaults = Defaults()
        self.gravity = np.array(GRAVITY)
        self.disabled: set[str] = set()  # SWITCHES a <flag ...="disable"> turned off
        self.fluid = {"density": 0.0, "viscosity": 0.0}  # <option>'s (fusestatic keeps
        # static bodies with mass in a fluid)
        self.ignored: Counter[str] = Counter()
        self.meshes: dict[str, MeshAsset] = {}
        self.hfields: dict[str, np.ndarray] = {}
        self.textures: set[str] = set()
        self.materials: dict[str, Node] = {}
        self.bodies: list[BodyBuild] = []
        # every geom: its body, attributes and name (replicate suffix included)
        self.all_geoms: list[tuple[BodyBuild, Attributes, str]] = []
        self.discarded: set[int] = set()  # id() of geoms discardvisual leaves uncompiled
        self.dropped: set[int] = set()  # id() of geoms discardvisual leaves out of the model
        self.suffix = ""  # name suffix inside <replicate> copies
        self.names = refs.NameRegistry()
        self.compiled_names: dict[str, set[str]] = {}  # tendons and actuators

    # -- sections --

    def build(self) -> TreeDescription:
        """Read every section in MuJoCo's order and compile the tree."""
        sections: dict[str, list[Node]] = {tag: [] for tag in SECTION_ORDER}
        for node in self.root.children:
            if node.tag not in sections:
                raise node.error(f"unknown element <{node.tag}> in <mujoco>")
            sections[node.tag].append(node)
        for node in sections["compiler"]:
            self.compiler.read(node)
        for node in sections["option"]:
            self._option(node)
        for tag in ("size", "visual", "statistic", "extension", "custom"):
            self.ignored[tag] += len(sections[tag])
        for node in sections["default"]:
            self.defaults.read_top(node)
        for node in sections["asset"]:
            self._asset(node)
        self._check_materials()
        for tag in COUNTED_SECTIONS:
            for node in sections[tag]:
                self.ignored[tag] += len(node.children)
        world = BodyBuild(None, 0, None, IDENTITY_POSE, IDENTITY_POSE, name=WORLD)
        self.bodies.append(world)
        for node in sections["worldbody"]:
            if node.element.attrib:
                raise node.error("<worldbody> cannot have attributes")
            self._contents(node, world, None, self.defaults.main)
        self.dropped, self.discarded = compile_meshes(self.meshes, self.all_geoms,
                                                      sections["contact"], self.compiler)
        for attrs, _frame in world.geoms:
            if id(attrs) not in self.discarded:
                self._geom(attrs).validate()
        self.names.check_final(("geom", "site", "camera", "light"))
        self._name_joints()
        self._actuator_armature(sections["tendon"], sections["actuator"])
        self._check_references(sections)
        for body in self.bodies[1:]:
            body.inertia = self._body_inertia(body)
        if self.compiler.fusestatic:
            self.bodies = fuse_static(self.bodies, self.root, self.compiler, self.fluid,
                                      self._body_inertia)
        self._name_bodies()
        self._check_moving_bodies()
        self._scale_total_mass()
        return self._description()

    def _option(self, node: Node) -> None:
        """``gravity``, and the ``<flag>`` :data:`SWITCHES` (the last one given wins)."""
        attrs = own_attributes(node)
        self.gravity = attrs.numbers("gravity", 3, self.gravity)
        for key in self.fluid:
            self.fluid[key] = attrs.number(key, self.fluid[key])
        self._count_passive("option", attrs, ("density", "viscosity"))
        for child in node.children:
            if child.tag == "flag":
                flags = own_attributes(child)
                for name in SWITCHES:
                    state = "disable" if name in self.disabled else "enable"
                    if flags.keyword(name, ("enable", "disable"), state) == "disable":
                        self.disabled.add(name)
                    else:
                        self.disabled.discard(name)

    def _count_passive(self, tag: str, attrs: Attributes, keys: tuple[str, ...]) -> None:
        """Forces outside M a + h (springs, damping, friction loss, gravity compensation,
        fluid forces) that MuJoCo's passive or constraint forces add: each non-zero one
        is counted as ignored (``"joint damping"``), so that dyn info shows it."""
        for key in keys:
            switches = PASSIVE_FLAGS.get(key, ())
            if switches and all(s in self.disabled for s in switches):
                continue  # MuJoCo leaves these forces out too
            if any(NUMBER.fullmatch(word) and float(word) != 0.0
                   for word in (attrs.text(key) or "").split()):
                self.ignored[f"{tag} {key}"] += 1

    def _asset(self, section: Node) -> None:
        """Meshes and height fields are kept; other assets are counted as ignored."""
        for node in section.children:
            if node.tag == "mesh":
                self._mesh_asset(node)
            elif node.tag == "hfield":
                attrs = own_attributes(node)
                name = attrs.text("name") or Path(attrs.text("file", "")).stem
                self.hfields[name] = attrs.numbers("size", 4)
            else:
                self.ignored[node.tag] += 1
                if node.tag == "texture":
                    self.textures.add(node.get("name") or Path(node.get("file", "")).stem)
                elif node.tag == "material":
                    self.materials[node.get("name", "")] = node

    def _check_materials(self) -> None:
        """Textures that materials name (attribute, defaults or ``<layer>``) exist."""
        for node in self.materials.values():
            cls = self.defaults.find(node.get("class"), node) if node.get("class") is not None \
                else self.defaults.main
            names = [cls.resolve("material", node).text("texture")]
            names += [layer.get("texture") for layer in node.children if layer.tag == "layer"]
            for name in names:
                if name is not None and name not in self.textures:
                    raise node.error(f'unknown texture "{name}"')

    def _check_assets(self, attrs: Attributes, node: Node) -> None:
        """The material and height field a geom or site names exist."""
        for key, known in (("material", self.materials), ("hfield", self.hfields)):
            name = attrs.text(key)
            if name is not None and name not in known:
                raise attrs.error(key, f'unknown {key} "{name}"')

    def _mesh_asset(self, node: Node) -> None:
        """Register a mesh (name defaults to the file's stem); its file must exist."""
        own = own_attributes(node)
        cls = self.defaults.find(own.text("class"), node) if own.has("class") \
            else self.defaults.main
        attrs = cls.resolve("mesh", node)
        file = attrs.text("file")
        name = node.get("name") or (Path(file).stem if file else "")
        if not name:
            raise node.error("a mesh needs a name or a file")
        if name in self.meshes:
            raise node.error(f'repeated mesh name "{name}" (first at line '
                             f"{self.meshes[name].node.line})")
        path = self._mesh_path(node, file) if file else None
        hull_vertices = attrs.integer("maxhullvert", -1)
        if hull_vertices != -1 and hull_vertices < 4:
            raise attrs.error("maxhullvert", "maxhullvert must be -1 (no limit) or at least 4")
        self.meshes[name] = MeshAsset(node, name, path, attrs)

    def _mesh_path(self, node: Node, file: str) -> str:
        """MuJoCo's lookup: absolute file; absolute meshdir; model dir / meshdir / file."""
        if self.compiler.strippath:
            file = os.path.basename(file)
        if os.path.isabs(file):
            path = file
        elif os.path.isabs(self.compiler.meshdir):
            path = os.path.join(self.compiler.meshdir, file)
        else:
            path = os.path.join(self.model_dir, self.compiler.meshdir, file)
        if not os.path.isfile(path):
            raise node.error(f'mesh file "{file}" not found (looked for {path})')
        return path

    # -- kinematic tree --

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
                    self._check_assets(element_class.resolve("site", child), child)
                    if name:
                        body.sites.append(name)
                body.keeps_forces |= tag == "plugin"
            elif tag in UNSUPPORTED_BODY_ELEMENTS:
                raise child.error(f"<{tag}> is not supported")
            else:
                raise child.error(f"unknown element <{tag}> in <{node.tag}>")

    def _childclass(self, node: Node, cls: DefaultClass) -> DefaultClass:
        name = node.get("childclass")
        return cls if name is None else self.defaults.find(name, node, "childclass")

    def _frame(self, node: Node, body: BodyBuild, frame: Pose | None,
               cls: DefaultClass) -> None:
        """A ``<frame>``: its pose composes into everything it contains."""
        attrs = own_attributes(node)
        pose = (attrs.numbers("pos", 3, (0.0, 0.0, 0.0)), self._orientation(attrs))
        inner = geo.compose(frame, pose) if frame is not None else pose
        self._contents(node, body, inner, self._childclass(node, cls))

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
            quat = geo.euler_quat(i * euler, self.compiler.eulerseq, self.compiler.degree)
            pose = (pos, quat)
            self.suffix = suffix + outer_suffix
            self._contents(node, body, geo.compose(frame, pose) if frame is not None else pose,
                           inner_class)
            pos = pos + geo.quat_matrix(quat) @ offset
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
        own_pose = (attrs.numbers("pos", 3, (0.0, 0.0, 0.0)), self._orientation(attrs))
        pose = geo.compose(frame, own_pose) if frame is not None else own_pose
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

    def _orientation(self, attrs: Attributes) -> np.ndarray:
        """Unit quaternion of an element's orientation attributes (identity if none)."""
        given = [key for key in ORIENTATION if attrs.has(key)]
        if len(given) > 1:
            raise attrs.error(given[1], f"only one orientation attribute is allowed "
                                        f"(also given: {given[0]})")
        if not given:
            return geo.IDENTITY_QUAT
        key = given[0]
        try:
            if key == "quat":
                quat = attrs.numbers("quat", 4)
                if not np.any(quat):
                    raise attrs.error("quat", "zero quaternion")
                return geo.normalized(quat)
            if key == "axisangle":
                return geo.axisangle_quat(attrs.numbers(key, 4), self.compiler.degree)
            if key == "euler":
                return geo.euler_quat(attrs.numbers(key, 3), self.compiler.eulerseq,
                                      self.compiler.degree)
            if key == "xyaxes":
                return geo.xyaxes_quat(attrs.numbers(key, 6))
            return geo.zaxis_quat(attrs.numbers(key, 3))
        except geo.GeometryError as error:
            raise attrs.error(key, str(error)) from None

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
            rotation = geo.quat_matrix(frame[1])
            pos, axis = frame[0] + rotation @ pos, rotation @ axis
        if kind in ("hinge", "slide"):
            try:
                axis = geo.normalized(axis)
            except geo.GeometryError:
                raise attrs.error("axis", "axis has zero length") from None
        ref = attrs.number("ref", 0.0)
        joint = JointBuild(node, kind, pos if kind != "free" else np.zeros(3), axis,
                           ref=math.radians(ref) if kind == "hinge" and self.compiler.degree
                           else ref,
                           armature=attrs.number("armature", 0.0),
                           name=self._register("joint", node))
        if kind != "free":
            self._limits(joint, attrs)
        body.joints.append(joint)

    def _limits(self, joint: JointBuild, attrs: Attributes) -> None:
        """MuJoCo's limit rules; the range is converted to radians for hinge and ball joints."""
        low, high = attrs.numbers("range", 2, (0.0, 0.0))
        limited = attrs.keyword("limited", ("false", "true", "auto"), "auto")
        has_range = not (low == 0 and high == 0)
        if limited == "auto" and not self.compiler.autolimits and has_range:
            raise attrs.error("range", 'a range needs limited="true" or "false" when the '
                                       'compiler has autolimits="false"')
        joint.limited = limited == "true" or (limited == "auto" and low < high)
        if not joint.limited:
            return
        if joint.kind != "ball" and low >= high:
            raise attrs.error("range", "range[0] must be smaller than range[1] for a "
                                       "limited joint") if attrs.has("range") \
                else joint.node.error("a limited joint needs a range")
        if joint.kind == "ball" and low != 0:
            raise attrs.error("range", "range[0] must be 0 for a ball joint")
        if self.compiler.degree and joint.kind in ("hinge", "ball"):
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
            if moments[2] < geo.EPS and self.compiler.boundinertia <= 0:
                raise attrs.error("fullinertia", "inertia must have positive eigenvalues")
            written = np.eye(3)
        else:
            moments = attrs.numbers("diaginertia", 3, (0.0, 0.0, 0.0))
            quat = self._orientation(attrs)
            written = geo.quat_matrix(quat)
        if frame is not None:
            pos, quat = geo.compose(frame, (pos, quat))
            written = geo.quat_matrix(frame[1]) @ written
        body.inertial = Inertial(mass, pos, quat, moments)
        body.inertial_node = node
        body.inertial_written = written

    # -- names --

    def _name_joints(self) -> None:
        """MuJoCo names, unique per kind; unnamed joints get ``joint<id>``. Body names are
        checked here, before fusestatic removes bodies, and completed by _name_bodies."""
        self._repeated_names([(b.name, b) for b in self.bodies[1:]], "body",
                             reserved={WORLD: self.bodies[0]})
        joints = [joint for body in self.bodies for joint in body.joints]
        self._unique_names([(j.name, j) for j in joints], "joint", reserved={})

    def _name_bodies(self) -> None:
        """Unnamed bodies get ``body<id>`` with their compiled (after fusestatic) ids."""
        self._unique_names([(b.name, b) for b in self.bodies[1:]], "body",
                           reserved={WORLD: self.bodies[0]})

    @staticmethod
    def _repeated_names(items, prefix: str, reserved: dict) -> dict:
        """The named items by name (over ``reserved``); ParseError for a repeated name."""
        taken = dict(reserved)
        for name, item in items:
            if not name:
                continue
            if name in taken:
                first = taken[name]
                line = first.node.line if first.node is not None else 0
                raise item.node.error(f'repeated {prefix} name "{name}"'
                                      + (f" (first at line {line})" if line else ""))
            taken[name] = item
        return taken

    @classmethod
    def _unique_names(cls, items, prefix: str, reserved: dict) -> None:
        """Check named items are unique, then name the unnamed ``<prefix><id>`` (+ ``_``)."""
        taken = cls._repeated_names(items, prefix, reserved)
        for index, (name, item) in enumerate(items, start=1 if prefix == "body" else 0):
            if name:
                continue
            candidate = f"{prefix}{index}"
            while candidate in taken:
                candidate += "_"
            item.name = candidate
            taken[candidate] = item

    # -- armature from actuators and tendons --

    def _actuator_armature(self, tendon_sections: list[Node],
                           actuator_sections: list[Node]) -> None:
        """Joint armature contributed by actuators (armature * gear^2) and fixed tendons,
        after the tendons and actuators are copied for ``<replicate>`` and checked (see
        :mod:`.mjcf_references`)."""
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
        :func:`.mjcf_references.check_references`)."""
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
        cls = self.defaults.find(node.get("class"), node) if node.get("class") is not None \
            else self.defaults.main
        attrs = cls.resolve("tendon", node)
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
        cls = self.defaults.find(node.get("class"), node) if node.get("class") is not None \
            else self.defaults.main
        attrs = cls.resolve("actuator", node)
        armature = attrs.number("armature", 0.0)
        gear = attrs.numbers("gear", 6, (1.0, 0, 0, 0, 0, 0), exact=False)[0]
        kind, target = refs.transmission(node)
        return refs.Actuator(node, node.get("name", ""), kind, target, armature * gear * gear)

    # -- inertia --

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
        if part is None or part.mass <= geo.EPS:
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

    # -- geoms --

    def _geom(self, attrs: Attributes) -> GeomCompiler:
        """The compiler of one geom, over this model's assets and settings."""
        return GeomCompiler(attrs, self.meshes, self.hfields, self.compiler, self._orientation)

    # -- description --

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
        )

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
        body.inertia = Inertial(inertia.mass, np.zeros(3), geo.IDENTITY_QUAT.copy(),
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
            written = geo.quat_matrix(to_link[1]) @ body.inertial_written
        return LinkSpec(body.name, Inertia(props.mass, props.com, props.inertia),
                        body.source(), has_inertial=has_inertial,
                        inertial_source=inertial_source, inertial_rotation=written,
                        geometry=self._geometry(body, to_link),
                        inertia_from_geometry=body.inertia_from_geoms,
                        file_rotation=geo.quat_matrix(to_link[1]), file_translation=to_link[0])

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
        rotation = geo.quat_matrix(quat)
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
                while child in taken:
                    child += "_"
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
            neutral = geo.IDENTITY_QUAT.copy()
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
            lower=lower,
            upper=upper,
            neutral=neutral,
            source=joint.node.source(),
        )


# -- geometry helpers -------------------------------------------------------------------


def _inverse(pose: Pose) -> Pose:
    """The pose of the parent frame in the child frame of ``pose``."""
    pos, quat = pose
    return -(geo.quat_matrix(quat).T @ pos), quat * np.array([1.0, -1.0, -1.0, -1.0])


def _placed(shape: Shape, pose: Pose) -> Shape:
    """``shape``, posed in a frame F, re-posed in the frame in which F has ``pose``."""
    rotation = geo.quat_matrix(pose[1])
    return dataclasses.replace(shape, rotation=rotation @ shape.rotation,
                               translation=pose[0] + rotation @ shape.translation)


# -- inertia helpers --------------------------------------------------------------------


def _inertial_of(parts: list[Inertial]) -> Inertial:
    """Body inertial from its geoms: one geom is copied, several are combined."""
    if len(parts) == 1:
        return parts[0]
    total = geo.combine([part.properties() for part in parts])
    moments, quat = principal(total.inertia)
    return Inertial(total.mass, total.com, quat, moments)
