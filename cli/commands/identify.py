"""``dyn identify``: inertial parameters fitted to a log of q, v, a and measured tau."""
from typing import Annotated, Optional

import typer

from treedyn.engine.analysis.identify_report import report
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from treedyn.pipeline.regression import expand_logs, held_out, identify_stream
from treedyn.pipeline.vectors import parse_gravity
from treedyn.plots import requested

from ..console import print_document, show_text
from ..model import load
from ..options import (DegreesOpt, FreeFlyerOpt, GravityOpt, ModelArg, PlotSizeOpt, ReportFormat, ReportFormatOpt, epilog, examples, not_nan, plot_option)
from ..render.identify import identify_document, identify_table
from treedyn.pipeline.chunks import MEMORY
from treedyn.pipeline.drives import Drives
from ..run.fitted import check_write_target, write_model
from ..run.progress import Progress, wanted
from ..settings import STREAM_CHUNK
from .regressor import SmoothOpt, StribeckOpt, TermsOpt, parse_terms

IDENTIFY_EXAMPLES = examples(
    "dyn identify robot.urdf --input log.npz --validate 0.2",
    "dyn identify robot.urdf --input log.csv --terms viscous,coulomb --write robot_fit.urdf",
    "dyn identify robot.urdf --input log.jsonl --loss huber --format json",
)
InputsOpt = Annotated[list[str], typer.Option(
    "--input", "-i", metavar="FILE", show_default=False,
    help="A log: JSON Lines, CSV or .npz states with q, v, a and the measured tau (as the "
    "other commands read them); '-' reads stdin. Repeat it, or give a quoted glob "
    "('logs/*.csv'): each file is its own trajectory.")]
ValidateOpt = Annotated[str, typer.Option(
    "--validate", metavar="F|FILE",
    help="Hold out this fraction of the states (0 to 0.9: blocks of 100 spread over the "
    "log), or a log FILE of its own, and report the torque RMS per dof on them (also over "
    "the measured torques' RMS).")]
CutoffOpt = Annotated[Optional[float], typer.Option(
    "--cutoff", metavar="HZ", min=0.0, show_default=False,
    callback=lambda x: x if x is None else not_nan(x),
    help="A log of q, tau and the times t (no v, a): the low-pass cut-off (Hz) before v "
    "and a are estimated. Default: 20 Hz, at most a fifth of the sample rate.")]
WeightsOpt = Annotated[str, typer.Option(
    "--weights", metavar="auto|none",
    help="auto: each joint's rows weighted by 1/sigma_j, its residual standard deviation "
    "in a first fit, and fitted again (IDIM-WLS); none: unweighted.")]
PriorWeightOpt = Annotated[float, typer.Option(
    "--prior-weight", min=0.0, callback=not_nan,
    help="Weight of the file's inertias in the consistent fit, in equations: a "
    "body's relative change of pseudo-inertia weighs like this many torque "
    "equations one sigma off.")]
LossOpt = Annotated[str, typer.Option(
    "--loss", metavar="LOSS", help="Robust loss of the consistent fit: linear, "
    "soft_l1, huber, cauchy or arctan (not linear: keeps the training rows in "
    "memory).")]
LossScaleOpt = Annotated[Optional[float], typer.Option(
    "--loss-scale", min=0.0, callback=lambda x: x if x is None else not_nan(x),
    show_default=False, help="Residual (N m) where the robust loss bends. "
    "Default: 1.345 x the residuals' robust spread (1.4826 MAD).")]
RankTolOpt = Annotated[float, typer.Option(
    "--rank-tol", min=0.0, max=1.0, callback=not_nan,
    help="Relative singular value of the column-scaled regressor below which a "
    "direction counts as not determined by the log.")]
CurrentOpt = Annotated[bool, typer.Option(
    "--current", help="The log's tau holds the drives' currents: fit tau = gain x "
    "current with the gain term, scaled by --known.")]
KnownOpt = Annotated[Optional[list[str]], typer.Option(
    "--known", metavar="NAME=VALUE", show_default=False,
    help="A parameter known beforehand (BODY.m=2.5, gain.DOF=0.08): not fitted; "
    "repeatable.")]
WriteOpt = Annotated[Optional[str], typer.Option(
    "--write", metavar="NEW", show_default=False,
    help="Write a copy of the model file with the consistent fit's inertias: only "
    "its <inertial> elements change.")]


@epilog(IDENTIFY_EXAMPLES)
def identify(
        model: ModelArg,
        inputs: InputsOpt,
        terms: TermsOpt = None, stribeck_velocity: StribeckOpt = 0.1,
        smooth_velocity: SmoothOpt = 0.01,
        validate: ValidateOpt = "0", prior_weight: PriorWeightOpt = 1.0,
        loss: LossOpt = "linear", loss_scale: LossScaleOpt = None,
        rank_tolerance: RankTolOpt = 1e-8, current: CurrentOpt = False,
        known: KnownOpt = None, cutoff: CutoffOpt = None, weights: WeightsOpt = "auto",
        write: WriteOpt = None,
        fmt: ReportFormatOpt = None, gravity: GravityOpt = None, degrees: DegreesOpt = False,
        free_flyer: FreeFlyerOpt = False,
        plot: plot_option("measured and predicted tau per dof and the residuals (reads "
                          "the log again: a file, not stdin)") = None,
        plot_size: PlotSizeOpt = None) -> None:
    """Identify inertial parameters from logged motion and torques.

    Base parameters (what the log determines, by a rank-revealing QR/SVD) with ordinary
    least squares; a physically consistent fit of every body (log-Cholesky: each
    pseudo-inertia positive definite) regularised toward the file's inertias; torque RMS
    per dof of the file's, the OLS and the consistent parameters. The log streams: memory
    stays bounded whatever its length.
    """
    if fmt is ReportFormat.csv:
        raise UsageError("dyn: identify prints a table or json, not csv")
    picture = requested(plot, plot_size)
    files, validate = expand_logs(inputs), held_out(validate)
    if picture is not None and files[0] == "-":
        raise UsageError("dyn: --plot reads the log again: give it as a file, not stdin")
    if picture is not None and len(files) > 1:
        raise UsageError("dyn: --plot reads the log again: give one log, not several")
    loaded = load(model, free_flyer)
    if write is not None:
        check_write_target(model, write, loaded.format,
                           files + ([validate] if isinstance(validate, str) else []))
    layout = Layout.of(loaded, degrees)
    progress = Progress(wanted(results_on_stdout=True))
    try:
        result = identify_stream(layout, files,
                                 parse_terms(terms, stribeck_velocity, smooth_velocity),
                                 parse_gravity(gravity), validate, prior_weight, loss, loss_scale, rank_tolerance,
                                 STREAM_CHUNK, progress.advance, MEMORY,
                                 Drives.of(current, known), cutoff, weights)
    finally:
        progress.close()
    document = report(result, layout.v_labels)
    if write is not None:
        document["written"] = write_model(model, write, result, free_flyer)
    if picture is not None:
        from treedyn.plots import fit
        picture.draw(fit.identify, identify_document(document), fit.torques(
            layout, files[0], result, parse_gravity(gravity)), layout)
    if fmt is ReportFormat.json:
        print_document(identify_document(document), "identify")
    else:
        show_text(identify_table(identify_document(document)))
