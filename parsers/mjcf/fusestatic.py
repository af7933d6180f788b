"""compiler fusestatic: static bodies merged into their parents, as MuJoCo 4 does it.

A body without joints moves with its parent, so MuJoCo's compiler may dissolve it: its
child bodies, geoms and sites are handed to the parent, posed through it, and its compiled
inertia is added to the parent's. A body stays a body of its own when something depends on
it being one: joints, mocap, ``fuse="false"``, a plugin or a sleep policy, a name another
element refers to, a site of a force or torque sensor, or (under a parent other than the
world) forces or inertia bounds that would come out differently once merged. A merged
inertia with no rotational inertia left is refused. The fusion runs after the bodies'
inertias are compiled and before unnamed bodies are named ``body<id>``, so the bodies,
their ids and inertias are MuJoCo's. :class:`.builder.Builder` calls :func:`fuse_static` with the
bodies it has built.
"""
from __future__ import annotations

from collections.abc import Callable

from treedyn.engine.rotations import EPS

from . import geometry as geo
from .types import FREE_PROBLEM, BodyBuild, Compiler, Inertial, Node, Pose, principal

# attributes by which elements (sensors, equality, exclude, actuators, cameras, lights,
# skins, flexes) refer to bodies by name; objname/refname do when objtype/reftype is a body
BODY_REFERENCES = ("body", "body1", "body2", "subtree1", "subtree2", "target")


def fuse_static(bodies: list[BodyBuild], root: Node, compiler: Compiler,
                fluid: dict[str, float],
                body_inertia: Callable[[BodyBuild], Inertial]) -> list[BodyBuild]:
    """compiler fusestatic: merge each static body into its parent, as MuJoCo 4 does.

    Bodies are visited depth-first in document order (parents first); a body without
    joints that may be fused (see :func:`_fusable`) is replaced by its contents: its
    child bodies, geoms and sites move to its parent, posed through it. Its compiled
    inertia (boundmass and boundinertia applied) is added to the parent's, unless its
    mass is below MINVAL; an inertia whose smallest principal moment is below EPS (two
    point masses, a point mass alone) is refused, as MuJoCo refuses it. With
    ``inertiafromgeom="true"`` the parent's inertia is then that of all its geoms (see
    :func:`_merge`), so that the <inertial> of a fused body is dropped. Mass fused into
    the world is dropped (the world has no inertia). The remaining bodies are
    renumbered, and a free joint must then be in a child of the world.

    ``bodies`` are the compiled bodies by id (the world first), ``root`` the document
    (for the names other elements refer to), ``fluid`` the ``<option>`` density and
    viscosity, and ``body_inertia`` compiles a body's inertia again from its geoms and
    ``<inertial>`` (for ``inertiafromgeom="true"``). Returns the bodies that remain, by
    their new ids.
    """
    referenced, force_sites = _fusion_references(root)
    remaining = [bodies[0]]
    fused: dict[int, tuple[BodyBuild, Pose]] = {}  # body id -> (its host, pose there)
    for body in bodies[1:]:
        if body.parent.id in fused:
            host, outer = fused[body.parent.id]
            body.parent, body.pose = host, geo.compose(outer, body.pose)
        if not _fusable(body, referenced, force_sites, compiler, fluid):
            remaining.append(body)
            continue
        fused[body.id] = (body.parent, body.pose)
        _merge(body.parent, body, compiler, body_inertia)
    for body in remaining:
        body.children = []
    for index, body in enumerate(remaining):
        body.id = index
        if index:
            body.parent.children.append(body)
            if body.joints and body.joints[0].kind == "free" and body.parent.id != 0:
                raise body.joints[0].node.error(FREE_PROBLEM)
    return remaining


def _fusable(body: BodyBuild, referenced: set[str], force_sites: set[str],
             compiler: Compiler, fluid: dict[str, float]) -> bool:
    """Whether MuJoCo fuses this body into its (current) parent.

    Kept: bodies with joints, mocap bodies, ``fuse="false"``, a name that another element
    refers to, a site of a force or torque sensor, a plugin or a sleep policy. Under a
    parent other than the world also: a body with mass whose gravcomp differs from the
    parent's; in a fluid (option density or viscosity), a body with mass or with an
    ellipsoid-fluid geom; with ``inertiafromgeom="true"``, a body with mass or geoms
    when the bounds (boundmass, boundinertia, balanceinertia) changed its inertia or
    its parent's, which the geoms of both in one body would not give.
    """
    if body.joints or body.mocap or not body.fuse or body.keeps_forces:
        return False
    if body.name in referenced or any(site in force_sites for site in body.sites):
        return False
    host = body.parent
    if host.id == 0:
        return True
    massive = body.inertia.mass >= geo.MINVAL
    if massive and body.gravcomp != host.gravcomp:
        return False
    if any(fluid.values()) and (massive or any(attrs.text("fluidshape") == "ellipsoid"
                                               for attrs, _frame in body.geoms)):
        return False
    if compiler.inertiafromgeom == "true" and (massive or body.geoms) and (
            body.bounds_changed or host.bounds_changed):
        return False
    return True


def _merge(host: BodyBuild, body: BodyBuild, compiler: Compiler,
           body_inertia: Callable[[BodyBuild], Inertial]) -> None:
    """Move ``body`` (posed in ``host`` by ``body.pose``) into ``host``: geoms, sites and
    inertia.

    MuJoCo adds the body's compiled inertia to the sum of the host's and of the bodies
    fused into it so far, and refuses a sum without inertia, also with
    ``inertiafromgeom="true"``, where the host's inertia is then that of all its geoms
    (its own <inertial> without any) and the sum only serves that check.
    """
    pose = body.pose
    host.geoms.extend((attrs, geo.compose(pose, frame) if frame is not None else pose)
                      for attrs, frame in body.geoms)
    host.sites.extend(body.sites)
    host.site_poses.extend((name, geo.compose(pose, placed), where)
                           for name, placed, where in body.site_poses)
    if host.id == 0:
        return
    base = host.fused_sum or host.inertia
    total = base
    if body.inertia.mass >= geo.MINVAL:
        props = geo.combine([base.properties(), body.inertia.properties().placed(pose)])
        moments, quat = principal(props.inertia)
        if moments[2] < EPS:
            raise body.node.error(
                "fusestatic adds this static body's mass to its parent's, which gives an "
                f"inertia with principal moments {float(moments[0]):g}, "
                f"{float(moments[1]):g}, {float(moments[2]):g} (point or rod masses): "
                "MuJoCo refuses it (give the bodies inertia, or set fuse=\"false\")")
        total = Inertial(props.mass, props.com, quat, moments)
        if compiler.inertiafromgeom != "true":
            host.inertia_from_geoms = body.inertia_from_geoms and (
                host.inertia_from_geoms or base.mass < geo.MINVAL)
            host.uses_inertial = False
    if compiler.inertiafromgeom == "true":
        host.fused_sum = total
        host.inertia = body_inertia(host)
    else:
        host.inertia = total


def _fusion_references(root: Node) -> tuple[set[str], set[str]]:
    """(body names other elements refer to, site names of force and torque sensors)."""
    bodies: set[str] = set()
    sites: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        attrib = node.element.attrib
        for key in BODY_REFERENCES:
            bodies.update(attrib.get(key, "").split())
        if attrib.get("objtype") in ("body", "xbody"):
            bodies.add(attrib.get("objname", ""))
        if attrib.get("reftype") in ("body", "xbody"):
            bodies.add(attrib.get("refname", ""))
        if node.tag in ("force", "torque"):
            sites.add(attrib.get("site", ""))
    bodies.discard("")
    return bodies, sites
