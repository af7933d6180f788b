"""Warnings for the person at the terminal: one reporter for the whole run.

A warning is one ``dyn: warning: ...`` line on stderr, unless the command runs with
``--quiet``; a worker process keeps its warnings instead (:meth:`Console.capture`), and
the parent prints them in order with the results they belong to.

Text from a file or the user (names, paths, CSV headers, JSON keys) is made safe for a
terminal line by :func:`printable`: names are shown through it (:func:`..naming.shown`,
the tables of :mod:`..render.table`), and every line dyn writes to stderr passes through
:func:`one_line` on its way out, whatever built it.
"""
from __future__ import annotations

import sys

# categories that are never shown raw: controls (C0, DEL, C1), format characters (bidi
# controls, zero-width ones, ...), line and paragraph separators, lone surrogates (bytes
# of a file name that are not UTF-8)
UNSAFE = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))


def printable(text: str) -> str:
    """``text`` safe on one terminal line: every control character (C0 -- TAB and line ends
    too --, DEL, C1), format character (category Cf: the bidi controls U+202A..U+202E,
    U+2066..U+2069, U+200E, U+200F, U+061C, zero-width characters), line or paragraph
    separator and lone surrogate is shown as Python writes it in a string, ``\\x1b``,
    ``\\u202e``, ``\\U000e0001``; everything else (accents, CJK, spaces) is unchanged.
    Backslashes are left as they are, so escaping twice changes nothing."""
    if text.isprintable():  # (false also for spaces other than ' ', which stay)
        return text
    import unicodedata

    return "".join(_escaped(char) if unicodedata.category(char) in UNSAFE else char
                   for char in text)


def _escaped(char: str) -> str:
    code = ord(char)
    return (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
            else f"\\U{code:08x}")


LINE_CHARS = 1000  # the longest line dyn writes to stderr


def one_line(message: str, most: int = LINE_CHARS) -> str:
    """``message`` as one safe line of at most about ``most`` characters: its lines joined
    by spaces (a library's message may have several), then :func:`printable`, then, when
    still longer, its middle left out with a note of how many characters."""
    text = printable(message.rstrip("\r\n").replace("\r\n", " ").replace("\r", " ")
                     .replace("\n", " "))
    if len(text) <= most:
        return text
    keep = (most - 40) // 2
    return f"{text[:keep]} ... [{len(text) - 2 * keep} characters left out] ... {text[-keep:]}"


class Console:
    """Where warnings go: stderr, nowhere (``quiet``) or a list (``captured``)."""

    def __init__(self) -> None:
        self.quiet = False  # --quiet: no warnings (errors are always printed)
        self.captured: list[str] | None = None  # a list: warnings kept, not printed

    def reset(self, quiet: bool = False) -> None:
        """A new command: warnings shown (or not, with ``quiet``), none captured."""
        self.quiet, self.captured = quiet, None

    def capture(self, into: list[str] | None) -> None:
        """Keep warnings in ``into`` from now on (None: print them again)."""
        self.captured = into

    def warn(self, message: str) -> None:
        if self.captured is not None:
            self.captured.append(message)
        elif not self.quiet and sys.stderr is not None:
            try:
                print(one_line(f"dyn: warning: {message}"), file=sys.stderr)
            except (OSError, ValueError):  # stderr closed or full: not worth the run
                pass


console = Console()


def show_text(text: str) -> None:
    """Print a text report or table for people on stdout, each of its lines made safe for
    the terminal (:func:`printable`): names and paths in it come from model and state
    files. The one writer of human text on stdout; JSON, CSV and files keep names exact."""
    print("\n".join(printable(line) for line in text.split("\n")))


def warn(message: str) -> None:
    """A warning line on stderr (results stay on stdout): :meth:`Console.warn`."""
    console.warn(message)
