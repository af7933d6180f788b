"""What goes wrong with states and their outputs: the errors the pipeline raises, each
a message of one line naming the file, line or state and the problem, and the warnings it
gives (a column ignored, forces on no body), through Python's :mod:`warnings` as
:class:`StatesWarning`. The ``dyn`` command line prints each error as one line on stderr
with exit code 2 (:func:`treedyn.cli.app.run_app`), and each warning as ``dyn: warning:``.
"""
from __future__ import annotations

import warnings


class StatesWarning(UserWarning):
    """Something about the states that does not stop the run: an unused column, a vector
    given twice, forces on a fixed link."""


def warn(message: str) -> None:
    """Give ``message`` as a :class:`StatesWarning` (shown every time it is given)."""
    warnings.warn(StatesWarning(message), stacklevel=2)


class UsageError(Exception):
    """Bad input or a run that cannot be done as asked; the message is one line."""


class Ended(BaseException):
    """SIGTERM or SIGHUP arrived while dyn ran work it must clean up (worker processes, a
    cluster's files): raised by a handler so the cleanup runs, then dyn ends by the signal."""

    def __init__(self, number: int):
        super().__init__(number)
        self.number = number


class OutputError(UsageError):
    """The results could not be written (a full disk, a file size limit); ``reason`` is
    the system's. The sink has already cut or removed its file, and the message says so."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason  # "" once pickled (raised in a Dask worker)


class CorruptInput(UsageError):
    """The input file turned out to be damaged while it was read (a failed CRC-32, a broken
    compressed stream): the states already read from it cannot be trusted."""


class PartialResult(UsageError):
    """State k of a chunk gave no valid result; ``result`` holds the k before it."""

    def __init__(self, message: str, result):  # result: (k, ...) array
        super().__init__(message)
        self.result = result
