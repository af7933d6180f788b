"""The model a command names, loaded as the library loads it
(:func:`treedyn.session.models.load_model`, with this run's --mesh-path folders), its notes
said as warnings; and the command line's own words for it: xacro's ``name:=value``
arguments, the states per chunk of --input."""
import re
from collections.abc import Sequence

from treedyn.engine import Model
from treedyn.pipeline.chunks import computation_chunk
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from treedyn.session.environment import STREAM_CHUNK
from treedyn.session.models import STDIN_MODEL, load_model

from .console import console, warn
from .options import MESH_PATHS

MAPPING = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):=(.*)", re.S)  # xacro's name:=value


def load(path: str, free_flyer: bool, diagnose: bool = False,
         xacro: Sequence[tuple[str, str]] = (), mimic: bool = False,
         urdf_only: bool = False) -> Model:
    """The model at ``path`` (``-``: stdin), as :func:`treedyn.session.models.load_model`
    loads it with the --mesh-path folders; its notes are warnings, and --verbose says what
    was loaded and how long it took."""
    name = STDIN_MODEL if path == "-" else path
    with console.stage(f"{name}: read and built"):
        model = load_model(path, free_flyer, diagnose, xacro, mimic, urdf_only, MESH_PATHS,
                           freeze=True)
    for note in model.description.notes:
        warn(note)
    console.note(f"{name}: {model.format.upper()} model {model.name!r}: "
                 f"{len(model.joint_names)} joints, nq {model.nq}, nv {model.nv}, "
                 f"{len(model.description.files)} file(s) read")
    return model


def given_layout(given: dict) -> Layout:
    """The layout of the model that the options ``given`` (by name) name, as the dynamics
    and the state commands share them: MODEL and its xacro arguments, --free-flyer,
    --mimic, --degrees."""
    model = load(given["model"], given["free_flyer"], mimic=given["mimic"],
                 xacro=xacro_arguments(given["xacro_args"], given["xacro_arg"]))
    return Layout.of(model, given["degrees"])


def chunk_states(command: str, layout) -> int:
    """States per chunk of ``command``'s --input: at most TREEDYN_STREAM_CHUNK, fewer where
    the results would be large (:func:`treedyn.pipeline.chunks.computation_chunk`)."""
    states = computation_chunk(command, layout.model, STREAM_CHUNK)
    console.note(f"{states} states per chunk of --input")
    return states


def xacro_arguments(positional: Sequence[str] | None, options: Sequence[str] | None
                    ) -> tuple[tuple[str, str], ...]:
    """The xacro arguments of ``name:=value`` words after the model and ``--xacro-arg``
    values, in that order (a later one of a name wins, as in xacro); a word that is not
    ``name:=value`` is a UsageError (it is a stray argument, not a mapping)."""
    pairs = []
    given = [(word, False) for word in positional or ()] + [(word, True) for word in
                                                           options or ()]
    for word, option in given:
        match = MAPPING.fullmatch(word)
        if match is None and option:
            raise UsageError(f"dyn: --xacro-arg {word!r}: expected NAME:=VALUE, NAME a xacro "
                             "argument's name (letters, digits, _)")
        if match is None:
            raise UsageError(f"unexpected argument {word!r}: after the model only xacro "
                             "arguments NAME:=VALUE are taken")
        pairs.append((match.group(1), match.group(2)))
    return tuple(pairs)
