"""XML text as tinyxml2 reads it, for the readers of URDF (urdfdom) and MJCF (MuJoCo).

tinyxml2 skips the XML declaration whatever it says -- ``version="0.0"`` (25 of pybullet's
URDFs), an encoding the bytes do not have, a blank line before it -- where libxml2 refuses
the document. :func:`without_declaration` gives the text libxml2 then reads as tinyxml2
does, with every line keeping its number; :func:`parse` is the one libxml2 reading both
parsers use.

libxml2 numbers an element by the line where its start tag ends, so an element written over
several lines (``<inertia ixx=...`` one attribute per line, as CAD exporters write them)
would be reported at its last attribute. :func:`parse` renumbers every element to the line
where its tag opens, as tinyxml2 (urdfdom, MuJoCo) reports it.

:func:`read_xml` reads a document as urdfdom does, for the URDF parser and for the root
element of any model file.
"""
from __future__ import annotations

import re

from lxml import etree

from .errors import ParseError

DECLARATION = re.compile(rb"\A(\xef\xbb\xbf)?(\s*<\?xml\s[^>]*?\?>)")
DECLARED_ENCODING = re.compile(rb"encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']")
# markup in document order: comments, CDATA, processing instructions, the document type
# (with its internal subset) and end tags are skipped; a "<" before a name opens an element
MARKUP = re.compile(rb"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<!DOCTYPE(?:[^\[>]|\[.*?\])*>"
                    rb"|</|<(?=[^!?/])", re.S)
LINE_LIMIT = 65535  # libxml2 keeps a line number in 16 bits


def without_declaration(data: bytes, encoding: str | None) -> tuple[bytes | None, str | None]:
    """(data, encoding) with the XML declaration replaced by as many line ends, so lines
    keep their numbers; text in the declared encoding, when it is an ASCII-compatible codec
    Python knows, becomes UTF-8 (None if it does not decode), otherwise it is read as UTF-8
    like tinyxml2 reads every file. ``encoding`` (for text already decoded) wins."""
    match = DECLARATION.match(data)
    if match is None:
        return data, encoding
    declared = DECLARED_ENCODING.search(match.group(2))
    data = data[:match.start(2)] + b"\n" * match.group(2).count(b"\n") + data[match.end(2):]
    codec = None if declared is None else ascii_compatible(declared.group(1).decode("ascii"))
    if encoding is not None or codec is None:
        return data, encoding
    try:
        return data.decode(codec).encode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return None, None


def ascii_compatible(name: str) -> str | None:
    """The codec ``name`` if Python knows it and it encodes ASCII as ASCII, else None (UTF-8)."""
    try:
        return name if "robot<>".encode(name) == b"robot<>" else None
    except LookupError:
        return None


def parse(data: bytes, encoding: str | None, huge_tree: bool = False) -> etree._Element:
    """libxml2's strict reading: no comments or processing instructions, no network, DTD
    entities not resolved from outside; ``huge_tree`` lifts the 256-level nesting limit."""
    parser = etree.XMLParser(encoding=encoding, remove_comments=True, remove_pis=True,
                             resolve_entities=False, no_network=True, huge_tree=huge_tree)
    root = etree.fromstring(data, parser)
    number_from_tag_start(root, data)
    return root


def number_from_tag_start(root: etree._Element, data: bytes) -> None:
    """Set each element's ``sourceline`` to the line where its start tag opens.

    The start tags found in ``data`` pair with the elements in document order; when their
    counts differ (markup the scan cannot see, such as elements from an entity), or for
    lines past libxml2's limit, libxml2's own numbers stay.
    """
    openings = [m.start() for m in MARKUP.finditer(data) if m.end() - m.start() == 1]
    elements = list(root.iter(etree.Element))
    if len(openings) != len(elements):
        return
    line, counted = 1, 0
    for element, offset in zip(elements, openings):
        line += data.count(b"\n", counted, offset)
        counted = offset
        if line >= LINE_LIMIT:
            return
        element.sourceline = line


