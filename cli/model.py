"""The model a command names: parsed, built, and every problem as one usage error."""
import gc
import os
import re
import sys
from collections.abc import Sequence

from treedyn.engine import Model, ModelError, configure
from treedyn.engine.coupling import MimicError, couple
from treedyn.parsers import (PackagePaths, ParseError, XacroInput, check_finite,
                              collector_paused, load_model)
from treedyn.parsers.files import MODEL_BYTES
from treedyn.pipeline.heap import for_model_loading

from .console import console, warn
from .options import MESH_PATHS
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.chunks import computation_chunk

from .settings import STREAM_CHUNK, count, model_search, package_search, xacro_environment

MAPPING = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):=(.*)", re.S)  # xacro's name:=value


def load(path: str, free_flyer: bool, diagnose: bool = False,
         xacro: Sequence[tuple[str, str]] = (), mimic: bool = False,
         urdf_only: bool = False) -> Model:
    """The model at ``path``; any problem with the file becomes one UsageError line, and
    so do numbers that overflow once compiled, unless the command ``diagnose``s them
    (check-inertia reports them as findings). ``mimic`` enforces the mimic joints (--mimic;
    a relation that cannot hold is named at its ``<mimic>``). With ``urdf_only``,
    ``free_flyer`` floats a URDF and leaves an MJCF model as it is
    (:func:`treedyn.parsers.load_model`). The engine's batching takes TREEDYN_THREADS and
    TREEDYN_CHUNK here, before a command (or a cluster worker) first runs it. A ``.xacro``
    file is expanded with the arguments ``xacro`` (see :func:`xacro_arguments`), the
    environment, and ROS_PACKAGE_PATH and AMENT_PREFIX_PATH as package search paths.
    ``path`` "-" reads the model from stdin (:func:`standard_input`)."""
    configure_engine()
    if xacro and not str(path).lower().endswith(".xacro"):
        given = " ".join(f"{name}:={value}" for name, value in xacro)
        raise UsageError(f"{path}: xacro arguments ({given}) apply to .xacro models only")
    data = None
    if path == "-":
        path, data = STDIN_MODEL, standard_input()
    try:
        with console.stage(f"{path}: read and built"), for_model_loading(os.environ), \
                collector_paused():  # till frozen: on, it would walk the new objects at once
            model = load_model(path, free_flyer=free_flyer,
                               xacro=XacroInput(tuple(xacro), xacro_environment()),
                               packages=package_paths(), urdf_only=urdf_only, data=data)
            gc.freeze()  # the model lives to the end: its million objects out of the walks
        if not diagnose:
            check_finite(model.description)
        if mimic:
            model = coupled(model)
    except ParseError as error:
        raise UsageError(str(error)) from None
    except ModelError as error:
        raise UsageError(f"{path}: {error}") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read ({error.strerror or error})") from None
    for note in model.description.notes:
        warn(note)
    console.note(f"{path}: {model.format.upper()} model {model.name!r}: "
                 f"{len(model.joint_names)} joints, nq {model.nq}, nv {model.nv}, "
                 f"{len(model.description.files)} file(s) read")
    return model


def coupled(model: Model) -> Model:
    """The model with its mimic joints enforced; ParseError at the first ``<mimic>`` that
    cannot be."""
    try:
        return couple(model)
    except MimicError as error:
        raise ParseError.at(model.mimic[error.joint].source, error.problem) from None


def configure_engine() -> None:
    """TREEDYN_THREADS (engine threads) and TREEDYN_CHUNK (states per chunk), where set,
    into the engine's batching settings, which read no environment of their own; unset
    ones keep the engine's defaults. Every command (and every Dask worker) loads its model
    here first, so every engine call runs with them."""
    configure(threads=count("TREEDYN_THREADS", None), chunk=count("TREEDYN_CHUNK", None))


STDIN_MODEL = "<stdin>"  # a model read from stdin: its name in errors, in the current folder


def standard_input() -> bytes:
    """The model document on stdin, at most MODEL_BYTES as a file may be (a UsageError
    past it, or when there is no stdin)."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise UsageError("dyn: MODEL '-' reads the model from stdin, and there is none")
    try:
        data = stream.read(MODEL_BYTES + 1)
    except OSError as error:
        raise UsageError(f"dyn: cannot read the model from stdin ({error.strerror})") from None
    if len(data) > MODEL_BYTES:
        raise UsageError(f"dyn: the model on stdin is larger than the {MODEL_BYTES >> 20} MiB "
                         "dyn reads")
    return data


def chunk_states(command: str, layout) -> int:
    """States per chunk of ``command``'s --input: at most TREEDYN_STREAM_CHUNK, fewer where
    the results would be large (:func:`treedyn.pipeline.chunks.computation_chunk`)."""
    states = computation_chunk(command, layout.model, STREAM_CHUNK)
    console.note(f"{states} states per chunk of --input")
    return states


def package_paths() -> PackagePaths:
    """Where ROS packages are looked for beyond the folders above a model: the folders of
    ROS_PACKAGE_PATH and the prefixes of AMENT_PREFIX_PATH; the --mesh-path folders,
    where mesh files not found otherwise are looked for; and where SDFormat's
    model://NAME is: the folders of GZ_SIM_RESOURCE_PATH and SDF_PATH."""
    return PackagePaths(*package_search(), meshes=tuple(MESH_PATHS), models=model_search())


def xacro_arguments(positional: Sequence[str] | None, options: Sequence[str] | None
                    ) -> tuple[tuple[str, str], ...]:
    """The xacro arguments of ``name:=value`` words after the model and ``--xacro-arg``
    values, in that order (a later one of a name wins, as in xacro); a word that is not
    ``name:=value`` is a UsageError (it is a stray argument, not a mapping)."""
    pairs = []
    for word in [*(positional or ()), *(options or ())]:
        match = MAPPING.fullmatch(word)
        if match is None:
            raise UsageError(f"unexpected argument {word!r}: after the model only xacro "
                             "arguments NAME:=VALUE are taken")
        pairs.append((match.group(1), match.group(2)))
    return tuple(pairs)
