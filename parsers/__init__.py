"""treedyn.parsers: model files to a :class:`TreeDescription`, and on to a :class:`Model`.

The format of a file is decided by its suffix, then by its root element: ``.urdf`` is
URDF; ``.xml`` (and ``.mjcf``) is URDF when its root is ``<robot>`` and MJCF when it is
``<mujoco>``; ``.sdf`` (and an ``.xml`` whose root is ``<sdf>``) is SDFormat
(:mod:`treedyn.parsers.sdf`, its ``model://`` paths in ``PackagePaths.models``);
``.xacro`` (``robot.urdf.xacro``) is xacro, expanded to URDF first
(:mod:`treedyn.parsers.xacro`, with its arguments and the package search paths the caller
passes).
Every problem with the file (missing, unreadable, not XML, invalid model) is a
:class:`ParseError` naming the file. To add a format, map its root element to a parser in
``ROOT_PARSERS`` (and a suffix that alone decides it in ``SUFFIX_ROOTS``).
"""
from __future__ import annotations

import gc
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from lxml import etree

from treedyn.engine.description import TreeDescription
from treedyn.engine.model import Model, build_model

from .errors import ArgumentError, ParseError
from .files import MODEL_BYTES, lexical_path, not_a_file, open_bounded, read_bounded
from .packages import PackagePaths, XacroInput
from .urdf import parse_urdf, parse_urdf_string
from .xml_text import read_xml


def parse_xacro(path: str, options: XacroInput = XacroInput(),
                packages: PackagePaths = PackagePaths()) -> TreeDescription:
    """The description of the xacro file at ``path`` (see :mod:`treedyn.parsers.xacro`).

    Imported on first use: a URDF or MJCF command does not pay for xacro's evaluator.
    """
    from .xacro import parse_xacro as parse

    return parse(path, options, packages)


def parse_sdf(path: str, packages: PackagePaths = PackagePaths()) -> TreeDescription:
    """The description of the SDFormat file at ``path`` (see :mod:`treedyn.parsers.sdf`),
    its ``model://`` includes looked for in ``packages.models``.

    Imported on first use, as the MJCF parser is.
    """
    from .sdf import parse_sdf as parse

    return parse(path, packages)


def parse_mjcf(path: str, data: bytes | None = None) -> TreeDescription:
    """The description of the MJCF file at ``path`` (see :mod:`treedyn.parsers.mjcf`).

    Imported on first use: a URDF command does not pay for the MJCF compiler's modules.
    """
    from .mjcf import parse_mjcf as parse

    return parse(path, data)


# root element -> parser taking a path (and the file's bytes, when they are not read from it)
ROOT_PARSERS: dict[str, Callable[..., TreeDescription]] = {
    "robot": parse_urdf,
    "mujoco": parse_mjcf,
    "sdf": parse_sdf,
}
# suffix -> the root element it implies, or "" to read the root element from the file
SUFFIX_ROOTS = {".urdf": "robot", ".xml": "", ".mjcf": "", ".sdf": "sdf"}  # "": the root
# element decides


def load_description(path: str, xacro: XacroInput = XacroInput(),
                     packages: PackagePaths = PackagePaths(),
                     data: bytes | None = None) -> TreeDescription:
    """The description of the model file at ``path``, in the format its content shows; a
    ``.xacro`` file is expanded with ``xacro`` (its arguments, ``$(env)``), its packages
    looked for in ``packages`` beyond the folders above it. With ``data``, the model is
    those bytes (a URDF or MJCF document, by its root element; a model read from stdin),
    ``path`` names it in errors and its relative paths resolve from the folder of ``path``."""
    path = str(path)
    if data is not None:
        root = read_xml(data, path)
        name = etree.QName(root).localname
        if name == "sdf":
            raise ParseError("an SDFormat model is read from its file (its includes resolve "
                             "from there), not from stdin", path, root.sourceline or 0)
        return _parser(name, path, root.sourceline or 0)(path, data)
    if not path.strip():
        raise ParseError(f"no model file given (the path is {path!r})")
    suffix = Path(path).suffix.lower()
    if suffix == ".xacro":
        return parse_xacro(path, xacro, packages)
    if suffix not in SUFFIX_ROOTS:
        raise ParseError(_unsupported_suffix(suffix), path)
    implied = SUFFIX_ROOTS[suffix]
    reduced = lexical_path(path)  # MuJoCo reduces the model's own path as text (link/.. is
    if not implied and reduced != path and not not_a_file(reduced):  # gone), as it does
        root, line = _root_tag(reduced)  # the paths inside: an MJCF file there is the model
        if root == "mujoco":
            return parse_mjcf(reduced)
    root, line = (implied, 0) if implied else _root_tag(path)
    if root == "mujoco" and reduced != path:  # MuJoCo reads the reduced path, or nothing
        return parse_mjcf(reduced)
    if root == "sdf":
        return parse_sdf(path, packages)
    return _parser(root, path, line)(path)


