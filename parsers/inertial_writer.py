"""New inertias written into a model file's own text: only the ``<inertial>`` elements of the
links (URDF) or bodies (MJCF) given change; every other byte -- formatting, comments,
attribute order, the rest of the file -- stays as it was, so the change reviews as a diff.

Each element is found in the text from the line the parser recorded for it
(``LinkSpec.inertial_source``): the last ``<inertial`` starting on or before the end of
that line, outside comments and CDATA, through its ``/>`` or its ``</inertial>``. The new
element keeps the old one's indentation (and, for URDF, its children's):

* URDF: ``<origin xyz="com" rpy="as written"/>``, ``<mass value>``, ``<inertia ixx ...>``
  with the tensor in the frame the file's ``rpy`` gives (``LinkSpec.inertial_rotation``);
* MJCF: ``<inertial pos mass fullinertia="ixx iyy izz ixy ixz iyz"/>`` in the <body>
  frame (``LinkSpec.file_rotation`` / ``file_translation``), which MuJoCo reads as written.

The caller (the command line) passes the text; this module reads no file.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from treedyn.engine.description import Inertia, LinkSpec

_HIDDEN = re.compile(r"<!--.*?-->|<!\[CDATA\[.*?\]\]>", re.DOTALL)


class WriteError(ValueError):
    """An inertia cannot be written into the text (the message names the link and line)."""


@dataclass(frozen=True)
class Change:
    link: LinkSpec  # the link (URDF) or body (MJCF) as parsed
    inertia: Inertia  # its new inertia in the link frame (as LinkSpec.inertia)


def number(x: float) -> str:
    """12 significant digits, no '-0'."""
    text = format(float(x), ".12g")
    return "0" if text in ("-0", "0") else text


def numbers(values) -> str:
    """Space-separated :func:`number` s; entries below 1e-12 of the largest are rounding
    (a zero the fit did not keep exactly) and are written 0."""
    values = [float(x) for x in values]
    scale = max((abs(x) for x in values), default=0.0)
    return " ".join(number(0.0 if abs(x) < 1e-12 * scale else x) for x in values)


def _masked(text: str) -> str:
    """The text with comments and CDATA blanked (same length, line breaks kept)."""
    return _HIDDEN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def _span(text: str, masked: str, line: int, where: str) -> tuple[int, int]:
    """(start, end) of the <inertial> element whose start tag is on ``line`` (1-based)."""
    starts = _line_starts(text)
    if not 1 <= line <= len(starts):
        raise WriteError(f"{where}: no <inertial> at line {line}")
    end_of_line = starts[line] if line < len(starts) else len(text)
    start = -1
    for match in re.finditer(r"<inertial(?=[\s/>])", masked[:end_of_line]):
        start = match.start()
    if start < 0:
        raise WriteError(f"{where}: no <inertial> at line {line}")
    quote, k = None, start
    while k < len(masked):
        ch = masked[k]
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == ">":
            break
        k += 1
    if k >= len(masked):
        raise WriteError(f"{where}: the <inertial> at line {line} does not end")
    if masked[k - 1] == "/":
        return start, k + 1
    close = masked.find("</inertial>", k)
    if close < 0:
        raise WriteError(f"{where}: the <inertial> at line {line} has no </inertial>")
    return start, close + len("</inertial>")


_NESTING = re.compile(r"<(/?)(body|frame)\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*?(/?)>")


def _in_frame(masked: str, start: int) -> bool:
    """Whether the element at ``start`` is inside a <frame> of its <body> (MJCF)."""
    stack: list[str] = []
    for match in _NESTING.finditer(masked, 0, start):
        closing, name, empty = match.groups()
        if closing:
            if stack and stack[-1] == name:
                stack.pop()
        elif not empty:
            stack.append(name)
    return bool(stack) and stack[-1] == "frame"


def _indent(text: str, start: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    prefix = text[line_start:start]
    return prefix if prefix.strip() == "" else ""


def _child_indent(element: str, indent: str) -> str:
    match = re.search(r"\n([ \t]*)<", element)
    return match.group(1) if match else indent + "  "


def _urdf_element(change: Change, old: str, indent: str, newline: str) -> str:
    """The new URDF <inertial>: com as origin xyz, the file's rpy kept, the tensor in it."""
    link, inertia = change.link, change.inertia
    rotation = link.inertial_rotation
    tensor = rotation.T @ inertia.inertia @ rotation
    rpy = re.search(r"<origin\b[^>]*?\brpy\s*=\s*(\"[^\"]*\"|'[^']*')", old)
    inner = _child_indent(old, indent)
    origin = f'xyz="{numbers(inertia.com)}"'
    if rpy:
        origin += f" rpy={rpy.group(1)}"
    t = tensor.copy()
    t[np.abs(t) < 1e-12 * np.abs(t).max(initial=0.0)] = 0.0
    lines = [
        "<inertial>",
        f"{inner}<origin {origin}/>",
        f'{inner}<mass value="{number(inertia.mass)}"/>',
        f'{inner}<inertia ixx="{number(t[0, 0])}" ixy="{number(t[0, 1])}" '
        f'ixz="{number(t[0, 2])}" iyy="{number(t[1, 1])}" iyz="{number(t[1, 2])}" '
        f'izz="{number(t[2, 2])}"/>',
        f"{indent}</inertial>",
    ]
    return newline.join(lines)


def _mjcf_element(change: Change) -> str:
    """The new MJCF <inertial>, in the <body> frame."""
    link, inertia = change.link, change.inertia
    R, p = link.file_rotation, link.file_translation  # p_link = R p_body + p
    com = R.T @ (inertia.com - p)
    t = R.T @ inertia.inertia @ R
    full = (t[0, 0], t[1, 1], t[2, 2], t[0, 1], t[0, 2], t[1, 2])
    return (f'<inertial pos="{numbers(com)}" mass="{number(inertia.mass)}" '
            f'fullinertia="{numbers(full)}"/>')


def rewrite_inertials(text: str, path: str, kind: str, changes: list[Change]) -> str:
    """``text`` (the file at ``path``, format ``kind``: "urdf" or "mjcf") with the
    <inertial> element of each change replaced; WriteError when one is not in this text."""
    masked = _masked(text)
    spans = []
    for change in changes:
        source = change.link.inertial_source
        where = f"{path}: {'link' if kind == 'urdf' else 'body'} '{change.link.name}'"
        if source.element != "inertial" or not source.line:
            raise WriteError(f"{where} has no <inertial> element to change (its inertia "
                             "comes from its geoms or is absent); add one first")
        if source.file and _differs(source.file, path):
            raise WriteError(f"{where}: its <inertial> is in another file ({source.file}); "
                             "write that file instead")
        start, end = _span(text, masked, source.line, where)
        if kind == "mjcf" and _in_frame(masked, start):
            raise WriteError(f"{where}: its <inertial> sits in a <frame>, whose pose this "
                             "writer does not carry; move it into the <body> first")
        old = text[start:end]
        newline = "\r\n" if "\r\n" in text else "\n"
        new = (_urdf_element(change, old, _indent(text, start), newline) if kind == "urdf"
               else _mjcf_element(change))
        spans.append((start, end, new))
    spans.sort()
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        if start < end:
            raise WriteError(f"{path}: two changes meet one <inertial> element")
    for start, end, new in reversed(spans):
        text = text[:start] + new + text[end:]
    return text


def _differs(a: str, b: str) -> bool:
    return os.path.realpath(a) != os.path.realpath(b)
