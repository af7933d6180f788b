"""``dyn statics``: each actuated joint's largest gravity load over the joint ranges against
its effort limit (:mod:`treedyn.engine.statics`, :mod:`treedyn.engine.analysis.statics`)."""

from typing import Annotated, Optional

import typer

from treedyn.pipeline.vectors import parse_payload

from ..console import print_document, show_text
from ..model import load, xacro_arguments
from ..options import (BaselineOpt, FindingsFormat, FreeFlyerOpt, IgnoreOpt, MimicOpt,
                       ModelArg, PlotSizeOpt, SeedOpt, SelectOpt, XacroArgOpt, XacroArgs,
                       epilog, examples, format_option, not_nan, plot_option, samples_option)

STATICS_EXAMPLES = examples(
    "dyn statics fixtures/two_link_arm.urdf",
    "dyn statics robot.urdf --payload 2.5@tool0:0,0,0.1 --format json",
    "dyn statics robot.urdf --fail-above 0.8 --format github",
    "dyn statics robot.urdf --format sarif > statics.sarif",
)


@epilog(STATICS_EXAMPLES)
def statics(
        model: ModelArg, xacro_args: XacroArgs = None, free_flyer: FreeFlyerOpt = False,
        payload: Annotated[Optional[str], typer.Option(
            "--payload", metavar="KG[@FRAME[:x,y,z]]", show_default=False,
            help="A point mass of KG kilograms at FRAME's origin (or at x,y,z in its axes). "
            "Default FRAME: the deepest body that carries every other (a serial arm's last "
            "link). The payload capacity is reported at that point either way.")] = None,
        fail_above: Annotated[Optional[float], typer.Option(
            "--fail-above", metavar="RATIO", min=0.0, callback=not_nan, show_default=False,
            help="Exit 1 when a joint's max |g| / limit exceeds RATIO (always above 1).")
        ] = None,
        fmt: format_option(FindingsFormat, "table (default), json, github (::error at each "
                           "failing joint's <limit> line) or sarif (SARIF 2.1.0).") = None,
        samples: samples_option("Latin hypercube configurations the search starts "
                                "from.") = 2048,
        seed: SeedOpt = 0, xacro_arg: XacroArgOpt = None, mimic: MimicOpt = False,
        select: SelectOpt = None, ignore: IgnoreOpt = None, baseline: BaselineOpt = None,
        plot: plot_option("each joint's ratio to its limit") = None,
        plot_size: PlotSizeOpt = None,
) -> None:
    """The largest gravity load of every actuated joint over the joint ranges, against
    its effort limit.

    Per joint: max |g_i(q)| (g: the joint forces holding the robot still) over every
    configuration within the limits (continuous joints over a full turn; a floating base
    held at its neutral pose), the configuration where it occurs, a rigorous upper
    bound ("certified" when the maximum meets it to 1e-6), the limit (URDF <limit
    effort>; MJCF actuatorfrcrange or the actuators' forcerange x gear), their ratio, and
    the largest payload the joint can hold at the payload point anywhere in its range.
    Exit 1 when a ratio exceeds 1 (or --fail-above).
    """
    from treedyn.engine.analysis.statics import statics_document, statics_report
    from treedyn.engine.statics import LoadOverflow
    from treedyn.pipeline.chunks import refuse_search_past_memory
    from treedyn.pipeline.errors import UsageError
    from treedyn.pipeline.reports import statics_github
    from treedyn.pipeline.findings import (selected_statics, selection, statics_findings,
                                           with_findings)

    from treedyn.plots import requested

    from ..render import statics as render
    from ..render.findings import print_sarif
    picture = requested(plot, plot_size)
    spec = parse_payload(payload)
    chosen = selection("statics", select, ignore, baseline)
    loaded = load(model, free_flyer, xacro=xacro_arguments(xacro_args, xacro_arg),
                  mimic=mimic)
    refuse_search_past_memory(loaded, samples)
    try:
        report = selected_statics(statics_report(loaded, spec, samples=samples, seed=seed),
                                  chosen)
    except LoadOverflow as error:
        said = f"--payload {payload!r}: " if payload is not None else ""
        raise UsageError(f"dyn: {loaded.source}: {said}{error}") from None
    except KeyError as error:
        raise UsageError(f"dyn: {loaded.source}: --payload: no link, body, joint or site named "
                         f"{error.args[0]!r}") from None
    except ValueError as error:
        raise UsageError(f"dyn: {loaded.source}: --payload: {error}") from None
    found = statics_findings(report, loaded, fail_above)
    document = statics_document(report, loaded)
    if picture is not None:
        from treedyn.plots.series import statics as figure
        picture.draw(figure, document)
    if fmt is FindingsFormat.json:
        print_document(with_findings(document, found, "statics"), "statics")
    elif fmt is FindingsFormat.sarif:
        print_sarif("statics", found)
    elif fmt is FindingsFormat.github:
        text = statics_github(found)
        if text:
            show_text(text)
    else:
        show_text(render.statics_table(report, loaded, fail_above))
    raise typer.Exit(1 if found else 0)
