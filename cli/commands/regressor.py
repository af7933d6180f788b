"""``dyn regressor``: the joint torque regressor Y(q, v, a), tau = Y pi, per state."""
from typing import Annotated, Optional

import typer

from treedyn.engine import joint_torque_regressor
from treedyn.engine.regressor import layout_of, model_parameters
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from treedyn.pipeline.regression import write_regressor
from treedyn.pipeline.vectors import parse_gravity, single_state

from ..console import print_document, saying_kept, show_text
from ..model import load
from ..settings import STREAM_CHUNK
from ..options import (AOpt, DegreesOpt, FormatOpt, FreeFlyerOpt, GravityOpt, InputOpt, ModelArg,
                       OutputOpt, QOpt, QuietOpt, VOpt, epilog, examples)
from ..render.table import table
from ..run.progress import Progress, wanted

REGRESSOR_EXAMPLES = examples(
    "dyn regressor fixtures/two_link_arm.urdf --q 0.5,1.0 --v 1,-0.5 --a 0.4,-0.2",
    "dyn regressor robot.urdf --input log.npz --output Y.npz --terms viscous,coulomb",
)

TermsOpt = Annotated[Optional[str], typer.Option(
    "--terms", metavar="TERMS", show_default=False,
    help="Per-joint columns after the 10 per body: armature (tau += armature a), viscous "
    "(tau += viscous v), coulomb (tau += coulomb sign(v)), comma-separated; for every dof "
    "but a floating base's.")]


def parse_terms(text: Optional[str]) -> tuple:
    """The --terms list, checked."""
    if not text:
        return ()
    terms = tuple(t.strip() for t in text.split(","))
    known = ("armature", "viscous", "coulomb")
    for term in terms:
        if term not in known:
            raise UsageError(f"dyn: --terms: unknown term '{term}' (known: {', '.join(known)})")
    return terms


@epilog(REGRESSOR_EXAMPLES)
def regressor(model: ModelArg, q: QOpt = None, v: VOpt = None, a: AOpt = None,
              input_file: InputOpt = None, output_file: OutputOpt = None,
              terms: TermsOpt = None, fmt: FormatOpt = None,
              gravity: GravityOpt = None, degrees: DegreesOpt = False,
              free_flyer: FreeFlyerOpt = False, quiet: QuietOpt = False) -> None:
    """The regressor Y (nv x P) with tau = Y pi, linear in the inertial parameters.

    Columns: 10 per body in Pinocchio's order (m, m cx, m cy, m cz, Ixx, Ixy, Iyy, Ixz,
    Iyz, Izz of the rotational inertia about the body origin, body frame), then the
    --terms. With --input, .npz output holds Y (N x nv x P), parameters (P names), pi (the
    file's P values: Y pi is inverse dynamics) and dofs; without --output, JSON Lines.
    """
    if input_file is not None and fmt is not None and fmt.value != "json":
        raise UsageError("dyn: regressor writes many states as .npz (--output) or JSON Lines")
    loaded = load(model, free_flyer)
    layout = Layout.of(loaded, degrees)
    chosen = parse_terms(terms)
    g = parse_gravity(gravity)
    if input_file is not None:
        if any(x is not None for x in (q, v, a)):
            raise UsageError("dyn: --q, --v and --a cannot be combined with --input (put the "
                             "vectors in the input file)")
        progress = Progress(wanted(quiet, results_on_stdout=output_file is None))
        with saying_kept():
            try:
                write_regressor(layout, input_file, output_file, chosen, g, STREAM_CHUNK,
                                progress.advance)
            finally:
                progress.close()
        return
    if output_file is not None:
        raise UsageError("dyn: --output needs --input (one state is printed)")
    states = single_state(layout, {"q": q, "v": v, "a": a}, {})
    columns = layout_of(loaded, chosen)
    Y = joint_torque_regressor(loaded, states.q, states.v, states.a, g, chosen)[0]
    if fmt is not None and fmt.value == "csv":
        raise UsageError("dyn: regressor prints one state as a table or json, not csv")
    if fmt is not None and fmt.value == "json":
        print_document({"Y": Y.tolist(), "dofs": list(layout.v_labels),
                        "parameters": list(columns.names),
                        "pi": model_parameters(loaded, columns).tolist()}, "regressor")
    else:
        rows = [[name, *Y[:, p]] for p, name in enumerate(columns.names)]
        show_text(table(rows, ["parameter", *layout.v_labels]))
