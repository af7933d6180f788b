"""XML text as tinyxml2 reads it, for the readers of URDF (urdfdom) and MJCF (MuJoCo).

:func:`read_xml` is the one XML reading of both parsers. libxml2 (lxml) reads the
document; where it refuses what tinyxml2 reads for no harm to the model -- a declaration
it does not take (``version="0.0"`` in 25 of pybullet's URDFs), ``--`` in a comment,
attributes with no space between them, ``<`` or a bare ``&`` in a value, a NUL byte or
whole elements after the root element -- the text is rewritten so that libxml2 reads what
tinyxml2 reads (:func:`without_declaration`, :func:`tinyxml2_text`, :func:`check_tail`),
every line keeping its number; what tinyxml2 refuses stays refused. The list, and what is
still refused, is in docs/fidelity.md.

libxml2 numbers an element by the line where its start tag ends, so an element written over
several lines (``<inertia ixx=...`` one attribute per line, as CAD exporters write them)
would be reported at its last attribute. :func:`parse` renumbers every element to the line
where its tag opens, as tinyxml2 (urdfdom, MuJoCo) reports it -- unless every start tag
ends on the line it opens (:func:`start_tags_on_one_line`, in bulk), where libxml2's numbers
are those already.
"""
from __future__ import annotations

import re

import numpy as np
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
    if start_tags_on_one_line(data):  # libxml2's numbers are the tag starts' already
        return
    openings = [m.start() for m in MARKUP.finditer(data) if m.end() - m.start() == 1]
    elements = list(root.iter(etree.Element))
    if len(openings) != len(elements):
        return
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))
    lines = np.searchsorted(newlines, openings) + 1  # 1 + the line ends before each opening
    for element, line in zip(elements, lines[:np.searchsorted(lines, LINE_LIMIT)].tolist()):
        element.sourceline = line


def start_tags_on_one_line(data: bytes) -> bool:
    """Whether every start tag of ``data`` ends on the line where it opens, found in one
    scan of the bytes (:data:`MULTILINE_TAG`, no Python per element): each "<" that opens a
    name, its next ">" on the same line and no quote open there (an even count of one kind
    of quote between them, the other kind absent, no other "<"). Anything else -- a tag
    over several lines, a ">", "<" or a quote inside a value, a "<" inside a comment --
    says False, for :func:`number_from_tag_start` to look closer. Each "<" is read up to
    the next "<", ">" or line end at most, so the scan is linear in the file's size."""
    return MULTILINE_TAG.search(data) is None


# what follows "<" up to the next ">" in a start tag that ends on its line with no quote
# open: no line end, no other "<", and an even count of one kind of quote (the other kind
# absent)
_ONE_LINE_TAG = (rb"""[^<>\n"']*(?:"[^<>\n"']*"[^<>\n"']*)*>"""
                 rb"""|[^<>\n"']*(?:'[^<>\n"']*'[^<>\n"']*)*>""")
# a "<" opening a name (not the last byte) whose tag is not such a tag
MULTILINE_TAG = re.compile(rb"<(?![/!?])(?!\Z)(?!" + _ONE_LINE_TAG + rb")")


def read_xml(data: bytes, path: str, encoding: str | None = None) -> etree._Element:
    """Root element of an XML document as tinyxml2 (urdfdom, MuJoCo) reads it, for the URDF
    and MJCF parsers alike: no comments, entities left unresolved, element names stripped
    of a default namespace (urdfdom reads ``<robot xmlns="...">`` as ``<robot>``).

    ``encoding`` overrides the document's own declaration (for text already decoded).

    libxml2 reads the document first, without its limits on text size and nesting (its
    entity amplification guard stays). Where libxml2 is stricter than tinyxml2 for no harm
    to the model, the document is read as tinyxml2 reads it (:func:`tinyxml2_text`): the
    XML declaration is skipped whatever it says (``version="0.0"``, as in 25 of pybullet's
    URDFs; an encoding the bytes do not have; a blank line before it); the text ends at a
    NUL byte; ``--`` in a comment, attributes with no space between them, ``<`` in an
    attribute value and an ``&`` that starts no reference are read; what follows the root
    element is read as tinyxml2 reads it; and an undeclared namespace prefix
    (``<sensor:camera>`` in ``<gazebo>``) is declared on the root element, so such
    elements stay prefixed names that no model element matches. Every line keeps its
    number, and any other problem is libxml2's error, at its own line. Elements nested
    deeper than tinyxml2 reads them are refused (:data:`MAX_DEPTH`).
    """
    try:
        root = parse_within_limits(data, encoding)
        _refuse_instruction_after(root, data, path)
    except etree.XMLSyntaxError as strict:
        text, encoding = without_declaration(data, encoding)
        if text is None:  # the declared encoding does not decode it: libxml2's error stands
            raise ParseError(_xml_problem(strict), path, strict.lineno or 0) from None
        text, data, tail = tinyxml2_text(text)
        prefixes: list[str] = []
        while True:
            try:
                root = parse_within_limits(_with_prefixes_declared(text, prefixes), encoding)
                break
            except etree.XMLSyntaxError as error:
                undeclared = _UNDECLARED_PREFIX.match(error.msg)
                if undeclared is None or undeclared.group(1) in prefixes:
                    raise ParseError(_xml_problem(error), path, error.lineno or 0) from None
                prefixes.append(undeclared.group(1))
        if tail is not None:
            check_tail(data, tail, path)
    _refuse_used_entities(root, data, path)
    for element in root.iter(etree.Element):
        if element.tag[0] == "{" and element.prefix is None:  # a default namespace only:
            element.tag = etree.QName(element).localname  # xacro:property stays prefixed
    return root


