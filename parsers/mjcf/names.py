"""Names of bodies and joints: unique per kind, unnamed ones ``body<id>`` / ``joint<id>``."""
from __future__ import annotations

from ..errors import quoted
from treedyn.engine.names import unique
from .state import BuildState
from .types import WORLD


class Names(BuildState):
    """MuJoCo's naming of the compiled bodies and joints."""

    def _name_joints(self) -> None:
        """MuJoCo names, unique per kind; unnamed joints get ``joint<id>``. Body names are
        checked here, before fusestatic removes bodies, and completed by _name_bodies."""
        self._repeated_names([(b.name, b) for b in self.bodies[1:]], "body",
                             reserved={WORLD: self.bodies[0]})
        joints = [joint for body in self.bodies for joint in body.joints]
        self._unique_names([(j.name, j) for j in joints], "joint", reserved={})

    def _name_bodies(self) -> None:
        """Unnamed bodies get ``body<id>`` with their compiled (after fusestatic) ids."""
        self._unique_names([(b.name, b) for b in self.bodies[1:]], "body",
                           reserved={WORLD: self.bodies[0]})

    @staticmethod
    def _repeated_names(items, prefix: str, reserved: dict) -> dict:
        """The named items by name (over ``reserved``); ParseError for a repeated name."""
        taken = dict(reserved)
        for name, item in items:
            if not name:
                continue
            if name in taken:
                first = taken[name]
                line = first.node.line if first.node is not None else 0
                raise item.node.error(f'repeated {prefix} name {quoted(name)}'
                                      + (f" (first at line {line})" if line else ""))
            taken[name] = item
        return taken

    @classmethod
    def _unique_names(cls, items, prefix: str, reserved: dict) -> None:
        """Check named items are unique, then name the unnamed ``<prefix><id>`` (+ ``_``)."""
        taken = cls._repeated_names(items, prefix, reserved)
        for index, (name, item) in enumerate(items, start=1 if prefix == "body" else 0):
            if name:
                continue
            candidate = unique(f"{prefix}{index}", taken)
            item.name = candidate
            taken[candidate] = item
