"""``dyn com``: the centre of mass and its Jacobian, of the model or of a subtree
(:func:`treedyn.engine.named.center_of_mass`)."""
from typing import Annotated, Optional

import typer

from ..render.table import table
from ..run.kinematics import state_command

SubtreeOpt = Annotated[Optional[str], typer.Option(
    "--subtree", metavar="FRAME", show_default=False,
    help="Only the subtree of the moving body FRAME sits on (that body, the links "
    "welded to it, and every body below it).")]


def text(layout, row):
    return lambda C: (f"mass {row.mass:g} kg\n" + table(
        [[axis, *C[a]] for a, axis in enumerate("xyz")], ["", "com", *layout.v_labels]))


com = state_command("com", text, (
    "Centre of mass in the world and its Jacobian Jcom (3 x nv, Jcom v = dc/dt).\n\n"
    'JSON: {"mass", "com": [x, y, z], "Jcom": [[nv numbers] x 3]}; many states: "com" per\n'
    "state, [c | Jcom] (3 x (1 + nv))."),
    ("dyn com fixtures/two_link_arm.urdf --q 0.5,1",
     "dyn com robot.urdf --subtree forearm --input states.npz --output com.npz"),
    {"subtree": (SubtreeOpt, None)}, asks=("subtree",))
