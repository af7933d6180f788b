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
"""
from __future__ import annotations

import re

from lxml import etree

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
