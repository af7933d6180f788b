"""The examples in README.md and docs/*.md are run and their outputs compared.

An example is a fenced code block line that starts with ``$ dyn``; the lines after it,
up to the next line starting with ``$ `` or the end of the block, are its expected stdout
(trailing blank lines dropped). Examples whose command names a file under ``fixtures/``
are run from the repository root as ``dyn ARGS`` with COLUMNS=100 and stdin from /dev/null,
so stdout is a pipe: commands whose default format depends on the terminal print JSON unless
the example gives ``--format table`` (in this process, as that process would run them:
tests/in_process.py).

Conventions inside an example (documented in docs/testing.md):

* ``# exit N`` on a line of its own: the expected exit code (0 otherwise); not output.
* ``# stderr`` on a line of its own: the lines after it are the expected stderr, compared
  exactly too (without it, stderr is not compared).
* ``...`` on a line of its own stands for any number of lines (zero or more).
* ``<!-- output not compared -->`` on the line just before the opening fence: only the
  exit code of the block's examples is checked (for output that is not byte-stable).
* ``<!-- not run -->`` on the line just before the opening fence: the block is skipped
  (timings, or models outside the repository).

Also: every ``dyn COMMAND ... --option`` the documents mention must be an option of that
command (its --help), and docs/interface.md must extend the shared interface (every line
of it unchanged, in order): the copy kept in ``tests/data/shared_interface.md``, which must
equal the project's ``../shared/interface.md`` wherever that sits beside the repository.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from in_process import dyn_here
from treedyn.cli.app import COMMANDS as APP_COMMANDS

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMANDS = tuple(APP_COMMANDS)  # every command of dyn's table
FENCE = re.compile(r"^(```+|~~~+)")
EXIT = re.compile(r"^# exit (\d+)$")
NOT_COMPARED = "<!-- output not compared -->"
NOT_RUN = "<!-- not run -->"


@dataclass
class Example:
    source: str  # file:line of the "$ dyn" line
    args: str  # what follows "$ dyn "
    stdout: list[str]
    stderr: list[str] | None
    exit_code: int
    compared: bool


def _blocks(path: Path):
    """(line number of the first content line, marker before the fence, lines) per fenced block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        marker = lines[i - 1].strip() if i > 0 else ""
        fence = opening.group(1)
        start = i + 1
        j = start
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        yield start + 1, marker, lines[start:j]
        i = j + 1


def _examples(path: Path) -> list[Example]:
    found = []
    for first, marker, lines in _blocks(path):
        if marker == NOT_RUN:
            continue
        k = 0
        while k < len(lines):
            if not lines[k].startswith("$ dyn "):
                k += 1
                continue
            end = k + 1
            while end < len(lines) and not lines[end].startswith("$ "):
                end += 1
            body = lines[k + 1:end]
            exit_code = 0
            stdout, stderr = [], None
            for line in body:
                match = EXIT.match(line)
                if match:
                    exit_code = int(match.group(1))
                elif line == "# stderr":
                    stderr = []
                elif stderr is not None:
                    stderr.append(line)
                else:
                    stdout.append(line)
            for part in (stdout, stderr or []):
                while part and not part[-1].strip():
                    part.pop()
            found.append(Example(f"{path.relative_to(ROOT)}:{first + k}", lines[k][len("$ dyn "):],
                                 stdout, stderr, exit_code, marker != NOT_COMPARED))
            k = end
    return found


def _matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line, with '...' standing for any number of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(_matches(expected[1:], actual[n:]) for n in range(len(actual) + 1))
    return bool(actual) and actual[0] == expected[0] and _matches(expected[1:], actual[1:])


def _run(args: list[str]) -> subprocess.CompletedProcess:
    """``dyn ARGS`` from the repository root, COLUMNS=100, stdin /dev/null, stdout a pipe:
    run in this process as that process would (tests/in_process.py), outputs as text."""
    done = dyn_here(args, cwd=ROOT, env=dict(os.environ, COLUMNS="100"))
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(),
                                       done.stderr.decode())


ALL = [example for path in DOCUMENTS for example in _examples(path)]
RUN = [example for example in ALL if "fixtures/" in example.args]


def test_the_documents_have_examples_for_every_command():
    """docs/commands.md runs at least one example of each command (bench: exit code only)."""
    ran = {}
    for example in RUN:
        if example.source.startswith("docs/commands.md"):
            words = shlex.split(example.args)
            ran.setdefault(words[0], []).append(example)
    assert set(COMMANDS) <= set(ran), sorted(set(COMMANDS) - set(ran))
    assert any("--sparsity" in e.args for e in ran["mass"])
    assert any("fixtures/broken/" in e.args for e in ran["check-inertia"])


