"""SIGTERM and SIGHUP (``kill``, ``timeout``, a cancelled CI job, a closed terminal) end a
run that writes a file as Ctrl-C does: the output left unchanged, the states completed in
NAME.partial.EXT, worker processes and temporaries removed (:func:`ended_by_signals`)."""
from __future__ import annotations

import contextlib
import os
import signal
import threading

from .errors import Ended


@contextlib.contextmanager
def ended_by_signals():
    """Within: SIGTERM and SIGHUP (``kill``, ``timeout``, a cancelled CI job) raise
    :class:`Ended` in this process, so the clean-up of the ``try``/``finally`` blocks inside
    runs; the handlers are restored before it leaves, the :class:`Ended` with it (its
    ``kept`` says what the output kept): whoever runs the process ends it by that signal
    (``dyn`` does: :func:`treedyn.cli.app.run_app`). A process forked inside that has not
    set its own handlers yet ends by the signal at once. Outside the main thread (a program
    that runs a computation in a thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    parent = os.getpid()

    def raise_ended(number, frame) -> None:
        if os.getpid() != parent:
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
        raise Ended(number)

    previous = {number: signal.signal(number, raise_ended)
                for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
