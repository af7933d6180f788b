"""``dyn check-inertia``: physical consistency of every link's inertia (exit 1 on errors)."""

import sys
from typing import Annotated

import typer

from treedyn.engine.analysis.check_inertia import check_inertia as run_checks
from treedyn.engine.analysis.check_report import inertia_document
from treedyn.engine.analysis.inertia import CheckOptions
from treedyn.parsers.link_geometry import link_geometry
from treedyn.pipeline.chunks import check_bytes, refuse_past_memory
from treedyn.pipeline.findings import inertia_findings, selected_inertia, selection
from treedyn.pipeline.reports import github_annotations, github_warning, inertia_csv
from treedyn.session.models import package_paths

from ..console import print_document, show_text, warn
from ..model import load, xacro_arguments
from ..options import (MESH_PATHS, BaselineOpt, CheckFormat, FreeFlyerOpt, IgnoreOpt,
                       ModelArg, SeedOpt, SelectOpt, XacroArgOpt, XacroArgs, epilog, examples,
                       format_option, not_nan, samples_option)
from ..render import reports
from ..render.findings import print_sarif

CHECK_EXAMPLES = examples(
    "dyn check-inertia robot.urdf",
    "dyn check-inertia robot.urdf --tolerance 0.01 --fix",
    "dyn check-inertia robot.urdf --format github   # annotations for GitHub Actions",
    "dyn check-inertia robot.urdf.xacro --format github   # annotations in the .xacro files",
    "dyn check-inertia robot.urdf --format sarif > dyn.sarif   # code scanning",
    "dyn check-inertia robot.urdf --baseline known.json   # exit 1 on new findings only",
    "dyn check-inertia robot.urdf --format json | jq '.findings[] | select(.severity==\"error\")'",
)


@epilog(CHECK_EXAMPLES)
def check_inertia(
        model: ModelArg, xacro_args: XacroArgs = None, free_flyer: FreeFlyerOpt = False,
        xacro_arg: XacroArgOpt = None,
        tolerance: Annotated[float, typer.Option(
            "--tolerance", min=0.0, max=1.0, callback=not_nan,
            help="Relative tolerance: the triangle inequality may be violated by this "
            "fraction of the largest moment (0.03 accepts 3 %), and positive definiteness "
            "needs a relative margin above it.")] = 1e-6,
        fix: Annotated[bool, typer.Option(
            "--fix", help="Print the nearest consistent (or plausible) inertia for each "
            "failing link, ready to paste. Never changes the file.")] = False,
        fmt: format_option(CheckFormat, "table (default), json, csv (one row per finding), "
                           "github (::error file=...,line=...:: annotations) or sarif "
                           "(SARIF 2.1.0).") = None,
        show_all: Annotated[bool, typer.Option(
            "--all", help="List the passing and skipped checks too (table and CSV rows; JSON "
            "keys passes and skipped).")] = False,
        samples: samples_option("Configurations (neutral first) for the body checks (mass of "
                                "moving bodies, articulated inertia).") = 8,
        seed: SeedOpt = 0,
        min_block_ratio: Annotated[float, typer.Option(
            "--min-block-ratio", min=0.0, callback=not_nan, help="Warn when a joint's "
            "articulated inertia (ABA's D-block) is below this fraction of lambda_max(M).")] = 1e-8,
        select: SelectOpt = None, ignore: IgnoreOpt = None, baseline: BaselineOpt = None,
) -> None:
    """Physical consistency of every link's inertia: one finding per defect.

    Checks: finite numbers; mass (negative is an error; a massless moving body is fine
    only if its subtree gives its joint mass and inertia); rotational inertia symmetric
    positive definite (principal moments); triangle inequality (deficit in kg m^2 and %);
    pseudo-inertia J = [[tr(I)/2 1 - I, h], [h^T, m]] positive definite (smallest
    eigenvalue of the second moment about the com); against the collision (else visual) geometry: plausibility
    (equivalent uniform box vs geometry box, 100x is an error), inertia given about the link
    origin instead of the com, principal axes vs geometry (inertial rpy applied wrongly),
    density; per moving body: ABA's articulated inertia (singular or nearly singular
    chains) and, for links merged by fixed joints, the merged body's pseudo-inertia;
    joint limits. A finding implied by another (a pseudo-inertia error beside a triangle
    violation) is not repeated; placeholder links (1e-6 kg) are judged with their body.
    Links keep their own names, file and line. Exit 1 when any error is found.
    """
    chosen = selection("check-inertia", select, ignore, baseline)
    loaded = load(model, free_flyer, diagnose=True, xacro=xacro_arguments(xacro_args, xacro_arg))
    geometry = link_geometry(loaded.description, loaded.source, package_paths(MESH_PATHS))
    refuse_past_memory(samples, check_bytes(loaded), "--samples")
    options = CheckOptions(tolerance=tolerance, fix=fix, samples=samples, seed=seed,
                           min_block_ratio=min_block_ratio,
                           rotation_name=("the inertial <origin rpy>" if loaded.format == "urdf"
                                          else "the <inertial> orientation"))
    report = selected_inertia(run_checks(loaded, geometry, options), chosen)
    text = reports.missing_meshes(geometry)
    notes = [("meshes not found", text)] if text else []
    notes += [("mesh unreadable", line) for line in reports.unreadable_meshes(geometry)]
    for title, text in notes:
        warn(f"{loaded.source}: {text}")
        if fmt is CheckFormat.github:
            print(github_warning(loaded.source, f"dyn check-inertia: {title}", text))
    if fmt is CheckFormat.json:
        print_document(inertia_document(report, loaded, show_all), "check-inertia")
    elif fmt is CheckFormat.csv:
        inertia_csv(report, sys.stdout, loaded.format, fix, show_all)
    elif fmt is CheckFormat.sarif:
        print_sarif("check-inertia", inertia_findings(report))
    elif fmt is CheckFormat.github:
        text = github_annotations(report, loaded.format)
        if text:
            show_text(text)
    else:
        show_text(reports.inertia_table(report, loaded, show_all))
    raise typer.Exit(0 if report.ok else 1)
