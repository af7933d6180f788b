"""Names in an MJCF document and the references between elements, as MuJoCo keeps them.

MuJoCo's XML reader refuses an element whose name is already taken by an element of the
same kind *at the moment it is read*; ``<replicate>`` then copies the elements it read
(its template) with suffixed names and deletes the template, and only the compiler checks
the final names again. So a replicate's template ``a0`` clashes with a copy ``a0`` of an
earlier replicate, although the final names (``a0 a1 a00 a01``) do not.
:class:`NameRegistry` follows both checks.

Each ``<replicate>`` also copies the tendons and actuators that reference what it copies.
For each copy suffix ``s``, in order, every tendon and actuator present is tried: a
reference ``r`` becomes ``r + s`` when an element of that kind named ``r + s`` exists at
that moment (MuJoCo looks names up; the copies are the usual match), and the copy is kept
when at least one reference took the suffix and the others exist as written. Copies are
named ``name + s`` (unnamed stay unnamed). Then the elements that referenced the deleted
template are dropped. Replicates apply in MuJoCo's order (inner before outer, document
order): :func:`replicated`. :func:`check` then gives MuJoCo's refusals for tendon and
actuator references.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import NamedTuple

from ..errors import quoted

TREE_KINDS = ("body", "joint", "geom", "site", "camera", "light")
# actuator transmission attributes in MuJoCo's reading order: the last one given wins
TRANSMISSIONS = (("joint", "joint"), ("jointinparent", "joint"), ("tendon", "tendon"),
                 ("cranksite", "site"), ("site", "site"), ("body", "body"))


class Replication(NamedTuple):
    """One expanded ``<replicate>``: the copy suffixes, its template's names by kind, and
    every name by kind while it copies (template, copies and all elements read before)."""

    suffixes: tuple[str, ...]
    template: dict[str, frozenset[str]]
    existing: dict[str, frozenset[str]]


@dataclass
class NameRegistry:
    """Names of the kinematic tree's elements, checked when read and at the end.

    ``live[kind]`` holds the names as MuJoCo's reader has them while it reads (templates
    of open replicates unsuffixed), each with the elements that carry it: copies may share
    a name for a while (``a`` copied to ``a20`` beside another replicate's ``a20``) as
    long as the final names differ. ``final[kind]`` has the names of the compiled model
    with the element that carries each. Elements read in copies after the first of a
    replicate are copies to MuJoCo: ``in_template`` is then false and they are not checked
    when read.
    """

    live: dict[str, dict[str, list]] = field(
        default_factory=lambda: {kind: {} for kind in TREE_KINDS})
    final: dict[str, list[tuple[str, object]]] = field(
        default_factory=lambda: {kind: [] for kind in TREE_KINDS})
    templates: list[list[tuple[str, str, object]]] = field(default_factory=list)
    replications: list[Replication] = field(default_factory=list)
    in_template: bool = True

    def add(self, kind: str, written: str, final: str, node) -> None:
        """An element of ``kind`` named ``written`` in the file and ``final`` in the model."""
        if final:
            self.final[kind].append((final, node))
        if not written or not self.in_template:
            return
        carriers = self.live[kind].get(written)
        if carriers:
            raise node.error(f'repeated {kind} name {quoted(written)} (first at line '
                             f"{carriers[0].line})")
        self._enter(kind, written, node)

    def _enter(self, kind: str, name: str, node) -> None:
        self.live[kind].setdefault(name, []).append(node)
        if self.templates:
            self.templates[-1].append((kind, name, node))

    def open_replicate(self) -> bool:
        """Start a replicate; returns whether it is read as a template (to close it)."""
        template = self.in_template
        if template:
            self.templates.append([])
        return template

    def close_replicate(self, read_as_template: bool, suffixes: tuple[str, ...]) -> None:
        """Replace the template's names by its copies' and record the replication."""
        self.in_template = read_as_template
        if not read_as_template:
            return
        entries = self.templates.pop()
        template = {kind: frozenset(name for entry_kind, name, _node in entries
                                    if entry_kind == kind) for kind in TREE_KINDS}
        for kind, name, node in entries:
            carriers = self.live[kind][name]
            del carriers[next(i for i, other in enumerate(carriers) if other is node)]
            if not carriers:
                del self.live[kind][name]
        for suffix in suffixes:
            for kind, name, node in entries:
                self._enter(kind, name + suffix, node)
        existing = {kind: frozenset(self.live[kind]) | template[kind] for kind in TREE_KINDS}
        self.replications.append(Replication(suffixes, template, existing))

    def check_final(self, kinds: tuple[str, ...]) -> None:
        """Names of each kind are unique in the compiled model (as the compiler checks)."""
        for kind in kinds:
            check_unique(self.final[kind], kind)

    def named(self, kind: str) -> set[str]:
        """The names given to elements of ``kind`` (unnamed elements cannot be referenced)."""
        return {name for name, _node in self.final[kind]}


def check_unique(items, kind: str) -> None:
    """ParseError at the element of ``kind`` whose name (of ``items``: (name, element);
    unnamed ones skipped) an earlier one already has."""
    seen: dict[str, object] = {}
    for name, node in items:
        if not name:
            continue
        if name in seen:
            raise node.error(f"repeated {kind} name {quoted(name)} (first at line "
                             f"{seen[name].line})")
        seen[name] = node


@dataclass
class PathEntry:
    """One joint (fixed tendon) or site/geom (spatial tendon) on a tendon's path."""

    kind: str  # "joint", "site", "geom"
    target: str
    coef: float
    node: object


@dataclass
class Tendon:
    """A ``<fixed>`` or ``<spatial>`` tendon with its path and armature."""

    node: object
    name: str
    fixed: bool
    path: list[PathEntry]
    armature: float
    attrs: object  # its attributes with defaults applied, to point an error at


@dataclass
class Actuator:
    """An actuator's transmission (kind "" when it has none) and armature * gear[0]^2."""

    node: object
    name: str
    kind: str  # "joint", "tendon", "site", "body" or ""
    target: str
    reflected: float  # armature * gear[0]^2
    # the force it applies along its transmission: gear[0] * forcerange, ordered (low,
    # high), when forcelimited; None when not
    force: tuple[float, float] | None = None


def transmission(node) -> tuple[str, str]:
    """(kind, target) of an actuator element: the last transmission attribute read."""
    kind, target = "", ""
    for attribute, attribute_kind in TRANSMISSIONS:
        value = node.get(attribute)
        if value is not None:
            kind, target = attribute_kind, value
    return kind, target


def replicated(tendons: list[Tendon], actuators: list[Actuator],
               replications: list[Replication]) -> tuple[list[Tendon], list[Actuator]]:
    """The tendons and actuators after MuJoCo's replicate copies (see the module doc)."""
    for replication in replications:
        for suffix in replication.suffixes:
            for tendon in list(tendons):
                copy = _tendon_copy(tendon, suffix, replication.existing)
                if copy is not None:
                    tendons.append(copy)
            tendon_names = {tendon.name for tendon in tendons}
            for actuator in list(actuators):
                names = tendon_names if actuator.kind == "tendon" \
                    else replication.existing.get(actuator.kind, frozenset())
                if actuator.target + suffix in names:
                    actuators.append(dataclasses.replace(
                        actuator, name=actuator.name and actuator.name + suffix,
                        target=actuator.target + suffix))
        tendons, actuators = _without_template(tendons, actuators, replication)
    return tendons, actuators


def _tendon_copy(tendon: Tendon, suffix: str, existing: dict[str, frozenset[str]]):
    """The copy of a tendon for one replicate copy, or None: each path entry takes the
    suffix if that name exists, else must exist as it is; at least one takes it."""
    path, suffixed = [], 0
    for entry in tendon.path:
        if entry.target + suffix in existing[entry.kind]:
            path.append(dataclasses.replace(entry, target=entry.target + suffix))
            suffixed += 1
        elif entry.target in existing[entry.kind]:
            path.append(entry)
        else:
            return None
    if not suffixed:
        return None
    return dataclasses.replace(tendon, name=tendon.name and tendon.name + suffix, path=path)


def _without_template(tendons: list[Tendon], actuators: list[Actuator],
                      replication: Replication) -> tuple[list[Tendon], list[Actuator]]:
    """Drop what referenced the deleted template: elements whose references all existed
    and that now name a template element (or a dropped tendon)."""
    existing, template = replication.existing, replication.template
    kept = [tendon for tendon in tendons
            if not (all(entry.target in existing[entry.kind] for entry in tendon.path)
                    and any(entry.target in template[entry.kind] for entry in tendon.path))]
    dropped = {tendon.name for tendon in tendons} - {tendon.name for tendon in kept}
    actuators = [actuator for actuator in actuators
                 if not (actuator.target in dropped if actuator.kind == "tendon"
                         else actuator.target in template.get(actuator.kind, ()))]
    return kept, actuators


def check(tendons: list[Tendon], actuators: list[Actuator], names: NameRegistry,
          joint_kinds: dict[str, str]) -> None:
    """MuJoCo's refusals for tendon and actuator references (``joint_kinds``: the kind of
    each named joint)."""
    known = {kind: names.named(kind) for kind in TREE_KINDS}
    check_unique([(tendon.name, tendon.node) for tendon in tendons], "tendon")
    for tendon in tendons:
        if tendon.armature < 0:
            raise tendon.attrs.error("armature", "tendon armature cannot be negative")
        if not tendon.path:
            raise tendon.node.error("a tendon's path cannot be empty")
        used: set[str] = set()
        for entry in tendon.path:
            if entry.target not in known[entry.kind]:
                raise entry.node.error(f'unknown {entry.kind} {quoted(entry.target)}')
            if entry.kind != "joint":
                continue
            if joint_kinds[entry.target] not in ("hinge", "slide"):
                raise entry.node.error(f'joint {quoted(entry.target)} is a '
                                       f"{joint_kinds[entry.target]} joint; a fixed tendon "
                                       f"takes hinge and slide joints only")
            if entry.target in used:
                raise entry.node.error(f'joint {quoted(entry.target)} is repeated in this tendon')
            used.add(entry.target)
    known["tendon"] = {tendon.name for tendon in tendons if tendon.name}
    check_unique([(actuator.name, actuator.node) for actuator in actuators], "actuator")
    for actuator in actuators:
        if not actuator.kind:
            raise actuator.node.error("an actuator needs a transmission target (joint, "
                                      "jointinparent, tendon, site, cranksite or body)")
        if actuator.target not in known[actuator.kind]:
            raise actuator.node.error(f'unknown {actuator.kind} {quoted(actuator.target)}')


# -- references from the sections the tree does not use ---------------------------------

# attributes of <sensor>, <equality> and <contact> elements that name an element, by kind
REFERENCE_ATTRIBUTES = {
    "site": "site", "joint": "joint", "tendon": "tendon", "actuator": "actuator",
    "body": "body", "camera": "camera", "geom": "geom", "mesh": "mesh",
    "geom1": "geom", "geom2": "geom", "body1": "body", "body2": "body",
    "subtree1": "body", "subtree2": "body", "site1": "site", "site2": "site",
    "joint1": "joint", "joint2": "joint", "tendon1": "tendon", "tendon2": "tendon",
}
# objtype / reftype values whose names dyn knows, by kind
OBJECT_TYPES = {"body": "body", "xbody": "body", "joint": "joint", "geom": "geom",
                "site": "site", "camera": "camera", "light": "light", "tendon": "tendon",
                "actuator": "actuator", "mesh": "mesh", "hfield": "hfield",
                "texture": "texture", "material": "material"}


def references(node) -> list[tuple[str, str]]:
    """(kind, name) of every element a sensor, equality or contact element names."""
    found = [(kind, node.get(attribute)) for attribute, kind in REFERENCE_ATTRIBUTES.items()
             if node.get(attribute) is not None]
    for type_key, name_key in (("objtype", "objname"), ("reftype", "refname")):
        kind = OBJECT_TYPES.get(node.get(type_key, ""))
        if kind is not None and node.get(name_key) is not None:
            found.append((kind, node.get(name_key)))
    return found


def check_references(nodes, known: dict[str, set[str]]) -> None:
    """Every name the ``nodes`` reference is in ``known[kind]`` (as MuJoCo requires).

    Lenient about ``<replicate>``: a name that one of its templates had counts as known,
    since MuJoCo copies or drops what references a template (rules that differ by element
    and are not followed here)."""
    for node in nodes:
        for kind, name in references(node):
            if name not in known[kind]:
                raise node.error(f'unknown {kind} {quoted(name)}')