MAX_DEPTH = 500  # levels of nested elements in one file, the root being 1: tinyxml2's limit
DEPTH_PROBLEM = (f"elements nested more than {MAX_DEPTH} deep (tinyxml2, the XML reader of "
                 f"urdfdom and MuJoCo, refuses such files too)")


def parse_within_limits(data: bytes, encoding: str | None) -> etree._Element:
    """:func:`parse`, again without libxml2's size and nesting limits when it meets one
    (tinyxml2 has none but nesting, MAX_DEPTH, checked then); the file's size is bounded
    already (``files.MODEL_BYTES``) and the entity amplification guard stays on."""
    try:
        return parse(data, encoding)
    except etree.XMLSyntaxError as error:
        if "HUGE" not in (error.msg or "") and "too big" not in (error.msg or ""):
            raise
    root = parse(data, encoding, huge_tree=True)
    _refuse_too_deep(root)
    return root


def _xml_problem(error: etree.XMLSyntaxError) -> str:
    """The one-line problem of a libxml2 error (its 2048-level stop is the depth limit)."""
    if "Excessive depth" in (error.msg or ""):
        return DEPTH_PROBLEM
    return f"not well-formed XML ({error.msg})"


def _refuse_instruction_after(root: etree._Element, data: bytes, path: str) -> None:
    """A processing instruction after the root element, which libxml2 reads and tinyxml2
    refuses, is a ParseError at its line (comments after the root are blanked first)."""
    tag = root.tag if root.prefix is None and root.tag[0] != "{" else etree.QName(root).localname
    end = data.rfind(b"</" + (f"{root.prefix}:" if root.prefix else "").encode() + tag.encode())
    if end < 0 or b"<?" not in data[end:]:
        return
    tail = _COMMENT.sub(lambda match: b" " * len(match.group()), data[end:])
    found = tail.find(b"<?")
    if found >= 0:
        _refuse_outside(data, end + found, b"?", path)


def _refuse_too_deep(root: etree._Element) -> None:
    """The first element nested deeper than MAX_DEPTH: libxml2's error (a limit, so that
    :func:`read_xml` reports DEPTH_PROBLEM) at its line."""
    deep = _TOO_DEEP(root)
    if deep:
        raise etree.XMLSyntaxError("Excessive depth in document", None, deep[0].sourceline or 0, 0)


_TOO_DEEP = etree.XPath("/*" + "/*" * MAX_DEPTH)  # one step per level, evaluated in C


# tinyxml2's markup, in document order. Comments end at the first "-->" ("--" inside is
# text); "<!" that opens no comment, CDATA or DOCTYPE is an unknown node read to ">"; a start
# tag's quoted values may hold ">" and "<"; a "<" that opens none of these is left as it is.
TOKEN = re.compile(rb"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<!DOCTYPE(?:[^\[>]|\[.*?\])*>"
                   rb"|<![^>]*>|</[^>]*>|<[^\s/>!?\"'<][^\s/>\"'<]*(?:[^>\"']|\"[^\"]*\"|'[^']*')*>",
                   re.S)
# a start tag libxml2 reads as tinyxml2 does: a space before each attribute, no "<" or "&"
PLAIN_START_TAG = re.compile(rb"<[^\s/>]+(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"<&]*\"|'[^'<&]*'))*\s*/?>")
# inside a start tag: a quoted value with what follows it
ATTRIBUTE_VALUE = re.compile(rb"(=\s*)(\"[^\"]*\"|'[^']*')")
# "&" that starts a reference tinyxml2 (and libxml2) read; any other "&" is text to both
REFERENCE = rb"&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+{names});)"


