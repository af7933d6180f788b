"""``dyn frames``: where named frames (links, bodies, joints) are in the world, for one
state or every state of a log (:mod:`treedyn.engine.named`, :mod:`..run.kinematics`)."""
from typing import Annotated, Optional

import typer

from ..render.table import table
from ..run.kinematics import state_command

FrameOpt = Annotated[Optional[list[str]], typer.Option(
    "--frame", metavar="NAME", show_default=False,
    help="A link (URDF) or body (MJCF), else a joint, else an MJCF site, by name; "
    "'joint:NAME' and 'site:NAME' reach those where a link has the name ('link:NAME', "
    "'body:NAME' say the link). Repeatable. Default: every link (body), joint and site.")]


def text(layout, row):
    return lambda T: table([[name, *T[k, :, 3]] for k, name in enumerate(row.frames)],
                           ["frame", "x", "y", "z"])


frames = state_command("frames", text, (
    "Each frame's position and orientation in the world.\n\n"
    'JSON: {"frames": [names], "p": [[x, y, z], ...], "R": [[3x3], ...]}, the columns of R\n'
    "the frame's axes in world coordinates. Many states: \"T\" per state, [R | p] (k x 3 x 4)."),
    ("dyn frames fixtures/two_link_arm.urdf --q 0.5,1 --frame link2",
     "dyn frames robot.urdf --input states.npz --output poses.npz"),
    {"frame": (FrameOpt, None)}, asks=("frame",))
