"""``dyn jacobian``: a frame's Jacobian, rows (linear, angular), in one of Pinocchio's three
reference frames (:func:`treedyn.engine.named.frame_jacobians`), and with ``--dot`` its
time variation (:func:`treedyn.engine.jacobian_dot.frame_jacobian_rates`)."""
from typing import Annotated

import typer

from ..render.table import table
from ..options import choices
from ..run.kinematics import state_command
from .frames import named_frames


Reference = choices("Reference", "local world aligned")
ENGINE = {"local": "LOCAL", "world": "WORLD", "aligned": "LOCAL_WORLD_ALIGNED"}
ROWS = ("vx", "vy", "vz", "wx", "wy", "wz")


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


def select(given, layout):
    from treedyn.pipeline.errors import UsageError
    from treedyn.pipeline.kinematics import kinematics
    frame, reference, dot = given["frame"], given["reference"].value, given["dot"]
    if given["v"] is not None and not dot:
        raise UsageError("dyn: --v is read with --dot only (J depends on q alone)")
    chosen = named_frames(layout, [frame])
    dofs = list(layout.v_labels)
    labels = [f"{row}|{dof}" for row in ROWS for dof in dofs]
    if dot:
        labels = [f"{which}|{label}" for which in ("J", "Jdot") for label in labels]

    def document(J):
        rates = {"Jdot": J[1].tolist()} if dot else {}
        return {"J": (J[0] if dot else J).tolist(), **rates, "frame": frame,
                "reference": reference, "dofs": dofs}

    def text(J):
        if not dot:
            return table([[row, *J[r]] for r, row in enumerate(ROWS)], ["", *dofs])
        return table([[f"{which} {row}", *J[w, r]] for w, which in enumerate(("J", "Jdot"))
                      for r, row in enumerate(ROWS)], ["", *dofs])
    return kinematics("jacobian", chosen, ENGINE[reference], dot=dot), labels, document, text


jacobian = state_command(select, (
    "The frame's Jacobian J (6 x nv): J v is its velocity, linear rows then angular.\n\n"
    'JSON: {"J": [[nv numbers] x 6], "frame", "reference", "dofs"}, and "Jdot" (6 x nv)\n'
    'with --dot; many states: "J" per state, or with --dot "J_Jdot" ([J, Jdot], 2 x 6 x nv;\n'
    "q and v read). J and Jdot stay SI (per rad/s and m/s) with --degrees."),
    ("dyn jacobian fixtures/two_link_arm.urdf --frame link2 --q 0.5,1",
     "dyn jacobian robot.urdf --frame tool0 --reference world --input q.csv",
     "dyn jacobian fixtures/two_link_arm.urdf --frame link2 --q 0.5,1 --v 1,0 --dot"),
    OPTIONS, v=True)
