"""The ``dyn`` program: a Typer group over a lazily loaded table of commands.

Each command lives in its own module under :mod:`treedyn.cli.commands` and is imported only
when it is the one being run, so ``dyn --help`` and ``dyn --version`` load neither numpy
nor the engine. The machine interface (commands, options, JSON keys, exit codes) is in
``docs/interface.md``. Every bad usage or bad input ends here as one line on stderr with
exit code 2 (:func:`run_app`).
"""
import errno
import importlib
import os
import signal
import sys
import warnings
from typing import Annotated, Optional

import typer

from .console import console, one_line
from treedyn.pipeline.errors import Ended, StatesWarning, UsageError
from treedyn.pipeline.paths import guarded

from .errors import worded
from .options import (ColourOpt, QuietOpt, VerboseOpt, examples, set_global,
                      with_global_options, with_model_options)
from .settings import check_environment, interrupted, version_line

try:
    from typer._click.exceptions import ClickException
except ImportError:  # typer releases that use the click package itself
    from click.exceptions import ClickException

# name -> (module of treedyn.cli.commands, function, the line `dyn --help` shows), in order
COMMANDS = {
    "info": ("info", "info", "The compact tree: joints, bodies, total mass, gravity."),
    "inverse": ("dynamics", "inverse", "Inverse dynamics (RNEA): tau from q, v, a (and f_ext)."),
    "forward": ("dynamics", "forward", "Forward dynamics (ABA): a from q, v, tau (and f_ext)."),
    "mass": ("dynamics", "mass", "Mass matrix M(q) (CRBA); --sparsity adds its pattern."),
    "check-inertia": ("check_inertia", "check_inertia",
                      "Physical consistency of every link's inertia (exit 1 on errors)."),
    "condition": ("condition", "condition",
                  "Conditioning of M(q): worst case, weakest direction, causes."),
    "verify": ("verify", "verify",
               "Self-check identities of RNEA, CRBA and ABA (exit 1 on failure)."),
    "bench": ("bench", "bench", "Throughput table (states/s) of inverse, forward and mass."),
    "diff": ("diff", "diff", "What changed for the dynamics between two models, by names."),
    "regressor": ("regressor", "regressor",
                  "Regressor Y(q, v, a): tau = Y pi, linear in the inertias."),
    "identify": ("identify", "identify",
                 "Inertial parameters from a log: base set, consistent fit."),
    "excite": ("excite", "excite",
               "An excitation trajectory for identify: Fourier series, well conditioned."),
    "frames": ("frames", "frames", "Where named frames (links, joints) are in the world."),
    "jacobian": ("jacobian", "jacobian", "A frame's Jacobian J (6 x nv), linear rows first."),
    "com": ("com", "com", "Centre of mass and its Jacobian Jcom (3 x nv)."),
    "coriolis": ("coriolis", "coriolis", "Coriolis matrix C(q, v): dM/dt - 2C skew-symmetric."),
    "check-limits": ("check_limits", "check_limits",
                     "Joint limits along a logged motion: q, v, tau (exit 1 when left)."),
    "statics": ("statics", "statics",
                "Largest gravity load of each joint against its effort limit (exit 1 over)."),
    "centroidal": ("centroidal", "centroidal",
                   "Centroidal momentum matrix Ag, momentum hg and inertia Ig."),
    "energy": ("energy", "energy", "Kinetic and potential energy of a state."),
    "convert": ("convert", "convert",
                "A model written in another format (URDF <-> MJCF), same dynamics."),
    "inertia-from-geometry": ("inertia_from_geometry", "inertia_from_geometry",
                              "Each link's com and inertia from its shapes, mass kept."),
}

EXAMPLES = examples(
    "dyn info fixtures/two_link_arm.urdf",
    "dyn inverse fixtures/two_link_arm.urdf --q 0.5236,1.0472 --v 1,-0.5 --a 0.4,-0.2"
    " --format json",
    "dyn forward fixtures/two_link_arm.urdf --degrees --q joint1=30,joint2=60 --tau 13.3,5.5",
    "dyn mass robot.urdf --free-flyer --sparsity",
    "dyn inverse robot.urdf --input states.jsonl --output tau.csv",
    "cat states.csv | dyn forward robot.urdf --input - --format json",
    "dyn check-inertia robot.urdf --fix --format github",
    "dyn verify robot.urdf --free-flyer",
    "dyn bench robot.urdf --free-flyer",
)


