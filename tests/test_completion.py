"""Shell completion (docs/commands.md, "Shell completion"): the scripts typer writes for
bash, zsh and fish, and completions through the lazily built group: command names,
options, model files, joint names for --q and frame names for --frame, from the model
named earlier on the line; a half-typed or broken line completes to nothing, silently.

The bash case sources the script ``dyn --show-completion`` prints into a real bash and
calls its function with COMP_WORDS and COMP_CWORD set, as bash does on TAB."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from in_process import dyn_here
from treedyn.cli.run.completion import MODEL_SUFFIXES

ROOT = Path(__file__).resolve().parents[1]
ARM = "fixtures/two_link_arm.urdf"
NO_DETECTION = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}


def script(shell: str) -> str:
    done = dyn_here(["--show-completion", shell], cwd=ROOT, env={**os.environ, **NO_DETECTION})
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


@pytest.mark.parametrize("shell, words", [
    ("bash", ["_dyn_completion()", "_DYN_COMPLETE=complete_bash", "complete -o default -F"]),
    ("zsh", ["#compdef dyn", "_DYN_COMPLETE=complete_zsh"]),
    ("fish", ["complete --command dyn", "_DYN_COMPLETE=complete_fish"]),
])
def test_the_scripts_of_each_shell(shell, words):
    text = script(shell)
    assert all(word in text for word in words), text


def complete(env: dict) -> list[str]:
    done = dyn_here([], cwd=ROOT, env={**os.environ, **env})
    assert done.returncode == 0 and done.stderr == b"", done
    return done.stdout.decode().split()


def bash_line(line: str) -> dict:
    words = line.split(" ")
    return {"_DYN_COMPLETE": "complete_bash", "COMP_WORDS": line,
            "COMP_CWORD": str(len(words) - 1)}


def test_zsh_and_fish_complete_from_the_whole_line():
    zsh = complete({"_DYN_COMPLETE": "complete_zsh",
                    "_TYPER_COMPLETE_ARGS": f"dyn frames {ARM} --frame li"})
    assert '"link1"' in " ".join(zsh) and '"link2"' in " ".join(zsh)
    fish = complete({"_DYN_COMPLETE": "complete_fish", "_TYPER_COMPLETE_FISH_ACTION":
                     "get-args", "_TYPER_COMPLETE_ARGS": "dyn check-li"})
    assert fish[0].startswith("check-limits")


@pytest.mark.parametrize("line", [
    "dyn inverse fixtures/missing.urdf --q j",  # no such model
    "dyn inverse fixtures/broken/negative_mass.urdf --q j",  # loads? nothing to fail on
    "dyn frames fixtures/urdf/broken/missing_parent.urdf --frame b",  # a broken model
    "dyn inverse 'fixtures/two --q j",  # an open quote
    "dyn nonsense --q",
])
def test_a_half_typed_or_broken_line_completes_quietly(line):
    complete(bash_line(line))  # exit 0 and nothing on stderr


@pytest.fixture(scope="module")
def bash_dyn(tmp_path_factory):
    """A folder with a ``dyn`` for bash to run: this Python's treedyn."""
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    folder = tmp_path_factory.mktemp("bin")
    program = folder / "dyn"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m treedyn.cli "$@"\n')
    program.chmod(0o755)
    return folder


def test_bash_completes_commands_options_paths_and_names(bash_dyn):
    lines = {
        "command": "dyn check-",
        "option": f"dyn inverse {ARM} --free",
        "path": "dyn inverse fixtures/two_link_arm",
        "joint": f"dyn inverse {ARM} --q joint",
        "frame": f"dyn jacobian {ARM} --frame li",
    }
    calls = "".join(
        f"COMP_WORDS=({line}); COMP_CWORD={len(line.split()) - 1}; COMPREPLY=();"
        f" _dyn_completion dyn; echo \"{kind}: ${{COMPREPLY[*]}}\";\n"
        for kind, line in lines.items())
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", script("bash") + calls],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": f"{bash_dyn}{os.pathsep}"
                               f"{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    got = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert set(got["command"].split()) == {"check-inertia", "check-limits"}
    assert got["option"].split() == ["--free-flyer"]
    models = {f"fixtures/{path.name}" for path in (ROOT / "fixtures").glob("tw*")
              if path.suffix in MODEL_SUFFIXES}  # the models, not the logs (.csv)
    assert "fixtures/two_link_arm.sdf" in models
    assert set(got["path"].split()) == models
    assert got["joint"].split() == ["joint1=", "joint2="]
    assert got["frame"].split() == ["link1", "link2"]
