"""The one rule for a name not yet taken: the MJCF reader's names of unnamed bodies and
joints, and the writers' names of bodies, joints and meshes."""


def unique(name: str, taken) -> str:
    """``name``, with ``_`` appended while ``taken`` (a set or a dict of names) holds it
    (the caller adds it)."""
    while name in taken:
        name += "_"
    return name
