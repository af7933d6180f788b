"""The package's shape, read from its source files' ASTs (nothing is imported).

Imports run one way: cli → session, plots, pipeline, parsers, engine; session → pipeline,
parsers, engine; plots → pipeline, engine; pipeline → engine; parsers → the
engine's description and geometry only; the engine imports none of them and reads no
environment, nor do the pipeline and the parsers (the session reads it for them). Inside the CLI, layers import only downward: app →
commands → run → model → render → the bottom modules (console, settings, options). No import cycle among modules, counting
function-level imports; no module over about 600 lines; no function over about 80 lines
except where a comment on its ``def`` line says why; no command module over 120 lines (a
command is options, one call and rendering).
"""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"cli": "treedyn.cli", "pipeline": "treedyn.pipeline", "parsers": "treedyn.parsers",
            "engine": "treedyn.engine", "plots": "treedyn.plots",
            "session": "treedyn.session"}

# CLI layers from the top; a module may import its own layer's modules and any below
CLI_LAYERS = ["app __main__", "commands", "run", "model", "render",
              "console errors settings options"]


def modules() -> dict:
    """Dotted module name -> source path, for every module of the three packages."""
    found = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


MODULES = modules()


def imports(name: str, path: Path) -> set:
    """The package modules that ``name`` imports anywhere in its file (function-level
    imports too), by their dotted names (``from X import y`` counts X.y when that is a
    module, else X)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: imports(name, path) for name, path in MODULES.items()}


def cycles() -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in GRAPH:
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle():
    assert cycles() == []


def test_the_engine_imports_no_other_package_and_reads_no_environment():
    for name, targets in GRAPH.items():
        if name.startswith("treedyn.engine"):
            assert not {t for t in targets
                        if t.startswith(("treedyn.cli", "treedyn.parsers", "treedyn.pipeline",
                                         "treedyn.plots", "treedyn.session"))}
            source = MODULES[name].read_text(encoding="utf-8")
            assert not re.search(r"\bos\.environ\b|\bgetenv\b|\bputenv\b", source), name


def test_the_pipeline_imports_only_the_engine_and_reads_no_environment():
    """States in and out, and a computation run over them: a library under the CLI, which
    passes in what the environment says (chunk sizes, worker counts). The number syntax
    states share with model files is the parsers' leaf module ``numbers``."""
    for name, targets in GRAPH.items():
        if name.startswith("treedyn.pipeline"):
            outside = {t for t in targets
                       if t.startswith(("treedyn.cli", "treedyn.parsers", "treedyn.plots",
                                        "treedyn.session"))}
            assert outside <= {"treedyn.parsers.numbers"}, (name, outside)
            source = MODULES[name].read_text(encoding="utf-8")
            assert not re.search(r"\bos\.environ\b|\bgetenv\b|\bputenv\b", source), name


def test_only_the_engine_reaches_into_its_batch_package():
    """``treedyn.engine.batch`` is the engine's inside: the pipeline and the CLI use the
    engine's public names (``treedyn.engine.configure``, ``configured``,
    ``joint_torque_regressor``, ...), so the batched path can change behind them."""
    for name, targets in GRAPH.items():
        if name.startswith("treedyn.engine"):
            continue
        inside = {t for t in targets if t.startswith("treedyn.engine.batch")}
        assert not inside, (name, inside)


def test_the_parsers_read_no_environment():
    """ROS_PACKAGE_PATH, AMENT_PREFIX_PATH and what xacro's $(optenv) reads come in as
    arguments: the session reads the environment (session/environment.py)."""
    for name, path in MODULES.items():
        if name.startswith("treedyn.parsers"):
            source = path.read_text(encoding="utf-8")
            assert not re.search(r"\bos\.environ\b|\bgetenv\b|\bputenv\b", source), name


def test_parsers_import_only_the_description_and_geometry_of_the_engine():
    """Rotations are geometry's own leaf module (description needs skew; geometry needs
    description's Shape); names is the leaf that suggests a close name in messages. The
    package's ``load_model`` (parse, then build the Model) is the one public door that also
    builds: its ``__init__`` may import the model."""
    allowed = {"treedyn.engine.description", "treedyn.engine.geometry",
               "treedyn.engine.rotations", "treedyn.engine.names"}
    for name, targets in GRAPH.items():
        if name.startswith("treedyn.parsers"):
            if name == "treedyn.parsers":
                targets = targets - {"treedyn.engine.model"}
            engine = {t for t in targets if t.startswith("treedyn.engine")}
            assert engine <= allowed, (name, engine - allowed)
            assert not {t for t in targets if t.startswith(("treedyn.cli", "treedyn.plots",
                                                            "treedyn.session"))}, name


