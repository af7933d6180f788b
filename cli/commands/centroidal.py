"""``dyn centroidal``: the centroidal momentum matrix Ag, the momentum hg = Ag v and the
centroidal composite inertia Ig, rows (linear, angular), about the centre of mass with
world axes (:func:`treedyn.engine.centroidal.centroidal_momentum`)."""
from ..render.table import table
from ..run.kinematics import state_command

ROWS = ("px", "py", "pz", "kx", "ky", "kz")  # linear momentum, angular momentum about c
AXES = ("vx", "vy", "vz", "wx", "wy", "wz")  # Ig's columns: the centroidal frame's motion


def select(given, layout):
    from treedyn.pipeline.compute import COMPUTATIONS
    from treedyn.pipeline.errors import UsageError
    if not layout.model.total_mass > 0:
        raise UsageError(f"dyn: {layout.model.source}: the model has no moving mass, so "
                         "no centre of mass to take the momentum about")
    columns = [*layout.v_labels, "hg", *(f"Ig_{axis}" for axis in AXES)]
    labels = [f"{row}|{column}" for row in ROWS for column in columns]
    nv = layout.model.nv

    def document(C):
        return {"Ag": C[:, :nv].tolist(), "hg": C[:, nv].tolist(),
                "Ig": C[:, nv + 1:].tolist()}

    def text(C):
        return table([[row, *C[r]] for r, row in enumerate(ROWS)], ["", *columns])
    return COMPUTATIONS["centroidal"], labels, document, text


centroidal = state_command(select, (
    "Centroidal momentum: Ag (6 x nv), hg = Ag v, Ig (6 x 6), linear rows first.\n\n"
    "About the centre of mass, axes aligned with the world (Pinocchio's ccrba). JSON:\n"
    '{"Ag": [[nv numbers] x 6], "hg": [6 numbers], "Ig": [[6 numbers] x 6]}; many states:\n'
    '"centroidal" per state, [Ag | hg | Ig] (6 x (nv + 7)). SI with --degrees.'),
    ("dyn centroidal fixtures/two_link_arm.urdf --q 0.5,1 --v 1,-0.5",
     "dyn centroidal robot.urdf --free-flyer --input states.npz --output centroidal.npz"),
    v=True)
