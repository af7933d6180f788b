"""``dyn diff OLD NEW``: what changed for the dynamics between two models (by names)."""

from typing import Annotated, Optional

import typer

from treedyn.engine.analysis.diff import DiffOptions
from treedyn.engine.analysis.diff import diff as run_diff

from ..console import print_document, show_text
from ..model import load
from ..options import (DiffFormat, FreeFlyerOpt, PlotSizeOpt, SeedOpt, epilog, examples,
                       format_option, model_argument, not_nan, plot_option, samples_option)
from ..render import diff as render
from treedyn.pipeline.diff_report import diff_document, diff_github
from treedyn.pipeline.chunks import diff_bytes, refuse_past_memory
from treedyn.plots import requested

DIFF_EXAMPLES = examples(
    "dyn diff fixtures/two_link_arm.urdf fixtures/two_link_arm_heavier.urdf",
    "dyn diff robot.urdf robot.xml   # a conversion against its source",
    "dyn diff old/robot.urdf robot.urdf --fail-above 0.01 --format github",
)


@epilog(DIFF_EXAMPLES)
def diff(
        old: model_argument("OLD", "The model before (URDF or MJCF)."),
        new: model_argument("NEW", "The model after (URDF or MJCF; the format may differ)."),
        free_flyer: FreeFlyerOpt = False,
        fail_above: Annotated[Optional[float], typer.Option(
            "--fail-above", metavar="REL", min=0.0, callback=not_nan, show_default=False,
            help="Exit 1 when M(q) or a mass (a body's, the total) changes by more than this "
            "fraction (0.01: 1 %).")] = None,
        tolerance: Annotated[float, typer.Option(
            "--tolerance", min=0.0, max=1.0, callback=not_nan,
            help="Changes below this are not reported: relative for masses, inertias, M, "
            "armature; radians for axes and frames; times the model's size for lengths.")] = 1e-5,
        samples: samples_option("Configurations for M(q): the neutral one, then random "
                                "ones within OLD's limits.") = 20,
        seed: SeedOpt = 0,
        fmt: format_option(DiffFormat, "table (default), json, or github (::warning/::error "
                           "annotations).") = None,
        plot: plot_option("the relative change of each entry of M") = None,
        plot_size: PlotSizeOpt = None,
) -> None:
    """What changed for the dynamics from OLD to NEW, matched by joint and body names.

    Joints added, removed, retyped or reparented, and the ones whose coordinates moved
    (compared by name, never by index); joint placements, frames, axes, limits and
    armature; per body mass, com, rotational inertia and the physical-consistency checks
    whose verdict flipped; total mass and gravity; M(q) at the same configurations
    (matched by joint name) with the largest relative change and its dofs. Works across
    formats (an MJCF conversion against its URDF): --free-flyer floats a URDF and leaves
    an MJCF model as it is (its <freejoint> bodies float), and a floating root left
    unmatched on both sides is matched to the other's. Exit 0, or 1 with --fail-above when
    M or a mass changes by more than REL.
    """
    picture = requested(plot, plot_size)
    models = load(old, free_flyer, urdf_only=True), load(new, free_flyer, urdf_only=True)
    refuse_past_memory(samples, diff_bytes(*models), "--samples")
    report = run_diff(*models, DiffOptions(tolerance=tolerance, samples=samples, seed=seed))
    if picture is not None:
        from treedyn.plots.matrices import mass_change
        picture.draw(mass_change, diff_document(report, *models, fail_above),
                     report.matrix, models[0])
    if fmt is DiffFormat.json:
        print_document(diff_document(report, *models, fail_above), "diff")
    elif fmt is DiffFormat.github:
        text = diff_github(report, *models, fail_above)
        if text:
            show_text(text)
    else:
        show_text(render.diff_table(report, *models, fail_above))
    raise typer.Exit(1 if fail_above is not None and report.exceeds(fail_above) else 0)
