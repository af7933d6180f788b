"""A URDF model's :class:`TreeDescription` written as MuJoCo MJCF text.

The MJCF model has Pinocchio's dynamics of the URDF: MuJoCo's M, its inverse and forward
dynamics equal Pinocchio's on the URDF (fixed base, or a ``<freejoint>`` root with
``free_flyer``; passive forces and constraints aside). What is written:

* ``<compiler angle="radian" autolimits="true" inertiafromgeom="false"
  fusestatic="false">``: the inertias are the file's, never the geoms', and every link
  stays a body (one merged through a fixed joint is a jointless body, so its frame keeps
  its name). ``<option gravity>`` is the description's gravity.
* Each link is a ``<body>`` named as the link, placed by its joint's origin (``pos``,
  ``quat`` w x y z) in its parent's body; the URDF root is a body of the world (welded,
  or floating by a ``<freejoint name="root_joint">``), and a root link named ``world``
  is MuJoCo's world body itself.
* ``<inertial pos mass diaginertia|fullinertia>`` in the body frame: the tensor about
  the centre of mass in the link's axes (``fullinertia`` ixx iyy izz ixy ixz iyz when it
  is not diagonal; MuJoCo finds its principal axes itself), so no rotation of the
  inertial frame is written, but where MuJoCo refuses fullinertia (a principal moment
  below 1e-14): then the principal moments with the ``quat`` of their axes.
* revolute and prismatic joints are ``hinge`` and ``slide`` with their ``range``
  (limited by autolimits), continuous ones a ``hinge`` without one; ``<dynamics damping
  friction>`` as ``damping`` and ``frictionloss``, armature as ``armature``; the effort
  limit e as ``actuatorfrcrange="-e e"``, which MuJoCo clamps the actuators' force to and
  dyn reads back as the joint's effort limit. Velocity limits have no MJCF form.
* ``<mimic>`` as ``<equality><joint joint1="follower" joint2="leader" polycoef="offset
  multiplier 0 0 0">``.
* Shapes by reference: boxes, cylinders, spheres and capsules as geoms of MuJoCo's sizes
  (half lengths), meshes as ``<asset><mesh file>`` with the resolved absolute path
  (relative to the output's folder for a mesh below it) and the scale, ``inertia="shell"`` (no inertia comes from them, so an open or flat mesh
  must not be refused for its volume). MuJoCo reads binary STL (1 to 200000 faces), OBJ
  and MSH: another file (COLLADA .dae, ASCII STL) or one not found is left as a comment,
  and a note. Collision shapes collide (contype 1), visual ones are group 1 with contype
  and conaffinity 0.
* A comment before every element names the file and line it came from.

Refused (a ParseError at the joint or link): a model that is not URDF, floating and planar
joints inside the tree, a link named ``world`` that is not the root (MuJoCo's world body
has the name), and what MuJoCo refuses: a negative mass or principal moment, moments that
violate A + B >= C, a moving link with neither mass and inertia nor a massive link fixed
to it.
"""
from __future__ import annotations

import math
import os

import numpy as np

from treedyn.engine.description import JointSpec, LinkSpec, Shape, TreeDescription
from treedyn.engine.names import unique
from treedyn.engine.rotations import EPS, matrix_quat

from ..errors import ParseError, quoted
from ..meshes import stl_problem
from ..packages import PackagePaths, resolve_uri
from .converted import Converted
from .text import attribute, comment, number, numbers, where

MINVAL = 1e-15  # MuJoCo's mjMINVAL: the least mass and moment of a moving body
JOINT_KINDS = {"revolute": "hinge", "continuous": "hinge", "prismatic": "slide"}
MESH_SUFFIXES = (".stl", ".obj", ".msh")  # the mesh files MuJoCo reads
WORLD = "world"  # the name of MuJoCo's world body
COMPILER = ('<compiler angle="radian" autolimits="true" inertiafromgeom="false" '
            'fusestatic="false"/>')


