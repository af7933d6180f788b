"""``<attach>`` with ``<asset><model>``: MuJoCo's model composition, done on the document.

MuJoCo (3.2 and later) parses the file of each ``<model>`` asset as a model of its own
(its includes, meshdir and compiler settings relative to that file) and, at each
``<attach model prefix [body | frame]>``, copies in a new frame there the named body with
its subtree, the named frame, or the child's whole worldbody. Every name the copy holds or
refers to gets ``prefix`` in front; the child's default classes come along (its ``main``
as a class of its own, ``prefix + "main"``, which the copied elements use where the child's
elements used ``main``: the scene's defaults never apply to them); so do its assets, and
the tendons and actuators whose every reference lies in the copy (their armature is part of
M). The child's ``<option>``, ``<size>`` and the like do not (the scene's apply), nor its
sensors, contacts, equalities and keyframes, which no dynamics dyn computes read.

:func:`compose` does this on the :class:`.types.Node` tree, before the schema check and the
compiler see it: ``<attach>`` becomes a ``<frame childclass="prefix main">`` holding the
copies, and the copied sections are appended to the scene's root. Each attached model's
``<compiler>`` elements are kept with the files they govern (``Document.compilers``), since
MuJoCo applies the child's angle unit, Euler sequence and autolimits to the child's
elements (:meth:`.builder.Builder.build` reads them).
"""
from __future__ import annotations

import os
from pathlib import Path

from lxml import etree

from ..errors import quoted
from ..files import lexical_path, not_a_file
from .bounds import MAX_ELEMENTS
from .types import ASSET_FILES, Compiler, Node

# attributes that hold a name of the child model: prefixed in every copy
REFERENCES = frozenset(("name", "class", "childclass", "mesh", "material", "hfield",
                        "texture", "target", "joint", "jointinparent", "tendon", "site",
                        "refsite", "body", "cranksite", "slidersite", "geom", "sidesite"))
NAMED_BY_FILE = ("mesh", "hfield", "texture")  # an unnamed one is named by its file's stem
COPIED_SECTIONS = ("tendon", "actuator")


def compose(root: Node, directory: str, load) -> list[tuple[frozenset[str], list[Node], Node]]:
    """Expand every ``<attach>`` of ``root`` (a scene read from ``directory``); ``load``
    reads a child model's file into a document (the :class:`.document.Document` class).
    Returns, per attached model, the files it was read from, its ``<compiler>`` nodes and
    its ``<model>`` asset."""
    models = _model_assets(root, directory, load)
    attached: list[tuple[frozenset[str], list[Node], Node]] = []
    used: dict[str, set[str]] = {}  # model name -> prefixes already attached
    elements = sum(1 for _ in _walk(root))  # the copies to come counted before each is made
    for owner, index, node in list(_attach_nodes(root)):
        name, prefix = node.get("model"), node.get("prefix")
        if name is None:
            raise node.error("attaching from the model itself (no model attribute) is not "
                             "supported")
        if prefix is None:
            raise node.error("required attribute prefix is missing")
        if name not in models:
            raise node.error(f'could not find model {quoted(name)} (a <model> asset names it)')
        child, asset = models[name]
        elements += child.elements
        if elements > MAX_ELEMENTS:
            raise node.error(f"this copy of model {quoted(name)} ({child.elements} elements) "
                             f"takes the model past the {MAX_ELEMENTS} elements dyn compiles")
        owner.children[index] = frame = _frame(node, child, prefix)
        if prefix not in used.setdefault(name, set()):
            used[name].add(prefix)
            root.children.extend(_sections(child, prefix, node, frame))
            files = frozenset(n.file for n in _walk(child.root))
            attached.append((files, [n for n in child.root.children if n.tag == "compiler"],
                             asset))
    return attached


def _model_assets(root: Node, directory: str, load) -> dict:
    """``<model name file>`` assets (removed from the tree), read as documents by name."""
    models = {}
    for section in root.children:
        if section.tag != "asset":
            continue
        for node in [n for n in section.children if n.tag == "model"]:
            section.children.remove(node)
            file = node.get("file")
            if not file:
                raise node.error("required attribute file is missing")
            path = lexical_path(directory, file)
            problem = not_a_file(path)
            if problem:
                raise node.error(f"model file {quoted(file)} {problem} (looked for "
                                 f"{quoted(path, mark='')})")
            child = load(path, node)
            if child.compilers:
                raise node.error(f'the model {quoted(file)} attaches models itself: nested '
                                 f"attachment is not supported")
            compiler = Compiler()
            for setting in (n for n in child.root.children if n.tag == "compiler"):
                compiler.read(setting)
            _absolute_files(child.root, compiler, child.model_dir)
            name = node.get("name") or child.root.get("model") or ""
            if name in models:
                raise node.error(f'repeated model name {quoted(name)}')
            models[name] = (child, node)
    return models


