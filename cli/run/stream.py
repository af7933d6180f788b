"""Many states through one process: :func:`treedyn.pipeline.stream.run` with the command's
output and a progress bar on stderr."""
from __future__ import annotations

from treedyn.pipeline.layout import Layout
from treedyn.pipeline.stream import run
from treedyn.pipeline.source import Input

from .progress import Progress, wanted
from .request import Request, chunk_states, open_sink


def stream(request: Request, layout: Layout, gravity, wrenches) -> None:
    """Many states: chunks in, results out as they are computed, progress on stderr."""
    source = Input.open(request.input, request.dataset_prefix)
    sink = open_sink(request, layout, single=False)
    progress = Progress(wanted(request.quiet, results_on_stdout=request.output is None))
    try:
        run(layout, request.command, source, sink, gravity, wrenches,
            chunk_states(request.command, layout), progress.advance)
    finally:
        progress.close()
