"""SDFormat parser: an ``<sdf>`` file (1.4 to 1.11, one model) to a :class:`TreeDescription`.

What is read, and with which of libsdformat's and Drake's rules, is written down in
``docs/sdf.md``. The document and its includes are read by :mod:`.document`, the frames
placed by :mod:`.frames` and the links and joints built by :mod:`.build`.
"""
from __future__ import annotations

from treedyn.engine.description import TreeDescription

from ..packages import PackagePaths
from .build import Builder
from .document import read_document


def parse_sdf(path: str, paths: PackagePaths = PackagePaths()) -> TreeDescription:
    """The description of the SDFormat file at ``path``; ``paths.models`` are the folders
    ``model://`` URIs are looked for in (after the including file's folder). ParseError
    if unreadable or invalid."""
    path = str(path)
    return Builder(read_document(path, paths), path, paths).build()


__all__ = ["parse_sdf"]