def _attach_nodes(node: Node):
    """(parent, index, node) of every ``<attach>`` in the tree, in document order."""
    for index, child in enumerate(node.children):
        if child.tag == "attach":
            yield node, index, child
        elif child.tag in ("worldbody", "body", "frame", "replicate"):
            yield from _attach_nodes(child)


def _frame(attach: Node, child, prefix: str) -> Node:
    """The ``<frame>`` that replaces ``attach``: the named body or frame, or the child's
    whole worldbody, copied with ``prefix``."""
    world = [n for n in child.root.children if n.tag == "worldbody"]
    for key in ("body", "frame"):
        wanted = attach.get(key)
        if wanted is None:
            continue
        found = next((n for top in world for n in _walk(top)
                      if n.tag == key and n.get("name") == wanted), None)
        if found is None:
            raise attach.error(f'could not find {key} {quoted(wanted)} in model '
                               f'"{attach.get("model")}"')
        contents = [_copy(found, prefix)]
        break
    else:
        contents = [_copy(n, prefix) for top in world for n in top.children]
    element = etree.Element("frame", childclass=prefix + "main")
    element.sourceline = attach.line
    return Node(element, attach.file, contents)


def _sections(child, prefix: str, attach: Node, copied: Node) -> list[Node]:
    """The child's defaults (as the root class ``prefix main``), assets, and the tendons and
    actuators whose references all lie in ``copied`` (the attached part), as nodes for the
    scene's root."""
    defaults = [_copy(c, prefix) for s in child.root.children if s.tag == "default"
                for c in s.children]
    element = etree.Element("default")
    element.sourceline = attach.line
    nodes = [Node(element, attach.file, defaults, root_class=prefix + "main")]
    nodes += [_copy(s, prefix) for s in child.root.children if s.tag == "asset"]
    known = {n.get("name") for n in _walk(copied) if n.get("name")}
    for tag in COPIED_SECTIONS:  # tendons first: actuators may name them
        for section in (s for s in child.root.children if s.tag == tag):
            copy = _copy(section, prefix)
            copy.children = [n for n in copy.children if _references(n) <= known]
            known |= {n.get("name") for n in copy.children if n.get("name")}
            nodes.append(copy)
    return nodes


def _references(node: Node) -> set[str]:
    """The names ``node`` and its children refer to (not their own names or classes)."""
    return {value for n in _walk(node) for key, value in n.element.attrib.items()
            if key in REFERENCES and key not in ("name", "class")}


def _copy(node: Node, prefix: str) -> Node:
    """A copy of ``node`` and its subtree with every name it holds or refers to
    ``prefix``ed (an unnamed mesh, height field or texture named by its file's stem)."""
    attributes = {key: prefix + value if key in REFERENCES and value else value
                  for key, value in node.element.attrib.items()}
    if node.tag in NAMED_BY_FILE and not node.get("name") and node.get("file"):
        attributes["name"] = prefix + Path(node.get("file")).stem
    element = etree.Element(node.tag, attributes)
    element.sourceline = node.element.sourceline
    return Node(element, node.file, [_copy(c, prefix) for c in node.children],
                root_class=prefix + node.root_class if node.root_class else "")


def _absolute_files(root: Node, compiler: Compiler, directory: str) -> None:
    """Make the asset files of a child model absolute, as its own meshdir and texturedir
    find them (a path the scene's folders then leave alone)."""
    for section in root.children:
        if section.tag != "asset":
            continue
        for node in (n for n in section.children if n.tag in ASSET_FILES):
            keys, folder = ASSET_FILES[node.tag]
            for key in keys:
                file = node.get(key)
                if file and not os.path.isabs(file):
                    node.element.set(key, lexical_path(directory, getattr(compiler, folder),
                                                       file))


def _walk(node: Node):
    yield node
    for child in node.children:
        yield from _walk(child)