def write_mjcf(description: TreeDescription, *, free_flyer: bool, source: str,
               packages: PackagePaths = PackagePaths(), output: str = "") -> Converted:
    """``description`` (a URDF model read from ``source``) as MJCF text, with a
    ``<freejoint>`` root when ``free_flyer``; notes on what MJCF does not carry (the
    description's own notes are not repeated).
    ``packages``: where ``package://`` meshes are looked for beyond the model's folders;
    ``output``: the file the text goes to, whose folder a mesh below it is named from."""
    if description.format != "urdf":
        raise ParseError(f"the model is {description.format.upper()} already: MJCF is "
                         "written from URDF models", source)
    root_joint, notes = "", ()
    if free_flyer:  # named as Pinocchio names it (root_joint, or root_joint_...)
        floating = description.with_free_flyer()
        root_joint, notes = floating.joints[0].name, floating.notes[len(description.notes):]
    _check(description, free_flyer)
    writer = _Writer(description, source, packages, notes)
    writer.folder = os.path.dirname(os.path.realpath(output)) if output else ""
    return writer.converted(root_joint)


def _check(description: TreeDescription, free_flyer: bool) -> None:
    """What MJCF cannot express, as a ParseError at the element."""
    for joint in description.joints:
        if joint.type not in JOINT_KINDS and joint.type != "fixed":
            why = {"free": "a floating joint inside the tree has no MJCF form (MuJoCo "
                           "floats only bodies of the world)",
                   "planar": "a planar joint has no MJCF form (MuJoCo has none)"}
            raise ParseError.at(joint.source, why.get(joint.type, f"a {joint.type} joint "
                                                                  "has no MJCF form here"))
    root = description.world_link
    for link in description.links:
        if link.name == WORLD and link.name != root:
            raise ParseError.at(link.source, "a link named 'world' that is not the root: "
                                "MJCF's world body has that name")
    _check_masses(description, free_flyer)


def _check_masses(description: TreeDescription, free_flyer: bool) -> None:
    """MuJoCo refuses a negative mass or moment, principal moments that violate
    A + B >= C, and a moving body without mass and inertia, its own or that of a body
    welded to it: the first such link is a ParseError at its inertial or its joint."""
    links = {link.name: link for link in description.links}
    moments = {name: _moments(link) for name, link in links.items()}
    welded: dict[str, list[str]] = {}
    for joint in description.joints:
        if joint.type == "fixed":
            welded.setdefault(joint.parent, []).append(joint.child)

    def massive(name: str) -> bool:
        return (links[name].inertia.mass >= MINVAL and bool(np.all(moments[name] >= MINVAL))) \
            or any(massive(child) for child in welded.get(name, ()))

    moving = [(joint.child, joint.source) for joint in description.joints
              if joint.type != "fixed"]
    if free_flyer:
        root = links[description.world_link]
        moving.insert(0, (root.name, root.source))
    for name, source in moving:
        if not massive(name):
            raise ParseError.at(source, f"link {quoted(name)} moves but has no mass and "
                                "rotational inertia, nor a link fixed to it that has: "
                                "MuJoCo refuses such a body")


def _moments(link: LinkSpec) -> np.ndarray:
    """The principal moments of ``link``'s inertia (3,); a ParseError at its inertial when
    MuJoCo refuses them (or the mass): negative, or violating A + B >= C. A diagonal
    tensor is MuJoCo's numbers exactly; another one's eigenvalues may differ from MuJoCo's
    in the last bits, which a relative 1e-12 allows for."""
    inertia = link.inertia
    tensor = np.asarray(inertia.inertia, dtype=float)
    diagonal = not np.any(tensor - np.diag(np.diag(tensor)))
    moments = np.diag(tensor).copy() if diagonal else np.linalg.eigvalsh(tensor)
    slack = 0.0 if diagonal else 1e-12 * float(np.max(np.abs(moments)))
    a, b, c = moments
    if inertia.mass < 0 or np.any(moments < -slack) or a + b < c - slack or \
            a + c < b - slack or b + c < a - slack:
        where = link.inertial_source if link.inertial_source.file else link.source
        raise ParseError.at(where, f"link {quoted(link.name)}: mass {number(inertia.mass)}, "
                            f"principal moments {numbers(moments)}: MuJoCo refuses a "
                            "negative mass or moment and moments that violate A + B >= C")
    return moments


