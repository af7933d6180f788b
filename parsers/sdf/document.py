"""An SDFormat file read into its model scopes: the one model, its nested models, and
the models it ``<include>`` s, each with the file it was written in.

* The file's root is ``<sdf version="1.4">`` to ``1.11``. It holds one ``<model>``, or a
  ``<world>`` holding one (a ``<model>`` or an ``<include>``), whose ``<gravity>``
  (``<physics><gravity>`` in 1.4) is kept. Several models are refused at the second.
* ``<include>``: its ``<uri>`` is ``model://NAME[/FILE]`` (looked for as NAME in the
  including file's folder, then in each folder of ``PackagePaths.models`` -- the command
  line's GZ_SIM_RESOURCE_PATH and SDF_PATH), or a path (``file://`` or plain, relative to
  the including file). A folder is a model folder: its ``model.config`` names the file
  (its first ``<sdf>``), else ``model.sdf``. The file must lie in the top file's folder
  (or below it) or in a model path, links followed; :data:`MAX_DEPTH` includes deep and
  :data:`MAX_FILES` files at most, each read within :data:`~..files.MODEL_BYTES`.
  ``<name>``, ``<pose>`` and ``<static>`` of the include override the model's own;
  ``<placement_frame>`` is refused.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from lxml import etree

from treedyn.engine.description import SourceRef

from ..errors import ParseError, quoted
from ..files import MODEL_BYTES, confined, not_a_file, read_bounded
from ..packages import PackagePaths, located, models_searched
from ..xml_text import read_xml
from .values import child, flag, here, text_of, vector

VERSIONS = tuple(f"1.{minor}" for minor in range(4, 12))
MAX_DEPTH = 32  # includes within includes
MAX_FILES = 1000  # files read for one model
CONFIG_BYTES = 1 << 20  # a model.config


@dataclass
class Scope:
    """One ``<model>``: ``prefix`` is "" for the top model and "a::b::" for a nested one
    (its frames are named ``prefix + name``); ``pose`` the ``<pose>`` that places it (the
    include's when it overrides the model's own) relative to its parent scope's model
    frame (the world for the top model); ``version`` that of the file it was written in."""

    element: etree._Element
    file: str
    prefix: str
    name: str
    pose: etree._Element | None
    static: bool
    version: tuple[int, int]
    parent: "Scope | None" = None
    source: SourceRef = field(default_factory=SourceRef)
    pose_file: str = ""  # the file ``pose`` is written in, when not ``file`` (an include's)

    @property
    def frame(self) -> str:
        """The name of this model's frame: ``__model__`` for the top model, else the
        nested model's scoped name."""
        return self.prefix[:-2] if self.prefix else "__model__"

    def at(self, element: etree._Element) -> SourceRef:
        """The SourceRef of an element of this scope: ``tag name="..."`` at its line."""
        name = element.get("name")
        label = element.tag if name is None else f"{element.tag} name={quoted(name)}"
        return SourceRef(self.file, element.sourceline or 0, label)


@dataclass
class Document:
    scopes: list[Scope]  # the top model first, then nested ones, parents before children
    gravity: np.ndarray | None  # the world's, when the file is a world that says it
    files: list[str]  # real paths of every file read, in order
    roots: list[str]  # the folders includes may come from (real paths)


def read_document(path: str, paths: PackagePaths) -> Document:
    """The model scopes of the SDFormat file at ``path``."""
    roots = [os.path.realpath(os.path.dirname(os.path.abspath(path)))]
    roots += [os.path.realpath(folder) for folder in paths.models if folder]
    document = Document([], None, [], roots)
    root, version = _root(path, document)
    model, gravity = _the_model(root, path)
    document.gravity = gravity
    top = _scope(model, path, "", None, version, None, None)
    _walk(top, document, paths, 0)
    return document


def _root(path: str, document: Document) -> tuple[etree._Element, tuple[int, int]]:
    """The ``<sdf>`` root of the file at ``path`` and its version, the file counted."""
    if len(document.files) >= MAX_FILES:
        raise ParseError(f"more than {MAX_FILES} files included", path)
    try:
        data = read_bounded(path, MODEL_BYTES)
    except OSError as error:
        raise ParseError(f"cannot read file ({error.strerror})", path) from None
    document.files.append(os.path.realpath(path))
    root = read_xml(data, path)
    if root.tag != "sdf":
        raise ParseError(f"root element is <{root.tag}>, expected <sdf>", path,
                         root.sourceline or 0)
    text = (root.get("version") or "").strip()
    if text not in VERSIONS:
        given = "no version" if not text else f"version={quoted(text)}"
        raise ParseError(f"{given}: dyn reads SDFormat 1.4 to 1.11", path,
                         root.sourceline or 0, "sdf")
    major, minor = text.split(".")
    return root, (int(major), int(minor))


