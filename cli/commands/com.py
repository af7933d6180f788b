"""``dyn com``: the centre of mass and its Jacobian, of the model or of a subtree
(:func:`treedyn.engine.named.center_of_mass`)."""
from typing import Annotated, Optional

import typer

from ..model import xacro_arguments
from ..options import (DatasetPrefixOpt, DegreesOpt, FormatOpt, FreeFlyerOpt, InputOpt,
                       MimicOpt, ModelArg, OutputOpt, QOpt, QuietOpt, XacroArgOpt,
                       XacroArgs, epilog, examples)
from ..render.table import table
from ..run.kinematics import Asked, solve_kinematics
from .frames import named_frames


@epilog(examples("dyn com fixtures/two_link_arm.urdf --q 0.5,1",
                 "dyn com robot.urdf --subtree forearm --input states.npz --output com.npz"))
def com(model: ModelArg, xacro_args: XacroArgs = None,
        subtree: Annotated[Optional[str], typer.Option(
            "--subtree", metavar="FRAME", show_default=False,
            help="Only the subtree of the moving body FRAME sits on (that body, the links "
            "welded to it, and every body below it).")] = None,
        q: QOpt = None, degrees: DegreesOpt = False, free_flyer: FreeFlyerOpt = False,
        input_file: InputOpt = None, output_file: OutputOpt = None,
        fmt: FormatOpt = None, quiet: QuietOpt = False, xacro_arg: XacroArgOpt = None,
        mimic: MimicOpt = False, dataset_prefix: DatasetPrefixOpt = None) -> None:
    """Centre of mass in the world and its Jacobian Jcom (3 x nv, Jcom v = dc/dt).

    JSON: {"mass", "com": [x, y, z], "Jcom": [[nv numbers] x 3]}; many states: "com" per
    state, [c | Jcom] (3 x (1 + nv)).
    """
    def select(layout):
        from treedyn.pipeline.errors import UsageError
        from treedyn.pipeline.kinematics import kinematics
        model_ = layout.model
        root = -1 if subtree is None else int(named_frames(layout, [subtree]).on_body[0])
        bodies = slice(0, None) if root < 0 else slice(root, int(model_.subtree_end[root]))
        mass = float(model_.body_mass[bodies].sum())
        if not mass > 0:
            raise UsageError(f"dyn: {model_.source}: "
                             f"{'the subtree of ' + subtree if subtree else 'the model'} "
                             "has no mass, so no centre of mass")
        dofs = list(layout.v_labels)
        labels = [f"{axis}|{column}" for axis in "xyz" for column in ["com", *dofs]]

        def document(C):
            return {"mass": mass, "com": C[:, 0].tolist(), "Jcom": C[:, 1:].tolist()}

        def text(C):
            return (f"mass {mass:g} kg\n"
                    + table([[axis, *C[a]] for a, axis in enumerate("xyz")],
                            ["", "com", *dofs]))
        return kinematics("com", root=root), labels, document, text

    solve_kinematics(Asked(model, free_flyer, q, degrees, input_file, output_file,
                           fmt and fmt.value, quiet, xacro_arguments(xacro_args, xacro_arg),
                           mimic, dataset_prefix), select)
