"""ROS packages: where ``$(find PKG)`` and ``package://PKG/...`` point, for xacro, its
includes and mesh files alike.

A package is looked for, first found wins:

1. in the folders above the model (its own folder, then each parent) that hold a
   ``package.xml`` whose ``<name>`` is PKG -- the package the model is being edited in;
2. in the folders of ``ROS_PACKAGE_PATH``, as ``rospack`` finds them: a folder whose
   ``package.xml`` names PKG, the folder itself or any below it (a package's own
   subfolders, hidden folders and those holding a ``CATKIN_IGNORE`` are not searched;
   :data:`CRAWL_DEPTH` levels at most);
3. in the prefixes of ``AMENT_PREFIX_PATH``, as ament does: ``PREFIX/share/PKG``;
4. for a tree without ``package.xml`` files (a description copied out of its package), a
   folder above the model named PKG or holding a folder PKG, and a folder of
   ``ROS_PACKAGE_PATH`` named PKG or holding a folder PKG.

The search paths are arguments (:class:`PackagePaths`), and so are a xacro file's
arguments and the environment its ``$(env)`` reads (:class:`XacroInput`): the command line
reads the environment, the parsers never do.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from .files import read_bounded

MANIFEST_BYTES = 1 << 20  # a package.xml
CRAWL_DEPTH = 4  # folder levels below a ROS_PACKAGE_PATH entry searched for package.xml


@dataclass(frozen=True)
class XacroInput:
    """What a xacro file is expanded with: its arguments (``name:=value``) and the
    environment ``$(env)`` and ``$(optenv)`` read, both as (name, value) pairs."""

    arguments: tuple[tuple[str, str], ...] = ()
    environment: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class PackagePaths:
    """Where packages are looked for beyond the folders above the model: the folders of
    ``ROS_PACKAGE_PATH`` (``ros``) and the install prefixes of ``AMENT_PREFIX_PATH``
    (``ament``), in order; the folders where a mesh file that is not found so is looked
    for last (``meshes``, the ``--mesh-path`` folders: :func:`resolve_uri`); and where
    SDFormat's ``model://NAME`` is looked for (``models``: the folders of
    ``GZ_SIM_RESOURCE_PATH`` then ``SDF_PATH``)."""

    ros: tuple[str, ...] = ()
    ament: tuple[str, ...] = ()
    meshes: tuple[str, ...] = ()
    models: tuple[str, ...] = ()


def find_package(name: str, model_path: str, paths: PackagePaths) -> Path | None:
    """The folder of package ``name`` for the model at ``model_path``, or None."""
    base = Path(model_path).resolve().parent
    ancestors = (base, *base.parents)
    for folder in ancestors:
        if package_name(str(folder)) == name:
            return folder
    for root in paths.ros:
        found = _crawl(str(Path(root).resolve())).get(name)
        if found is not None:
            return Path(found)
    for prefix in paths.ament:
        share = Path(prefix) / "share" / name
        if os.path.isdir(share):
            return share
    for folder in ancestors:
        if folder.name == name:
            return folder
        if os.path.isdir(folder / name):
            return folder / name
    for root in map(Path, paths.ros):
        if root.name == name and os.path.isdir(root):
            return root
        if os.path.isdir(root / name):
            return root / name
    return None


def searched(name: str, model_path: str, paths: PackagePaths) -> str:
    """Where :func:`find_package` looked for ``name``, in one phrase for an error."""
    base = Path(model_path).resolve().parent
    ros = os.pathsep.join(paths.ros) or "unset"
    ament = os.pathsep.join(paths.ament) or "unset"
    return (f"looked above {base} for a package.xml naming it or a folder '{name}', in "
            f"ROS_PACKAGE_PATH ({ros}) and in AMENT_PREFIX_PATH/share ({ament})")


def resolve_uri(uri: str, model_path: str, paths: PackagePaths) -> Path | None:
    """The file a ``package://PKG/rest``, ``model://NAME/rest``, ``file://path`` or plain
    ``path`` names (:func:`located`; plain paths relative to the model's folder), or None
    when nothing is there (a directory or a FIFO is returned, for the bounded reader to say
    what it is). ``package:///rest`` names no package: ``rest`` is looked for above the
    model.

    A relative path or a ``package://`` URI that names nothing so is then looked for in
    each of ``paths.meshes`` in turn, as DIR/path (``package://PKG/rest``: DIR/PKG/rest,
    then DIR/rest), then DIR/<its file name>."""
    found = _resolved(uri, model_path, paths)
    if found is not None or not paths.meshes:
        return found
    written = uri[len("package://"):].lstrip("/") if uri.startswith("package://") else uri
    if Path(written).is_absolute() or uri.startswith("file://"):
        return None
    tails = [written, written.partition("/")[2]] if uri.startswith("package://") else [written]
    tails.append(Path(written).name)
    for folder in paths.meshes:
        for tail in dict.fromkeys(t for t in tails if t):
            candidate = Path(folder) / tail
            if os.path.exists(candidate):
                return candidate
    return None


def _resolved(uri: str, model_path: str, paths: PackagePaths) -> Path | None:
    """:func:`resolve_uri` without the mesh folders."""
    base = Path(model_path).resolve().parent
    if uri.startswith("package://"):
        package, _, rest = uri[len("package://"):].partition("/")
        if not package:
            candidates = [folder / rest for folder in (base, *base.parents)]
        else:
            root = find_package(package, model_path, paths)
            candidates = [] if root is None else [root / rest]
        return next((path for path in candidates if os.path.exists(path)), None)
    found = located(uri, str(base), paths)
    return None if found is None else Path(found)


def located(uri: str, folder: str, paths: PackagePaths) -> str | None:
    """The path a ``model://NAME/rest`` (NAME looked for in ``folder``, then in each of
    ``paths.models``), ``file://path`` or plain ``uri`` (relative to ``folder``) names, a
    file or a folder, joined as given; None when nothing is there."""
    if uri.startswith("model://"):
        name, _, rest = uri[len("model://"):].partition("/")
        for root in (folder, *paths.models):
            candidate = os.path.join(root, name, rest) if rest else os.path.join(root, name)
            if name and os.path.exists(candidate):
                return candidate
        return None
    if uri.startswith("file://"):
        uri = uri[len("file://"):]
    candidate = os.path.join(folder, uri)
    return candidate if os.path.exists(candidate) else None  # (a name too long: not there)


def models_searched(folder: str, paths: PackagePaths) -> str:
    """Where :func:`located` looks for a ``model://`` URI, for an error."""
    folders = [os.path.abspath(folder), *paths.models]
    return ", ".join(folders) + ("" if paths.models else
                                 "; GZ_SIM_RESOURCE_PATH and SDF_PATH are unset")


