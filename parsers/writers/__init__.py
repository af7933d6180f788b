"""treedyn.parsers.writers: a :class:`TreeDescription` (any format the parsers read) written
as the text of a model in another format.

``TARGETS`` maps an output file's suffix to its writer; :func:`convert` picks one. Each
writer returns a :class:`Converted`: the text, and notes on what the target format does
not carry. A model the target cannot express is a :class:`ParseError` at the element.
"""
from __future__ import annotations

from collections.abc import Callable

from treedyn.engine.description import TreeDescription

from ..errors import ParseError
from ..packages import PackagePaths
from .converted import Converted


def mjcf(description: TreeDescription, *, free_flyer: bool, source: str,
         packages: PackagePaths = PackagePaths(), output: str = "") -> Converted:
    """MuJoCo MJCF (:mod:`treedyn.parsers.writers.mjcf`)."""
    from .mjcf import write_mjcf

    return write_mjcf(description, free_flyer=free_flyer, source=source, packages=packages,
                      output=output)


def urdf(description: TreeDescription, *, free_flyer: bool, source: str,
         packages: PackagePaths = PackagePaths(), output: str = "") -> Converted:
    """URDF (:mod:`treedyn.parsers.writers.urdf`); a floating root is left to the reader
    of the URDF (Pinocchio's free-flyer), so ``free_flyer``, ``packages`` and ``output``
    play no part."""
    from .urdf import write_urdf

    return write_urdf(description, source=source)


# output suffix -> writer
TARGETS: dict[str, Callable[..., Converted]] = {".xml": mjcf, ".mjcf": mjcf, ".urdf": urdf}


def convert(description: TreeDescription, target_suffix: str, *, free_flyer: bool,
            source: str, packages: PackagePaths = PackagePaths(),
            output: str = "") -> Converted:
    """``description`` (read from ``source``) as the text of a ``target_suffix`` model
    (".xml", ".mjcf" or ".urdf"); ``free_flyer`` floats a URDF model's root; ``packages``
    says where ``package://`` files are looked for, ``output`` where the text goes (MJCF
    names a mesh below its folder relative to it)."""
    writer = TARGETS.get(target_suffix.lower())
    if writer is None:
        raise ParseError(f"no model format is written as {target_suffix or '(no suffix)'!r} "
                         f"(written: {', '.join(TARGETS)})", source)
    return writer(description, free_flyer=free_flyer, source=source, packages=packages,
                  output=output)


__all__ = ["TARGETS", "Converted", "convert"]
