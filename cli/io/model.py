"""The model a command names: parsed, built, and every problem as one usage error."""
from treedyn.engine import Model, ModelError
from treedyn.engine.batch.threads import configure
from treedyn.parsers import ParseError, check_finite, load_model

from ..console import warn
from ..errors import UsageError
from ..settings import count


def load(path: str, free_flyer: bool, diagnose: bool = False, urdf_only: bool = False) -> Model:
    """The model at ``path``; any problem with the file becomes one UsageError line, and
    so do numbers that overflow once compiled, unless the command ``diagnose``s them
    (check-inertia reports them as findings). With ``urdf_only`` ``free_flyer`` floats a
    URDF and leaves an MJCF model as it is (:func:`treedyn.parsers.load_model`). The engine's batching takes TREEDYN_THREADS
    and TREEDYN_CHUNK here, before a command (or a cluster worker) first runs it."""
    configure_engine()
    try:
        model = load_model(path, free_flyer=free_flyer, urdf_only=urdf_only)
        if not diagnose:
            check_finite(model.description)
    except ParseError as error:
        raise UsageError(str(error)) from None
    except ModelError as error:
        raise UsageError(f"{path}: {error}") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read ({error.strerror or error})") from None
    for note in model.description.notes:
        warn(note)
    return model


def configure_engine() -> None:
    """TREEDYN_THREADS (engine threads) and TREEDYN_CHUNK (states per chunk), where set,
    into the engine's batching settings, which read no environment of their own; unset
    ones keep the engine's defaults. Every command (and every Dask worker) loads its model
    here first, so every engine call runs with them."""
    configure(threads=count("TREEDYN_THREADS", None), chunk=count("TREEDYN_CHUNK", None))
