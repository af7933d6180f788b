"""``dyn check-inertia``, ``dyn condition`` and ``dyn verify``: the model diagnostics.

Each command loads the model, runs one engine module (:mod:`treedyn.engine.analysis.inertia`,
:mod:`~treedyn.engine.analysis.conditioning`, :mod:`~treedyn.engine.analysis.verify`) and prints its report
(:mod:`treedyn.cli.reports`). The engine, the parsers and tabulate are imported inside the
commands so that ``dyn --help`` stays quick. Exit codes: 0 fine (warnings allowed), 1 a
check found errors (``check-inertia``, ``verify``; ``condition --strict`` on warnings), 2 bad
usage or input.
"""
import json
import sys
from enum import Enum
from typing import Annotated, Optional

import typer

from .common import FreeFlyerOpt, ModelArg, examples, load, not_nan
from .output import warn

CHECK_EXAMPLES = examples(
    "dyn check-inertia robot.urdf",
    "dyn check-inertia robot.urdf --tolerance 0.01 --fix",
    "dyn check-inertia robot.urdf --format github   # annotations for GitHub Actions",
    "dyn check-inertia robot.urdf --format json | jq '.findings[] | select(.severity==\"error\")'",
)
CONDITION_EXAMPLES = examples(
    "dyn condition robot.urdf --samples 200",
    "dyn condition robot.urdf --free-flyer --max-cond 1e6 --strict",
)
VERIFY_EXAMPLES = examples(
    "dyn verify fixtures/two_link_arm.urdf",
    "dyn verify robot.urdf --free-flyer --samples 32 --format json",
)


class CheckFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    github = "github"


class ReportFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


SeedOpt = Annotated[int, typer.Option("--seed", min=0, help="Seed of the random samples.")]


def check_inertia(
        model: ModelArg, free_flyer: FreeFlyerOpt = False,
        tolerance: Annotated[float, typer.Option(
            "--tolerance", min=0.0, max=1.0, callback=not_nan,
            help="Relative tolerance: the triangle inequality may be violated by this "
            "fraction of the largest moment (0.03 accepts 3 %), and positive definiteness "
            "needs a relative margin above it.")] = 1e-6,
        fix: Annotated[bool, typer.Option(
            "--fix", help="Print the nearest consistent (or plausible) inertia for each "
            "failing link, ready to paste. Never changes the file.")] = False,
        fmt: Annotated[Optional[CheckFormat], typer.Option(
            "--format", "-f", case_sensitive=False, show_default=False,
            help="table (default), json, csv (one row per finding), or github "
            "(::error file=...,line=...:: annotations)."
        )] = None,
        show_all: Annotated[bool, typer.Option(
            "--all", help="Table: list the passing and skipped checks too.")] = False,
        samples: Annotated[int, typer.Option(
            "--samples", min=1, help="Configurations (neutral first) for the body checks "
            "(mass of moving bodies, articulated inertia).")] = 8,
        seed: SeedOpt = 0,
        min_block_ratio: Annotated[float, typer.Option(
            "--min-block-ratio", min=0.0, callback=not_nan, help="Warn when a joint's "
            "articulated inertia (ABA's D-block) is below this fraction of lambda_max(M).")] = 1e-8,
) -> None:
    """Physical consistency of every link's inertia: one finding per link and check.

    Checks: finite numbers; mass (negative is an error; a massless moving body is fine
    only if its subtree gives its joint mass and inertia); rotational inertia symmetric
    positive definite (principal moments); triangle inequality (deficit in kg m^2 and %);
    pseudo-inertia J = [[tr(I)/2 1 - I, h], [h^T, m]] positive definite (smallest
    eigenvalue of the second moment about the com); against the collision (else visual) geometry: plausibility
    (equivalent uniform box vs geometry box, 100x is an error), inertia given about the link
    origin instead of the com, principal axes vs geometry (inertial rpy applied wrongly),
    density; per moving body: ABA's articulated inertia (singular or nearly singular
    chains) and, for links merged by fixed joints, the merged body's pseudo-inertia.
    Links keep their own names, file and line. Exit 1 when any error is found.
    """
    from treedyn.engine.analysis.check_inertia import check_inertia as run_checks
    from treedyn.engine.analysis.inertia import CheckOptions
    from treedyn.parsers.geometry_bounds import link_geometry

    from . import reports

    loaded = load(model, free_flyer)
    geometry = link_geometry(loaded.description, loaded.source)
    options = CheckOptions(tolerance=tolerance, fix=fix, samples=samples, seed=seed,
                           min_block_ratio=min_block_ratio,
                           rotation_name=("the inertial <origin rpy>" if loaded.format == "urdf"
                                          else "the <inertial> orientation"))
    report = run_checks(loaded, geometry, options)
    meshes = list(dict.fromkeys(mesh for link in geometry.values() for mesh in link.missing))
    if meshes:
        skipped = sum(bool(link.missing) for link in geometry.values())
        text = (f"{len(meshes)} mesh file(s) not found ({', '.join(meshes[:2])}"
                f"{', ...' if len(meshes) > 2 else ''}): the geometry checks of "
                f"{skipped} link(s) were skipped (package:// is looked up above the "
                "model and in ROS_PACKAGE_PATH and AMENT_PREFIX_PATH)")
        warn(f"{loaded.source}: {text}")
        if fmt is CheckFormat.github:
            print(f"::warning file={reports.escape_property(loaded.source)},"
                  f"title={reports.escape_property('dyn check-inertia: meshes not found')}::"
                  f"{reports.escape_data(text)}")
    if fmt is CheckFormat.json:
        print(json.dumps(reports.inertia_document(report, loaded)))
    elif fmt is CheckFormat.csv:
        reports.inertia_csv(report, sys.stdout, loaded.format, fix)
    elif fmt is CheckFormat.github:
        text = reports.github_annotations(report, loaded.format)
        if text:
            print(text)
    else:
        print(reports.inertia_table(report, loaded, show_all))
    raise typer.Exit(0 if report.ok else 1)


