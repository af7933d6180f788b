"""``dyn identify``: inertial parameters fitted to a log of q, v, a and measured tau."""
import os

from treedyn.engine.analysis.identify_report import report
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from treedyn.pipeline.regression import expand_logs, held_out, identify_stream
from treedyn.pipeline.vectors import parse_gravity
from treedyn.plots import requested
from treedyn.session.fitted import check_write_target, write_model

from ..console import print_document, show_text, warn
from ..model import load
from ..options import (MESH_PATHS, CurrentOpt, CutoffOpt, DegreesOpt, FreeFlyerOpt, GravityOpt, InputsOpt,
                       KnownOpt, LossOpt, LossScaleOpt, ModelArg, PlotSizeOpt, PriorWeightOpt,
                       RankTolOpt, ReportFormat, ReportFormatOpt, ValidateOpt, WeightsOpt,
                       WriteOpt, epilog, examples, plot_option)
from ..render.identify import identify_table
from treedyn.pipeline.reports import identify_document
from treedyn.pipeline.chunks import MEMORY
from treedyn.pipeline.drives import Drives
from treedyn.pipeline.heap import for_many_states
from ..run.progress import bar
from treedyn.session.environment import STREAM_CHUNK
from .regressor import SmoothOpt, StribeckOpt, TermsOpt, parse_terms

IDENTIFY_EXAMPLES = examples(
    "dyn identify robot.urdf --input log.npz --validate 0.2",
    "dyn identify robot.urdf --input log.csv --terms viscous,coulomb --write robot_fit.urdf",
    "dyn identify robot.urdf --input log.jsonl --loss huber --format json",
)

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
    if picture is not None and current:
        raise UsageError("dyn: --plot draws torques; a log of currents (--current) is not "
                         "drawn")
    loaded = load(model, free_flyer)
    if write is not None:
        check_write_target(model, write, loaded.format,
                           files + ([validate] if isinstance(validate, str) else []))
    layout = Layout.of(loaded, degrees)
    with for_many_states(os.environ), bar() as advance:  # (the process dyn's, for the run)
        result = identify_stream(layout, files,
                                 parse_terms(terms, stribeck_velocity, smooth_velocity),
                                 parse_gravity(gravity), validate, prior_weight, loss,
                                 loss_scale, rank_tolerance, STREAM_CHUNK, advance, MEMORY,
                                 Drives.of(current, known), cutoff, weights)
    document = report(result, layout.v_labels)
    if write is not None:
        document["written"] = write_model(model, write, result, free_flyer,
                                          MESH_PATHS, warn)
    if picture is not None:
        from treedyn.plots import fit
        picture.draw(fit.identify, identify_document(document), fit.torques(
            layout, files[0], result, parse_gravity(gravity)), layout)
    if fmt is ReportFormat.json:
        print_document(identify_document(document), "identify")
    else:
        show_text(identify_table(identify_document(document)))
