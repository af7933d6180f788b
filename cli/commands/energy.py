"""``dyn energy``: kinetic energy 1/2 v^T M v and potential energy -sum m_i g . c_i
(:func:`treedyn.engine.energy.energy`)."""
from ..model import xacro_arguments
from ..options import (DatasetPrefixOpt, DegreesOpt, FormatOpt, FreeFlyerOpt, InputOpt,
                       MimicOpt, ModelArg, OutputOpt, QOpt, QuietOpt, VOpt, XacroArgOpt,
                       XacroArgs, epilog, examples)
from ..render.table import table
from ..run.kinematics import Asked, solve_kinematics

KEYS = ("kinetic", "potential")


@epilog(examples("dyn energy fixtures/two_link_arm.urdf --q 0.5,1 --v 1,-0.5",
                 "dyn energy robot.urdf --input states.csv --output energy.csv"))
def energy(model: ModelArg, xacro_args: XacroArgs = None, q: QOpt = None, v: VOpt = None,
           degrees: DegreesOpt = False, free_flyer: FreeFlyerOpt = False,
           input_file: InputOpt = None, output_file: OutputOpt = None,
           fmt: FormatOpt = None, quiet: QuietOpt = False, xacro_arg: XacroArgOpt = None,
           mimic: MimicOpt = False, dataset_prefix: DatasetPrefixOpt = None) -> None:
    """Kinetic energy 1/2 v^T M(q) v and potential energy -sum m_i g . c_i (joules).

    Armature counts in the kinetic energy; the potential is zero with every centre of
    mass at the world origin (Pinocchio's computeKineticEnergy, computePotentialEnergy).
    JSON: {"kinetic", "potential"}; many states: "energy" per state, [kinetic, potential].
    """
    def select(layout):
        from treedyn.pipeline.compute import COMPUTATIONS

        def document(E):
            return dict(zip(KEYS, E.tolist()))

        def text(E):
            return table([list(E)], list(KEYS))
        return COMPUTATIONS["energy"], list(KEYS), document, text

    solve_kinematics(Asked(model, free_flyer, q, degrees, input_file, output_file,
                           fmt and fmt.value, quiet, xacro_arguments(xacro_args, xacro_arg),
                           mimic, dataset_prefix, v=v), select)
