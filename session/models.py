"""A model loaded as ``dyn`` loads it (:func:`load_model`): a file, or a document's bytes
from stdin; a ``.xacro`` file expanded with its arguments and the environment; ROS
packages, mesh folders and SDFormat models found through the environment's search paths;
mimic joints enforced when asked; every problem with the file one
:class:`~treedyn.pipeline.errors.UsageError` line naming it. The parsers and the engine
take all of it as arguments (:func:`treedyn.parsers.load_model`)."""
import gc
import os
import sys
from collections.abc import Sequence

from treedyn.engine import Model, ModelError, configure
from treedyn.engine.coupling import MimicError, couple
from treedyn.parsers import (PackagePaths, ParseError, XacroInput, check_finite,
                              collector_paused)
from treedyn.parsers import load_model as parse_model
from treedyn.parsers.files import MODEL_BYTES
from treedyn.parsers.packages import resolve_uri
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.heap import for_model_loading
from treedyn.pipeline.paths import reading, recording

from .environment import count, model_search, package_search, xacro_environment

STDIN_MODEL = "<stdin>"  # a model read from stdin: its name in errors, in the current folder


def load_model(path: str, free_flyer: bool = False, diagnose: bool = False,
               xacro: Sequence[tuple[str, str]] = (), mimic: bool = False,
               urdf_only: bool = False, meshes: Sequence[str] = (),
               freeze: bool = False) -> Model:
    """The model at ``path``; any problem with the file becomes one UsageError line, and
    so do numbers that overflow once compiled, unless the caller ``diagnose``s them
    (check-inertia reports them as findings). ``mimic`` enforces the mimic joints (a
    relation that cannot hold is named at its ``<mimic>``). With ``urdf_only``,
    ``free_flyer`` floats a URDF and leaves an MJCF model as it is
    (:func:`treedyn.parsers.load_model`). The engine's batching takes TREEDYN_THREADS and
    TREEDYN_CHUNK first (:func:`configure_engine`). A ``.xacro`` file is
    expanded with the arguments ``xacro`` ((name, value) pairs), the environment, and the
    search paths of :func:`package_paths` (with the folders ``meshes``). ``path`` "-"
    reads the model from stdin (:func:`standard_input`). The model's notes (what was read
    otherwise than written) are in ``model.description.notes``. ``freeze`` (the dyn
    program's): the model is moved out of the garbage collector's walks for good
    (``gc.freeze``, which freezes every object alive then, the caller's too)."""
    configure_engine()
    if xacro and not str(path).lower().endswith(".xacro"):
        given = " ".join(f"{name}:={value}" for name, value in xacro)
        raise UsageError(f"{path}: xacro arguments ({given}) apply to .xacro models only")
    data = None
    if path == "-":
        path, data = STDIN_MODEL, standard_input()
    try:
        with for_model_loading(os.environ), \
                collector_paused():  # till frozen: on, it would walk the new objects at once
            model = parse_model(path, free_flyer=free_flyer,
                                xacro=XacroInput(tuple(xacro), xacro_environment()),
                                packages=package_paths(meshes), urdf_only=urdf_only,
                                data=data)
            if freeze:  # the model lives to the process's end (dyn's): its million objects
                gc.freeze()  # out of the collector's walks (a library caller's heap is its own)
        if not diagnose:
            check_finite(model.description)
        record_reads(model, "-" if data is not None else path, meshes)
        return coupled(model) if mimic else model
    except ParseError as error:
        raise UsageError(str(error)) from None
    except ModelError as error:
        raise UsageError(f"{path}: {error}") from None
    except OSError as error:
        raise UsageError(f"{path}: cannot read ({error.strerror or error})") from None


def record_reads(model: Model, path: str, meshes: Sequence[str]) -> None:
    """The model's files as this run's reads (:func:`treedyn.pipeline.paths.reading`),
    which no output may replace: the file (or stdin), the files it includes, and, in a run
    that records them, the mesh files it names that are found."""
    reading(path, "the model file")
    for file in model.description.files:
        reading(file, "a file of the model")
    if not recording():
        return
    packages = package_paths(meshes)
    named = {shape.mesh for link in model.description.links for shape in link.geometry
             if shape.mesh}
    for mesh in sorted(named):
        found = resolve_uri(mesh, model.source, packages)
        if found is not None:
            reading(str(found), "a mesh of the model")


def configure_engine() -> None:
    """TREEDYN_THREADS (engine threads) and TREEDYN_CHUNK (states per chunk), where set,
    into the engine's batching settings, which read no environment of their own; unset
    ones keep the engine's defaults. :func:`load_model` does it before it loads, so every
    engine call after it runs with them."""
    configure(threads=count("TREEDYN_THREADS", None), chunk=count("TREEDYN_CHUNK", None))


def coupled(model: Model) -> Model:
    """The model with its mimic joints enforced; ParseError at the first ``<mimic>`` that
    cannot be."""
    try:
        return couple(model)
    except MimicError as error:
        raise ParseError.at(model.mimic[error.joint].source, error.problem) from None


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


def package_paths(meshes: Sequence[str] = ()) -> PackagePaths:
    """Where ROS packages are looked for beyond the folders above a model: the folders of
    ROS_PACKAGE_PATH and the prefixes of AMENT_PREFIX_PATH; the folders ``meshes``, where
    mesh files not found otherwise are looked for; and where SDFormat's model://NAME is:
    the folders of GZ_SIM_RESOURCE_PATH and SDF_PATH."""
    return PackagePaths(*package_search(), meshes=tuple(meshes), models=model_search())
