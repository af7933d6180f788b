"""Many input files (a pattern, or --output DIR/: one DIR/<input stem>.npz each), here one
after another or with --scheduler on a Dask cluster (:mod:`treedyn.pipeline.cluster`)."""
from __future__ import annotations

import glob
import os
from dataclasses import replace

from treedyn.pipeline import cluster
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.sinks import OUTPUT_FORMATS
from .pool import ended_by_signals
from .progress import Progress, wanted
from .request import chunk_states, stream, structure


def wants_many(request) -> bool:
    """--scheduler, a glob pattern that names no file as is, or an --output directory."""
    output, ext = request.output, os.path.splitext(request.output or "")[1]
    if output and os.path.isdir(output) and ext.lower() in OUTPUT_FORMATS and \
            not output.endswith(("/", os.sep)):
        raise UsageError(f"{output}: is a directory, not the {ext} file its name asks for "
                         "(write DIR/ for one .npz per input file)")
    if request.scheduler is not None or output and cluster.is_folder(output):
        return True
    pattern = request.input not in (None, "-") and glob.has_magic(request.input)
    return pattern and not os.path.exists(request.input)


def solve_many(request, layout, gravity, wrenches) -> None:
    """Each file through the streaming path in turn, or one task per file on --scheduler."""
    address = request.scheduler
    if address is not None:
        cluster.require_dask()
    files = cluster.expand(request.input)
    outputs = cluster.targets(files, request.output)
    if request.format is not None:
        raise UsageError(f"dyn: --format {request.format} conflicts with --output DIR/: the "
                         "files written there are .npz")
    counts = cluster.checked_counts(files, layout, request.command, request.dataset_prefix,
                                    arrays_only=address is not None, warns=address is not None)
    pattern = structure(replace(request, output=outputs[0]), layout)["pattern"] \
        if request.sparsity else None
    with ended_by_signals():
        if address is None:
            cluster.make_folder(request.output)
            cluster.run_each(files, outputs, lambda path, output: stream(
                replace(request, input=path, output=output), layout, gravity, wrenches))
            return
        client, close = cluster.connect(address, quiet=True)  # refused: no folder made
        progress = Progress(wanted(request.quiet, results_on_stdout=False))
        with cluster.closing(close, outputs):
            try:
                cluster.run_files(client, layout, request.command, files, outputs, counts,
                                  gravity, wrenches, chunk_states(request.command, layout),
                                  request.dataset_prefix, pattern, progress.advance)
            finally:
                progress.close()
