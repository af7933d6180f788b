"""The global options every command takes: --quiet/-q, --verbose/-v, --color, and the
environment's NO_COLOR and FORCE_COLOR (docs/interface.md, "Global options").

Runs in process (tests/in_process.py); a warning comes from a JSON Lines key dyn does
not read, which every run of a state file reports on stderr."""
import os
from pathlib import Path

import pytest

from in_process import dyn_here
from treedyn.cli.app import COMMANDS, click_command

ROOT = Path(__file__).resolve().parents[1]
ARM = "fixtures/two_link_arm.urdf"
STATES = b'{"q": [0.5, 1.0], "extra": 1}\n{"q": [0.1, 0.2], "extra": 2}\n'
ESCAPE = b"\x1b["


def clean_environment(**values) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return {**env, **values}


def run(*args, **env):
    return dyn_here(["inverse", ARM, "--input", "-", *args], cwd=ROOT, stdin=STATES,
                    env=clean_environment(**env))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_takes_the_global_options_once(name):
    group = click_command([name])
    options = [opt for param in group.commands[name].params for opt in param.opts]
    for flag in ("--quiet", "-q", "--verbose", "-v", "--color"):
        assert options.count(flag) == 1, (name, flag)


def test_quiet_silences_warnings_before_or_after_the_command():
    loud = run()
    assert loud.returncode == 0 and b'dyn: warning: <stdin>: key "extra" not read' in loud.stderr
    for args in (["-q"], ["--quiet"]):
        quiet = run(*args)
        assert quiet.returncode == 0 and quiet.stderr == b"" and quiet.stdout == loud.stdout
    before = dyn_here(["-q", "inverse", ARM, "--input", "-"], cwd=ROOT, stdin=STATES,
                      env=clean_environment())
    assert before.returncode == 0 and before.stderr == b"" and before.stdout == loud.stdout


def test_verbose_notes_what_was_loaded_and_the_stages_and_quiet_wins():
    verbose = run("-v")
    notes = [line for line in verbose.stderr.decode().splitlines() if "note:" in line]
    assert any("'two_link_arm': 2 joints, nq 2, nv 2" in line for line in notes)
    assert any("states per chunk" in line for line in notes)
    assert any(line.startswith("dyn: note: the whole run: ") and line.endswith(" ms")
               for line in notes)
    assert verbose.stdout == run().stdout
    assert b"note:" not in run().stderr
    both = run("-v", "-q")
    assert both.returncode == 0 and both.stderr == b""


@pytest.mark.parametrize("args, env, coloured", [
    ((), {}, False),  # stderr is a pipe: auto is off
    (("--color", "always"), {}, True),
    (("--color", "always"), {"NO_COLOR": "1"}, True),  # the command line decides
    (("--color", "never"), {"FORCE_COLOR": "1"}, False),
    ((), {"FORCE_COLOR": "1"}, True),
    ((), {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False),  # NO_COLOR wins
    ((), {"NO_COLOR": "", "FORCE_COLOR": "1"}, True),  # an empty NO_COLOR is unset
    (("--color", "auto"), {"NO_COLOR": "yes"}, False),
])
def test_colour_of_the_warning_and_error_lines(args, env, coloured):
    warned = run(*args, **env)
    assert warned.returncode == 0 and (ESCAPE in warned.stderr) == coloured
    assert ESCAPE not in warned.stdout  # results never carry colour codes
    failed = dyn_here([*args, "info", "missing.urdf"], cwd=ROOT, env=clean_environment(**env))
    assert failed.returncode == 2 and len(failed.stderr.splitlines()) == 1
    assert (ESCAPE in failed.stderr) == coloured
    assert b"missing.urdf" in failed.stderr


def test_a_bad_colour_choice_is_one_line():
    bad = run("--color", "sometimes")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1


def test_quiet_silences_the_other_python_warnings_too(capsys):
    from treedyn.cli.console import Console

    shown = []
    for quiet in (False, True):
        console = Console()
        console.others = lambda *warning: shown.append(quiet)
        console.configure(quiet, False, None)
        console.show_warning("a library's warning", UserWarning, "lib.py", 1)
    assert shown == [False] and capsys.readouterr().err == ""


def test_grouped_flags_and_colour_before_the_command_still_run_it():
    done = dyn_here(["-qv", "--color", "never", "inverse", ARM, "--input", "-"], cwd=ROOT,
                    stdin=STATES, env=clean_environment())
    assert done.returncode == 0 and done.stderr == b"" and done.stdout == run().stdout
