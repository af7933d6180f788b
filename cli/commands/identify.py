"""``dyn identify``: inertial parameters fitted to a log of q, v, a and measured tau."""
import contextlib
import json
import os
from typing import Annotated, Optional

import numpy as np
import typer

from treedyn.engine.analysis.identify import UnfitLog
from treedyn.engine.analysis.identify_report import link_inertias, report
from treedyn.engine.regressor import layout_of, model_parameters
from treedyn.parsers.files import MODEL_BYTES, read_bounded
from treedyn.parsers.inertial_writer import Change, WriteError, rewrite_inertials

from ..console import console, show_text, warn
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from ..model import load
from treedyn.pipeline.paths import remove_stale, same_file, temporary_name
from treedyn.pipeline.source import STDIN
from treedyn.pipeline.vectors import parse_gravity
from ..options import (
    DegreesOpt,
    FreeFlyerOpt,
    GravityOpt,
    ModelArg,
    QuietOpt,
    ReportFormat,
    ReportFormatOpt,
    epilog,
    examples,
    not_nan,
)
from ..render.identify import identify_document, identify_table
from ..run.regression import IdentifyRequest
from ..run.regression import identify as run_identify
from .regressor import TermsOpt, parse_terms

IDENTIFY_EXAMPLES = examples(
    "dyn identify robot.urdf --input log.npz --validate 0.2",
    "dyn identify robot.urdf --input log.csv --terms viscous,coulomb --write robot_fit.urdf",
    "dyn identify robot.urdf --input log.jsonl --loss huber --format json",
)
LOSSES = ("linear", "soft_l1", "huber", "cauchy", "arctan")


@epilog(IDENTIFY_EXAMPLES)
def identify(
        model: ModelArg,
        input_file: Annotated[str, typer.Option(
            "--input", "-i", metavar="FILE", show_default=False,
            help="The log: JSON Lines, CSV or .npz states with q, v, a and the measured "
            "tau (as the other commands read them); '-' reads stdin.")],
        terms: TermsOpt = None,
        validate: Annotated[float, typer.Option(
            "--validate", min=0.0, max=0.9, callback=not_nan,
            help="Hold out this fraction of the states (blocks of 100 spread over the log) "
            "and report the torque RMS per dof on them.")] = 0.0,
        prior_weight: Annotated[float, typer.Option(
            "--prior-weight", min=0.0, callback=not_nan,
            help="Weight of the file's inertias in the consistent fit, in equations: a "
            "body's relative change of pseudo-inertia weighs like this many torque "
            "equations one sigma off.")] = 1.0,
        loss: Annotated[str, typer.Option(
            "--loss", metavar="LOSS", help="Robust loss of the consistent fit: linear, "
            "soft_l1, huber, cauchy or arctan (not linear: keeps the training rows in "
            "memory).")] = "linear",
        loss_scale: Annotated[Optional[float], typer.Option(
            "--loss-scale", min=0.0, callback=lambda x: x if x is None else not_nan(x),
            show_default=False, help="Residual (N m) where the robust loss bends. "
            "Default: 1.345 x the residuals' robust spread (1.4826 MAD).")] = None,
        rank_tolerance: Annotated[float, typer.Option(
            "--rank-tol", min=0.0, max=1.0, callback=not_nan,
            help="Relative singular value of the column-scaled regressor below which a "
            "direction counts as not determined by the log.")] = 1e-8,
        write: Annotated[Optional[str], typer.Option(
            "--write", metavar="NEW", show_default=False,
            help="Write a copy of the model file with the consistent fit's inertias: only "
            "its <inertial> elements change.")] = None,
        fmt: ReportFormatOpt = None, gravity: GravityOpt = None, degrees: DegreesOpt = False,
        free_flyer: FreeFlyerOpt = False, quiet: QuietOpt = False) -> None:
    """Identify inertial parameters from logged motion and torques.

    Base parameters (what the log determines, by a rank-revealing QR/SVD) with ordinary
    least squares; a physically consistent fit of every body (log-Cholesky: each
    pseudo-inertia positive definite) regularised toward the file's inertias; torque RMS
    per dof of the file's, the OLS and the consistent parameters. The log streams: memory
    stays bounded whatever its length.
    """
    if loss not in LOSSES:
        raise UsageError(f"dyn: --loss: unknown loss '{loss}' (known: {', '.join(LOSSES)})")
    if fmt is ReportFormat.csv:
        raise UsageError("dyn: identify prints a table or json, not csv")
    loaded = load(model, free_flyer)
    if write is not None:
        check_write_target(model, write, loaded.format, input_file)
    layout = Layout.of(loaded, degrees)
    try:
        result = run_identify(IdentifyRequest(layout, parse_terms(terms), input_file,
                                              parse_gravity(gravity), validate, prior_weight,
                                              loss, loss_scale, rank_tolerance, quiet))
    except UnfitLog as error:  # the log determines nothing: one line, not a fit
        raise UsageError(f"{STDIN if input_file == '-' else input_file}: {error}") from None
    document = report(result, layout.v_labels)
    if write is not None:
        document["written"] = write_model(model, write, result, free_flyer)
    if fmt is ReportFormat.json:
        print(json.dumps(identify_document(document)))
    else:
        show_text(identify_table(identify_document(document)))


