"""``dyn condition``: conditioning of M(q) over sampled configurations, and its causes."""

import sys
from typing import Annotated

import typer

from treedyn.engine.analysis.conditioning import ConditionOptions, NotFinite, analyze

from treedyn.pipeline import naming
from ..console import print_document, show_text, warn
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from ..model import load, xacro_arguments
from ..options import (FreeFlyerOpt, ModelArg, PlotSizeOpt, ReportFormat, ReportFormatOpt,
                       SeedOpt, XacroArgOpt, XacroArgs, epilog, examples, not_nan,
                       plot_option, samples_option)
from ..render import reports
from treedyn.engine.analysis.condition_report import (condition_document,
                                                     empty_condition_document)
from treedyn.pipeline.reports import condition_csv
from treedyn.pipeline.chunks import refuse_past_memory, sample_bytes
from treedyn.plots import requested

CONDITION_EXAMPLES = examples(
    "dyn condition robot.urdf --samples 200",
    "dyn condition robot.urdf --free-flyer --max-cond 1e6 --strict",
)


@epilog(CONDITION_EXAMPLES)
def condition(
        model: ModelArg, xacro_args: XacroArgs = None, free_flyer: FreeFlyerOpt = False,
        xacro_arg: XacroArgOpt = None,
        samples: samples_option("Configurations: the neutral one, then random ones within "
                                "the joint limits.") = 100,
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
        fmt: ReportFormatOpt = None,
        plot: plot_option("cond(M) over the samples and the weakest direction") = None,
        plot_size: PlotSizeOpt = None,
) -> None:
    """Conditioning of the mass matrix M(q) over sampled configurations.

    Reports cond(M) (min, median, worst with its configuration), the weakest direction
    at the worst configuration named by joints (the eigenvector of the smallest
    eigenvalue), ABA's local D-blocks (a joint whose articulated inertia is a tiny
    fraction of lambda_max(M) proves cond(M) >= 1/ratio), and parent/child mass ratios.
    """
    picture = requested(plot, plot_size)
    loaded = load(model, free_flyer, xacro=xacro_arguments(xacro_args, xacro_arg))
    refuse_past_memory(samples, sample_bytes(loaded), "--samples")
    options = ConditionOptions(samples=samples, seed=seed, max_cond=max_cond,
                               max_mass_ratio=max_mass_ratio, min_block_ratio=min_block_ratio)
    if loaded.nv == 0:
        note = f"model {loaded.name} has no degrees of freedom: M is empty (add --free-flyer?)"
        if fmt is ReportFormat.json:
            print_document(empty_condition_document(loaded, options, note), "condition")
        elif fmt is ReportFormat.csv:
            condition_csv(None, [], sys.stdout)
        else:
            show_text(note)
        raise typer.Exit(0)
    try:
        report = analyze(loaded, options)
    except NotFinite as error:
        which = "the neutral one" if error.sample == 0 else f"random, seed {seed}"
        raise UsageError(f"dyn: {model}: M(q) is not finite at configuration {error.sample} "
                         f"({which}): it overflows (a length, mass or inertia too large?)"
                         ) from None
    layout = Layout.of(loaded)
    document = condition_document(report, loaded, layout.v_labels, options)
    if picture is not None:
        from treedyn.plots.series import condition as figure
        picture.draw(figure, document, report.cond)
    if fmt is ReportFormat.json:
        print_document(document, "condition")
    elif fmt is ReportFormat.csv:  # one row per sample: the warnings go to stderr
        condition_csv(report, naming.q_labels(loaded), sys.stdout)
        for message in report.warnings:
            warn(message)
    else:
        show_text(reports.condition_table(report, loaded, layout.v_labels,
                                          naming.q_labels(loaded), options))
    raise typer.Exit(1 if strict and report.warnings else 0)