def _parser(root: str, path: str, line: int) -> Callable[..., TreeDescription]:
    """The parser of a document whose root element is ``root`` (at ``line``)."""
    parser = ROOT_PARSERS.get(root)
    if parser is None:
        expected = " or ".join(f"<{tag}>" for tag in ROOT_PARSERS)
        raise ParseError(f"root element is <{root}>, expected {expected}", path, line)
    return parser


def check_finite(description: TreeDescription) -> TreeDescription:
    """The description, once every number the algorithms take from it is finite: values
    that are finite as written can overflow once compiled (a sphere of size 1e200 has an
    infinite volume, a mass of 1e308 an infinite density or moment). The first such link
    or joint is one ParseError naming the element it came from. The dynamics need this;
    ``check-inertia`` reports such a link as its own finding instead."""
    links, joints = description.links, description.joints
    # (nlinks, 13): mass, com, tensor. Below SAFE the spatial inertia (products of three of
    # them at most) is finite for sure; the other links are checked one by one.
    raw = _rows([link.inertia for link in links], ("mass", "com", "inertia"), 13)
    with np.errstate(all="ignore"):
        for k in np.flatnonzero(~np.all(np.abs(raw) < SAFE, axis=1)):
            link = links[k]
            if not np.all(np.isfinite(link.inertia.spatial())) or \
                    not np.all(np.isfinite(raw[k])):
                source = link.inertial_source if link.inertial_source.file else link.source
                raise ParseError.at(source, f"the mass and inertia of link '{link.name}' "
                                    "overflow a double once compiled (values this large "
                                    "cannot be computed with)")
    placements = _rows(joints, ("rotation", "translation", "axis"), 15)
    bad = np.flatnonzero(~np.all(np.isfinite(placements), axis=1))
    if len(bad):
        joint = joints[bad[0]]
        raise ParseError.at(joint.source, f"the placement of joint '{joint.name}' "
                            "overflows a double once compiled")
    return description


def _rows(items: list, fields: tuple[str, ...], width: int) -> np.ndarray:
    """(len(items), width): each item's ``fields`` (numbers or arrays) raveled side by side,
    as floats; one array per field rather than one tuple per item."""
    if not items:
        return np.zeros((0, width))
    return np.concatenate([np.array([getattr(item, name) for item in items], dtype=float)
                           .reshape(len(items), -1) for name in fields], axis=1)


FLOATING = {"mjcf": "an MJCF model floats a body with <freejoint>",
            "sdf": "an SDFormat model floats unless a joint attaches it to the world"}
SAFE = 1e100  # |numbers| under this: mass x com^2 and the sums of spatial() stay finite


def load_model(path: str, free_flyer: bool = False, xacro: XacroInput = XacroInput(),
               packages: PackagePaths = PackagePaths(), urdf_only: bool = False,
               data: bytes | None = None) -> Model:
    """The compact-tree model of a file; ``free_flyer`` floats the URDF root (``root_joint``);
    ``xacro``, ``packages`` and ``data`` as :func:`load_description` takes them.

    MJCF models say themselves which bodies float (``<freejoint>``): ``free_flyer`` is a
    URDF option and an :class:`ArgumentError` (a ParseError naming the argument) for them,
    unless ``urdf_only`` (a command comparing models of either format), where an MJCF
    model is read as it is.
    """
    with collector_paused():
        description = load_description(path, xacro, packages, data)
        if urdf_only and description.format != "urdf":
            free_flyer = False
        if free_flyer and description.format != "urdf":
            how = FLOATING.get(description.format, FLOATING["mjcf"])
            raise ArgumentError("free_flyer", f"free_flyer applies to URDF models; {how}",
                                str(path))
        if free_flyer:
            description = description.with_free_flyer()
        return build_model(description)


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector off while a model is read, as it was after.

    Reading makes about ten objects per element (specs, arrays, source references), none
    of them garbage in a cycle, and every few hundred new objects start a collection that
    walks the young ones, every few thousand all of them: on a 100 000-link URDF those
    walks were a third of the loading time. Memory is unchanged (the objects are all kept)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _root_tag(path: str) -> tuple[str, int]:
    """(name, line) of the root element, read without parsing the rest of the file."""
    try:
        with open_bounded(path, MODEL_BYTES) as stream:
            for _event, element in etree.iterparse(stream, events=("start",),
                                                   resolve_entities=False, no_network=True):
                return etree.QName(element).localname, element.sourceline or 0
    except OSError as error:
        raise ParseError(f"cannot read file ({error.strerror})", path) from None
    except etree.XMLSyntaxError:  # read as urdfdom's tinyxml2 would, or libxml2's error
        root = read_xml(read_bounded(path, MODEL_BYTES), path)
        return etree.QName(root).localname, root.sourceline or 0
    raise ParseError("not well-formed XML (no root element)", path)


def _unsupported_suffix(suffix: str) -> str:
    expected = ", ".join((*SUFFIX_ROOTS, ".xacro"))
    return f"unsupported file type {suffix or '(no suffix)'!r}, expected {expected}"


__all__ = ["ArgumentError", "PackagePaths", "ParseError", "XacroInput", "check_finite",
           "load_description", "load_model", "parse_mjcf", "parse_sdf", "parse_urdf", "parse_urdf_string", "parse_xacro"]
