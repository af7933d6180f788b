"""Pieces every ``dyn`` command shares: the MODEL argument, --free-flyer, loading a model.

Kept free of heavy imports (the parsers and lxml load inside :func:`load`) so that
``dyn --help`` stays quick.
"""
from typing import Annotated

import typer

from treedyn.engine import Model

from .inputs import UsageError

ModelArg = Annotated[str, typer.Argument(
    metavar="MODEL", show_default=False, help="URDF or MJCF model file.")]
FreeFlyerOpt = Annotated[bool, typer.Option(
    "--free-flyer", help="URDF: add a floating root joint 'root_joint' (type free, q = "
    "[x, y, z, qx, qy, qz, qw], v = [linear, angular] in the base frame).")]


def not_nan(value: float) -> float:
    """Option callback: NaN passes typer's min/max checks, so refuse it here (exit 2)."""
    if value != value:
        raise typer.BadParameter("nan is not a number")
    return value


def finite(value: float) -> float:
    """Option callback: a finite number (no nan, no inf)."""
    if not abs(value) < float("inf"):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def examples(*lines: str) -> str:
    """An 'Examples:' epilog that click prints as is (\\b: no re-wrapping)."""
    return "\b\nExamples:\n" + "".join(f"  {line}\n" for line in lines)


def load(path: str, free_flyer: bool) -> Model:
    """The model at ``path``; any problem with the file becomes one UsageError line."""
    from treedyn.engine import ModelError
    from treedyn.parsers import ParseError, load_model

    from .output import warn

    try:
        model = load_model(path, free_flyer=free_flyer)
    except ParseError as error:
        raise UsageError(str(error)) from None
    except ModelError as error:
        raise UsageError(f"{path}: {error}") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read ({error.strerror or error})") from None
    for note in model.description.notes:
        warn(note)
    return model
