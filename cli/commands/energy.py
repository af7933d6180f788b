"""``dyn energy``: kinetic energy 1/2 v^T M v and potential energy -sum m_i g . c_i
(:func:`treedyn.engine.energy.energy`)."""
from treedyn.pipeline.kinematics import ENERGIES

from ..render.table import table
from ..run.kinematics import state_command


def text(layout, row):
    return lambda E: table([list(E)], list(ENERGIES))


energy = state_command("energy", text, (
    "Kinetic energy 1/2 v^T M(q) v and potential energy -sum m_i g . c_i (joules).\n\n"
    "Armature counts in the kinetic energy; the potential is zero with every centre of\n"
    "mass at the world origin (Pinocchio's computeKineticEnergy, computePotentialEnergy).\n"
    'JSON: {"kinetic", "potential"}; many states: "energy" per state, [kinetic, potential].'),
    ("dyn energy fixtures/two_link_arm.urdf --q 0.5,1 --v 1,-0.5",
     "dyn energy robot.urdf --input states.csv --output energy.csv"), v=True)
