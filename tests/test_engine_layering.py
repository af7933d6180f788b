"""The engine's layering rules, read off its source: it imports neither the command line
nor the parsers, reads no environment variables, and keeps its modules short."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[1] / "engine"
MODULES = sorted(ENGINE.rglob("*.py"))


def imported(tree: ast.AST, package: str) -> list[str]:
    """Absolute module names imported anywhere in ``tree`` (function bodies included) of a
    module in ``package`` (relative imports resolved)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            names.append(".".join(base + ([node.module] if node.module else [])))
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_module_keeps_to_its_layer(path):
    package = "treedyn." + ".".join(path.relative_to(ENGINE.parent).parts[:-1])
    source = path.read_text()
    tree = ast.parse(source)
    names = imported(tree, package)
    assert not [n for n in names if n.startswith(("treedyn.cli", "treedyn.parsers"))], names
    assert not re.search(r"\bos\.environ\b|\bgetenv\b|\bputenv\b", source)
    assert len(source.splitlines()) <= 600
