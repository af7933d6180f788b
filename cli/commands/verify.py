"""``dyn verify``: the engine's self-check identities at random states (exit 1 on failure)."""

import sys
from typing import Annotated

import typer

from treedyn.engine.analysis.verify import VerifyOptions
from treedyn.engine.analysis.verify import verify as run_verify

from ..console import print_document, show_text
from ..model import load, xacro_arguments
from ..options import (FreeFlyerOpt, MimicOpt, ModelArg, ReportFormat, ReportFormatOpt, SeedOpt,
                       XacroArgOpt, XacroArgs, epilog, examples, not_nan, samples_option)
from ..render import reports
from treedyn.pipeline.reports import verify_csv, verify_document
from treedyn.pipeline.chunks import refuse_past_memory, sample_bytes

VERIFY_EXAMPLES = examples(
    "dyn verify fixtures/two_link_arm.urdf",
    "dyn verify robot.urdf --free-flyer --samples 32 --format json",
)


@epilog(VERIFY_EXAMPLES)
def verify(
        model: ModelArg, xacro_args: XacroArgs = None, free_flyer: FreeFlyerOpt = False,
        xacro_arg: XacroArgOpt = None,
        samples: samples_option("Random states.") = 8,
        seed: SeedOpt = 0,
        rtol: Annotated[float, typer.Option(
            "--rtol", min=0.0, callback=not_nan, help="Tolerance on each residual, relative to "
            "max(1, size of the reference).")] = 1e-9,
        fmt: ReportFormatOpt = None, mimic: MimicOpt = False,
) -> None:
    """Self-check identities of RNEA, CRBA and ABA at random states, with residuals.

    RNEA = M a + h; ABA(RNEA(a)) = a; RNEA's change under one joint's unit acceleration
    is that column of M; an external force changes tau by -J^T f (J from forward
    kinematics); M = sum J^T I J; the L^T D L solve equals ABA; on a floating base
    (--free-flyer) tau = 0 is a free fall and zero base actuation gives m c'' = m g;
    armature changes RNEA and CRBA consistently; the power of the velocity forces is half
    of v^T (dM/dt) v (dM/dt from CRBA: the one identity that catches an error in the
    Coriolis terms RNEA and ABA share). With --mimic the identities are those of the coupled
    model. Exit 1 if any residual exceeds its tolerance.
    """
    loaded = load(model, free_flyer, xacro=xacro_arguments(xacro_args, xacro_arg),
                  mimic=mimic)
    refuse_past_memory(samples, sample_bytes(loaded, jacobians=True), "--samples")
    options = VerifyOptions(samples=samples, seed=seed, rtol=rtol)
    report = run_verify(loaded, options)
    if fmt is ReportFormat.json:
        print_document(verify_document(report, loaded, options), "verify")
    elif fmt is ReportFormat.csv:
        verify_csv(report, sys.stdout)
    else:
        show_text(reports.verify_table(report, loaded, options))
    raise typer.Exit(0 if report.ok else 1)
