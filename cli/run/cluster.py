"""Many input files (a pattern, or --output DIR/: one DIR/<input stem>.npz each), here one
after another or with --scheduler on a Dask cluster (:mod:`treedyn.pipeline.cluster`)."""
from __future__ import annotations

from treedyn.pipeline import cluster
from treedyn.pipeline.batch import ended_by_signals, results_sink, structure
from treedyn.pipeline.source import Input
from treedyn.pipeline.stream import run

from ..model import chunk_states
from .progress import Progress, wanted


def solve_many(layout, command: str, given: dict, gravity, wrenches) -> None:
    """Each file through the streaming path in turn, or one task per file on --scheduler;
    ``given``: the command's options by name."""
    address, folder, prefix = given["scheduler"], given["output_file"], given["dataset_prefix"]
    files, outputs, counts = cluster.plan(layout, command, given["input_file"], folder,
                                          given["fmt"] and given["fmt"].value, address, prefix)
    document = structure(layout, "npz") if given["sparsity"] else None
    chunk = chunk_states(command, layout)

    def each(path: str, output: str) -> None:
        progress = Progress(wanted(results_on_stdout=False))
        try:
            run(layout, command, Input.open(path, prefix),
                results_sink(layout, command, "npz", output, document=document,
                             dataset_prefix=prefix), gravity, wrenches, chunk, progress.advance)
        finally:
            progress.close()

    with ended_by_signals():
        if address is None:
            cluster.make_folder(folder)
            return cluster.run_each(files, outputs, each)
        client, close = cluster.connect(address, quiet=True)  # refused: no folder made
        progress = Progress(wanted(results_on_stdout=False))
        with cluster.closing(close, outputs):
            try:
                cluster.run_files(client, layout, command, files, outputs, counts, gravity,
                                  wrenches, chunk, prefix, document and document["pattern"],
                                  progress.advance)
            finally:
                progress.close()
