"""MJCF parser: a MuJoCo ``<mujoco>`` file to a format-neutral :class:`TreeDescription`.

What is supported, and with which of MuJoCo's rules, is written down in ``docs/mjcf.md``.
The document is read with its includes (:mod:`.document`) and checked against MuJoCo's
schema (:mod:`.schema`), then compiled by :class:`.builder.Builder`.
"""
from __future__ import annotations

import dataclasses
import os
import sys

from treedyn.engine.description import TreeDescription

from . import schema
from .builder import Builder
from .document import MAX_TOTAL_DEPTH, Document


def parse_mjcf(path: str, data: bytes | None = None) -> TreeDescription:
    """The description of the MJCF file at ``path`` (of bytes ``data`` when given: its
    relative paths resolve from the folder of ``path``); ParseError if unreadable or
    invalid."""
    path = str(path)
    limit = sys.getrecursionlimit()  # the document and the tree are read recursively,
    sys.setrecursionlimit(max(limit, 4 * MAX_TOTAL_DEPTH + 1000))  # a few calls per level
    try:
        document = Document(path, data=data)
        schema.check(document.root)
        description = Builder(document.root, path, document.compilers).build()
        meshes = dict.fromkeys(os.path.realpath(f) for f in description.files)  # in order
        return dataclasses.replace(description, files=(*document.included, *meshes))
    finally:
        sys.setrecursionlimit(limit)


__all__ = ["parse_mjcf"]
