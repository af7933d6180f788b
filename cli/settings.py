"""The TREEDYN_* whole-number settings of the environment, read by the command line only.

:func:`treedyn.cli.check_environment` refuses a value that is not a positive whole number
before anything runs; :func:`configure_engine` passes TREEDYN_THREADS and TREEDYN_CHUNK to
the engine's batching (:func:`treedyn.engine.batch.threads.configure`), which reads no
environment of its own.
"""
from __future__ import annotations

import os


def environment_count(name: str, default):
    """The whole number in environment variable ``name`` (at least 1), else ``default``;
    a value that is not a whole number keeps the default with a warning (the dyn command
    refuses it before it gets here)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return max(1, int(text))
    except ValueError:
        import warnings

        warnings.warn(f"{name}={text!r} is not a whole number; using {default}", stacklevel=2)
        return default


def configure_engine() -> None:
    """TREEDYN_THREADS (engine threads) and TREEDYN_CHUNK (states per chunk), where set,
    into the engine's settings; unset ones keep the engine's defaults."""
    from treedyn.engine.batch.threads import configure

    configure(threads=environment_count("TREEDYN_THREADS", None),
              chunk=environment_count("TREEDYN_CHUNK", None))