def tinyxml2_text(data: bytes) -> tuple[bytes, bytes, int | None]:
    """(``data`` rewritten so that libxml2 reads it as tinyxml2 (urdfdom, MuJoCo) does, every
    line keeping its number, up to the end of the root element; ``data`` as tinyxml2 reads
    it; the offset in it where the root element ends, for :func:`check_tail`, or None).

    tinyxml2 reads a C string: the text ends at its first NUL byte. Comments are blanked
    (libxml2 refuses ``--`` in one) and so are the unknown ``<!...>`` nodes inside elements;
    a space is put between attributes written without one (``name="g"type="sphere"``);
    ``<`` in an attribute value and an ``&`` that starts no reference (``a&b``, ``&x;``
    for an entity nobody declared) become references to themselves, the text tinyxml2
    keeps. After the root element tinyxml2 reads whitespace, comments, CDATA, unknown
    nodes and whole elements; an end tag there ends its reading; text, a processing
    instruction or a broken element is an error (at its line, as in tinyxml2).
    """
    data = data.split(b"\0", 1)[0]
    stray = _stray_references(data)
    edits: list[tuple[int, int, bytes]] = []  # (start, end, replacement): few, in order
    depth, position, end = 0, 0, None
    for match in TOKEN.finditer(data):
        token, start = match.group(), match.start()
        if data.find(b"&", position, start) >= 0:
            edits.append((position, start, stray.sub(b"&amp;", data[position:start])))
        position = match.end()
        kind = token[1]
        if kind == 0x21:  # "!": a comment, CDATA, the DOCTYPE or an unknown node
            if (token.startswith(b"<!--") and b"--" in token[4:-2]) or (
                    depth and not token.startswith((b"<!--", b"<![CDATA["))):
                edits.append((start, position, b"\n" * token.count(b"\n")))
            continue
        if kind == 0x3F:  # "?": a processing instruction
            continue
        if kind == 0x2F:  # "/": an end tag
            depth -= 1
        else:
            depth += not token.endswith(b"/>")
            if not PLAIN_START_TAG.fullmatch(token):
                edits.append((start, position, _start_tag(token, stray)))
        if depth <= 0:  # the root element has ended
            end = position
            break
    pieces, done = [], 0
    for start, stop, replacement in edits:
        pieces += [data[done:start], replacement]
        done = stop
    pieces.append(data[done:end])
    return b"".join(pieces), data, end  # end None: no root ended, libxml2 says why


def _stray_references(data: bytes) -> re.Pattern:
    """The "&" in ``data`` that start no reference libxml2 reads (the predefined entities,
    character references and the entities the document declares)."""
    declared = re.findall(rb"<!ENTITY\s+([^\s%]+)", data)
    return re.compile(REFERENCE.replace(b"{names}", b"".join(b"|" + re.escape(name)
                                                             for name in declared)))


def _start_tag(tag: bytes, stray: re.Pattern) -> bytes:
    """A start tag as libxml2 reads it: a space after each quoted value followed by more,
    ``<`` and stray ``&`` in values written as references."""
    def value(match: re.Match) -> bytes:
        text = match.group(2)
        return match.group(1) + text[:1] + stray.sub(b"&amp;", text[1:-1]).replace(b"<", b"&lt;") \
            + text[-1:] + (b" " if match.end() < len(tag) and tag[match.end():match.end() + 1]
                           not in b" \t\r\n/>" else b"")
    return ATTRIBUTE_VALUE.sub(value, tag)


def check_tail(data: bytes, start: int, path: str) -> None:
    """What follows the root element (from ``start``), as tinyxml2 reads it: whitespace,
    comments, CDATA and unknown nodes pass, elements are checked by libxml2, an end tag
    ends the reading; text or a processing instruction outside elements is an error."""
    stray = _stray_references(data)
    depth, position, elements = 0, start, []
    for match in TOKEN.finditer(data, start):
        token = match.group()
        text = data[position:match.start()]
        if depth == 0:
            _refuse_outside(data, position, text, path)
            if token.startswith(b"<?"):
                _refuse_outside(data, match.start(), b"?", path)
            if token.startswith(b"</"):
                break
        elements.append(stray.sub(b"&amp;", text) if depth else b"\n" * text.count(b"\n"))
        if token.startswith(b"<!--") or (token.startswith(b"<!") and
                                         not token.startswith(b"<![CDATA[")):
            elements.append(b"\n" * token.count(b"\n"))
        elif token.startswith(b"</"):
            elements.append(token)
            depth -= 1
        elif token[1:2] not in b"!?":
            elements.append(_start_tag(token, stray))
            depth += not token.endswith(b"/>")
        else:
            elements.append(token)
        position = match.end()
    else:
        if depth == 0:
            _refuse_outside(data, position, data[position:], path)
        elements.append(data[position:])
    if not any(piece.strip() for piece in elements):
        return
    lines = b"\n" * data.count(b"\n", 0, start)  # the fragment starts on the root's last line
    try:
        parse(lines + b"<tail>" + b"".join(elements) + b"</tail>", None, huge_tree=True)
    except etree.XMLSyntaxError as error:
        unclosed = re.match(r"Opening and ending tag mismatch: (\S+) line (\d+) and tail,", error.msg)
        if unclosed is not None:  # the end of the file came first (the wrapper's end tag)
            raise ParseError(f"not well-formed XML (<{unclosed.group(1)}> after the root "
                             f"element is not closed)", path, int(unclosed.group(2))) from None
        raise ParseError(f"not well-formed XML ({error.msg})", path, error.lineno or 0) from None


def _refuse_outside(data: bytes, offset: int, text: bytes, path: str) -> None:
    """ParseError at the first non-blank byte of ``text`` (at ``offset`` in ``data``),
    found after the root element and outside any element; nothing for blank text."""
    stripped = text.lstrip()
    if not stripped:
        return
    offset += len(text) - len(stripped)
    what = "a processing instruction" if stripped.startswith(b"?") else "text"
    raise ParseError(f"not well-formed XML ({what} after the root element)", path,
                     data.count(b"\n", 0, offset) + 1)


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
