"""``dyn coriolis``: the Coriolis matrix C(q, v), Pinocchio's ``computeCoriolisMatrix``
(:func:`treedyn.engine.coriolis.coriolis`), for one state or every state of a log."""
from ..model import xacro_arguments
from ..options import (DatasetPrefixOpt, DegreesOpt, FormatOpt, FreeFlyerOpt, InputOpt,
                       MimicOpt, ModelArg, OutputOpt, QOpt, QuietOpt, VOpt, XacroArgOpt,
                       XacroArgs, epilog, examples)
from ..render.table import table
from ..run.kinematics import Asked, solve_kinematics


@epilog(examples("dyn coriolis fixtures/two_link_arm.urdf --q 0.5,1 --v 1,-0.5",
                 "dyn coriolis robot.urdf --input states.csv --output C.npz"))
def coriolis(model: ModelArg, xacro_args: XacroArgs = None, q: QOpt = None, v: VOpt = None,
             degrees: DegreesOpt = False, free_flyer: FreeFlyerOpt = False,
             input_file: InputOpt = None, output_file: OutputOpt = None,
             fmt: FormatOpt = None, quiet: QuietOpt = False, xacro_arg: XacroArgOpt = None,
             mimic: MimicOpt = False, dataset_prefix: DatasetPrefixOpt = None) -> None:
    """Coriolis matrix C(q, v) (nv x nv): C v = h(q, v) - g(q), dM/dt - 2C skew-symmetric.

    Pinocchio's computeCoriolisMatrix (C is not unique; this is its factorisation).
    JSON: {"C": [[nv numbers] x nv], "dofs"}; many states: "C" per state (q and v read).
    C stays SI (N m per rad/s) with --degrees.
    """
    def select(layout):
        from treedyn.pipeline.compute import COMPUTATIONS
        dofs = list(layout.v_labels)

        def document(C):
            return {"C": C.tolist(), "dofs": dofs}

        def text(C):
            return table([[dof, *C[d]] for d, dof in enumerate(dofs)], ["", *dofs])
        return COMPUTATIONS["coriolis"], dofs, document, text

    solve_kinematics(Asked(model, free_flyer, q, degrees, input_file, output_file,
                           fmt and fmt.value, quiet, xacro_arguments(xacro_args, xacro_arg),
                           mimic, dataset_prefix, v=v), select)
