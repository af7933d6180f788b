"""``dyn jacobian``: a frame's Jacobian, rows (linear, angular), in one of Pinocchio's three
reference frames (:func:`treedyn.engine.named.frame_jacobians`)."""
from enum import Enum
from typing import Annotated

import typer

from ..model import xacro_arguments
from ..options import (DatasetPrefixOpt, DegreesOpt, FormatOpt, FreeFlyerOpt, InputOpt,
                       MimicOpt, ModelArg, OutputOpt, QOpt, QuietOpt, XacroArgOpt,
                       XacroArgs, epilog, examples)
from ..render.table import table
from ..run.kinematics import Asked, solve_kinematics
from .frames import named_frames


class Reference(str, Enum):
    local = "local"
    world = "world"
    aligned = "aligned"


ENGINE = {"local": "LOCAL", "world": "WORLD", "aligned": "LOCAL_WORLD_ALIGNED"}
ROWS = ("vx", "vy", "vz", "wx", "wy", "wz")


@epilog(examples("dyn jacobian fixtures/two_link_arm.urdf --frame link2 --q 0.5,1",
                 "dyn jacobian robot.urdf --frame tool0 --reference world --input q.csv"))
def jacobian(model: ModelArg, xacro_args: XacroArgs = None,
             frame: Annotated[str, typer.Option(
                 "--frame", metavar="NAME", show_default=False,
                 help="The frame: a link (body) or joint, as for dyn frames.")] = ...,
             reference: Annotated[Reference, typer.Option(
                 "--reference", case_sensitive=False,
                 help="local: in the frame's axes, about its origin; world: in world axes, "
                 "the linear part that of the point at the world origin; aligned: the "
                 "origin's velocity in world axes (Pinocchio's LOCAL, WORLD, "
                 "LOCAL_WORLD_ALIGNED).")] = Reference.local,
             q: QOpt = None, degrees: DegreesOpt = False, free_flyer: FreeFlyerOpt = False,
             input_file: InputOpt = None, output_file: OutputOpt = None,
             fmt: FormatOpt = None, quiet: QuietOpt = False, xacro_arg: XacroArgOpt = None,
             mimic: MimicOpt = False, dataset_prefix: DatasetPrefixOpt = None) -> None:
    """The frame's Jacobian J (6 x nv): J v is its velocity, linear rows then angular.

    JSON: {"J": [[nv numbers] x 6], "frame", "reference", "dofs"}; many states: "J" per
    state. J stays SI (per rad/s and m/s) with --degrees.
    """
    def select(layout):
        from treedyn.pipeline.kinematics import kinematics
        chosen = named_frames(layout, [frame])
        dofs = list(layout.v_labels)
        labels = [f"{row}|{dof}" for row in ROWS for dof in dofs]

        def document(J):
            return {"J": J.tolist(), "frame": frame, "reference": reference.value,
                    "dofs": dofs}

        def text(J):
            return table([[row, *J[r]] for r, row in enumerate(ROWS)], ["", *dofs])
        return kinematics("jacobian", chosen, ENGINE[reference.value]), labels, document, text

    solve_kinematics(Asked(model, free_flyer, q, degrees, input_file, output_file,
                           fmt and fmt.value, quiet, xacro_arguments(xacro_args, xacro_arg),
                           mimic, dataset_prefix), select)
