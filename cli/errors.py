"""The errors of the dyn command line; :func:`treedyn.cli.app.run_app` turns each into one
line on stderr with exit code 2."""
from __future__ import annotations

# an argument of a library function -> the option that sets it on the command line
OPTIONS = {"free_flyer": "--free-flyer"}


class UsageError(Exception):
    """Bad usage or bad input: reported as one line on stderr with exit code 2."""


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


def worded(error: BaseException) -> str:
    """``error``'s one line in the command line's words.

    The parsers and the engine speak of their functions' arguments (``scene.xml:
    free_flyer applies to URDF models; ...``, an error whose ``argument`` attribute names
    one, :class:`treedyn.parsers.errors.ArgumentError`); such a line names the option that
    sets the argument instead (``scene.xml: --free-flyer applies to ...``). The library
    error may be ``error`` itself or the one it was raised from with the same line
    (``raise UsageError(str(parse_error)) from None`` keeps it as the context): a command
    may turn it into a UsageError wherever it likes, and the line is worded here, where it
    is printed (:func:`treedyn.cli.app.run_app`).
    """
    text = str(error)
    for source in (error, error.__cause__, error.__context__):
        argument, problem = getattr(source, "argument", None), getattr(source, "problem", "")
        if (argument in OPTIONS and str(source) == text and problem.startswith(argument)
                and text.endswith(problem)):
            return text[:len(text) - len(problem)] + OPTIONS[argument] + problem[len(argument):]
    return text
