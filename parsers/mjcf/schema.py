"""MuJoCo's MJCF schema: the attributes each element takes, the elements each contains.

MuJoCo checks a model against its schema before it compiles anything and refuses one that
breaks it ("Schema violation"): an attribute the element does not take (a typo such as
``mas="5"`` would otherwise leave the default density in charge of the mass), an element
its parent cannot contain, or a second copy of an element allowed once. :func:`check`
does the same, naming the file and line of the offending element.

Like MuJoCo, it does not look inside ``<frame>`` and ``<replicate>`` (MuJoCo expands them
after its schema check, so it accepts -- and ignores -- unknown attributes there), and it
sees included files as part of the including one.

:data:`TABLE` is MuJoCo 4.0's schema (``mujoco.mj_printSchema``), one entry per element:
its path from ``<mujoco>`` (``body`` and ``default`` nest in themselves: a body's child
body is ``body`` again, and ``body`` is also ``<worldbody>``, which takes no attributes),
`` ?`` when it may appear at most once in its parent, and its attributes (``-``: none).
tests/test_mjcf.py compares it with the installed MuJoCo's schema.
"""
from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path

from ..errors import WORD_CHARACTERS, quoted

RECURSIVE = ("body", "default")  # elements that nest in themselves
EXPANDED = ("frame", "replicate")  # body contents MuJoCo checks only after expanding them

TABLE = Path(__file__).with_name("schema_4_0.txt")  # MuJoCo 4.0's, one element a line


@lru_cache(maxsize=1)
def schema() -> dict[str, tuple[frozenset[str], bool]]:
    """path -> (attributes, at most once in its parent), read from :data:`TABLE`."""
    words: dict[str, list[str]] = {}
    once: dict[str, bool] = {}
    path = ""
    for line in TABLE.read_text(encoding="utf-8").strip("\n").splitlines():
        found = line.split()
        if not line.startswith(" "):
            path, found = found[0], found[1:]
            once[path] = found[:1] == ["?"]
            words[path], found = [], found[once[path]:]
        words[path].extend(word for word in found if word != "-")
    return {path: (frozenset(words[path]), once[path]) for path in words}


def check(root) -> None:
    """Raise the ParseError of the first element of ``root`` (a
    :class:`.types.Node` tree, includes expanded) that breaks the schema, in
    document order."""
    table = schema()
    _attributes(root, table["mujoco"][0], prefixed=True)
    _children(root, "", table)


def _children(node, path: str, table) -> None:
    seen: dict[str, int] = {}
    for child in node.children:
        inner = _child_path(path, child.tag, table)
        if inner is None:
            if path in ("body", "worldbody") and child.tag in EXPANDED:
                continue
            if not path and child.tag in ("body",) + EXPANDED:  # MuJoCo would skip it
                raise child.error(f"a <{child.tag}> belongs in <worldbody> (MuJoCo skips one "
                                  f"here without a word, and its bodies with it)")
            where = "<mujoco>" if not path else f"<{node.tag}>"
            raise child.error(f"unknown element <{quoted(child.tag, WORD_CHARACTERS, '')}> in "
                              f"{where} (MuJoCo's schema has no such element there)")
        seen[inner] = seen.get(inner, 0) + 1
        if inner != "worldbody":  # its attributes: the compiler's error (it takes none)
            allowed, once = table[inner]
            if once and seen[inner] == 2:
                raise child.error(f"a second <{child.tag}> in this <{node.tag}>; MuJoCo "
                                  f"allows one")
            _attributes(child, allowed)
        _children(child, inner, table)


def _child_path(parent: str, tag: str, table) -> str | None:
    """The table path of a ``tag`` element in the element at ``parent`` ("" for
    ``<mujoco>``), or None when the schema has no such element there."""
    if not parent:
        path = "worldbody" if tag == "worldbody" else (None if tag == "body" else tag)
    else:
        base = "body" if parent == "worldbody" else parent
        path = tag if tag in RECURSIVE and base == tag else f"{base}/{tag}"
    return path if path == "worldbody" or path in table else None


def _attributes(node, allowed: frozenset[str], prefixed: bool = False) -> None:
    """Every attribute of ``node`` is in ``allowed``; with ``prefixed`` (the root, as in
    MuJoCo), attributes with a namespace prefix (``xsi:schemaLocation``) are left alone."""
    for name in node.element.attrib:
        if name in allowed or (prefixed and name.startswith("{")):
            continue
        written = _as_written(node.element, name)
        close = difflib.get_close_matches(written, sorted(allowed), n=1)
        hint = f'; did you mean {quoted(close[0])}?' if close else ""
        raise node.error(f'unrecognized attribute {quoted(written)} (MuJoCo\'s schema has no such '
                         f"attribute on <{node.tag}>{hint})")


def _as_written(element, name: str) -> str:
    """An attribute's name as the file writes it: lxml's ``{uri}local`` as ``prefix:local``."""
    if not name.startswith("{"):
        return name
    uri, local = name[1:].split("}", 1)
    prefixes = {space: prefix for prefix, space in element.nsmap.items() if prefix}
    prefixes.setdefault("http://www.w3.org/XML/1998/namespace", "xml")
    return f"{prefixes.get(uri, uri)}:{local}"