def _the_model(root: etree._Element, path: str) -> tuple[etree._Element, np.ndarray | None]:
    """The one model of an ``<sdf>`` root (a ``<model>``, or an ``<include>`` in a world)
    and the world's gravity; refused when there is none or several."""
    worlds = list(root.iterchildren("world"))
    holder = worlds[0] if worlds else root
    models = list(holder.iterchildren("model", "include"))
    extra = worlds[1:] + models[1:]
    if extra:
        raise ParseError(f"a second <{extra[0].tag}>: dyn reads one model per file", path,
                         extra[0].sourceline or 0, extra[0].tag)
    if not models:
        where = "<world>" if worlds else "<sdf>"
        raise ParseError(f"{where} holds no <model>", path, holder.sourceline or 0)
    gravity = None
    if worlds:
        owner = SourceRef(path, holder.sourceline or 0, "world")
        physics = child(holder, "physics")
        if child(holder, "gravity") is not None:
            gravity = vector(holder, "gravity", None, owner)
        elif physics is not None and child(physics, "gravity") is not None:
            gravity = vector(physics, "gravity", None, owner)
    return models[0], gravity


def _scope(model: etree._Element, file: str, prefix: str, parent: Scope | None,
           version: tuple[int, int], include: etree._Element | None,
           include_scope: Scope | None) -> Scope:
    """The scope of a ``<model>`` element (``include``: the ``<include>`` that brought it,
    whose name, pose and static override the model's)."""
    owner = SourceRef(file, model.sourceline or 0, "model")
    name = model.get("name")
    pose, static = child(model, "pose"), flag(model, "static", False, owner)
    if include is not None:
        where = include_scope.at(include)
        if child(include, "placement_frame") is not None:
            raise ParseError.at(here(child(include, "placement_frame"), where),
                                "<placement_frame> is not supported")
        name = text_of(child(include, "name"), name or "")
        pose = child(include, "pose") if child(include, "pose") is not None else pose
        static = flag(include, "static", static, where)
    if not name:
        raise ParseError.at(owner, "<model> has no name")
    scoped = prefix + (f"{name}::" if parent is not None else "")
    scope = Scope(model, file, scoped, name, pose, static or (parent is not None and
                                                               parent.static),
                  version, parent, SourceRef(file, model.sourceline or 0,
                                             f"model name={quoted(name)}"))
    if include is not None and child(include, "pose") is not None:
        scope.pose_file = include_scope.file  # written in the including file
    return scope


def _walk(scope: Scope, document: Document, paths: PackagePaths, depth: int) -> None:
    """Add ``scope`` and, depth first, the models nested in or included by it."""
    document.scopes.append(scope)
    for element in scope.element.iterchildren("model", "include"):
        if element.tag == "model":
            nested = _scope(element, scope.file, scope.prefix, scope, scope.version, None,
                            None)
            _walk(nested, document, paths, depth)
            continue
        if depth >= MAX_DEPTH:
            raise ParseError.at(scope.at(element), f"includes nest deeper than {MAX_DEPTH}")
        file = include_file(element, scope, document, paths)
        root, version = _root(file, document)
        models = list(root.iterchildren("model"))
        if len(models) != 1:
            raise ParseError(f"an included file must hold one <model>, it holds "
                             f"{len(models)}", file, root.sourceline or 0)
        nested = _scope(models[0], file, scope.prefix, scope, version, element, scope)
        _walk(nested, document, paths, depth + 1)


def include_file(element: etree._Element, scope: Scope, document: Document,
                 paths: PackagePaths) -> str:
    """The file an ``<include>`` names, found and confined (see the module notes)."""
    where = scope.at(element)
    uri_element = child(element, "uri")
    uri = text_of(uri_element)
    if not uri:
        raise ParseError.at(where, "<include> has no <uri>")
    where = here(uri_element, where)
    # paths as given: errors name files as the user did
    found = located(uri, os.path.dirname(scope.file), paths)
    if found is None:
        raise ParseError.at(where, f"<uri> {quoted(uri)} names no file (looked in "
                                   f"{models_searched(os.path.dirname(scope.file), paths)})")
    if os.path.isdir(found):
        found = _model_file(found, where)
    problem = not_a_file(found)
    if problem:
        raise ParseError.at(where, f"<uri> {quoted(uri)}: {found} {problem}")
    real, refusal = confined(found, document.roots, f"the model's folder "
                                                    f"({document.roots[0]}) and the model paths")
    if refusal:
        raise ParseError.at(where, f"<uri> {quoted(uri)} names {real}{refusal}")
    return found


def _model_file(folder: str, where: SourceRef) -> str:
    """The SDFormat file of a model folder: ``model.config``'s first ``<sdf>``, else
    ``model.sdf``."""
    config = os.path.join(folder, "model.config")
    if os.path.isfile(config):
        try:
            root = etree.fromstring(read_bounded(config, CONFIG_BYTES),
                                    etree.XMLParser(resolve_entities=False, no_network=True))
        except (OSError, etree.XMLSyntaxError, ValueError) as error:
            raise ParseError.at(where, f"{config} cannot be read ({error})") from None
        named = text_of(child(root, "sdf"))
        if named:
            return os.path.join(folder, named)
    return os.path.join(folder, "model.sdf")
