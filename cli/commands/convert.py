"""``dyn convert MODEL -o OUT``: the model written in OUT's format (URDF -> MJCF, MJCF ->
URDF), with the same dynamics; each element names where it came from."""
import os
from typing import Annotated

import typer

from treedyn.parsers.writers import TARGETS
from treedyn.pipeline.errors import UsageError
from treedyn.session.fitted import write_converted

from ..console import warn
from ..model import load, xacro_arguments
from ..options import (MESH_PATHS, FreeFlyerOpt, ModelArg, XacroArgOpt, XacroArgs, epilog,
                       examples)

CONVERT_EXAMPLES = examples(
    "dyn convert fixtures/two_link_arm.urdf -o two_link_arm.xml",
    "dyn convert robot.urdf -o robot.xml --free-flyer   # a <freejoint> root",
    "dyn diff robot.urdf robot.xml   # the same dynamics: no change",
)


@epilog(CONVERT_EXAMPLES)
def convert(
        model: ModelArg,
        output: Annotated[str, typer.Option(
            "--output", "-o", metavar="OUT", show_default=False,
            help="The new model file; its suffix says the format: .xml or .mjcf (MJCF), "
            ".urdf (URDF). Never the model itself.")],
        xacro_args: XacroArgs = None, free_flyer: FreeFlyerOpt = False,
        xacro_arg: XacroArgOpt = None) -> None:
    """Write MODEL in another format with the same dynamics.

    URDF (or xacro) to MJCF: every link a body (those welded by fixed joints too, so
    their frames keep their names), the file's inertias exactly (inertiafromgeom
    false), joint limits, damping, friction (frictionloss) and effort limits
    (actuatorfrcrange), mimic joints as joint equalities, meshes by reference; with
    --free-flyer the root body floats (<freejoint>). What the target cannot hold is said
    on stderr, one line each; a model it cannot express is an error (exit 2). Each
    element of OUT is preceded by a comment naming the file and line it came from. OUT
    is written whole or not at all, after dyn reads it back.
    """
    suffix = os.path.splitext(output)[1].lower()
    if suffix not in TARGETS:
        raise UsageError(f"dyn: -o {output}: the suffix says the format to write: "
                         f"{', '.join(TARGETS)}")
    loaded = load(model, False, xacro=xacro_arguments(xacro_args, xacro_arg))
    description = loaded.description
    if free_flyer and description.format != "urdf":
        raise UsageError(f"dyn: {model}: --free-flyer applies to URDF models; an MJCF "
                         "model floats a body with <freejoint>")
    for note in write_converted(model, output, description, free_flyer, MESH_PATHS, warn):
        warn(note)