@pytest.mark.parametrize("example", RUN, ids=[example.source for example in RUN])
def test_documented_example(example: Example):
    result = _run(shlex.split(example.args))
    where = f"{example.source}: $ dyn {example.args}"
    assert result.returncode == example.exit_code, f"{where}\nexit {result.returncode}\n{result.stderr}"
    if not example.compared:
        return
    actual = result.stdout.split("\n")
    if actual and actual[-1] == "":
        actual.pop()
    while actual and not actual[-1].strip():
        actual.pop()
    assert _matches(example.stdout, actual), (
        f"{where}\n--- documented\n" + "\n".join(example.stdout) + "\n--- printed\n" + result.stdout)
    if example.stderr is not None:
        assert _matches(example.stderr, result.stderr.rstrip("\n").split("\n") if result.stderr else []), (
            f"{where}\n--- documented stderr\n" + "\n".join(example.stderr)
            + "\n--- printed stderr\n" + result.stderr)


@lru_cache(maxsize=None)
def _options(command: str) -> frozenset[str]:
    text = _run([command, "--help"]).stdout
    return frozenset(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))


# `dyn COMMAND` then, on the same line and in the same code span or command line, --options.
MENTION = re.compile(r"\bdyn (" + "|".join(re.escape(c) for c in COMMANDS) + r")\b([^`\n|;]*)")


def _mentions():
    for path in DOCUMENTS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in MENTION.finditer(line):
                for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", match.group(2)):
                    yield f"{path.relative_to(ROOT)}:{number}", match.group(1), option


def test_every_documented_option_exists():
    """`dyn COMMAND ... --option` in README and docs: the option is in that command's --help."""
    missing = [f"{where}: dyn {command} {option}" for where, command, option in _mentions()
               if option not in _options(command)]
    assert not missing, "\n".join(missing)


def test_no_option_spelling_that_no_command_has():
    """Any --option written in the documents is an option of some command (or of dyn itself)."""
    group = frozenset(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", _run(["--help"]).stdout))
    known = set().union(*(_options(c) for c in COMMANDS), group)  # dyn's own: --version...
    scripts = "".join(path.read_text(encoding="utf-8") for path in (ROOT / "benchmarks").glob("*.py"))
    known |= set(re.findall(r"""add_argument\(\s*["'](--[a-z][a-z0-9-]*)""", scripts))  # benchmarks/*.py
    tests = "".join(path.read_text(encoding="utf-8") for path in (ROOT / "tests").glob("*.py"))
    known |= set(re.findall(r"""["'](--[a-z][a-z0-9-]*)["'] in sys\.argv""", tests))  # their own
    known |= {"--upgrade"}  # pip, in the install commands
    wrong = []
    for path in DOCUMENTS:
        if path.name == "mjcf.md":  # written elsewhere; its options are MuJoCo's too
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line):
                if option not in known:
                    wrong.append(f"{path.relative_to(ROOT)}:{number}: {option}")
    assert not wrong, "\n".join(wrong)


SHARED_COPY = ROOT / "tests" / "data" / "shared_interface.md"


def shared_interface() -> list:
    """The lines of the shared interface, from the copy in tests/data (its first line says
    what it is)."""
    header, *lines = SHARED_COPY.read_text(encoding="utf-8").splitlines()
    assert header.startswith("<!-- A verbatim copy of the project's shared interface")
    return lines


def test_interface_extends_the_shared_one():
    """docs/interface.md extends the shared interface and never bends it: every line of
    the shared text stands in ours unchanged and in the same order; ours only adds lines
    (our own commands, options, keys and formats) between them."""
    ours = (ROOT / "docs" / "interface.md").read_text(encoding="utf-8").splitlines()
    theirs = shared_interface()
    assert len(theirs) > 50  # the whole text, not a stub
    at = 0
    for number, line in enumerate(theirs, 1):
        while at < len(ours) and ours[at] != line:
            at += 1
        assert at < len(ours), (
            f"line {number} of the shared interface is not in docs/interface.md "
            f"(after the lines before it): {line!r}")
        at += 1


def test_the_copy_of_the_shared_interface_is_the_shared_one():
    """tests/data/shared_interface.md is ../shared/interface.md, line for line, where the
    project's shared folder sits beside the repository (a plain clone has none)."""
    shared = ROOT.parent / "shared" / "interface.md"
    if not shared.exists():
        pytest.skip("no ../shared/interface.md beside the repository")
    assert shared_interface() == shared.read_text(encoding="utf-8").splitlines()