def condition(
        model: ModelArg, free_flyer: FreeFlyerOpt = False,
        samples: Annotated[int, typer.Option(
            "--samples", min=1, help="Configurations: the neutral one, then random ones "
            "within the joint limits.")] = 100,
        seed: SeedOpt = 0,
        max_cond: Annotated[float, typer.Option(
            "--max-cond", min=1.0, callback=not_nan, help="Warn when cond(M) exceeds this.")] = 1e8,
        max_mass_ratio: Annotated[float, typer.Option(
            "--max-mass-ratio", min=1.0, callback=not_nan, help="Warn when a parent/child body "
            "mass ratio (either way) exceeds this.")] = 1e3,
        min_block_ratio: Annotated[float, typer.Option(
            "--min-block-ratio", min=0.0, callback=not_nan, help="Warn when a joint's ABA "
            "D-block is below this fraction of lambda_max(M).")] = 1e-8,
        strict: Annotated[bool, typer.Option(
            "--strict", help="Exit 1 when there is any warning.")] = False,
        fmt: Annotated[Optional[ReportFormat], typer.Option(
            "--format", "-f", case_sensitive=False, show_default=False,
            help="table (default), json or csv.")] = None,
) -> None:
    """Conditioning of the mass matrix M(q) over sampled configurations.

    Reports cond(M) (min, median, worst with its configuration), the weakest direction
    at the worst configuration named by joints (the eigenvector of the smallest
    eigenvalue), ABA's local D-blocks (a joint whose articulated inertia is a tiny
    fraction of lambda_max(M) proves cond(M) >= 1/ratio), and parent/child mass ratios.
    """
    from treedyn.engine.analysis.conditioning import ConditionOptions, analyze

    from . import reports
    from .inputs import Layout

    loaded = load(model, free_flyer)
    options = ConditionOptions(samples=samples, seed=seed, max_cond=max_cond,
                               max_mass_ratio=max_mass_ratio, min_block_ratio=min_block_ratio)
    if loaded.nv == 0:
        note = f"model {loaded.name} has no degrees of freedom: M is empty (add --free-flyer?)"
        if fmt is ReportFormat.json:
            print(json.dumps(reports.empty_condition_document(loaded, options, note)))
        elif fmt is ReportFormat.csv:
            reports.condition_csv(None, [], sys.stdout)
        else:
            print(note)
        raise typer.Exit(0)
    report = analyze(loaded, options)
    layout = Layout.of(loaded)
    if fmt is ReportFormat.json:
        print(json.dumps(reports.condition_document(report, loaded, layout.v_labels, options)))
    elif fmt is ReportFormat.csv:  # one row per sample: the warnings go to stderr
        reports.condition_csv(report, q_labels(loaded), sys.stdout)
        for message in report.warnings:
            warn(message)
    else:
        print(reports.condition_table(report, loaded, layout.v_names, q_labels(loaded),
                                      options))
    raise typer.Exit(1 if strict and report.warnings else 0)


