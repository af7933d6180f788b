"""``dyn coriolis``: the Coriolis matrix C(q, v), Pinocchio's ``computeCoriolisMatrix``
(:func:`treedyn.engine.coriolis.coriolis`), for one state or every state of a log."""
from ..render.table import table
from ..run.kinematics import state_command


def text(layout, row):
    return lambda C: table([[dof, *C[d]] for d, dof in enumerate(row.labels)],
                           ["", *row.labels])


coriolis = state_command("coriolis", text, (
    "Coriolis matrix C(q, v) (nv x nv): C v = h(q, v) - g(q), dM/dt - 2C skew-symmetric.\n\n"
    "Pinocchio's computeCoriolisMatrix (C is not unique; this is its factorisation).\n"
    'JSON: {"C": [[nv numbers] x nv], "dofs"}; many states: "C" per state (q and v read).\n'
    "C stays SI (N m per rad/s) with --degrees."),
    ("dyn coriolis fixtures/two_link_arm.urdf --q 0.5,1 --v 1,-0.5",
     "dyn coriolis robot.urdf --input states.csv --output C.npz"), v=True)