@functools.lru_cache(maxsize=4096)
def package_name(folder: str) -> str | None:
    """The ``<name>`` of the ``package.xml`` in ``folder``, or None (none, unreadable)."""
    manifest = os.path.join(folder, "package.xml")
    if not os.path.isfile(manifest):
        return None
    try:
        root = etree.fromstring(read_bounded(manifest, MANIFEST_BYTES),
                                etree.XMLParser(resolve_entities=False, no_network=True))
    except (OSError, etree.XMLSyntaxError, ValueError):
        return None
    name = root.find("name")
    return None if name is None or not (name.text or "").strip() else name.text.strip()


@functools.lru_cache(maxsize=64)
def _crawl(root: str) -> dict[str, str]:
    """{package name: folder} of the packages in ``root`` and below, as rospack crawls."""
    found: dict[str, str] = {}
    level = [root]
    for _depth in range(CRAWL_DEPTH + 1):
        below = []
        for folder in level:
            name = package_name(folder)
            if name is not None:
                found.setdefault(name, folder)
                continue  # a package's subfolders hold no other package
            try:
                entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
            except OSError:
                continue
            if any(entry.name == "CATKIN_IGNORE" for entry in entries):
                continue
            below += [entry.path for entry in entries
                      if not entry.name.startswith(".") and entry.is_dir()]
        level = below
    return found
