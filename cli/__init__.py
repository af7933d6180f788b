"""The ``dyn`` command line (:mod:`treedyn.cli.main`); :func:`run` is the dyn program.

dyn runs the engine's batches on its own thread pool, two threads of small BLAS calls;
OpenBLAS (numpy's BLAS) threading each of those calls as well oversubscribes the cores: on
2 cores, forward dynamics on two engine threads was no faster than on one, and the mass
matrix slower. So the command pins BLAS to one thread per engine thread, before numpy is
first imported; a value already set in the environment is kept.
"""
import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")


def run() -> None:
    """The dyn program: loads :mod:`treedyn.cli.main` (numpy, typer, the engine: most of a
    one-state run) and runs it. A Ctrl-C while that loads ends dyn as a Ctrl-C at any
    other time does, with exit code 130 and no traceback: until main.run takes Ctrl-C
    over, SIGINT ends the process at once (as a KeyboardInterrupt, it could surface as
    an ImportError inside numpy's extension modules). An ignored SIGINT stays ignored."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted)
    check_environment()
    from .main import run as run_main

    run_main()


def interrupted(number, frame) -> None:
    """SIGINT while dyn starts: exit code 130, nothing printed."""
    os._exit(130)


def check_environment() -> None:
    """Exit 2 with one line when a TREEDYN_* count in the environment is not a positive
    whole number (before the engine, which would keep its default, reads it)."""
    for name in ("TREEDYN_THREADS", "TREEDYN_CHUNK", "TREEDYN_STREAM_CHUNK"):
        value = os.environ.get(name, "").strip()
        if value and not (value.isascii() and value.isdigit() and int(value) >= 1):
            import sys

            if sys.stderr is not None:
                print(f"dyn: {name}={value!r} is not a positive whole number", file=sys.stderr)
            os._exit(2)