def check_write_target(model: str, target: str, kind: str, input_file: str) -> None:
    """--write names a new file of the model's format, not the model or the log."""
    suffix = os.path.splitext(target)[1].lower()
    wanted = (".urdf",) if kind == "urdf" else (".xml", ".mjcf")
    if suffix not in wanted:
        raise UsageError(f"dyn: --write {target}: a {kind.upper()} model is written as "
                         f"{' or '.join(wanted)}")
    for other, what in ((model, "the model file"), (input_file, "the log")):
        if other != "-" and same_file(other, target):
            raise UsageError(f"dyn: --write {target} is {what}; write a new file and "
                             "review it (dyn diff)")


def write_model(model: str, target: str, result, free_flyer: bool) -> dict:
    """The model's text with the fitted bodies' <inertial> elements replaced, written to
    ``target``; {"file", "links"}."""
    loaded = result.model
    links = {link.name: link for link in loaded.description.links}
    changes = [Change(links[name], inertia) for name, inertia in
               link_inertias(loaded, result.layout, result.fit.pi, result.fit.fitted)]
    try:
        data = read_bounded(model, MODEL_BYTES)
    except OSError as error:
        raise UsageError(f"{model}: cannot read ({error.strerror or error})") from None
    text = data.decode("utf-8", errors="surrogateescape")
    try:
        new = rewrite_inertials(text, model, loaded.format, changes)
    except WriteError as error:
        raise UsageError(str(error)) from None
    replace_checked(target, new.encode("utf-8", errors="surrogateescape"),
                    lambda written: read_back(written, result, free_flyer))
    return {"file": target, "links": [change.link.name for change in changes]}


def replace_checked(target: str, data: bytes, check) -> None:
    """``data`` written to a temporary beside ``target`` (named as dyn's output temporaries
    are, with the model's extension, see :mod:`..io.paths`), read back by ``check`` (its
    path -> a problem, or ""), then renamed onto ``target``: a file there from before is
    untouched unless the new one is complete and checked, whatever stops the run."""
    real = os.path.realpath(target)
    ending = ".part" + os.path.splitext(target)[1]
    remove_stale(real, (ending,))
    temporary = temporary_name(real, ending)
    try:
        try:
            with open(temporary, "xb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
        except OSError as error:
            raise UsageError(f"{target}: cannot write ({error.strerror or error})") from None
        notes: list[str] = []
        console.capture(notes)  # the written model's notes, named as the file they go to
        try:
            problem = check(temporary)
        finally:
            console.capture(None)
        for note in notes:
            warn(note.replace(temporary, target))
        if problem:
            raise UsageError(f"{target}: {problem.replace(temporary, target)}; nothing is "
                             "written")
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def read_back(target: str, result, free_flyer: bool) -> str:
    """"" when the written file gives every fitted body the identified parameters (12
    digits), else why not (a compiler option that rescales inertias, an include that is
    not found from the new file's folder, ...)."""
    try:
        written = load(target, free_flyer)
    except UsageError as error:
        return f"the written model does not load ({error})"
    columns = result.layout
    pi = model_parameters(written, layout_of(written, columns.terms))[:columns.inertial]
    for b, name in enumerate(columns.bodies):
        if not result.fit.fitted[b]:
            continue
        want = result.fit.pi[10 * b:10 * b + 10]
        got = pi[10 * b:10 * b + 10] if written.bodies[b].name == name else None
        if got is None or np.abs(got - want).max() > 1e-9 * np.abs(want).max():
            return (f"reading it back, body '{name}' does not have the identified inertia "
                    "(does the compiler rescale inertias: settotalmass, boundmass, "
                    "boundinertia, balanceinertia, inertiafromgeom=\"true\"?)")
    return ""
