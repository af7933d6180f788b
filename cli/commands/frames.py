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


def select(given, layout):
    from treedyn.pipeline.kinematics import kinematics
    chosen = named_frames(layout, given["frame"] or None)
    labels = [f"{name}|{'p' if c == 3 else 'R'}{r}{'' if c == 3 else c}"
              for name in chosen.names for r in range(3) for c in range(4)]

    def document(T):
        return {"frames": list(chosen.names), "p": T[:, :, 3].tolist(),
                "R": T[:, :, :3].tolist()}

    def text(T):
        return table([[name, *T[k, :, 3]] for k, name in enumerate(chosen.names)],
                     ["frame", "x", "y", "z"])
    return kinematics("frames", chosen), labels, document, text


frames = state_command(select, (
    "Each frame's position and orientation in the world.\n\n"
    'JSON: {"frames": [names], "p": [[x, y, z], ...], "R": [[3x3], ...]}, the columns of R\n'
    "the frame's axes in world coordinates. Many states: \"T\" per state, [R | p] (k x 3 x 4)."),
    ("dyn frames fixtures/two_link_arm.urdf --q 0.5,1 --frame link2",
     "dyn frames robot.urdf --input states.npz --output poses.npz"),
    {"frame": (FrameOpt, None)})
