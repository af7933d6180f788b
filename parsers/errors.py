"""The one error type the parsers raise for an unreadable or invalid model file.

``str(error)`` is a single line a user can act on, in the style of compilers::

    robot.urdf:42: <joint name="elbow">: axis has zero length

The parts that are unknown are left out: ``robot.urdf: cannot read file (...)`` has no
line, ``robot.urdf:3: not well-formed XML (...)`` has no element.
"""
from __future__ import annotations

from treedyn.engine.description import SourceRef

QUOTED_CHARACTERS = 200  # the most of a file's text an error line quotes
WORD_CHARACTERS = 40  # the most of one word quoted after the attribute that holds it


def quoted(text: str, limit: int = QUOTED_CHARACTERS, mark: str = '"') -> str:
    """``text`` from a model or mesh file as an error line quotes it: between ``mark``s,
    and when longer than ``limit`` characters its start and end around "..." with its
    length said (``"aaaa...zz" (8388608 characters)``), so a line stays short whatever
    the file holds. Line ends and other control characters are escaped (one line)."""
    text = str(text)
    if len(text) <= limit:
        return mark + _one_line(text) + mark
    head, tail = text[:limit * 2 // 3], text[-(limit // 3 - 3):]
    return f"{mark}{_one_line(head)}...{_one_line(tail)}{mark} ({len(text)} characters)"


def _one_line(text: str) -> str:
    """``text`` with control characters (line ends, tabs, ...) written as escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


class ParseError(ValueError):
    """An invalid model file.

    Attributes: ``file`` (path as given, "" if unknown), ``line`` (1-based, 0 if unknown),
    ``element`` (e.g. ``joint name="elbow"``, "" if none) and ``problem`` (what is wrong).
    """

    def __init__(self, problem: str, file: str = "", line: int = 0, element: str = ""):
        self.problem = problem
        self.file = file
        self.line = int(line or 0)
        self.element = element
        super().__init__(self._message())

    @classmethod
    def at(cls, source: SourceRef, problem: str) -> ParseError:
        """The error for a problem found at ``source`` (file, line, element)."""
        return cls(problem, source.file, source.line, source.element)

    def _message(self) -> str:
        parts = []
        if self.file:
            parts.append(f"{self.file}:{self.line}" if self.line else self.file)
        elif self.line:
            parts.append(f"line {self.line}")
        if self.element:
            parts.append(f"<{self.element}>")
        parts.append(self.problem)
        return ": ".join(parts)

    def __reduce__(self):
        return (type(self), (self.problem, self.file, self.line, self.element))


class ArgumentError(ParseError):
    """An argument of a loading function that does not apply to this file (``free_flyer``
    for an MJCF model). ``argument`` is the parameter's name and ``problem`` starts with
    it, so the line speaks the function's words; a caller with names of its own for the
    arguments (the command line's options) rewords it by ``argument``
    (:func:`treedyn.cli.errors.worded`)."""

    def __init__(self, argument: str, problem: str, file: str = "", line: int = 0,
                 element: str = ""):
        self.argument = argument
        super().__init__(problem, file, line, element)

    def __reduce__(self):
        return (type(self), (self.argument, self.problem, self.file, self.line, self.element))