def test_the_plots_import_only_the_pipeline_and_the_engine():
    """The pictures (``--plot``) draw the documents the pipeline and the engine make; the
    command line calls them, they never call it, and only it imports them."""
    for name, targets in GRAPH.items():
        if name.startswith("treedyn.plots"):
            assert not {t for t in targets if t.startswith(("treedyn.cli", "treedyn.parsers",
                                                            "treedyn.session"))}, name


def test_only_the_command_line_imports_the_session():
    """The session (the environment's settings, a model loaded as dyn loads it, a model
    file written back) is the layer over the library: it imports the pipeline, the parsers
    and the engine, never the command line or the pictures, and only the command line
    imports it."""
    for name, targets in GRAPH.items():
        if name.startswith("treedyn.session"):
            assert not {t for t in targets if t.startswith(("treedyn.cli", "treedyn.plots"))
                        }, name
        elif not name.startswith("treedyn.cli"):
            assert not {t for t in targets if t.startswith("treedyn.session")}, name


# an option of the command line in a string: "--free-flyer", "use --degrees"
CLI_OPTION = re.compile(r"(?:^|[\s'\"(`\[])--[a-z][a-z0-9-]*")


def cli_words(path: Path) -> list:
    """(line, option) of every string literal of the file that names a command-line option
    (f-strings' text parts too). Docstrings are left out: they may say what a caller does."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    return [(node.lineno, match.group().lstrip(" \t\n'\"(`["))
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings
            for match in CLI_OPTION.finditer(node.value)]


def test_parsers_and_engine_use_no_command_line_words():
    """Their messages name their functions' arguments (``free_flyer``), never the CLI's
    options: the command line words its own lines (:func:`treedyn.cli.errors.worded`)."""
    found = {name: cli_words(path) for name, path in MODULES.items()
             if name.startswith(("treedyn.parsers", "treedyn.engine"))}
    assert {name: words for name, words in found.items() if words} == {}


def cli_layer(name: str) -> int | None:
    parts = name.split(".")
    if parts[:2] != ["treedyn", "cli"] or len(parts) < 3:
        return None
    for depth, layer in enumerate(CLI_LAYERS):
        if parts[2] in layer.split():
            return depth
    raise AssertionError(f"{name} is in no CLI layer: add it to CLI_LAYERS")


def test_cli_layers_import_only_downward():
    for name, targets in GRAPH.items():
        layer = cli_layer(name)
        if layer is None:
            continue
        for target in targets:
            below = cli_layer(target)
            assert below is None or below >= layer, f"{name} imports {target} (upward)"


def test_cli_below_the_app_loads_no_numpy_for_help():
    """``dyn --help`` and ``--version`` run the app with its bottom modules only."""
    light = {"treedyn.cli", "treedyn.cli.app", "treedyn.cli.console", "treedyn.cli.settings",
             "treedyn.cli.options", "treedyn.pipeline", "treedyn.pipeline.errors",
             "treedyn.pipeline.naming", "treedyn.pipeline.schema", "treedyn.cli.errors",
             "treedyn.pipeline.heap", "treedyn.pipeline.paths", "treedyn.session",
             "treedyn.session.environment"}
    for name in light:
        text = MODULES[name].read_text(encoding="utf-8")
        tree = ast.parse(text)
        for node in tree.body:  # module-level imports only: the commands load lazily
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
                assert not any(n.split(".")[0] in ("numpy", "scipy", "lxml") for n in names), name
        assert GRAPH[name] <= light, (name, GRAPH[name] - light)


def long_units():
    """(module, name, lines) of functions over 80 lines and modules over 600."""
    found = []
    for name, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        if len(lines) > 600:
            found.append((name, "<module>", len(lines)))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                if size > 80 and "long:" not in lines[node.lineno - 1]:
                    found.append((name, node.name, size))
    return found


def test_no_long_module_or_function():
    assert long_units() == []


def test_every_command_module_is_options_one_call_and_rendering_in_120_lines():
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines())
             for name, path in MODULES.items() if name.startswith("treedyn.cli.commands.")}
    assert len(sizes) >= 20  # (the commands were found)
    assert {name: size for name, size in sizes.items() if size > 120} == {}