def attributes(pairs) -> str:
    """`` key="value"`` for each (key, value) whose value is not None."""
    return "".join(f" {key}={attribute(value)}" for key, value in pairs
                   if value is not None)


def pose(rotation: np.ndarray, translation: np.ndarray) -> list[tuple[str, str | None]]:
    """``pos`` and ``quat`` (w x y z) of a placement; each left out when it is the
    identity's."""
    quat = None
    if not np.array_equal(rotation, np.eye(3)):
        quat = numbers(matrix_quat(np.asarray(rotation, dtype=float)))
    pos = numbers(translation) if np.any(translation) else None
    return [("pos", pos), ("quat", quat)]


class _Writer:
    """The MJCF text of one description, built line by line."""

    def __init__(self, description: TreeDescription, source: str, packages: PackagePaths,
                 notes: tuple[str, ...]):
        self.description = description
        self.source = source
        self.packages = packages
        self.links = {link.name: link for link in description.links}
        self.children: dict[str, list[JointSpec]] = {}
        for joint in description.joints:
            self.children.setdefault(joint.parent, []).append(joint)
        self.lines: list[str] = []
        self.assets: list[str] = []
        self.meshes: dict[tuple[str, tuple[float, ...]], str] = {}
        self.notes: list[str] = list(notes)
        self.folder = ""  # the output's folder (real path), or "" when not known

    def converted(self, root_joint: str) -> Converted:
        """The whole document; ``root_joint``: the name of the root's free joint, or ""."""
        description = self.description
        root = self.links[description.world_link]
        self.lines.append("  <worldbody>")
        if root.name == WORLD and not root_joint:  # the world body itself
            for link, joint, indent in self._contents(root, 4, inertial=False):
                self._body(link, joint, indent)
        else:
            self._body(root, None, 4, root_joint)
        self.lines.append("  </worldbody>")
        equality = self._equality()
        head = [f"<mujoco{attributes([('model', description.name)])}>",
                "  " + comment(f"written from {self.source} (URDF): Pinocchio's dynamics of "
                               "it; each element names the file and line it came from"),
                "  " + COMPILER,
                f"  <option{attributes([('gravity', numbers(description.gravity))])}/>"]
        if self.assets:
            head += ["  <asset>", *self.assets, "  </asset>"]
        self._velocity_note()
        text = "\n".join([*head, *self.lines, *equality, "</mujoco>", ""])
        return Converted(text, tuple(self.notes))

    def _body(self, link: LinkSpec, joint: JointSpec | None, indent: int,
              root_joint: str = "") -> None:
        """The body of ``link``, entered by ``joint`` (None: the root), and its subtree.
        Iterative over the tree: a chain of any length is written."""
        stack: list[tuple[LinkSpec | None, JointSpec | None, int]] = [(link, joint, indent)]
        while stack:
            link, joint, indent = stack.pop()
            pad = " " * indent
            if link is None:  # the end of a body
                self.lines.append(pad + "</body>")
                continue
            self.lines.append(pad + comment(link.source))
            placement = pose(joint.rotation, joint.translation) if joint is not None else []
            name = self._body_name(link)
            self.lines.append(pad + f"<body{attributes([('name', name), *placement])}>")
            inner = " " * (indent + 2)
            if joint is not None:
                self._joint(joint, inner)
            elif root_joint:
                self.lines.append(inner + comment("the floating base (free_flyer): "
                                                  "Pinocchio's root_joint"))
                self.lines.append(inner + f"<freejoint{attributes([('name', root_joint)])}/>")
            stack.append((None, None, indent))
            stack.extend(reversed(self._contents(link, indent + 2)))

    def _contents(self, link: LinkSpec, indent: int,
                  inertial: bool = True) -> list[tuple[LinkSpec, JointSpec, int]]:
        """The inertial (unless not ``inertial``) and geoms of ``link`` written; its child
        bodies, in order, to write next."""
        pad = " " * indent
        if inertial:
            self._inertial(link, pad)
        for shape in link.geometry:
            self._geom(shape, pad)
        return [(self.links[child.child], child, indent)
                for child in self.children.get(link.name, ())]

    def _body_name(self, link: LinkSpec) -> str:
        """The link's name; a floating root link named ``world`` is ``world_`` (or
        ``world__``...), since MJCF's world body has its name."""
        if link.name != WORLD:
            return link.name
        name = unique(WORLD + "_", self.links)
        self.notes.append(f"{where(link.source)}: the floating root link 'world' is the "
                          f"body '{name}' (MJCF's world body has its name)")
        return name

    def _joint(self, joint: JointSpec, pad: str) -> None:
        self.lines.append(pad + comment(joint.source))
        if joint.type == "fixed":
            self.lines.append(pad + comment(f"fixed joint {quoted(joint.name)}: the body is "
                                            "welded to its parent"))
            return
        # any finite range, an empty one too (MuJoCo takes it); a revolute or prismatic
        # joint without <limit> (urdfdom refuses it; dyn reads it unlimited) gets none
        ranged = joint.type in ("revolute", "prismatic") and \
            math.isfinite(joint.lower) and math.isfinite(joint.upper)
        effort = joint.effort if math.isfinite(joint.effort) else None
        pairs = [("name", joint.name), ("type", JOINT_KINDS[joint.type]),
                 ("axis", numbers(joint.axis)),
                 ("ref", number(joint.ref) if joint.ref else None),
                 ("range", f"{number(joint.lower)} {number(joint.upper)}" if ranged else None),
                 ("actuatorfrcrange", None if effort is None else
                  f"{number(-effort)} {number(effort)}"),
                 ("damping", number(joint.damping) if joint.damping else None),
                 ("frictionloss", number(joint.friction) if joint.friction else None),
                 ("armature", number(joint.armature) if joint.armature else None)]
        self.lines.append(pad + f"<joint{attributes(pairs)}/>")

    def _inertial(self, link: LinkSpec, pad: str) -> None:
        inertia = link.inertia
        tensor = np.asarray(inertia.inertia, dtype=float)
        if inertia.mass == 0.0 and not np.any(tensor):
            return
        where = link.inertial_source if link.inertial_source.file else link.source
        self.lines.append(pad + comment(where))
        pairs = [("pos", numbers(inertia.com)), ("mass", number(inertia.mass)),
                 *_tensor(tensor)]
        self.lines.append(pad + f"<inertial{attributes(pairs)}/>")

    def _geom(self, shape: Shape, pad: str) -> None:
        """One shape as a geom (a mesh through its asset), or a comment when MuJoCo
        cannot read its file."""
        self.lines.append(pad + comment(shape.source))
        role = ([("group", "1"), ("contype", "0"), ("conaffinity", "0")]
                if shape.role == "visual" else [])
        pairs = [("type", shape.kind)]
        if shape.kind == "mesh":
            mesh, problem = self._mesh(shape)
            if problem:
                self.lines.append(pad + comment(f"{shape.role} mesh {shape.mesh} left out: "
                                                f"it {problem}"))
                self.notes.append(f"{where(shape.source)}: the {shape.role} mesh "
                                  f"{quoted(shape.mesh)} {problem}: left out of the MJCF "
                                  "model")
                return
            pairs.append(("mesh", mesh))
        else:
            length = [shape.size[0], 0.5 * shape.size[1]] if len(shape.size) == 2 else None
            half = 0.5 * shape.size if shape.kind == "box" else length
            pairs.append(("size", numbers(shape.size if half is None else half)))
        pairs += [*pose(shape.rotation, shape.translation), *role]
        self.lines.append(pad + f"<geom{attributes(pairs)}/>")

    def _mesh(self, shape: Shape) -> tuple[str, str]:
        """(the name of the mesh asset of ``shape``, written once per file and scale, "");
        ("", why not) when MuJoCo cannot read its file."""
        path = resolve_uri(shape.mesh, self.source, self.packages)
        if path is None:
            return "", "is not found"
        if path.suffix.lower() not in MESH_SUFFIXES:
            return "", (f"is a {path.suffix or 'suffixless'} file, which MuJoCo does not "
                        "read (it reads STL, OBJ and MSH)")
        problem = stl_problem(str(path)) if path.suffix.lower() == ".stl" else ""
        if problem:  # "is ASCII STL...", "cannot be read (...)", or MeshFileError's words
            return "", problem if problem.startswith(("is ", "cannot")) else \
                f"is not read by MuJoCo: {problem}"
        scale = tuple(float(value) for value in shape.scale)
        key = (os.path.realpath(path), scale)
        name = self.meshes.get(key)
        if name is None:
            name = unique(path.stem or "mesh", set(self.meshes.values()))
            self.meshes[key] = name
            below = self.folder and key[0].startswith(os.path.join(self.folder, ""))
            pairs = [("name", name), ("file", os.path.relpath(key[0], self.folder) if below
                                      else key[0]),
                     ("scale", None if scale == (1.0, 1.0, 1.0) else numbers(scale)),
                     ("inertia", "shell")]  # no volume needed: an open mesh is no error
            self.assets += ["    " + comment(shape.source),
                            f"    <mesh{attributes(pairs)}/>"]
        return name, ""

    def _equality(self) -> list[str]:
        """The mimic joints as joint equalities; a mimic of no moving joint (or of
        itself), which Pinocchio loads and leaves free, as a note."""
        moving = {joint.name for joint in self.description.joints if joint.type != "fixed"}
        lines = []
        for joint in self.description.joints:
            mimic = joint.mimic
            if mimic is None or joint.type == "fixed":
                continue
            if mimic.joint not in moving or mimic.joint == joint.name:
                self.notes.append(f"{where(mimic.source)}: the mimic of joint "
                                  f"{quoted(joint.name)} names no other moving joint: left "
                                  "out of the MJCF model")
                continue
            pairs = [("joint1", joint.name), ("joint2", mimic.joint),
                     ("polycoef", f"{number(mimic.offset)} {number(mimic.multiplier)} 0 0 0")]
            lines += ["    " + comment(mimic.source), f"    <joint{attributes(pairs)}/>"]
        return ["  <equality>", *lines, "  </equality>"] if lines else []

    def _velocity_note(self) -> None:
        """One note for the velocity limits, which MJCF cannot hold."""
        limited = [joint for joint in self.description.joints
                   if joint.type != "fixed" and math.isfinite(joint.velocity)]
        if limited:
            self.notes.append(f"{where(limited[0].limit_source)}: MJCF has no velocity "
                              f"limit: those of {len(limited)} joint(s) are not carried")


def _tensor(tensor: np.ndarray) -> list[tuple[str, str]]:
    """The attributes of a rotational inertia (3, 3) in the body frame: ``diaginertia``
    when it is diagonal, else ``fullinertia`` (MuJoCo finds the principal axes), unless
    its smallest moment is below MuJoCo's EPS, which fullinertia refuses: then the
    principal moments as ``diaginertia`` (0 for a negative one of rounding) turned by
    ``quat``."""
    if not np.any(tensor - np.diag(np.diag(tensor))):
        return [("diaginertia", numbers(np.diag(tensor)))]
    moments, axes = np.linalg.eigh(tensor)
    if moments[0] >= EPS:
        return [("fullinertia", numbers([tensor[0, 0], tensor[1, 1], tensor[2, 2],
                                         tensor[0, 1], tensor[0, 2], tensor[1, 2]]))]
    if np.linalg.det(axes) < 0:
        axes[:, 0] = -axes[:, 0]
    return [("quat", numbers(matrix_quat(axes))),
            ("diaginertia", numbers(np.maximum(moments, 0.0)))]