def verify(
        model: ModelArg, free_flyer: FreeFlyerOpt = False,
        samples: Annotated[int, typer.Option("--samples", min=1,
                                             help="Random states.")] = 8,
        seed: SeedOpt = 0,
        rtol: Annotated[float, typer.Option(
            "--rtol", min=0.0, callback=not_nan, help="Tolerance on each residual, relative to "
            "max(1, size of the reference).")] = 1e-9,
        fmt: Annotated[Optional[ReportFormat], typer.Option(
            "--format", "-f", case_sensitive=False, show_default=False,
            help="table (default), json or csv.")] = None,
) -> None:
    """Self-check identities of RNEA, CRBA and ABA at random states, with residuals.

    RNEA = M a + h; ABA(RNEA(a)) = a; RNEA's change under one joint's unit acceleration
    is that column of M; an external force changes tau by -J^T f (J from forward
    kinematics); M = sum J^T I J; the L^T D L solve equals ABA; on a floating base
    (--free-flyer) tau = 0 is a free fall and zero base actuation gives m c'' = m g;
    armature changes RNEA and CRBA consistently; the power of the velocity forces is half
    of v^T (dM/dt) v (dM/dt from CRBA: the one identity that catches an error in the
    Coriolis terms RNEA and ABA share). Exit 1 if any residual exceeds its tolerance.
    """
    from treedyn.engine.analysis.verify import VerifyOptions
    from treedyn.engine.analysis.verify import verify as run_verify

    from . import reports

    loaded = load(model, free_flyer)
    options = VerifyOptions(samples=samples, seed=seed, rtol=rtol)
    report = run_verify(loaded, options)
    if fmt is ReportFormat.json:
        print(json.dumps(reports.verify_document(report, loaded, options)))
    elif fmt is ReportFormat.csv:
        reports.verify_csv(report, sys.stdout)
    else:
        print(reports.verify_table(report, loaded, options))
    raise typer.Exit(0 if report.ok else 1)


def q_labels(model) -> list[str]:
    """Names of the q entries: the joint for 1-number joints, joint:k otherwise."""
    labels = []
    for j, name in enumerate(model.joint_names):
        size = int(model.nq_joint[j])
        labels += [name] if size == 1 else [f"{name}:{k}" for k in range(size)]
    return labels


def register(app: typer.Typer) -> None:
    """Add the diagnostics commands to the ``dyn`` app."""
    app.command("check-inertia", epilog=CHECK_EXAMPLES,
                short_help="Physical consistency of every link's inertia (exit 1 on errors)."
                )(check_inertia)
    app.command(epilog=CONDITION_EXAMPLES,
                short_help="Conditioning of M(q): worst case, weakest direction, causes."
                )(condition)
    app.command(epilog=VERIFY_EXAMPLES,
                short_help="Self-check identities of RNEA, CRBA and ABA (exit 1 on failure)."
                )(verify)
