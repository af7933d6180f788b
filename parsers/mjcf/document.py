"""The MJCF document: XML nodes with their file, every ``<include>`` expanded.

The included file is looked up relative to the main model's directory first, then relative
to the including file's directory (MuJoCo's order); a file may be included once. Nesting
is limited per file as MuJoCo's XML reader limits it, and across includes to dyn's own
:data:`MAX_TOTAL_DEPTH`; the elements, to :data:`.bounds.MAX_ELEMENTS` as they are read,
and once more with attached models and replicates counted (:func:`.bounds.check_size`).
"""
from __future__ import annotations

import os

from lxml import etree

from treedyn.engine.description import SourceRef

from ..errors import ParseError, quoted
from ..files import MODEL_BYTES, lexical_path, not_a_file, read_bounded
from ..xml_text import DEPTH_PROBLEM, MAX_DEPTH, read_xml
from .attach import compose
from .bounds import MAX_ELEMENTS, check_size
from .types import Node

MAX_TOTAL_DEPTH = 1000  # levels in the whole document, includes expanded: dyn's own limit


class Document:
    """The main file with every ``<include>`` replaced by the included elements."""

    def __init__(self, path: str, attaching: tuple[str, ...] = (), data: bytes | None = None):
        """``attaching``: the real paths of the models that attach this one, outermost first;
        ``data``: the main file's bytes, when they are not read from ``path`` (stdin)."""
        self.model_dir = os.path.dirname(os.path.abspath(path))
        self.included: dict[str, SourceRef] = {}
        main = os.path.realpath(path)
        self.attaching = attaching + (main,)
        self.included[main] = SourceRef(path, 0, "")
        self.elements = 0  # read so far, includes expanded
        element = read_file(path, None) if data is None else read_xml(data, path)
        self.root = self._node(element, path, os.path.dirname(os.path.abspath(path)), [main],
                               1, 1)
        # per attached model: the files it was read from and its <compiler> nodes
        self.compilers = compose(self.root, self.model_dir, self._attached)
        check_size(self.root)

    def _attached(self, path: str, asset: Node) -> "Document":
        """The document of a ``<model>`` asset's file; its files count as the scene's."""
        real = os.path.realpath(path)
        if real in self.attaching:
            cycle = " -> ".join(os.path.basename(p) for p in self.attaching + (real,))
            raise asset.error(f"attach cycle ({cycle})")
        child = Document(path, self.attaching)
        self.included.update(child.included)
        return child

    def _node(self, element: etree._Element, file: str, directory: str,
              stack: list[str], depth: int, total: int) -> Node:
        node = Node(element, file)
        self.elements += 1
        if self.elements > MAX_ELEMENTS:
            raise node.error(f"more than {MAX_ELEMENTS} elements, includes expanded (the most "
                             f"dyn compiles)")
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
            raise include.error(f'file {quoted(name)} is already included{where}')
        self.included[real] = include.source()
        root = read_file(path, include)
        if next(root.iterchildren(etree.Element), None) is None:
            raise include.error(f'included file {quoted(name)} has no elements')
        # its own root is level 1 of its file (MuJoCo's XML reader limits each file alone)
        return self._children(root, path, os.path.dirname(path), stack + [real], 1, total)

    def _locate(self, include: Node, name: str, directory: str) -> str:
        """The included file: absolute, else in the model directory, else beside the
        includer (".." taken from the text, as MuJoCo does); the first path that names
        anything must be a regular file."""
        candidates = [lexical_path(self.model_dir, name), lexical_path(directory, name)]
        for candidate in candidates:
            problem = not_a_file(candidate)
            if not problem:
                return candidate
            if problem != "not found":
                raise include.error(f"included file {quoted(name)} {problem} "
                                    f"({quoted(candidate, mark='')})")
        places = " and ".join(quoted(path, mark="") for path in dict.fromkeys(candidates))
        raise include.error(f"included file {quoted(name)} not found (looked in {places})")


def read_file(path: str, include: Node | None) -> etree._Element:
    """Root element of an XML file; errors name the file (and the include that asked)."""
    try:
        data = read_bounded(path, MODEL_BYTES)
    except OSError as error:
        if include is not None:
            raise include.error(f'cannot read included file {quoted(path)} ({error.strerror})') \
                from None
        raise ParseError(f"cannot read file ({error.strerror})", path) from None
    try:
        return read_xml(data, path)
    except ParseError as error:
        if include is None or error.problem == DEPTH_PROBLEM:
            raise
        problem = error.problem.removeprefix("not well-formed XML (").removesuffix(")")
        if problem == error.problem:  # not an XML error: what is wrong, at its line
            raise include.error(f'included file {quoted(path)}, its line {error.line}: '
                                f"{problem}") from None
        # the file and element that asked for it, then where in it
        raise include.error(f'included file {quoted(path)} is not well-formed XML (its line '
                            f"{error.line}: {problem})") from None
