"""``dyn bench``: throughput of inverse, forward and mass on the model, engine and files."""

from typing import Annotated

import typer

from treedyn.pipeline.batch import split_bytes
from treedyn.pipeline.bench import bench as measure
from treedyn.pipeline.bench import bench_csv, bench_document, state_bytes
from treedyn.pipeline.chunks import refuse_past_memory
from treedyn.session.environment import STREAM_CHUNK, part_bytes, processes

from ..console import print_document
from ..model import load, xacro_arguments
from ..options import (FreeFlyerOpt, InfoFormatOpt, ModelArg, XacroArgOpt, XacroArgs, epilog,
                       examples, finite)
from ..render.bench import bench_table


@epilog(examples("dyn bench fixtures/two_link_arm.urdf",
                 "dyn bench robot.urdf --free-flyer --states 16384"))
def bench(model: ModelArg, xacro_args: XacroArgs = None, free_flyer: FreeFlyerOpt = False,
          xacro_arg: XacroArgOpt = None,
          states: Annotated[int, typer.Option(
              "--states", "-n", min=1, help="Batch size of the batched rows.")] = STREAM_CHUNK,
          seconds: Annotated[float, typer.Option(
              "--seconds", min=0.01, callback=finite,
              help="Time spent on each row (best of the runs).")] = 0.3,
          files: Annotated[bool, typer.Option(
              "--files/--no-files", help="Also time reading and writing .npz, JSON Lines "
              "and CSV files, and the whole --input/--output pipeline.")] = True,
          fmt: InfoFormatOpt = None) -> None:
    """Throughput of RNEA (inverse), ABA (forward) and CRBA (mass) on MODEL.

    Random states (seeded) at N=1 and at a batch of --states, with 1 and 2 engine threads:
    states/s and microseconds per state, so jobs can be sized. Then, per command and file
    format: states/s reading the inputs, writing the results, and the whole
    'dyn COMMAND --input F --output F' after start-up (--no-files skips these).
    """
    loaded = load(model, free_flyer, xacro=xacro_arguments(xacro_args, xacro_arg))
    refuse_past_memory(states, state_bytes(loaded), "--states")
    rows, file_rows = measure(loaded, states, seconds, files, STREAM_CHUNK)
    split = (f"JSON Lines files of {split_bytes(part_bytes()) / 2 ** 20:g} MB or more are "
             f"split over {processes()} processes")
    measured = file_rows if files else None
    if fmt is not None and fmt.value == "json":
        print_document(bench_document(loaded, rows, measured), "bench")
    elif fmt is not None and fmt.value == "csv":
        print(bench_csv(rows, measured))
    else:
        print(bench_table(loaded, rows, measured, split))
