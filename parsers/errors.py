"""The one error type the parsers raise for an unreadable or invalid model file.

``str(error)`` is a single line a user can act on, in the style of compilers::

    robot.urdf:42: <joint name="elbow">: axis has zero length

The parts that are unknown are left out: ``robot.urdf: cannot read file (...)`` has no
line, ``robot.urdf:3: not well-formed XML (...)`` has no element.
"""
from __future__ import annotations

from treedyn.engine.description import SourceRef


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
