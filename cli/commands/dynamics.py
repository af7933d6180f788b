"""``dyn inverse``, ``dyn forward`` and ``dyn mass``: options → one request → the run layer.

The three share every option but their vectors; :func:`treedyn.cli.run.dispatch.solve`
reads the state(s), runs RNEA, ABA or CRBA per chunk and writes the results.
"""
from typing import Annotated, Optional

import typer

from ..model import xacro_arguments
from treedyn.pipeline.vectors import parse_gravity
from ..options import (
    AOpt,
    DatasetPrefixOpt,
    DegreesOpt,
    FextOpt,
    FormatOpt,
    FreeFlyerOpt,
    GravityOpt,
    InputOpt,
    MimicOpt,
    ModelArg,
    OutputOpt,
    QOpt,
    QuietOpt,
    SchedulerOpt,
    TauOpt,
    VOpt,
    XacroArgOpt,
    XacroArgs,
    epilog,
    examples,
)
from ..run.dispatch import solve
from ..run.request import Request

SEED_EXAMPLE = ("dyn inverse fixtures/two_link_arm.urdf --q 0.5236,1.0472 --v 1,-0.5 --a 0.4,-0.2"
                " --format json")


INVERSE_EXAMPLES = examples(
    SEED_EXAMPLE,
    "dyn inverse fixtures/two_link_arm.urdf --degrees --q joint1=30,joint2=60",
    "dyn inverse fixtures/two_link_arm.urdf --fext link2=0,0,-10,0,0,0",
    "dyn inverse robot.urdf --input states.csv --output tau.npz",
)


FORWARD_EXAMPLES = examples(
    "dyn forward fixtures/two_link_arm.urdf --q 0.5236,1.0472 --v 1,-0.5 --tau 13.3,5.5",
    "dyn forward robot.urdf --free-flyer --input states.jsonl --format json",
)


MASS_EXAMPLES = examples(
    "dyn mass fixtures/two_link_arm.urdf --q 0.5236,1.0472",
    "dyn mass robot.urdf --free-flyer --sparsity --format json",
)


@epilog(INVERSE_EXAMPLES)
def inverse(model: ModelArg, xacro_args: XacroArgs = None, q: QOpt = None, v: VOpt = None,
            a: AOpt = None,
            fext: FextOpt = None, input_file: InputOpt = None,
            output_file: OutputOpt = None, fmt: FormatOpt = None, gravity: GravityOpt = None,
            degrees: DegreesOpt = False,
            free_flyer: FreeFlyerOpt = False, quiet: QuietOpt = False,
            scheduler: SchedulerOpt = None, xacro_arg: XacroArgOpt = None,
            mimic: MimicOpt = False,
            dataset_prefix: DatasetPrefixOpt = None) -> None:
    """Inverse dynamics (RNEA): tau = M(q) a + h(q, v) - sum J^T f_ext.

    JSON: {"tau": [nv numbers]} per state (a single state also lists "dofs").
    """
    solve(Request("inverse", model, free_flyer, {"q": q, "v": v, "a": a}, fext,
                  input_file, output_file, fmt and fmt.value, gravity, degrees, quiet=quiet,
                  scheduler=scheduler, xacro=xacro_arguments(xacro_args, xacro_arg),
                  mimic=mimic, dataset_prefix=dataset_prefix))


@epilog(FORWARD_EXAMPLES)
def forward(model: ModelArg, xacro_args: XacroArgs = None, q: QOpt = None, v: VOpt = None,
            tau: TauOpt = None,
            fext: FextOpt = None, input_file: InputOpt = None,
            output_file: OutputOpt = None, fmt: FormatOpt = None, gravity: GravityOpt = None,
            degrees: DegreesOpt = False,
            free_flyer: FreeFlyerOpt = False, quiet: QuietOpt = False,
            scheduler: SchedulerOpt = None, xacro_arg: XacroArgOpt = None,
            mimic: MimicOpt = False,
            dataset_prefix: DatasetPrefixOpt = None) -> None:
    """Forward dynamics (ABA): a = M(q)^-1 (tau - h(q, v) + sum J^T f_ext).

    JSON: {"a": [nv numbers]} per state (a single state also lists "dofs").
    """
    solve(Request("forward", model, free_flyer, {"q": q, "v": v, "tau": tau}, fext,
                  input_file, output_file, fmt and fmt.value, gravity, degrees, quiet=quiet,
                  scheduler=scheduler, xacro=xacro_arguments(xacro_args, xacro_arg),
                  mimic=mimic, dataset_prefix=dataset_prefix))


@epilog(MASS_EXAMPLES)
def mass(model: ModelArg, xacro_args: XacroArgs = None, q: QOpt = None,
         sparsity: Annotated[bool, typer.Option(
             "--sparsity", help="Add the structural pattern of M (1 where the tree lets dofs "
             "i and j couple), its nnz, the tree-ordered L^T D L factor (nnz, its row layout "
             "as MuJoCo's M_rownnz/M_rowadr/M_colind without MuJoCo's shortened rows of "
             "'simple' dofs, the fill-in a root-first order would create) and a check of "
             "the pattern on M at random q.")] = False,
         input_file: InputOpt = None, output_file: OutputOpt = None, fmt: FormatOpt = None,
         gravity: Annotated[Optional[str], typer.Option(
             "--gravity", metavar="GX,GY,GZ", show_default=False,
             help="Accepted like the other commands; M does not depend on gravity.")] = None,
         degrees: Annotated[bool, typer.Option(
             "--degrees", help="The angles of q in degrees (revolute and continuous joints, "
             "the planar angle), also in --input files; M stays SI.")] = False,
         free_flyer: FreeFlyerOpt = False,
         quiet: QuietOpt = False, scheduler: SchedulerOpt = None,
         xacro_arg: XacroArgOpt = None, mimic: MimicOpt = False,
         dataset_prefix: DatasetPrefixOpt = None) -> None:
    """The joint-space mass matrix M(q) (CRBA), full and symmetric.

    JSON: {"M": [[nv numbers] x nv]} per state (a single state also lists "dofs").
    """
    parse_gravity(gravity)
    solve(Request("mass", model, free_flyer, {"q": q}, None, input_file, output_file,
                  fmt and fmt.value, None, degrees, sparsity, quiet, scheduler,
                  xacro_arguments(xacro_args, xacro_arg), mimic, dataset_prefix))
