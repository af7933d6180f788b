"""xacro files: expanded in-process by ROS's own ``xacro`` package (the optional extra
``treedyn[ros]``), then read as the URDF they expand to.

xacro (2.x, from PyPI) does the expansion: ``xacro:macro``, ``xacro:property``,
``xacro:include``, ``xacro:if``, ``$(arg)``, ``${...}`` and the rest mean what they mean to
ROS, the arguments are xacro's ``name:=value`` mappings. dyn keeps these to itself
while it runs, and gives them back after:

* ``$(find PKG)`` (and ``find()`` in expressions) is :func:`treedyn.parsers.packages.find_package`,
  the one lookup that ``package://`` meshes use too; xacro's own goes through ROS 2's
  ``ament_index_python``, which is not on PyPI. A package not found is an error naming
  it and where it was looked for.
* ``package://PKG/...`` in an include's filename (which ROS's xacro does not read) is
  looked up the same way.
* ``$(env NAME)`` and ``$(optenv NAME default)`` read the ``environment`` the caller passes.
* Source files are read within the bounds of every model file (:mod:`.files`) and as
  urdfdom reads XML (:mod:`.xml_text`); each element is tagged with where it was written
  (attribute :data:`SOURCE`), a tag that macro expansion copies with the element. A
  link, joint or inertial of the expanded URDF is then named by its file and line in the
  xacro sources; one written in a macro, by its line in the macro. Only an element
  xacro makes itself (``<xacro:element>``) has no such line: it is named by its line in
  the expanded text (``robot.urdf.xacro (expanded):57``).
* An error during the expansion names the element xacro was expanding when it failed
  (the xacro element itself, or the element whose attribute it evaluated), by file and
  line.
* Nothing in a model file is executed: ``${...}`` and ``$(eval ...)`` are evaluated by
  :mod:`.xacro_eval` (xacro's ``safe_eval`` and ``substitution_args._eval`` replaced),
  within the bounds of :mod:`.xacro_limits`, which the element and text hooks also keep
  (time, elements, text). Includes (their glob patterns too), ``load_yaml`` and ``$(find)``
  must resolve, links followed, inside :func:`confinement`.
* Each source file is read as xacro reads it (``xml.dom.minidom``), so the expansion is
  the ``xacro`` command's text (:func:`expand_xacro`) to the byte.

Messages xacro writes to stderr (deprecations, unknown attributes) become the
description's notes; so does an argument given that no source file names (xacro ignores
it: most likely a misspelt name).
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import os
import re
import threading
import types
import xml.dom.minidom
from collections.abc import Mapping

from lxml import etree

from treedyn.engine.description import SourceRef, TreeDescription

from .errors import ParseError
from .files import MODEL_BYTES, confined, read_bounded
from .packages import PackagePaths, XacroInput, find_package, resolve_uri, searched
from .urdf import parse_urdf_string
from .xacro_calls import Callables
from .xacro_eval import EvalNames, Evaluator
from .xacro_limits import MAX_CHARS, Budget, Refused, shown, weight
from .xml_text import read_xml

EXTRA = "reading xacro files needs the optional extra: pip install 'treedyn[ros]'"
SOURCE = "treedyn-source"  # the attribute holding an element's index in the source table
WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")  # a word that could name a xacro argument
GLOB_FILES = 10_000  # files one include's pattern may name
YAML_BYTES = 4 << 20  # a file of xacro.load_yaml (PyYAML reads about 1 MB/s)
LOCK = threading.Lock()  # xacro's state is its module's: one expansion at a time


class Unresolved(LookupError):
    """A ``$(...)`` dyn resolves for xacro that names nothing: ``str`` is the problem."""


class PackageNotFound(Unresolved):
    """``$(find PKG)`` of a package that is nowhere; ``str`` says where it was looked for."""


def parse_xacro(path: str, options: XacroInput = XacroInput(),
                packages: PackagePaths = PackagePaths()) -> TreeDescription:
    """The description of the xacro file at ``path``, expanded with ``options``; its
    links and joints are named by their lines in the xacro sources. ParseError on any
    problem, naming the source file and line where the expansion lets it be known."""
    expansion = _Expansion(path, options, packages)
    text = expansion.run()
    places = expansion.places(text)
    try:
        description = parse_urdf_string(text, path)
    except ParseError as error:
        file, line = places.get(error.line, (f"{path} (expanded)", error.line))
        raise ParseError(error.problem, file, line, error.element) from None
    return _relocated(description, path, places, expansion)


def expand_xacro(path: str, options: XacroInput = XacroInput(),
                 packages: PackagePaths = PackagePaths()) -> str:
    """The text the xacro file at ``path`` expands to with ``options``, as the ``xacro``
    command prints it (ParseError as :func:`parse_xacro` raises it)."""
    return _Expansion(path, options, packages).run(tagged=False)


class _Expansion:
    """One run of xacro over ``path`` with dyn's lookups, bounded reading and locations."""

    def __init__(self, path: str, options: XacroInput, packages: PackagePaths):
        self.path, self.options, self.packages = path, options, packages
        self.environment = dict(options.environment)
        self.sources: list[SourceRef] = []  # SOURCE index -> where the element was written
        self.files: list[str] = []  # every source file read, in order
        self.words: set[bytes] = set()  # every name-like word of the sources
        self.current: SourceRef | None = None  # the element being expanded
        self.notes: list[str] = []
        self.roots = confinement(path, packages)
        self.budget = Budget()
        self.texts: list[int] = []  # characters of the texts being evaluated, innermost last

    def run(self, tagged: bool = True) -> str:
        """The expanded URDF text, as the ``xacro`` command prints it; ``tagged``: with
        each element's :data:`SOURCE` attribute."""
        try:
            import xacro
            from xacro import substitution_args
        except ImportError:
            raise ParseError(EXTRA, self.path) from None
        captured = io.StringIO()
        with (LOCK, self._hooked(xacro, substitution_args),
              contextlib.redirect_stderr(captured)):
            try:
                document = xacro.process_file(self.path, mappings=dict(self.options.arguments))
            except ParseError:
                raise
            except Exception as error:  # xacro raises XacroException, NameError, ...
                raise self._error(error) from None
        said = "; ".join(line.strip() for line in captured.getvalue().splitlines() if line.strip())
        if said:
            self.notes.append(f"{self.path}: xacro: {said}")
        unused = [name for name, _ in self.options.arguments
                  if name.encode("utf-8") not in self.words]
        if unused:
            self.notes.append(f"{self.path}: the xacro files never name the argument "
                              f"{', '.join(dict.fromkeys(unused))}: xacro ignores it (misspelt?)")
        if not tagged:
            for element in document.getElementsByTagName("*"):
                if element.hasAttribute(SOURCE):
                    element.removeAttribute(SOURCE)
        return document.toprettyxml(indent="  ")

    def places(self, text: str) -> dict[int, tuple[str, int]]:
        """{line of the expanded text: (source file, line)} of each tagged element."""
        root = read_xml(text.encode("utf-8"), self.path, encoding="utf-8")
        places = {}
        for element in root.iter(etree.Element):
            index = element.get(SOURCE)
            if index is not None and index.isdigit() and int(index) < len(self.sources):
                source = self.sources[int(index)]
                places[element.sourceline] = (source.file, source.line)
        return places

    @contextlib.contextmanager
    def _hooked(self, xacro, substitution_args):
        """xacro's file reading, lookups and element dispatch replaced by this run's."""
        table = substitution_args._eval_dict
        evaluator, substitution = self._evaluator(xacro, substitution_args)
        replaced = {
            (xacro, "parse"): self._parse_hook(xacro),
            (xacro, "safe_eval"): self._counted_eval(evaluator),
            (xacro, "glob"): types.SimpleNamespace(glob=self._glob),
            (substitution_args, "_eval"): substitution,
            (xacro, "eval_text"): self._bounded_text(xacro.eval_text),
            (xacro, "eval_all"): self._counted(self._located(xacro.eval_all, keep=True)),
            (xacro, "handle_macro_call"): self._counted(self._located(xacro.handle_macro_call),
                                                        element=False),
            (xacro, "check_attrs"): self._located(xacro.check_attrs),
            (xacro, "reqd_attrs"): self._located(xacro.reqd_attrs),
            (substitution_args, "_eval_find"): self._find,
            (substitution_args, "_eval_env"): self._env,
            (substitution_args, "_eval_optenv"): self._optenv,
        }
        saved = {key: getattr(*key) for key in replaced}
        saved_table = dict(table)
        try:
            for (module, name), function in replaced.items():
                setattr(module, name, function)
            table.update(find=self._find, env=self._env, optenv=self._optenv)
            yield
        finally:
            for (module, name), function in saved.items():
                setattr(module, name, function)
            table.clear()
            table.update(saved_table)
            xacro.all_includes.clear()

    def _parse_hook(self, xacro):
        """xacro's ``parse``: a source file read within bounds, every element tagged."""
        original = xacro.parse

        def parse(inp, filename=None):
            if inp is not None:
                return original(inp, filename)
            name = os.path.join(xacro.root_dir, filename)
            if "package://" in filename:  # xacro joined it to the includer's folder
                uri = filename[filename.index("package://"):]
                path = resolve_uri(uri, self.path, self.packages)
                if path is None:
                    xacro.filestack.pop()
                    raise xacro.XacroException(exc=OSError(errno.ENOENT, self._missing(uri)))
                filename = name = str(path)
                xacro.filestack[-1] = filename  # the folder of includes relative to it
            if filename != self.path:
                self._confined(name, "includes")
            try:
                data = read_bounded(name, MODEL_BYTES)
            except OSError as error:
                xacro.filestack.pop()  # as xacro's own: the includer is the one to name
                unreadable = OSError(error.errno, f"cannot read file {filename} "
                                                  f"({error.strerror})")
                raise xacro.XacroException(exc=unreadable) from None  # optional="true" skips it
            shown = _shown(filename) if filename != self.path else filename
            root = read_xml(data, shown)
            self.files.append(os.path.realpath(name))
            self.words.update(WORD.findall(data))
            elements = list(root.iter(etree.Element))
            first = len(self.sources)
            self.sources += [SourceRef(shown, element.sourceline or 0, _label(element))
                             for element in elements]
            document = _as_xacro_reads(data, root, len(elements))
            if document is None:  # read as tinyxml2 reads it: lxml's reading of it
                for index, element in enumerate(elements, first):
                    element.set(SOURCE, str(index))
                return xml.dom.minidom.parseString(etree.tostring(root))
            tree = document.documentElement
            for index, element in enumerate([tree, *tree.getElementsByTagName("*")], first):
                element.setAttribute(SOURCE, str(index))
            return document
        return parse

    def _located(self, function, keep: bool = False):
        """``function(node, ...)`` with the node's source as the current place while it
        runs; an error raised in it is marked with the place it was raised at. The tag
        is taken off xacro's own elements (their attributes are their parameters)."""
        def run(node, *args, **kwargs):
            saved = self.current
            index = node.getAttribute(SOURCE) if node.nodeType == node.ELEMENT_NODE else ""
            if index and node.tagName.startswith("xacro:"):
                node.removeAttribute(SOURCE)
                self.current = self.sources[int(index)]
            elif index and keep:
                self.current = self.sources[int(index)]
            try:
                return function(node, *args, **kwargs)
            except Exception as error:
                if not hasattr(error, "treedyn_source"):
                    error.treedyn_source = self.current
                raise
            finally:
                if keep:
                    self.current = saved
        return run

    def _evaluator(self, xacro, substitution_args) -> tuple:
        """This run's evaluator of expressions, and xacro's ``_eval`` (``$(eval ...)``)
        over it."""
        callables = Callables(xacro, self._load_yaml_hook(xacro))
        evaluator = Evaluator(xacro, callables, self.budget)
        context = xacro.substitution_args_context

        def arg(name):
            value = substitution_args._eval_arg(name, args=context.get("arg", {}))
            return substitution_args.convert_value(value, "auto")

        def dirname():
            return substitution_args._eval_dirname(context.get("filename"))

        functions = {"arg": arg, "dirname": dirname, "env": self._env,
                     "optenv": self._optenv, "find": self._find}
        for function in functions.values():
            callables.add(function, function)

        def substitution(text, given):
            names = EvalNames(functions, given.setdefault("arg", {}),
                              substitution_args.convert_value)
            try:
                return evaluator.substitution(text, names)
            except (Refused, Unresolved):
                raise
            except Exception as error:  # Python's, as the expression raised it
                raise Unresolved(f"$(eval {shown(text)}): {error}") from None
        return evaluator, substitution

    def _load_yaml_hook(self, xacro):
        """xacro's ``load_yaml``, reading only files inside the confinement, within the
        bounds of model files, and saying where a file is not YAML without its text."""
        import yaml

        class Loader(yaml.SafeLoader):
            """SafeLoader with xacro's unit tags (``!degrees``, ...), on this run only."""

        for unit in xacro.ConstructUnits:
            Loader.add_constructor(unit.value.tag, unit.constructor)

        def load_yaml(filename):
            if not isinstance(filename, str):
                raise TypeError("xacro.load_yaml takes a file name")
            name = xacro.abs_filename_spec(filename)
            self._confined(name, "reads the YAML file")
            try:
                data = read_bounded(name, YAML_BYTES)
            except OSError as error:
                raise OSError(error.errno, f"cannot read file {name} ({error.strerror})") from None
            xacro.filestack.append(name)
            try:
                value = yaml.load(data, Loader=Loader)
            except yaml.YAMLError as error:
                mark = getattr(error, "problem_mark", None)
                where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
                raise ValueError(f"{name} is not valid YAML{where}") from None
            finally:
                xacro.filestack.pop()
                xacro.all_includes.append(name)
            weight(value)  # aliases may repeat a part many times over
            return xacro.YamlListWrapper.wrap(value)
        return load_yaml

    def _confined(self, path: str, what: str) -> None:
        """Refused unless the real path of ``path`` (symbolic links followed) lies in the
        model's package or in a package of the ROS search paths."""
        real, refusal = confined(path, self.roots, f"the model's package ({self.roots[0]}) "
                                                   "and the ROS package paths")
        if refusal:
            link = f" (a link to {real})" if real != os.path.abspath(path) else ""
            raise Refused(f"{what} {path}{link}{refusal}")

    def _bounded_text(self, function):
        """xacro's ``eval_text`` within the time and text bounds of the expansion; the
        values of its expressions are counted (:meth:`_counted_eval`) before xacro joins
        them into one text."""
        def eval_text(text, symbols):
            self.budget.check_time()
            self.texts.append(0)
            try:
                value = function(text, symbols)
            finally:
                self.texts.pop()
            self.budget.text(value)
            return value
        return eval_text

    def _counted_eval(self, evaluator):
        """xacro's ``safe_eval``: ``evaluator``'s, each value counted against the text
        of the ``eval_text`` it is a part of (``'${a}${a}...'`` of a long ``a``)."""
        def safe_eval(expression, symbols, _locals=None):
            value = evaluator.evaluate(expression, symbols)
            if self.texts:
                self.texts[-1] += evaluator.weighed
                if self.texts[-1] > MAX_CHARS:
                    raise Refused(f"makes, with the rest of its text, more than {MAX_CHARS} "
                                  "characters", str(expression).strip())
            return value
        return safe_eval

    def _glob(self, pattern: str) -> list[str]:
        """xacro's ``glob.glob`` of an include's pattern: below a folder inside the
        confinement only (no ``..`` after a wildcard), at most :data:`GLOB_FILES` files."""
        import glob

        parts = pattern.split(os.sep)
        fixed = next(n for n, part in enumerate(parts) if glob.has_magic(part))
        if ".." in parts[fixed:]:
            raise Refused(f"includes {pattern}: '..' after a wildcard, which model files may "
                          "not use")
        self._confined(os.sep.join(parts[:fixed]) or os.curdir, "includes the files of")
        found = []
        for name in glob.iglob(pattern):
            found.append(name)
            if len(found) > GLOB_FILES:
                raise Refused(f"includes {pattern}: more than {GLOB_FILES} files")
            self.budget.check_time()
        return found

    def _counted(self, function, element: bool = True):
        """``function`` of an element, counted against the expansion's elements (or only
        its time)."""
        def counted(*args, **kwargs):
            self.budget.element() if element else self.budget.check_time()
            return function(*args, **kwargs)
        return counted

    def _missing(self, uri: str) -> str:
        """Why an include's ``package://`` URI names no file (ROS's xacro reads no such
        URI; dyn looks it up as it looks up meshes)."""
        package = uri[len("package://"):].partition("/")[0]
        folder = find_package(package, self.path, self.packages) if package else None
        if package and folder is None:
            return (f"package '{package}' of {uri} not found "
                    f"({searched(package, self.path, self.packages)})")
        return f"cannot read file {uri} (no such file{f' in {folder}' if folder else ''})"

    def _find(self, package: str) -> str:
        folder = find_package(package, self.path, self.packages)
        if folder is None:
            raise PackageNotFound(f"package '{package}' not found ("
                                  f"{searched(package, self.path, self.packages)})")
        self._confined(str(folder), f"$(find {package}) is")
        return str(folder)

    def _env(self, name: str) -> str:
        if name not in self.environment:
            raise Unresolved(f"environment variable {name} is not set ($(env {name}))")
        return self.environment[name]

    def _optenv(self, name: str, default: str = "") -> str:
        return self.environment.get(name, default)

    def _error(self, error: Exception) -> ParseError:
        """One ParseError for an error of the expansion, at the element it was raised at."""
        cause = getattr(error, "exc", None)
        refused = _refusal(error)
        if refused is not None:
            problem = str(refused)
        elif isinstance(error, RecursionError) or isinstance(cause, RecursionError):
            problem = "xacro: macros or properties nest too deeply (endless recursion?)"
        elif isinstance(cause, Unresolved):
            problem = str(cause)
        elif isinstance(cause, OSError) and not isinstance(error, Unresolved):
            problem = cause.strerror or str(cause)
        else:
            problem = "xacro: " + " ".join(str(error).split())
        source = getattr(error, "treedyn_source", None) or SourceRef(self.path)
        return ParseError(problem, source.file, source.line, source.element)


