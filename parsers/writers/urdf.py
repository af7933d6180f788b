"""A :class:`TreeDescription` (an MJCF model, above all) as URDF text, for URDF's readers
(Pinocchio, ROS); what is carried, left out and refused is in docs/mjcf.md ("Writing URDF").

* The tree from its root: the world link, or the body of the one floating root joint,
  which is left out (URDF has no floating joint: a reader adds one, as Pinocchio's
  free-flyer does). Beside a floating body, what is welded to the world (its geoms and
  sites, static bodies) is left out with a note; a joint outside the floating body's tree,
  a second floating body and a ball joint are refused with their file:line.
* Joints: hinge as revolute (continuous when unlimited), slide as prismatic, a jointless
  body as fixed, a body with several joints as the parser gives it: a chain of massless
  links, one per joint. MuJoCo's ``ref`` is folded into the joint's origin, so that the
  URDF's q is MuJoCo's q and its limits the range as written. An effort or velocity limit
  the model does not have (MJCF has no velocity limits) and an unlimited slide's range are
  the largest double, Pinocchio's own "no limit". Damping and frictionloss become
  ``<dynamics>``; armature has no URDF form and is noted.
* Inertia: mass, centre of mass and the full tensor in the link frame (``rpy="0 0 0"``).
* Geometry (MJCF): every geom a ``<visual>`` and, when it collides, a ``<collision>``:
  box, cylinder, sphere, a capsule as the cylinder and two spheres it is the union of, a
  mesh by its file's absolute path; ellipsoids and meshes without a file are noted.
* Sites: massless links on fixed joints, with the sites' names.

A URDF description is written back as its file has it (joint types, limits, mimic,
geometry roles, mesh file names as written). Every element follows a comment naming
where it came from (file:line). Numbers are the shortest text that reads back as the
same double (``repr``).
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from treedyn.engine.description import (GRAVITY, JointSpec, LinkSpec, Shape, SiteSpec,
                                        TreeDescription)
from treedyn.engine.names import unique
from treedyn.engine.rotations import axis_angle_matrix, matrix_rpy

from ..errors import ParseError
from .converted import Converted
from .text import attribute, comment, number, numbers, where

NO_LIMIT = sys.float_info.max  # an absent limit, as Pinocchio holds one
FLOATING = ("free", "free_world")
AXIS_TYPES = ("revolute", "continuous", "prismatic", "planar")
WRITTEN_TYPES = ("fixed",) + AXIS_TYPES
CARRIED = ("joint damping", "joint frictionloss")  # ignored by the dynamics, written here
LISTED = 6  # names a note lists at most


def write_urdf(description: TreeDescription, *, source: str) -> Converted:
    """The URDF text of ``description``, and one note (``file:line: what``) for each thing
    it could not carry. ``source`` names the model in the text's header and in the notes
    about the whole model.

    Raises :class:`ParseError` at the joint (file:line) of a ball joint, of a second
    floating body, or of a joint outside a floating body's tree.
    """
    tree = _Tree(description, source)
    return Converted(_Text(tree).document(), tuple(tree.notes))


class _Tree:
    """What is written: the root, each link's child joints and sites, unique names, notes."""

    def __init__(self, description: TreeDescription, source: str):
        self.description, self.source = description, source
        self.notes: list[str] = []
        self.links = {link.name: link for link in description.links}
        self.children: dict[str, list[JointSpec]] = defaultdict(list)
        for joint in description.joints:
            _check_type(joint, description.world_link)
            self.children[joint.parent].append(joint)
        self.root = self._root()
        self.kept = self._subtree(self.root)
        self.sites: dict[str, list[tuple[SiteSpec, str, str]]] = defaultdict(list)
        self._name_sites()
        self._model_notes()
        self.notes += [f"{shape.source}: {_shape_name(shape)} has no URDF form: left out"
                       for name in self.kept for shape in self.links[name].geometry
                       if _pieces(shape, description.format == "mjcf") is None]

    def _root(self) -> str:
        """The root link: the world's, or the body of the floating joint (left out, noted)."""
        world = self.description.world_link
        floating = [joint for joint in self.description.joints if joint.type in FLOATING]
        if not floating:
            return world
        first = floating[0]
        if len(floating) > 1:
            raise ParseError.at(floating[1].source, f"a second floating body: a URDF holds "
                                                    f"one tree, with at most one floating base "
                                                    f"(the first: {where(first.source)})")
        self.notes.append(f"{first.source}: floating base dropped: load the URDF with a "
                          "free-flyer root joint (Pinocchio's JointModelFreeFlyer)")
        inside = set(self._subtree(first.child))
        outside = [link for link in self.description.links
                   if link.name not in inside]
        for joint in self.description.joints:
            if joint.child not in inside and joint.type != "fixed":
                raise ParseError.at(joint.source, f"a joint outside the floating body's tree: "
                                                  f"a URDF holds one tree, here the floating "
                                                  f"body's ({where(first.source)})")
        self._dropped(outside, world)
        return first.child

    def _dropped(self, outside: list[LinkSpec], world: str) -> None:
        """The note on what is welded to the world beside a floating body, if anything is."""
        names = {link.name for link in outside}
        parts = [f"the world's {len(link.geometry)} geoms" for link in outside
                 if link.name == world and link.geometry]
        welded = [link.name for link in outside if link.name != world]
        if welded:
            parts.append("the bodies welded to it: " + _listed(welded))
        sites = [site.name for site in self.description.sites if site.link in names]
        if sites:
            parts.append("the sites " + _listed(sites))
        if parts:
            self.notes.append(f"{self.source}: left out, outside the floating body's tree (a "
                              f"URDF holds one): {'; '.join(parts)}")

    def _subtree(self, root: str) -> list[str]:
        """The links of the subtree at ``root``, depth first, children in joint order."""
        order, stack = [], [root]
        while stack:
            name = stack.pop()
            order.append(name)
            stack.extend(joint.child for joint in reversed(self.children[name]))
        return order

    def _name_sites(self) -> None:
        """Each kept site's link and joint names: the site's, else with ``_`` appended."""
        kept = set(self.kept)
        links = set(self.links)
        joints = {joint.name for joint in self.description.joints}
        renamed = []
        for site in self.description.sites:
            if site.link not in kept:
                continue
            link, joint = unique(site.name, links), unique(f"{site.name}/site", joints)
            links.add(link)
            joints.add(joint)
            if link != site.name:
                renamed.append(link)
            self.sites[site.link].append((site, link, joint))
        if renamed:
            self.notes.append(f"{self.source}: {len(renamed)} sites named as links are "
                              f"links with '_' appended: {_listed(renamed)}")

    def _model_notes(self) -> None:
        """Notes on the whole model: gravity, armature, what the tree's text cannot hold."""
        description = self.description
        gravity = tuple(float(g) for g in description.gravity)
        if gravity != GRAVITY:
            self.notes.append(f"{self.source}: gravity is ({', '.join(map(number, gravity))})"
                              f", not (0, 0, -9.81): URDF has no gravity; give it to the "
                              f"reader")
        kept = set(self.kept)
        armature = [joint.name for joint in description.joints
                    if joint.armature and joint.child in kept]
        if armature:
            self.notes.append(f"{self.source}: armature of {len(armature)} joints not carried "
                              f"(URDF has none; M lacks diag(armature)): {_listed(armature)}")
        unnamed = description.ignored.get("site", 0) - len(description.sites)
        left = [f"{kind} ({count})" for kind, count in description.ignored.items()
                if kind not in CARRIED and kind != "site"]
        left += [f"unnamed site ({unnamed})"] if unnamed > 0 else []
        if left:
            self.notes.append(f"{self.source}: not carried (outside the tree or not "
                              f"URDF's): {', '.join(left)}")


