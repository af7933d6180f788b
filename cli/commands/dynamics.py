"""``dyn inverse``, ``dyn forward`` and ``dyn mass``: options -> one run.

The three share every option but their vectors (declared once, :func:`options`);
:func:`treedyn.cli.run.request.solve` reads the state(s), runs RNEA, ABA or CRBA through the
pipeline and writes the results.
"""
from inspect import Parameter
from typing import Annotated, Optional

import typer

from treedyn.pipeline import batch
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.vectors import parse_gravity
from treedyn.plots import requested
from treedyn.plots.matrices import sparsity as sparsity_figure

from ..options import (AOpt, DatasetPrefixOpt, DegreesOpt, FextOpt, FormatOpt, FreeFlyerOpt,
                       GravityOpt, InputOpt, MimicOpt, ModelArg, OutputOpt, PlotSizeOpt, QOpt,
                       SchedulerOpt, TauOpt, VOpt, XacroArgOpt, XacroArgs, command_of,
                       epilog, examples, plot_option)
from ..run.request import solve

SEED_EXAMPLE = ("dyn inverse fixtures/two_link_arm.urdf --q 0.5236,1.0472 --v 1,-0.5 --a 0.4,-0.2"
                " --format json")
VECTORS = {"q": QOpt, "v": VOpt, "a": AOpt, "tau": TauOpt}
SparsityOpt = Annotated[bool, typer.Option(
    "--sparsity", help="Add the structural pattern of M (1 where the tree lets dofs i and j "
    "couple), its nnz, the tree-ordered L^T D L factor (nnz, its row layout as MuJoCo's "
    "M_rownnz/M_rowadr/M_colind without MuJoCo's shortened rows of 'simple' dofs, the "
    "fill-in a root-first order would create) and a check of the pattern on M at random q.")]


def options(vectors: tuple, extra: dict, **replaced) -> dict:
    """The options of a dynamics command taking ``vectors`` and then ``extra``, in the
    order --help lists them: name -> (annotation, default); ``replaced``: other
    annotations and defaults of shared ones."""
    chosen = {"model": (ModelArg, Parameter.empty), "xacro_args": (XacroArgs, None),
              **{kind: (VECTORS[kind], None) for kind in vectors}, **extra,
              "input_file": (InputOpt, None), "output_file": (OutputOpt, None),
              "fmt": (FormatOpt, None), "gravity": (GravityOpt, None),
              "degrees": (DegreesOpt, False), "free_flyer": (FreeFlyerOpt, False),
              "scheduler": (SchedulerOpt, None),
              "xacro_arg": (XacroArgOpt, None), "mimic": (MimicOpt, False),
              "dataset_prefix": (DatasetPrefixOpt, None)}
    return {**chosen, **replaced}


def command(name: str, vectors: tuple, doc: str, lines: tuple, extra: dict, **replaced):
    """The command ``name``: its options, its --help text and examples, and its run."""
    def run(fext=None, sparsity: bool = False, plot=None, plot_size=None, **given) -> None:
        picture = requested(plot, plot_size)
        if name == "mass":
            parse_gravity(given["gravity"])  # checked, and unused: M has no gravity
            given["gravity"] = None
        if picture is not None and not sparsity:
            raise UsageError("dyn: --plot draws M's pattern: give --sparsity too")
        layout = solve(name, vectors, {**given, "fext": fext, "sparsity": sparsity,
                                       "plot": picture is not None})
        if picture is not None:  # (M within the cap: solve refused the others)
            picture.draw(sparsity_figure, batch.structure(layout, "json"), layout.v_labels)

    return epilog(examples(*lines))(command_of(run, options(vectors, extra, **replaced), doc))


inverse = command("inverse", ("q", "v", "a"), (
    "Inverse dynamics (RNEA): tau = M(q) a + h(q, v) - sum J^T f_ext.\n\n"
    'JSON: {"tau": [nv numbers]} per state (a single state also lists "dofs").'),
    (SEED_EXAMPLE,
     "dyn inverse fixtures/two_link_arm.urdf --degrees --q joint1=30,joint2=60",
     "dyn inverse fixtures/two_link_arm.urdf --fext link2=0,0,-10,0,0,0",
     "dyn inverse robot.urdf --input states.csv --output tau.npz"),
    {"fext": (FextOpt, None)})

forward = command("forward", ("q", "v", "tau"), (
    "Forward dynamics (ABA): a = M(q)^-1 (tau - h(q, v) + sum J^T f_ext).\n\n"
    'JSON: {"a": [nv numbers]} per state (a single state also lists "dofs").'),
    ("dyn forward fixtures/two_link_arm.urdf --q 0.5236,1.0472 --v 1,-0.5 --tau 13.3,5.5",
     "dyn forward robot.urdf --free-flyer --input states.jsonl --format json"),
    {"fext": (FextOpt, None)})

mass = command("mass", ("q",), (
    "The joint-space mass matrix M(q) (CRBA), full and symmetric.\n\n"
    'JSON: {"M": [[nv numbers] x nv]} per state (a single state also lists "dofs").'),
    ("dyn mass fixtures/two_link_arm.urdf --q 0.5236,1.0472",
     "dyn mass robot.urdf --free-flyer --sparsity --format json",
     "dyn mass robot.urdf --free-flyer --sparsity --plot sparsity.png"),
    {"sparsity": (SparsityOpt, False),
     "plot": (plot_option("M's pattern and its factor's (with --sparsity)"), None),
     "plot_size": (PlotSizeOpt, None)},
    gravity=(Annotated[Optional[str], typer.Option(
        "--gravity", metavar="GX,GY,GZ", show_default=False,
        help="Accepted like the other commands; M does not depend on gravity.")], None),
    degrees=(Annotated[bool, typer.Option(
        "--degrees", help="The angles of q in degrees (revolute and continuous joints, the "
        "planar angle), also in --input files; M stays SI.")], False))
