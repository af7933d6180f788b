"""Tables for people (tabulate, imported only when a table is printed).

Every text cell and header is shown through :func:`..console.printable`: names in a table
are data from a model or an input file, and a control character in one must not reach the
terminal raw (numbers pass as they are, for tabulate to align them).

A table wider than the terminal (``COLUMNS``, else its width, else 100) is cut into blocks
of whole columns that fit, each repeating the first column (:func:`fitted`); past
:data:`MAX_BLOCKS` blocks the rest is left out, with a note saying how to get it all."""
from __future__ import annotations

import re
import shutil
from collections.abc import Sequence

import numpy as np

from ..console import printable

FLOAT_FORMAT = ".6g"
MAX_BLOCKS = 4  # blocks of columns shown before the rest is left out
EVERYTHING = "--format json (or --output FILE) gives every column"


def table(rows, headers, **options) -> str:
    from tabulate import tabulate

    rows = [[printable(cell) if isinstance(cell, str) else cell for cell in row]
            for row in rows]
    headers = [printable(header) if isinstance(header, str) else header for header in headers]
    return tabulate(rows, headers=headers, floatfmt=FLOAT_FORMAT, **options)


def text_table(rows, headers, width: int | None = None, how: str = EVERYTHING) -> str:
    """:func:`table` of rows whose last column is text (a message, a list of names and
    values) made to fit ``width`` (default: the terminal's): that column wrapped to the
    room the columns before it leave, then :func:`fitted`."""
    width = terminal_width() if width is None else width
    text = table(rows, headers)
    spans = [m.start() for m in re.finditer(r"-+", text.split("\n")[1])] if "\n" in text \
        else []
    if not spans or max(map(len, text.split("\n"))) <= width:
        return text
    # (at least 30 columns: a narrower cell would be a column of fragments)
    room = max(30, width - spans[-1])
    return fitted(table(rows, headers, maxcolwidths=[None] * (len(headers) - 1) + [room]),
                  width, how)


def matrix_table(matrix: np.ndarray, labels: Sequence[str]) -> str:
    rows = [[label, *row] for label, row in zip(labels, matrix)]
    return fitted(table(rows, ["", *labels]))


def terminal_width() -> int:
    """The terminal's columns: ``COLUMNS`` when set, else the terminal's, else 100."""
    return shutil.get_terminal_size((100, 24)).columns


def wrapped(text: str, width: int | None = None, indent: str = "") -> str:
    """A line of prose wrapped to ``width`` (default: the terminal's; at least 60), after
    ``indent``, its continuation lines indented two more."""
    import textwrap

    return textwrap.fill(text, break_on_hyphens=False, initial_indent=indent,
                         subsequent_indent=indent + "  ",
                         width=max(60, terminal_width() if width is None else width))


def fitted(text: str, width: int | None = None, how: str = EVERYTHING) -> str:
    """``text``, a table of :func:`table` (a header, its rule of dashes, the rows), cut
    into blocks of whole columns no wider than ``width`` (default: the terminal's), each
    block headed by the columns it holds and repeating the first column; past
    :data:`MAX_BLOCKS` blocks the others are left out and a last line says so and
    ``how`` to get them. A table that fits is returned as it is."""
    width = terminal_width() if width is None else width
    lines = text.split("\n")
    rule = next((k for k, line in enumerate(lines) if re.fullmatch(r"-[- ]*", line)), None)
    if rule is None or max(map(len, lines)) <= width:
        return text
    spans = [match.span() for match in re.finditer(r"-+", lines[rule])]
    first, rest = spans[0], spans[1:]
    blocks, block, used = [], [], first[1] - first[0]
    for span in rest:  # greedy: as many whole columns as fit beside the first one
        size = span[1] - span[0] + 2
        if block and used + size > width:
            blocks.append(block)
            block, used = [], first[1] - first[0]
        block.append(span)
        used += size
    blocks.append(block)
    shown, out, start = blocks[:MAX_BLOCKS], [], 1
    for block in shown:
        end = start + len(block) - 1
        out.append(f"(columns {start}-{end} of {len(rest)})")
        pieces = ["  ".join(line.ljust(s[1])[s[0]:s[1]] for s in (first, *block)).rstrip()
                  for line in lines]  # (a wrapped cell's lines, empty in this block: left out)
        out += [piece for piece, line in zip(pieces, lines) if piece or not line.strip()]
        out.append("")
        start = end + 1
    if len(blocks) > len(shown):
        out.append(wrapped(f"(columns {start}-{len(rest)} of {len(rest)} not shown: {how})",
                           width))
    return "\n".join(out).rstrip("\n")