def _as_xacro_reads(data: bytes, root: etree._Element, count: int):
    """The document as xacro itself reads it (``xml.dom.minidom``: comments, namespaces
    and text as written, so the expansion is the ``xacro`` command's to the byte), or
    None when that reading differs from ``root``'s (a file only tinyxml2's leniency
    reads, or one whose DTD declares entities, which minidom would expand)."""
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        return None
    try:
        document = xml.dom.minidom.parseString(data)
    except Exception:  # expat's errors; read_xml read it, leniently
        return None
    found = len(document.documentElement.getElementsByTagName("*")) + 1
    return document if found == count else None


def _refusal(error: BaseException | None) -> Refused | None:
    """The refusal an error of the expansion is, or wraps (xacro wraps an error in one of
    its own as ``exc``, maybe more than once)."""
    for _ in range(64):
        if error is None or isinstance(error, Refused):
            return error
        error = getattr(error, "exc", None)
    return None


def confinement(path: str, packages: PackagePaths) -> list[str]:
    """The folders a xacro model may read files in (real paths): its package (the folder
    of the nearest ``package.xml`` above it, or its own folder when there is none), then
    the folders of ``ROS_PACKAGE_PATH`` and the ``share`` folders of
    ``AMENT_PREFIX_PATH``."""
    folder = os.path.dirname(os.path.realpath(path))
    package = next((above for above in _ancestors(folder)
                    if os.path.isfile(os.path.join(above, "package.xml"))), folder)
    return [package, *(os.path.realpath(root) for root in packages.ros if root),
            *(os.path.realpath(os.path.join(prefix, "share"))
              for prefix in packages.ament if prefix)]


