"""``<default>`` classes: per element kind, the attribute values a class sets.

A class starts as a copy of its parent and its own attributes override; a shorter geom
``size`` (and actuator ``gear``) replaces only the leading numbers, and any orientation
attribute replaces the class's orientation as a whole (:func:`merge_values`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import quoted
from .types import ACTUATOR_TAGS, ORIENTATION, Attributes, Node, Value, own_values

PARTIAL = {("geom", "size"), ("actuator", "gear")}  # shorter values replace leading numbers
DEFAULT_KINDS = {"joint": "joint", "geom": "geom", "mesh": "mesh", "tendon": "tendon",
                 "site": "site", "material": "material",
                 **{tag: "actuator" for tag in ACTUATOR_TAGS if tag != "plugin"}}


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
        if node.root_class:  # an attached model's defaults: a root class of their own
            target = self.classes.setdefault(node.root_class, DefaultClass(node.root_class))
            self._read(node, target)
            return
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
                raise child.error(f'repeated default class name {quoted(name)}')
            self.classes[name] = target.child(name)
            self._read(child, self.classes[name])

    def find(self, name: str, node: Node, key: str = "class") -> DefaultClass:
        found = self.classes.get(name)
        if found is None:
            raise node.error(f'{key}={quoted(name)}: unknown default class')
        return found
