"""The joints of a URDF file as one tree: checked (every reference resolves, one parent per
link, one root, no cycle) and ordered as urdfdom and Pinocchio visit them -- depth first
from the root, the children of a link in byte-wise order of their joint names."""
from __future__ import annotations

from lxml import etree

from treedyn.engine.description import JointSpec, LinkSpec, SourceRef

from .errors import ParseError, quoted
from .urdf_numbers import element_error


def joint_tree(links: dict[str, LinkSpec], joints: list[JointSpec],
               elements: dict[str, etree._Element],
               robot: SourceRef) -> tuple[str, list[JointSpec]]:
    """(root link, joints depth-first with siblings in byte-wise joint-name order).

    Checks that the joints form one tree over the links: references resolve, every link
    has at most one parent joint, exactly one link has none, and there is no cycle.
    """
    parent_joint = _parent_joints(links, joints, elements)
    if not links:
        raise ParseError.at(robot, "no <link> elements")
    roots = [name for name in links if name not in parent_joint]
    if len(roots) > 1:
        raise ParseError.at(robot, f"several root links ({', '.join(roots)}): every link "
                                   "but the root needs a parent joint")
    children: dict[str, list[JointSpec]] = {name: [] for name in links}
    for joint in sorted(joints, key=lambda joint: joint.name.encode("utf-8")):
        children[joint.parent].append(joint)
    order = _depth_first(roots[0], children) if roots else []
    reached = set(roots) | {joint.child for joint in order}
    if len(reached) < len(links):
        start = next(name for name in links if name not in reached)
        raise _cycle_error(start, parent_joint, no_root=not roots)
    return roots[0], order


def _parent_joints(links: dict[str, LinkSpec], joints: list[JointSpec],
                   elements: dict[str, etree._Element]) -> dict[str, JointSpec]:
    """child link -> its joint, checking that the links exist.

    A ``<mimic>`` naming a missing joint is kept as written: urdfdom and Pinocchio accept it.
    """
    parent_joint: dict[str, JointSpec] = {}
    for joint in joints:
        element = elements[joint.name]
        for role in ("parent", "child"):
            link = getattr(joint, role)
            if link not in links:
                raise element_error(element.find(role), joint.source,
                             f'{role} link {quoted(link)} is not defined')
        first = parent_joint.get(joint.child)
        if first is not None:
            raise ParseError.at(joint.source, f"link {quoted(joint.child)} already has parent "
                                              f'joint "{first.name}" (line {first.source.line})')
        parent_joint[joint.child] = joint
    return parent_joint


def _depth_first(root: str, children: dict[str, list[JointSpec]]) -> list[JointSpec]:
    order: list[JointSpec] = []
    stack = list(reversed(children[root]))
    while stack:
        joint = stack.pop()
        order.append(joint)
        stack.extend(reversed(children[joint.child]))
    return order


def _cycle_error(start: str, parent_joint: dict[str, JointSpec], no_root: bool) -> ParseError:
    """The error naming the cycle met walking up the parent joints from link ``start``."""
    position = {start: 0}  # link -> its index in the walk
    walk = [start]
    link = parent_joint[start].parent
    while link not in position:
        position[link] = len(walk)
        walk.append(link)
        link = parent_joint[link].parent
    cycle = walk[position[link]:] + [link]  # child -> parent, first link repeated
    joints = [parent_joint[child] for child in cycle[:-1]]
    first = min(joints, key=lambda joint: joint.source.line)
    names = ", ".join(quoted(joint.name) for joint in reversed(joints))
    links = " -> ".join(reversed(cycle))
    prefix = "no root link: " if no_root else ""
    return ParseError.at(first.source, f"{prefix}the joints form a cycle: {links} (via {names})")
