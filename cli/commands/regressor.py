"""``dyn regressor``: the joint torque regressor Y(q, v, a), tau = Y pi, per state."""
from typing import Annotated, Optional

import typer

from treedyn.engine.regressor import VELOCITY_TERMS, JointTerms
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from treedyn.pipeline.regression import regressor_document, write_regressor
from treedyn.pipeline.vectors import parse_gravity, refuse_beside_input, single_state

from ..console import print_document, saying_kept, show_text
from ..model import load
from treedyn.session.environment import STREAM_CHUNK
from ..options import (AOpt, DegreesOpt, FormatOpt, FreeFlyerOpt, GravityOpt, InputOpt, ModelArg,
                       OutputOpt, QOpt, VOpt, epilog, examples, positive)
from ..render.table import fitted, table
from ..run.progress import bar

REGRESSOR_EXAMPLES = examples(
    "dyn regressor fixtures/two_link_arm.urdf --q 0.5,1.0 --v 1,-0.5 --a 0.4,-0.2",
    "dyn regressor robot.urdf --input log.npz --output Y.npz --terms viscous,coulomb+,coulomb-",
)

TermsOpt = Annotated[Optional[str], typer.Option(
    "--terms", metavar="TERMS", show_default=False,
    help="Per-joint columns after the 10 per body, comma-separated, for every dof but a "
    "floating base's: armature (a), viscous (v), coulomb (sign v), coulomb+ (1 if v > 0), "
    "coulomb- (-1 if v < 0), offset (1), stribeck (exp(-(v/vs)^2) sign v), smooth "
    "(tanh(v/eps)); tau += coefficient x column.")]
StribeckOpt = Annotated[float, typer.Option(
    "--stribeck-velocity", metavar="VS", callback=positive,
    help="vs of the stribeck term (rad/s or m/s).")]
SmoothOpt = Annotated[float, typer.Option(
    "--smooth-velocity", metavar="EPS", callback=positive,
    help="eps of the smooth term (rad/s or m/s).")]


def parse_terms(text: Optional[str], stribeck: float = 0.1, smooth: float = 0.01) -> JointTerms:
    """The --terms list with the shape options, checked as the engine checks terms
    (:meth:`treedyn.engine.regressor.JointTerms.of`)."""
    names = tuple(t.strip() for t in text.split(",")) if text else ()
    try:
        return JointTerms.of(JointTerms(names, stribeck, smooth))
    except ValueError as error:
        raise UsageError(f"dyn: --terms: {error}") from None


@epilog(REGRESSOR_EXAMPLES)
def regressor(model: ModelArg, q: QOpt = None, v: VOpt = None, a: AOpt = None,
              input_file: InputOpt = None, output_file: OutputOpt = None,
              terms: TermsOpt = None, stribeck_velocity: StribeckOpt = 0.1,
              smooth_velocity: SmoothOpt = 0.01, fmt: FormatOpt = None,
              gravity: GravityOpt = None, degrees: DegreesOpt = False,
              free_flyer: FreeFlyerOpt = False) -> None:
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
    chosen = parse_terms(terms, stribeck_velocity, smooth_velocity)
    g = parse_gravity(gravity)
    if input_file is not None:
        refuse_beside_input({"q": q, "v": v, "a": a})
        with saying_kept(), bar(results_on_stdout=output_file is None) as advance:
            write_regressor(layout, input_file, output_file, chosen, g, STREAM_CHUNK, advance)
        return
    if output_file is not None:
        raise UsageError("dyn: --output needs --input (one state is printed)")
    if fmt is not None and fmt.value == "csv":
        raise UsageError("dyn: regressor prints one state as a table or json, not csv")
    needing = [t for t in chosen.names if t in VELOCITY_TERMS]
    if needing and v is None:
        raise UsageError(f"dyn: --terms {needing[0]} needs the joint velocities: give --v")
    document = regressor_document(layout, single_state(layout, {"q": q, "v": v, "a": a}, {}),
                                  chosen, g)
    if fmt is not None and fmt.value == "json":
        print_document(document, "regressor")
    else:
        rows = [[name, *column] for name, column in zip(document["parameters"],
                                                         zip(*document["Y"]))]
        show_text(fitted(table(rows, ["parameter", *layout.v_labels]),
                          how="--format json gives every column"))