def read_xml(data: bytes, path: str, encoding: str | None = None) -> etree._Element:
    """Root element of an XML document (no comments, entities left unresolved), with element
    names stripped of a default namespace: urdfdom reads ``<robot xmlns="...">`` as
    ``<robot>``.

    ``encoding`` overrides the document's own declaration (for text already decoded).

    Where libxml2 is stricter than urdfdom's tinyxml2 for no harm to the model, the
    document is read as tinyxml2 reads it: the XML declaration is skipped whatever it
    says (``version="0.0"``, as in 25 of pybullet's URDFs; an encoding the bytes do not
    have; a blank line before it), and an undeclared namespace prefix (``<sensor:camera>``
    in ``<gazebo>``) is declared on the root element, so such elements stay prefixed names
    that no URDF element matches. The document is then read strictly again: any other
    problem is libxml2's error, at its own line.
    """
    try:
        root = parse(data, encoding)
    except etree.XMLSyntaxError as strict:
        text, encoding = without_declaration(data, encoding)
        if text is None:  # the declared encoding does not decode it: libxml2's error stands
            raise ParseError(f"not well-formed XML ({strict.msg})", path, strict.lineno or 0) from None
        data, prefixes = text, []
        while True:
            try:
                root = parse(_with_prefixes_declared(text, prefixes), encoding)
                break
            except etree.XMLSyntaxError as error:
                undeclared = _UNDECLARED_PREFIX.match(error.msg)
                if undeclared is None or undeclared.group(1) in prefixes:
                    raise ParseError(f"not well-formed XML ({error.msg})", path,
                                     error.lineno or 0) from None
                prefixes.append(undeclared.group(1))
    _refuse_used_entities(root, data, path)
    for element in root.iter(etree.Element):
        if element.tag[0] == "{" and element.prefix is None:  # a default namespace only:
            element.tag = etree.QName(element).localname  # xacro:property stays prefixed
    return root


_UNDECLARED_PREFIX = re.compile(r"Namespace prefix (\S+) (?:on|for) ")
# the root element's start tag: the first element name past comments, PIs and the DOCTYPE
_ROOT_START = re.compile(rb"<!--.*?-->|<\?.*?\?>|<!DOCTYPE(?:[^\[>]|\[.*?\])*>|<([A-Za-z_][\w.:-]*)",
                         re.DOTALL)


def _with_prefixes_declared(data: bytes, prefixes: list[str]) -> bytes:
    """The document with ``xmlns:p="urn:undeclared:p"`` added to its root element for each
    prefix (on the root's first line, so every line keeps its number)."""
    if not prefixes:
        return data
    declarations = "".join(f' xmlns:{p}="urn:undeclared:{p}"' for p in prefixes).encode()
    for match in _ROOT_START.finditer(data):
        if match.group(1) is not None:
            return data[:match.end(1)] + declarations + data[match.end(1):]
    return data


def _refuse_used_entities(root: etree._Element, data: bytes, path: str) -> None:
    """libxml2 expands the document's own <!ENTITY> declarations in attribute values,
    urdfdom's tinyxml2 does not (``value="&m;"`` is then no number, and Pinocchio zeroes that
    inertial): a file that uses one in an attribute is refused rather than read differently.
    Comments are blanked first (their line ends kept), so a mention there does not count."""
    dtd = root.getroottree().docinfo.internalDTD
    names = [] if dtd is None else [entity.name for entity in dtd.iterentities()]
    if not names:
        return
    text = _COMMENT.sub(lambda match: b"\n" * match.group().count(b"\n"), data)
    for name in names:
        reference = re.escape(b"&" + name.encode() + b";")
        match = re.search(rb"=\s*(?:\"[^\"<]*" + reference + rb"|'[^'<]*" + reference + b")", text)
        if match is not None:
            line = text.count(b"\n", 0, match.start()) + 1
            raise ParseError(f"the entity &{name}; is declared in the document's DTD: libxml2 "
                             "would expand it, urdfdom (and so Pinocchio) reads it as text; "
                             "write its value instead", path, line)


_COMMENT = re.compile(rb"<!--.*?-->", re.DOTALL)
