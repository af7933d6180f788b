"""``dyn centroidal``: the centroidal momentum matrix Ag, the momentum hg = Ag v and the
centroidal composite inertia Ig, rows (linear, angular), about the centre of mass with
world axes (:func:`treedyn.engine.centroidal.centroidal_momentum`)."""
from treedyn.pipeline.kinematics import INERTIA_AXES, MOMENTUM_ROWS

from ..render.table import table
from ..run.kinematics import state_command


def text(layout, row):
    columns = [*layout.v_labels, "hg", *(f"Ig_{axis}" for axis in INERTIA_AXES)]
    return lambda C: table([[name, *C[r]] for r, name in enumerate(MOMENTUM_ROWS)],
                           ["", *columns])


centroidal = state_command("centroidal", text, (
    "Centroidal momentum: Ag (6 x nv), hg = Ag v, Ig (6 x 6), linear rows first.\n\n"
    "About the centre of mass, axes aligned with the world (Pinocchio's ccrba). JSON:\n"
    '{"Ag": [[nv numbers] x 6], "hg": [6 numbers], "Ig": [[6 numbers] x 6]}; many states:\n'
    '"centroidal" per state, [Ag | hg | Ig] (6 x (nv + 7)). SI with --degrees.'),
    ("dyn centroidal fixtures/two_link_arm.urdf --q 0.5,1 --v 1,-0.5",
     "dyn centroidal robot.urdf --free-flyer --input states.npz --output centroidal.npz"),
    v=True)
