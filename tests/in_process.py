"""``dyn ARGS`` run inside the test process, recorded as a whole ``dyn`` process would be.

Starting a ``dyn`` process costs ~0.3 s on a quiet core (Python, numpy, typer and ours
imported again), more than most commands it runs: the documented examples spent most of
their time starting Python. :func:`dyn_here` calls
``treedyn.cli.app.run(args)`` instead, in the folder, environment and stdin the process
would have had, and returns what the process would: exit code, stdout and stderr as bytes
(UTF-8, written to pipes: no terminal). What only a whole process shows -- the program's
entry (``dyn --version`` without typer), signals, exit through ``os._exit``, closed or
full stdout, forked workers of a split run -- is tested with real processes
(tests/test_cli.py, tests/test_data_safety.py, tests/test_signals.py, tests/test_parts.py
and every golden case: a result that must equal a record to its last bits comes from a
whole process, since numbers computed in a long test process can move in their last bits
with the state earlier tests left -- two golden cases did in one run of the whole suite).
tests/forked.py starts those processes cheaply, forked from one that has loaded dyn's
libraries and run nothing.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock


@contextlib.contextmanager
def environment(env: dict):
    """os.environ is exactly ``env`` inside, and as it was after."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def folder(path: Path | str):
    """The working directory is ``path`` inside, and as it was after."""
    saved = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(saved)


def dyn_here(args: list, *, cwd: Path | str, env: dict | None = None,
             stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """``treedyn.cli.app.run(args)`` run as ``dyn ARGS`` in a process started in ``cwd``
    with the environment ``env`` (os.environ if None) and stdin ``stdin`` (/dev/null if
    None), stdout and stderr pipes: (args, exit code, stdout, stderr) as
    subprocess.run(capture_output=True) gives them."""
    from treedyn.cli.app import run

    args = [str(arg) for arg in args]
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="\n")
    stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace",
                              newline="\n")
    with contextlib.ExitStack() as stack:
        if stdin is None:
            reader = stack.enter_context(open(os.devnull, encoding="utf-8", newline="\n"))
        else:
            reader = io.TextIOWrapper(io.BufferedReader(io.BytesIO(stdin)), encoding="utf-8",
                                      newline="\n")
        stack.enter_context(environment(dict(os.environ) if env is None else env))
        stack.enter_context(folder(cwd))
        for name, stream in (("stdin", reader), ("stdout", stdout), ("stderr", stderr)):
            stack.enter_context(mock.patch.object(sys, name, stream))
        try:
            run(args)
            code = 0
        except SystemExit as ending:
            code = ending.code
    if not isinstance(code, int):  # as the program ends on a SystemExit message
        if code is not None:
            stderr.write(f"{code}\n")
        code = 0 if code is None else 1
    stdout.flush()
    stderr.flush()
    return subprocess.CompletedProcess(args, code, stdout.buffer.getvalue(),
                                       stderr.buffer.getvalue())
