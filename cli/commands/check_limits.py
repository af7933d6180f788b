"""``dyn check-limits``: where a logged motion leaves the model's joint limits (position,
velocity, effort), streamed through the pipeline into one summary (exit 1 on any state
outside)."""
import sys
from typing import Annotated, Optional

import typer

from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.findings import selection
from treedyn.pipeline.layout import Layout
from treedyn.pipeline.stream import check_limits as check_run
from treedyn.pipeline.vectors import parse_gravity
from treedyn.plots import requested

from ..console import saying_kept, show_text
from ..model import load, xacro_arguments
from ..options import (BaselineOpt, DatasetPrefixOpt, DegreesOpt, FreeFlyerOpt, GravityOpt,
                       IgnoreOpt, LimitsFormat, MimicOpt, ModelArg, PlotSizeOpt, SelectOpt, XacroArgOpt, XacroArgs, epilog, examples, format_option,
                       plot_option)
from ..render.findings import print_sarif
from ..render.limits import limits_table
from ..run.progress import bar
from treedyn.session.environment import STREAM_CHUNK


@epilog(examples(
    "dyn check-limits fixtures/two_link_arm.urdf --input fixtures/two_link_arm_limits_log.csv",
    "dyn check-limits robot.urdf --input log.npz --output limits.json",
    "dyn check-limits robot.urdf --degrees --input log.csv --format json | jq .joints"))
def check_limits(
        model: ModelArg, xacro_args: XacroArgs = None,
        input_file: Annotated[str, typer.Option(
            "--input", "-i", metavar="FILE", show_default=False,
            help="The log: JSON Lines, CSV, .npz, Parquet or HDF5 states with q and, when "
            "it has them, v, a and tau (as the other commands read them); '-' reads "
            "stdin. Without tau, the effort limits are checked on inverse dynamics of q, v "
            "and a (a missing v or a is zero).")] = ...,
        output_file: Annotated[Optional[str], typer.Option(
            "--output", "-o", metavar="FILE", show_default=False,
            help="Write the JSON document to FILE (.json), which appears only complete.")]
        = None,
        fmt: format_option(LimitsFormat, "table on a terminal, else json; sarif: the states "
                           "outside a limit as a SARIF 2.1.0 log.") = None,
        gravity: GravityOpt = None, degrees: DegreesOpt = False,
        free_flyer: FreeFlyerOpt = False,
        xacro_arg: XacroArgOpt = None, mimic: MimicOpt = False,
        dataset_prefix: DatasetPrefixOpt = None, select: SelectOpt = None,
        ignore: IgnoreOpt = None, baseline: BaselineOpt = None,
        plot: plot_option("each dof's peak ratio to its limits and q over the log (which "
                          "it holds in memory)") = None,
        plot_size: PlotSizeOpt = None) -> None:
    """Joint limits along a logged motion: position, velocity and effort.

    For every dof with a limit: the states where q leaves [lower, upper] (1-dof joints
    that are not continuous), where |v| exceeds the velocity limit and where |tau| exceeds
    the effort limit (tau: the log's, else inverse dynamics); per kind, the first state
    outside (its index and the file's line), the count and the worst value with its
    excess. Positions and velocities are compared in the log's units (--degrees: degrees).
    The log streams: memory stays bounded whatever its length. Exit 1 when any state is
    outside a limit.
    """
    picture = requested(plot, plot_size)
    if fmt is LimitsFormat.csv:
        raise UsageError("dyn: check-limits prints a table, json or sarif, not csv")
    chosen = selection("check-limits", select, ignore, baseline)
    loaded = load(model, free_flyer, xacro=xacro_arguments(xacro_args, xacro_arg),
                  mimic=mimic)
    kind = fmt.value if fmt else ("table" if sys.stdout.isatty() else "json")
    with bar(results_on_stdout=output_file is None) as advance, saying_kept():
        sink = check_run(Layout.of(loaded, degrees), input_file, output_file,
                         sys.stdout if kind == "json" else None, parse_gravity(gravity),
                         STREAM_CHUNK, advance, dataset_prefix, chosen, picture is not None)
    document = sink.document()
    if picture is not None:
        from treedyn.plots.series import limits
        picture.draw(limits, document, sink.traces)
    if kind == "table" and (output_file is None or fmt is LimitsFormat.table):
        show_text(limits_table(document))
    elif kind == "sarif":
        print_sarif("check-limits", sink.found)
    raise typer.Exit(0 if document["ok"] else 1)
