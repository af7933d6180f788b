"""A dynamics command's request, run the way its input asks: one state on the command
line, many streamed in one process (:func:`.request.stream`), a large text file split over
processes (:mod:`.parts`), or many files on a Dask cluster (:mod:`.cluster`)."""
from __future__ import annotations

import glob
import os

from ..console import console, saying_kept
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from ..model import load
from treedyn.pipeline.paths import same_file
from treedyn.pipeline.vectors import parse_fext, parse_gravity, single_state
from treedyn.pipeline.compute import compute
from .pool import ended_by_signals
from .request import Request, mass_over_cap, open_sink, write_structure


def solve(request: Request) -> None:
    """Read the state(s), run the engine once per chunk and stream the results."""
    console.reset(request.quiet)
    model = load(request.model, request.free_flyer, xacro=request.xacro,
                 mimic=request.mimic)
    layout = Layout.of(model, request.degrees)
    gravity = parse_gravity(request.gravity)
    wrenches = parse_fext(request.fext, model)
    check_prefix(request)
    if request.input is None:
        if request.scheduler is not None:
            raise UsageError("dyn: --scheduler needs --input FILES.npz and --output DIR/")
        states = single_state(layout, request.vectors, wrenches)
        if mass_over_cap(request, layout):
            return write_structure(request, layout)
        result = compute(request.command, layout, states, gravity)
        return open_sink(request, layout, single=True).write_whole(result, states)
    # the paths of many states load only now: a one-state run does not pay for them
    from .cluster import solve_many, wants_many
    from treedyn.pipeline.heap import for_many_states
    from .parts import try_parts
    from .request import stream

    mass_over_cap(request, layout)  # (a usage error with many states)
    given = [f"--{kind}" for kind, text in request.vectors.items() if text is not None]
    if given:
        raise UsageError(f"dyn: {' and '.join(given)} cannot be combined with --input "
                         "(put the vectors in the input file)")
    with for_many_states(os.environ), saying_kept():
        if wants_many(request):
            return solve_many(request, layout, gravity, wrenches)
        if request.output is not None and same_file(request.input, request.output):
            raise UsageError(f"dyn: --output {request.output} is the input file"
                             f"{' (on stdin)' if request.input == '-' else ''}: it would be "
                             "replaced by the results computed from it; write to another file")
        if not try_parts(request, layout, gravity, wrenches):
            with ended_by_signals():  # SIGTERM, SIGHUP: the output ended as for Ctrl-C,
                stream(request, layout, gravity, wrenches)  # then dyn ends by the signal


HDF5 = (".h5", ".hdf5")


def check_prefix(request: Request) -> None:
    """--dataset-prefix names a group of an HDF5 --input or --output: refused without one
    (stdin may be one; a pattern of input files, when it matches one)."""
    if request.dataset_prefix is None:
        return
    files = [path for path in (request.input, request.output) if path is not None]
    if request.input is not None and glob.has_magic(request.input):
        files += glob.glob(request.input)
    if not any(path.lower().endswith(HDF5) or path == "-" for path in files):  # (stdin: any)
        raise UsageError("dyn: --dataset-prefix names the group of an .h5/.hdf5 --input or "
                         "--output; there is none here")