def _ancestors(folder: str):
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def _relocated(description: TreeDescription, path: str, places: Mapping[int, tuple[str, int]],
               expansion: _Expansion) -> TreeDescription:
    """``description`` with each SourceRef and note of the expanded text moved to the
    xacro source it came from (the expanded line is kept where none is known)."""
    def moved(source: SourceRef) -> SourceRef:
        if source.file != path or not source.line:
            return source
        file, line = places.get(source.line, (path, 0))
        return dataclasses.replace(source, file=file, line=line)

    def moved_note(note: str) -> str:
        match = re.match(re.escape(path) + r":(\d+):", note)
        if match is None:
            return note
        file, line = places.get(int(match.group(1)), (f"{path} (expanded)", int(match.group(1))))
        return f"{file}:{line}:{note[match.end():]}"

    links = [dataclasses.replace(
        link, source=moved(link.source), inertial_source=moved(link.inertial_source),
        geometry=tuple(dataclasses.replace(shape, source=moved(shape.source))
                       for shape in link.geometry)) for link in description.links]
    joints = [dataclasses.replace(joint, source=moved(joint.source))
              for joint in description.joints]
    return dataclasses.replace(
        description, links=links, joints=joints,
        notes=tuple(expansion.notes) + tuple(moved_note(note) for note in description.notes),
        files=tuple(dict.fromkeys(expansion.files)))


def _shown(filename: str) -> str:
    """An included file's name as messages give it: relative to the current folder when it
    is below it (``$(find)`` makes absolute paths; annotations want the repository's)."""
    relative = os.path.relpath(filename) if os.path.isabs(filename) else filename
    return filename if relative.startswith("..") else relative


def _label(element: etree._Element) -> str:
    """An element as ParseError names it: ``link name="arm"``, ``xacro:include``."""
    qname = etree.QName(element)
    tag = f"{element.prefix}:{qname.localname}" if element.prefix else qname.localname
    name = element.get("name")
    return f'{tag} name="{name}"' if name is not None else tag
