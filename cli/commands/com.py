"""``dyn com``: the centre of mass and its Jacobian, of the model or of a subtree
(:func:`treedyn.engine.named.center_of_mass`)."""
from typing import Annotated, Optional

import typer

from ..render.table import table
from ..run.kinematics import state_command
from .frames import named_frames


SubtreeOpt = Annotated[Optional[str], typer.Option(
    "--subtree", metavar="FRAME", show_default=False,
    help="Only the subtree of the moving body FRAME sits on (that body, the links "
    "welded to it, and every body below it).")]


def select(given, layout):
    from treedyn.pipeline.errors import UsageError
    from treedyn.pipeline.kinematics import kinematics
    model, subtree = layout.model, given["subtree"]
    root = -1 if subtree is None else int(named_frames(layout, [subtree]).on_body[0])
    bodies = slice(0, None) if root < 0 else slice(root, int(model.subtree_end[root]))
    mass = float(model.body_mass[bodies].sum())
    if not mass > 0:
        raise UsageError(f"dyn: {model.source}: "
                         f"{'the subtree of ' + subtree if subtree else 'the model'} "
                         "has no mass, so no centre of mass")
    dofs = list(layout.v_labels)
    labels = [f"{axis}|{column}" for axis in "xyz" for column in ["com", *dofs]]

    def document(C):
        return {"mass": mass, "com": C[:, 0].tolist(), "Jcom": C[:, 1:].tolist()}

    def text(C):
        return (f"mass {mass:g} kg\n"
                + table([[axis, *C[a]] for a, axis in enumerate("xyz")], ["", "com", *dofs]))
    return kinematics("com", root=root), labels, document, text


com = state_command(select, (
    "Centre of mass in the world and its Jacobian Jcom (3 x nv, Jcom v = dc/dt).\n\n"
    'JSON: {"mass", "com": [x, y, z], "Jcom": [[nv numbers] x 3]}; many states: "com" per\n'
    "state, [c | Jcom] (3 x (1 + nv))."),
    ("dyn com fixtures/two_link_arm.urdf --q 0.5,1",
     "dyn com robot.urdf --subtree forearm --input states.npz --output com.npz"),
    {"subtree": (SubtreeOpt, None)})
