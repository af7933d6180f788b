"""Names looked up: the known names closest to one that is not, for messages that suggest
them (the parsers', the engine's and the command line's); and the one rule for a name not
yet taken (:func:`unique`)."""
from __future__ import annotations

import difflib
from collections.abc import Iterable

LONGEST = 240  # names compared at most this long: difflib is quadratic in their length


def closest(name: str, known: Iterable[str], most: int = 1) -> list[str]:
    """Up to ``most`` of ``known`` close to ``name`` (difflib's ratio of 0.6 or more), the
    closest first; none for a name longer than :data:`LONGEST`."""
    if len(name) > LONGEST:
        return []
    return difflib.get_close_matches(name, [k for k in known if len(k) <= LONGEST], n=most)


def unique(name: str, taken) -> str:
    """``name``, with ``_`` appended while ``taken`` (a set or a dict of names) holds it
    (the caller adds it): the free-flyer's joint and world link, the payload link, the MJCF
    reader's unnamed bodies and joints, the writers' bodies, joints and meshes."""
    while name in taken:
        name += "_"
    return name
