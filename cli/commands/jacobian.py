"""``dyn jacobian``: a frame's Jacobian, rows (linear, angular), in one of Pinocchio's three
reference frames (:func:`treedyn.engine.named.frame_jacobians`), and with ``--dot`` its
time variation (:func:`treedyn.engine.jacobian_dot.frame_jacobian_rates`)."""
from typing import Annotated

import typer

from treedyn.pipeline.kinematics import JACOBIAN_ROWS as ROWS

from ..options import choices
from ..render.table import table
from ..run.kinematics import state_command

Reference = choices("Reference", "local world aligned")  # (REFERENCES: the engine's names)


OPTIONS = {
    "frame": (Annotated[str, typer.Option(
        "--frame", metavar="NAME", show_default=False,
        help="The frame: a link (body) or joint, as for dyn frames.")], ...),
    "reference": (Annotated[Reference, typer.Option(
        "--reference", case_sensitive=False,
        help="local: in the frame's axes, about its origin; world: in world axes, the "
        "linear part that of the point at the world origin; aligned: the origin's velocity "
        "in world axes (Pinocchio's LOCAL, WORLD, LOCAL_WORLD_ALIGNED).")], Reference.local),
    "dot": (Annotated[bool, typer.Option(
        "--dot", help="Also its time variation Jdot at velocity --v (Pinocchio's "
        "getFrameJacobianTimeVariation): J a + Jdot v is the rate of J v.")], False)}


def text(layout, row):
    dofs, dot = list(layout.v_labels), row.computation.key == "J_Jdot"
    if not dot:
        return lambda J: table([[name, *J[r]] for r, name in enumerate(ROWS)], ["", *dofs])
    return lambda J: table([[f"{which} {name}", *J[w, r]]
                            for w, which in enumerate(("J", "Jdot"))
                            for r, name in enumerate(ROWS)], ["", *dofs])


jacobian = state_command("jacobian", text, (
    "The frame's Jacobian J (6 x nv): J v is its velocity, linear rows then angular.\n\n"
    'JSON: {"J": [[nv numbers] x 6], "frame", "reference", "dofs"}, and "Jdot" (6 x nv)\n'
    'with --dot; many states: "J" per state, or with --dot "J_Jdot" ([J, Jdot], 2 x 6 x nv;\n'
    "q and v read). J and Jdot stay SI (per rad/s and m/s) with --degrees."),
    ("dyn jacobian fixtures/two_link_arm.urdf --frame link2 --q 0.5,1",
     "dyn jacobian robot.urdf --frame tool0 --reference world --input q.csv",
     "dyn jacobian fixtures/two_link_arm.urdf --frame link2 --q 0.5,1 --v 1,0 --dot"),
    OPTIONS, v=True, asks=("frame", "reference", "dot", "v"))