def show_version(value: bool) -> None:
    if value:
        print(version_line())
        raise typer.Exit()


def main(version: Annotated[bool, typer.Option(
        "--version", is_eager=True, help="Print the version and exit.",
        callback=show_version)] = False, quiet: QuietOpt = False, verbose: VerboseOpt = False,
        color: ColourOpt = None) -> None:
    """dyn: rigid-body dynamics of URDF, MJCF and SDFormat robot models.

    Inverse dynamics (RNEA), forward dynamics (ABA) and the mass matrix (CRBA) for one
    state given on the command line or many states from a file; diagnostics of the model
    (check-inertia, condition, verify). Results go to stdout, errors to stderr as one
    line (exit code 2); checks that find errors exit 1. --quiet, --verbose and --color
    go before the command or after it.
    """
    set_global(quiet, verbose, color)


def listed() -> None:
    """Stands for a command in the group's listing; never run (a named command is loaded)."""


def click_command(args: list):
    """The click group that runs ``args``.

    When the first argument names a command, the group holds that command only, imported
    from its module (typer builds a command's options from its signature). Otherwise (no
    command, group options, an unknown name) it holds a placeholder per command, which is
    all that the group's help, --version and "No such command" need. When a shell asks
    for completions (``_DYN_COMPLETE``: ``args`` is empty, the line is in the shell's
    variables), the command is the one the line names before the word completed, with
    completions of model files, joint and frame names (:mod:`.run.completion`).
    """
    completion = words = None
    if os.environ.get("_DYN_COMPLETE"):  # set by the completion scripts
        completion = importlib.import_module("treedyn.cli.run.completion")
        words = completion.words()
    app = typer.Typer(add_completion=True, rich_markup_mode=None,
                      pretty_exceptions_enable=False,
                      context_settings={"help_option_names": ["-h", "--help"]},
                      epilog=EXAMPLES)
    app.callback()(main)
    name = command_name(args if words is None else words)
    if name is not None:
        console.command = name
        module, function, short_help = COMMANDS[name]
        command = with_global_options(with_model_options(
            getattr(importlib.import_module(f"treedyn.cli.commands.{module}"), function)))
        app.command(name, short_help=short_help,
                    epilog=getattr(command, "epilog", None))(command)
    else:
        for name, (_, _, short_help) in COMMANDS.items():
            app.command(name, short_help=short_help)(listed)
    group = typer.main.get_command(app)
    if completion is not None:
        completion.attach(group)
    return group



def command_name(args: list) -> Optional[str]:
    """The command ``args`` run: the first word after the group's options (``dyn -qv
    --color never info ...``; --color takes a value); None when that word names no command."""
    words = iter(args)
    for word in words:
        if word == "--color":
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}  # writes that fail for lack of room


def fail(message: str) -> None:
    """Print one error line on stderr and exit with code 2 (also when stderr is closed or
    cannot be written: the exit code still says it). The line is made safe whatever built
    it (:func:`.console.one_line`: no control character from a name or a path reaches the
    terminal raw, and a huge message is cut in its middle)."""
    try:
        if sys.stderr is not None and not os.environ.get("_DYN_COMPLETE"):  # (not into a
            line = one_line(message)  # line being typed: a completion fails silently)
            print(f"\033[31m{line}\033[0m" if console.coloured() else line, file=sys.stderr)
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    sys.exit(2)


class ClosedStdout:
    """Stands for stdout when dyn was started with it closed (``>&-``): writing a result
    fails as writing to a closed descriptor does, so it is an error, not a silent success."""

    def write(self, text) -> int:
        raise OSError(errno.EBADF, "stdout is closed")

    def flush(self) -> None:
        """Nothing is ever buffered (runs that write to --output flush stdout too)."""

    @property
    def buffer(self) -> "ClosedStdout":
        return self

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "stdout is closed")

    def isatty(self) -> bool:
        return False


