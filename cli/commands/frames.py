"""``dyn frames``: where named frames (links, bodies, joints) are in the world, for one
state or every state of a log (:mod:`treedyn.engine.named`, :mod:`..run.kinematics`)."""
from typing import Annotated, Optional

import typer

from ..model import xacro_arguments
from ..options import (DatasetPrefixOpt, DegreesOpt, FormatOpt, FreeFlyerOpt, InputOpt,
                       MimicOpt, ModelArg, OutputOpt, QOpt, QuietOpt, XacroArgOpt,
                       XacroArgs, epilog, examples)
from ..render.table import table
from ..run.kinematics import Asked, solve_kinematics

FrameOpt = Annotated[Optional[list[str]], typer.Option(
    "--frame", metavar="NAME", show_default=False,
    help="A link (URDF) or body (MJCF), else a joint, else an MJCF site, by name; "
    "'joint:NAME' and 'site:NAME' reach those where a link has the name ('link:NAME', "
    "'body:NAME' say the link). Repeatable. Default: every link (body), joint and site.")]


def named_frames(layout, names):
    """The engine's frames named ``names`` (None: all); one error line for a wrong name."""
    from treedyn.engine.named import frame_set
    from treedyn.pipeline.errors import UsageError
    try:
        return frame_set(layout.model, names)
    except KeyError as error:
        raise UsageError(f"dyn: {layout.model.source}: no link, body, joint or site named "
                         f"{error.args[0]!r} (joint:NAME names a joint, site:NAME a site)"
                         ) from None


@epilog(examples("dyn frames fixtures/two_link_arm.urdf --q 0.5,1 --frame link2",
                 "dyn frames robot.urdf --input states.npz --output poses.npz"))
def frames(model: ModelArg, xacro_args: XacroArgs = None, frame: FrameOpt = None,
           q: QOpt = None, degrees: DegreesOpt = False, free_flyer: FreeFlyerOpt = False,
           input_file: InputOpt = None, output_file: OutputOpt = None,
           fmt: FormatOpt = None, quiet: QuietOpt = False, xacro_arg: XacroArgOpt = None,
           mimic: MimicOpt = False, dataset_prefix: DatasetPrefixOpt = None) -> None:
    """Each frame's position and orientation in the world.

    JSON: {"frames": [names], "p": [[x, y, z], ...], "R": [[3x3], ...]}, the columns of R
    the frame's axes in world coordinates. Many states: "T" per state, [R | p] (k x 3 x 4).
    """
    def select(layout):
        from treedyn.pipeline.kinematics import kinematics
        chosen = named_frames(layout, frame or None)
        labels = [f"{name}|{'p' if c == 3 else 'R'}{r}{'' if c == 3 else c}"
                  for name in chosen.names for r in range(3) for c in range(4)]

        def document(T):
            return {"frames": list(chosen.names), "p": T[:, :, 3].tolist(),
                    "R": T[:, :, :3].tolist()}

        def text(T):
            return table([[name, *T[k, :, 3]] for k, name in enumerate(chosen.names)],
                         ["frame", "x", "y", "z"])
        return kinematics("frames", chosen), labels, document, text

    solve_kinematics(Asked(model, free_flyer, q, degrees, input_file, output_file,
                           fmt and fmt.value, quiet, xacro_arguments(xacro_args, xacro_arg),
                           mimic, dataset_prefix), select)
