"""What the text readers share: numbered lines (BOM, encodings, a part of a file), the
window of a part's data lines, and the chunk a reader fills row by row."""

import io
from collections.abc import Iterator

import numpy as np

from .naming import printable
from .errors import UsageError
from .layout import Layout
from .vectors import States, check_finite, pop_q

LINE_CHARS = 16 << 20  # the longest line read: a state of 10 000 dofs is about 1 M
STDIN = "<stdin>"  # the name of --input - in messages


def no_states(name: str, why: str) -> UsageError:
    """``FILE: no states (why)``: an input that holds not one state is bad input (exit 2),
    not a run that succeeds in silence; raised before anything is written, so an existing
    output is left as it was."""
    return UsageError(f"{name}: no states ({why})")


def no_text_states(name: str, lines: int) -> UsageError:
    """:func:`no_states` for a text input of ``lines`` lines, none of them a state."""
    what = "stdin" if name == STDIN else "the file"
    return no_states(name, f"{what} is empty" if not lines else f"{what} has blank lines only")


def text_lines(stream, name: str, first: int = 1, bom: bool = True
                ) -> Iterator[tuple[int, str]]:
    """(line number, text) of a binary stream read as UTF-8 text mode reads it (universal
    line ends, kept; a leading BOM, as spreadsheet programs write, dropped). Bytes that are
    not UTF-8 are reported with their line, after the lines before it were used: they are
    decoded as surrogates and caught line by line (only lines that are not ASCII are
    checked), where a strict decoder would fail a whole read-ahead block at once. Lines are
    numbered from ``first``; ``bom=False`` (a part of a file after its start) reads a BOM
    as text, as reading the whole file would there."""
    text = io.TextIOWrapper(stream, encoding="utf-8-sig" if bom else "utf-8",
                            errors="surrogateescape", newline="")
    try:
        number = first - 1
        while line := text.readline(LINE_CHARS + 1):  # a line held is LINE_CHARS at most
            number += 1
            if len(line) > LINE_CHARS and "\0" not in line:
                raise UsageError(f"{name}:{number}: a line longer than {LINE_CHARS >> 20} M "
                                 "characters, far more than a state holds: not JSON Lines "
                                 "or CSV text?")
            if not line.isascii():
                try:
                    line.encode()
                except UnicodeEncodeError as error:
                    raise UsageError(f"{name}:{number}: not UTF-8 text (byte "
                                     f"{ord(line[error.start]) - 0xDC00:#04x} at column "
                                     f"{error.start + 1})") from None
            if "\0" in line:
                raise UsageError(f"{name}:{number}: holds NUL bytes (UTF-16 text? dyn reads "
                                 "UTF-8)")
            yield number, line
    finally:  # the caller owns (and closes, or not: stdin) the binary stream
        if not stream.closed:
            text.detach()


def is_data(line: str, kind: str) -> bool:
    """Whether a text line holds a state (else the readers skip it): JSON Lines skip blank
    lines, CSV (csv.reader) only empty ones."""
    return bool(line.strip()) if kind == "jsonl" else line not in ("", "\n", "\r\n", "\r")


def window(lines: Iterator[tuple[int, str]], kind: str, skip: int, take: int
            ) -> Iterator[tuple[int, str]]:
    """The numbered lines from the data line after the first ``skip`` ones up to the
    ``take``-th data line after it."""
    for number, line in lines:
        if is_data(line, kind):
            if skip:
                skip -= 1
                continue
            if not take:
                return
            take -= 1
        elif skip:
            continue
        yield number, line


class Chunk:
    """Accumulates up to ``size`` parsed rows of a text input in preallocated blocks."""

    def __init__(self, name: str, layout: Layout, wrenches: dict[str, np.ndarray], size: int):
        self.name, self.layout, self.cli_wrenches, self.size = name, layout, wrenches, size
        self.reset()

    def reset(self) -> None:
        self.lines: list[int] = []
        self.vectors: dict[str, np.ndarray] = {}
        self.wrenches: dict[str, np.ndarray] = {}

    def vector(self, kind: str) -> np.ndarray:
        """The (size, width) block of ``kind``, created with defaults on first use."""
        if kind not in self.vectors:
            self.vectors[kind] = np.tile(self.layout.default(kind), (self.size, 1))
        return self.vectors[kind]

    def wrench(self, name: str) -> np.ndarray:
        if name not in self.wrenches:
            self.wrenches[name] = np.zeros((self.size, 6))
        return self.wrenches[name]

    def take(self) -> States:
        n, name, lines = len(self.lines), printable(self.name), self.lines  # (tables show it)
        vectors = {kind: block[:n] for kind, block in self.vectors.items()}
        wrenches = {link: block[:n] for link, block in self.wrenches.items()}
        with np.errstate(over="ignore"):  # an overflow is reported on the state's result
            for link, wrench in self.cli_wrenches.items():
                wrenches[link] = wrenches.get(link, 0.0) + wrench
        q = pop_q(vectors, self.layout, n)
        self.reset()
        return States(q=q, wrenches=wrenches, where=lambda i: f"{name}:{lines[i]}", **vectors)

    def flush(self) -> Iterator[States]:
        """The rows so far as States (none if empty). Arrays are checked for finite numbers
        here, a chunk at a time: at the first bad row, the rows before it, then the error."""
        n = len(self.lines)
        if not n:
            return
        bad, problem = n, None
        for kind, block in self.vectors.items():
            finite = np.isfinite(block[:bad]).all(axis=1)
            if not finite.all():
                bad, problem = int(np.argmin(finite)), kind
        if problem is None:
            yield self.take()
            return
        where = f'{self.name}:{self.lines[bad]}: "{problem}"'
        values = self.vectors[problem][bad]
        del self.lines[bad:]
        if bad:
            yield self.take()
        check_finite(values, where)