def _check_type(joint: JointSpec, world: str) -> None:
    """ParseError at a joint URDF cannot express (floating joints only at the root)."""
    if joint.type in FLOATING and joint.parent == world:
        return
    if joint.type in ("ball", "spherical"):
        raise ParseError.at(joint.source, "a ball joint has no URDF form (URDF's joints turn "
                                          "about or slide along one axis)")
    if joint.type not in WRITTEN_TYPES:
        raise ParseError.at(joint.source, f"a {joint.type} joint below the root has no URDF "
                                          f"form")


class _Text:
    """The URDF text of a :class:`_Tree`, element by element."""

    def __init__(self, tree: _Tree):
        self.tree = tree
        self.mjcf = tree.description.format == "mjcf"
        self.lines: list[str] = []

    def document(self) -> str:
        tree = self.tree
        self.lines += ['<?xml version="1.0"?>',
                       comment(f"URDF of {tree.source}, written by dyn")]
        self.lines += [f"  {comment(note)}" for note in tree.notes]
        self.lines.append(f"<robot name={attribute(tree.description.name)}>")
        joints = {joint.child: joint for joint in tree.description.joints}
        for name in tree.kept:
            if name != tree.root:
                self._joint(joints[name])
            self._link(tree.links[name])
            for site, link, joint in tree.sites[name]:
                self._site(site, link, joint)
        self.lines.append("</robot>")
        return "\n".join(self.lines) + "\n"

    def _add(self, indent: int, *lines: str) -> None:
        self.lines.extend("  " * indent + line for line in lines)

    def _link(self, link: LinkSpec) -> None:
        where = str(link.source)
        if link.body:
            where = f"massless link between the joints of body '{link.body}': {where}"
        self._add(1, comment(where))
        inertia = link.inertia
        if not (link.has_inertial or inertia.mass or link.geometry):
            self._add(1, f"<link name={attribute(link.name)}/>")
            return
        self._add(1, f"<link name={attribute(link.name)}>")
        if link.has_inertial or inertia.mass:
            tensor = inertia.inertia
            where = str(link.inertial_source or link.source)
            if link.inertia_from_geometry:
                where = f"the inertia of the geoms of {where}"
            self._add(2, comment(where), "<inertial>")
            self._add(3, f'<origin xyz="{numbers(inertia.com)}" rpy="0 0 0"/>',
                      f'<mass value="{number(inertia.mass)}"/>',
                      "<inertia " + " ".join(
                          f'i{"xyz"[i]}{"xyz"[j]}="{number(tensor[i, j])}"'
                          for i, j in ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))) + "/>")
            self._add(2, "</inertial>")
        for shape in link.geometry:
            self._shape(shape)
        self._add(1, "</link>")

    def _shape(self, shape: Shape) -> None:
        """A shape's <visual> (and <collision>) elements, or the note that it has none."""
        pieces = _pieces(shape, self.mjcf)
        if pieces is None:
            self._add(2, comment(f"left out, {_shape_name(shape)} has no URDF form: "
                                  f"{shape.source}"))
            return
        roles = ("visual", "collision") if self.mjcf and shape.role == "collision" \
            else (shape.role,)
        where = str(shape.source)
        if shape.kind == "capsule":
            where = f"a capsule, as the cylinder and two spheres it is the union of: {where}"
        self._add(2, comment(where))
        for role in roles:
            for rotation, translation, geometry in pieces:
                self._add(2, f"<{role}>")
                self._add(3, _origin(rotation, translation),
                          f"<geometry>{geometry}</geometry>")
                self._add(2, f"</{role}>")

    def _joint(self, joint: JointSpec) -> None:
        rotation, translation, kind = joint.rotation, joint.translation, joint.type
        comments = [str(joint.source)]
        if joint.ref and kind in ("revolute", "prismatic"):
            rotation, translation = _folded(joint)
            comments.append(f"ref {number(joint.ref)} folded into the origin: q is the "
                            f"model's q")
        if kind == "revolute" and np.isinf(joint.lower) and np.isinf(joint.upper):
            kind = "continuous"
        if joint.armature:
            comments.append(f"armature {number(joint.armature)} not carried (URDF has none)")
        self._add(1, *map(comment, comments))
        self._add(1, f"<joint name={attribute(joint.name)} type={attribute(kind)}>")
        self._add(2, _origin(rotation, translation),
                  f"<parent link={attribute(joint.parent)}/>",
                  f"<child link={attribute(joint.child)}/>")
        if kind in AXIS_TYPES:
            self._add(2, f'<axis xyz="{numbers(joint.axis)}"/>')
        self._limit(joint, kind)
        if joint.damping or joint.friction:
            self._add(2, f'<dynamics damping="{number(joint.damping)}" '
                         f'friction="{number(joint.friction)}"/>')
        if joint.mimic is not None:
            mimic = joint.mimic
            self._add(2, f"<mimic joint={attribute(mimic.joint)} multiplier="
                         f'"{number(mimic.multiplier)}" offset="{number(mimic.offset)}"/>')
        self._add(1, "</joint>")

    def _limit(self, joint: JointSpec, kind: str) -> None:
        """<limit>: required on revolute and prismatic joints, written on continuous ones
        with an effort or velocity limit; an absent limit is :data:`NO_LIMIT`."""
        rates = np.isfinite([joint.effort, joint.velocity])
        if kind not in ("revolute", "prismatic") and not (kind == "continuous" and rates.any()):
            return
        if joint.limit_source.line and joint.limit_source != joint.source:
            self._add(2, comment(f"effort limit: {joint.limit_source}"))
        bounds = ""
        if kind != "continuous":
            bounds = (f'lower="{number(max(joint.lower, -NO_LIMIT))}" '
                      f'upper="{number(min(joint.upper, NO_LIMIT))}" ')
        self._add(2, f'<limit {bounds}effort="{number(min(joint.effort, NO_LIMIT))}" '
                     f'velocity="{number(min(joint.velocity, NO_LIMIT))}"/>')

    def _site(self, site: SiteSpec, link: str, joint: str) -> None:
        self._add(1, comment(f"site: {site.source}"),
                  f'<joint name={attribute(joint)} type="fixed">')
        self._add(2, _origin(site.rotation, site.translation),
                  f"<parent link={attribute(site.link)}/>",
                  f"<child link={attribute(link)}/>")
        self._add(1, "</joint>", f"<link name={attribute(link)}/>")


