"""The command line's words for the library's errors: :func:`treedyn.cli.app.run_app`
prints every error as one line on stderr with exit code 2, through :func:`worded`."""
from __future__ import annotations

# an argument of a library function -> the option that sets it on the command line
OPTIONS = {"free_flyer": "--free-flyer"}


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
