"""The ``dyn`` command line; :func:`run` is the dyn program.

Layers, each importing only those below it: :mod:`.app` (the group and its lazy command
table) → :mod:`.commands` (one module per command: options → one call → render) →
:mod:`.run` (a command's options turned into one pipeline call, its results' sink and
progress bar) → :mod:`.model` (the model loader) → :mod:`.render` (tables, annotations) →
:mod:`.console`, :mod:`.errors`, :mod:`.settings`, :mod:`.options`; below them the
pipeline, the parsers and the engine.

dyn runs the engine's batches on its own thread pool, two threads of small BLAS calls;
OpenBLAS (numpy's BLAS) threading each of those calls as well oversubscribes the cores: on
2 cores, forward dynamics on two engine threads was no faster than on one, and the mass
matrix slower. So the command pins BLAS to one thread per engine thread, before numpy is
first imported; a value already set in the environment is kept.

The dyn program also has Python's cyclic garbage collector run less often, with the
thresholds of a run over many states (:data:`treedyn.pipeline.heap.COLLECT_AFTER`): a
command on a large model makes a few objects per link in its documents, layouts and plans,
nearly none in cycles, and the default thresholds (a young collection every 700 new
containers, each tenth promoted, a full pass past a quarter more) spent ~1 s of the 2.5 s
that ``info`` took after loading a 100 000-link star (its document made in 1.65 s with the
defaults, 0.81 s with these, 0.63 s with none), and 0.25 s of the first RNEA's 0.5 s.
Cycles are still collected, after 100 000 new containers.
"""
import gc
import os
import sys

from .settings import check_environment, interrupted, version_line

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")


def run() -> None:
    """The dyn program: loads :mod:`treedyn.cli.app` and runs it. A Ctrl-C while that
    loads ends dyn as a Ctrl-C at any other time does, with exit code 130 and no
    traceback: until app.run takes Ctrl-C over, SIGINT ends the process at once (as a
    KeyboardInterrupt, it could surface as an ImportError inside numpy's extension
    modules). An ignored SIGINT stays ignored."""
    if sys.argv[1:] == ["--version"]:  # a script asking which dyn this is: no typer, no numpy
        show_version()
    import signal

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted)
    check_environment()
    from treedyn.pipeline.heap import COLLECT_AFTER  # (ctypes and gc only: no numpy)

    gc.set_threshold(*COLLECT_AFTER)
    from .app import run as run_app

    run_app()


def show_version() -> None:
    """``dyn --version`` at the cost of starting Python: print the line and end (exit 2 with
    one line when stdout cannot take it, as any result that cannot be written; a reader
    that went away ends it quietly, as SIGPIPE ends other Unix tools)."""
    import signal

    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        sys.stdout.write(version_line() + "\n")
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError) as error:  # closed, full, or no stdout
        if sys.stderr is not None:
            reason = getattr(error, "strerror", None) or "stdout is closed"
            print(f"dyn: cannot write the results ({reason})", file=sys.stderr)
        os._exit(2)
    os._exit(0)
