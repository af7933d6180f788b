"""What the command line itself reads of the environment and the process: the version,
whether stderr is coloured, and the check at start of the ``TREEDYN_*`` counts; the
library's settings (those counts, worker processes, search paths) are
:mod:`treedyn.session.environment`'s.

Colour on stderr (:func:`colour_wanted`): ``--color always|never`` decides; otherwise
``NO_COLOR`` (https://no-color.org: set and not empty) turns it off, then ``FORCE_COLOR``
(set and not empty, https://force-color.org) turns it on, then it is on when the stream
is a terminal whose ``TERM`` is not ``dumb``.
"""
import os
import sys

from treedyn.session.environment import COUNTS, count

VERSION = "0.1.0"  # the package's version (pyproject.toml reads it from here)


def version_line() -> str:
    """What ``dyn --version`` prints."""
    return f"dyn (treedyn) {VERSION}"


def interrupted(number, frame) -> None:
    """SIGINT while dyn starts: exit code 130, nothing printed."""
    os._exit(130)


def check_environment() -> None:
    """Exit 2 with one line when a count of :data:`COUNTS` is not a positive whole number
    (before any module reads it)."""
    for name in COUNTS:
        value = os.environ.get(name, "").strip()
        if value and count(name, None) is None:
            if sys.stderr is not None:
                print(f"dyn: {name}={value!r} is not a positive whole number", file=sys.stderr)
            os._exit(2)


def colour_wanted(choice: str | None, stream) -> bool:
    """Whether dyn colours what it writes to ``stream``: ``choice`` (--color) "always" or
    "never" decides; else (auto) NO_COLOR off, FORCE_COLOR on, else a terminal that is not
    TERM=dumb. NO_COLOR wins over FORCE_COLOR: the person who set it asked for none."""
    if choice in ("always", "never"):
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # closed, or not a file
        return False