def click_message(error: ClickException) -> str:
    """A click/typer usage error as one line naming the command."""
    context = getattr(error, "ctx", None)
    program = context.command_path if context is not None else "dyn"
    return f"{program}: {error.format_message()} (see '{program} --help')"


def run(argv: Optional[list] = None) -> None:
    """Console entry point: run the app; one-line errors with exit code 2.

    With ``argv`` (tests, other Python programs) it runs in process and ends by SystemExit;
    without, it is the dyn program, which ends through :func:`leave`.
    """
    if argv is not None:
        return run_app(list(argv))
    if hasattr(signal, "SIGPIPE"):  # the dyn program in `dyn ... | head`:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # end quietly, as other Unix tools do
        # (no sockets here; the --scheduler path, which has them, ignores SIGPIPE again)
    if signal.getsignal(signal.SIGINT) is interrupted:  # set while the modules loaded
        signal.signal(signal.SIGINT, signal.default_int_handler)  # run_app handles Ctrl-C
    check_environment()
    if sys.stdout is None:
        sys.stdout = ClosedStdout()
    try:
        run_app(sys.argv[1:])
    except SystemExit as ending:
        leave(ending.code)
    leave(0)


def leave(code) -> None:
    """End the dyn program with exit ``code`` (a SystemExit code) without tearing Python down.

    Every output file is closed by now (the commands close their sinks on every path);
    what is left is freeing the modules -- numpy, typer, ours -- one by one, ~50 ms: a fifth
    of a one-state run. So stdout and stderr are flushed and the process ends with
    os._exit. Not after --scheduler: Dask's clients and clusters end in atexit hooks.
    """
    if not isinstance(code, int):
        if code is not None:
            print(one_line(str(code)), file=sys.stderr)
        code = 0 if code is None else 1
    if "distributed" in sys.modules:
        sys.exit(code)
    try:
        if not isinstance(sys.stdout, ClosedStdout):
            sys.stdout.flush()
    except (OSError, ValueError) as error:  # a full disk behind `> file`; a closed stdout
        print(f"dyn: cannot write to stdout: {getattr(error, 'strerror', None) or error}",
              file=sys.stderr)
        code = 2
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        code = code or 2
    os._exit(code)


def run_app(args: list) -> None:
    """Run the app on the command-line arguments ``args``; ends by SystemExit."""
    console.start()
    try:
        # numpy's floating-point warnings name install paths and come in dozens: a result
        # that overflows is checked where it matters and said in dyn's own one line (the
        # filter is this run's only: a program calling run(argv) keeps its own)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("always", StatesWarning)  # each one said, in dyn's words
            console.others, warnings.showwarning = warnings.showwarning, console.show_warning
            command = click_command(args)
            with console.stage("the whole run"), guarded():  # (no output replaces an input)
                code = command.main(args=args or ["--help"], prog_name="dyn",
                                    standalone_mode=False)
    except UsageError as error:
        fail(worded(error))
    except ClickException as error:
        fail(click_message(error))
    except KeyboardInterrupt:
        sys.exit(130)
    except Ended as ended:  # SIGTERM or SIGHUP in a run with clean-up, now done: end by it
        signal.signal(ended.number, signal.SIG_DFL)
        os.kill(os.getpid(), ended.number)
        sys.exit(128 + ended.number)  # still here: the signal is blocked
    except Exception as error:
        if isinstance(error, OSError) and error.errno in FULL:  # a report to a full disk
            fail(f"dyn: cannot write the output ({error.strerror})")
        if isinstance(error, OSError) and error.errno == errno.EBADF:
            fail(f"dyn: cannot write the results ({error.strerror})")
        if os.environ.get("DYN_TRACEBACK"):
            raise
        fail(f"dyn: internal error: {type(error).__name__}: {error} "
             "(set DYN_TRACEBACK=1 to see where)")
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    run()