def _pieces(shape: Shape, mjcf: bool) -> list[tuple[np.ndarray, np.ndarray, str]] | None:
    """(rotation, translation, <geometry> content) of the URDF shapes that make ``shape``
    up; None when it has no URDF form (an ellipsoid, a mesh with no file)."""
    size, rotation, translation = shape.size, shape.rotation, shape.translation
    if shape.kind == "box":
        return [(rotation, translation, f'<box size="{numbers(size)}"/>')]
    if shape.kind == "sphere":
        return [(rotation, translation, f'<sphere radius="{number(size[0])}"/>')]
    if shape.kind in ("cylinder", "capsule"):
        radius, length = size[0], size[1]
        pieces = [(rotation, translation,
                   f'<cylinder radius="{number(radius)}" length="{number(length)}"/>')]
        if shape.kind == "capsule":
            pieces += [(rotation, translation + rotation[:, 2] * (end * length / 2),
                        f'<sphere radius="{number(radius)}"/>') for end in (-1.0, 1.0)]
        return pieces
    if shape.kind == "mesh" and (not mjcf or Path(shape.mesh).is_file()):
        filename = str(Path(shape.mesh).absolute()) if mjcf else shape.mesh
        scale = "" if np.all(shape.scale == 1.0) else f' scale="{numbers(shape.scale)}"'
        return [(rotation, translation, f"<mesh filename={attribute(filename)}{scale}/>")]
    return None


def _shape_name(shape: Shape) -> str:
    return "a mesh without a file" if shape.kind == "mesh" else f"an {shape.kind}" \
        if shape.kind[0] in "aeiou" else f"a {shape.kind}"


def _folded(joint: JointSpec) -> tuple[np.ndarray, np.ndarray]:
    """The joint's origin with its ``ref`` folded in: the frame it has at q = 0 of the
    model's (at displacement -ref), so that the written joint at q is the model's at q."""
    if joint.type == "prismatic":
        return joint.rotation, joint.translation - joint.ref * (joint.rotation @ joint.axis)
    return joint.rotation @ axis_angle_matrix(joint.axis, -joint.ref), joint.translation


def _origin(rotation: np.ndarray, translation: np.ndarray) -> str:
    return f'<origin xyz="{numbers(translation)}" rpy="{numbers(matrix_rpy(rotation))}"/>'


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")
