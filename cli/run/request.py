"""A dynamics command as typed, and what it asks for: chunk sizes, the sink its results go
to (``--output``'s extension, else ``--format``, else a table on a terminal and JSON in a
pipe), and many states run through one process (:func:`stream`: the pipeline's
:func:`treedyn.pipeline.stream.run` with a progress bar on stderr)."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Optional

from treedyn.engine.analysis.sparsity import DENSE_KEYS, sparsity_document
from treedyn.pipeline.chunks import computation_chunk
from treedyn.pipeline.compute import COMPUTATIONS
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from treedyn.pipeline.outputs import file_sink, output_format
from treedyn.pipeline.outputs import open_sink as open_file_sink
from treedyn.pipeline.sinks import Sink
from treedyn.pipeline.source import Input

from ..console import warn
from ..render.results import TableSink
from ..render.sparsity import sparsity_table
from ..settings import STREAM_CHUNK


@dataclass
class Request:
    """One dynamics command as typed: everything needed to compute and print it."""

    command: str  # "inverse", "forward" or "mass"
    model: str
    free_flyer: bool
    vectors: dict  # kind -> text or None
    fext: Optional[list]
    input: Optional[str]
    output: Optional[str]
    format: Optional[str]  # --format: "table", "json" or "csv"
    gravity: Optional[str]
    degrees: bool
    sparsity: bool = False
    quiet: bool = False
    scheduler: Optional[str] = None
    xacro: tuple = ()  # (name, value) arguments of a .xacro model
    mimic: bool = False  # --mimic: the URDF's mimic joints enforced
    dataset_prefix: Optional[str] = None  # the HDF5 group of --input and --output


def chunk_states(command: str, layout: Layout) -> int:
    """States per chunk: at most STREAM_CHUNK (TREEDYN_STREAM_CHUNK), as
    :func:`treedyn.pipeline.chunks.computation_chunk` sizes them."""
    return computation_chunk(command, layout.model, STREAM_CHUNK)


def open_sink(request: Request, layout: Layout, single: bool) -> Sink:
    """Where the results go: --output FILE (format from its extension), or stdout as JSON,
    CSV or a table."""
    computation = COMPUTATIONS[request.command]
    labels = layout.v_labels
    kind = sink_kind(request)
    sparsity = structure(request, layout) if request.sparsity else None
    extra = {"dofs": list(labels)} if single and kind == "json" else {}
    if sparsity and kind == "json":
        extra["sparsity"] = sparsity
    pattern = sparsity["pattern"] if sparsity else None
    shape = computation.shape(layout.model.nv)
    if request.output is not None:
        return open_file_sink(request.output, computation.key, shape, labels, kind, extra,
                              pattern, request.dataset_prefix)
    if kind == "table":
        footer = sparsity_table(sparsity, labels) if sparsity else ""
        return TableSink(sys.stdout, computation.key, labels, units(request.command, layout),
                         single, footer)
    return file_sink(sys.stdout, None, kind, computation.key, shape, labels, extra, pattern)


def structure(request: Request, layout: Layout, dense: bool = True) -> dict:
    """The ``--sparsity`` document (without what grows with M unless ``dense``), or a
    usage error where it cannot be written."""
    if sink_kind(request) == "csv":
        raise UsageError("dyn: --sparsity is written in json, npz and table formats, not csv")
    coupling = layout.model.coupling
    if coupling is not None and not coupling.tree_sparse:
        raise UsageError("dyn: --sparsity describes M on the tree; with --mimic this model's "
                         "M couples branches (a mimic joint away from its master's subtree), "
                         "so it has no tree-ordered factor")
    return sparsity_document(layout.model, dense=dense)


MASS_CAP = 1 << 24  # entries of M (nv x nv) that dyn mass computes and writes: 128 MiB of
# doubles, nv <= 4096. Its text (JSON, CSV, a table) holds some 20 bytes an entry, copied a
# few times on its way out: at the cap a chain's JSON run peaks at 1.2 GB (1.8 GB with
# --sparsity, which factors M at 3 configurations), and one of a 10 000-dof chain (800 MB
# of doubles, 2 GB of JSON text) would pass any 2 GB budget.


def mass_over_cap(request: Request, layout: Layout) -> bool:
    """Whether ``dyn mass`` answers without M: False when M is within :data:`MASS_CAP`
    (or the command is another); True for ``--sparsity`` of one state to stdout, which
    then gives M's structure alone, with one note on stderr; else a usage error, before
    anything is computed."""
    nv = int(layout.model.nv)
    if request.command != "mass" or nv * nv <= MASS_CAP:
        return False
    size = (f"M of this model is {nv} x {nv} = {nv * nv:,} entries "
            f"({8 * nv * nv / 2 ** 30:.3g} GiB of doubles), past the {MASS_CAP:,} "
            "dyn mass writes")
    if request.sparsity and request.input is None and request.output is None:
        warn(f"{size}: --sparsity gives the structure alone, without "
             f"{', '.join(DENSE_KEYS)}")
        return True
    raise UsageError(f"dyn: {size}; --sparsity without --input and --output gives its "
                     "structure, and dyn inverse and dyn forward run on models of any size")


def write_structure(request: Request, layout: Layout) -> None:
    """``mass --sparsity`` past :data:`MASS_CAP`: the structure without M, in the document
    the result would carry (JSON: ``dofs`` and ``sparsity``; a table: the figures)."""
    document = structure(request, layout, dense=False)
    if sink_kind(request) == "json":
        print(json.dumps({"dofs": list(layout.v_labels), "sparsity": document}))
    else:
        print(sparsity_table(document, layout.v_labels))


def sink_kind(request: Request) -> str:
    """json, csv, npz or table: --output's extension, else --format, else table on a
    terminal and json in a pipe."""
    if request.output is not None:
        if request.input is not None and request.output.lower().endswith(".json"):
            raise UsageError(f"{request.output}: many states are written as JSON Lines, one "
                             "object per line, which is not one JSON document: name the "
                             "file .jsonl")
        return output_format(request.output, request.format)
    return request.format if request.format else (
        "table" if sys.stdout.isatty() else "json")


def units(command: str, layout: Layout) -> list[str]:
    """Unit of each dof of the result, for tables."""
    angular = layout.angular
    if command == "inverse":
        return ["N m" if rotation else "N" for rotation in angular]
    return [("deg/s^2" if layout.degrees else "rad/s^2") if rotation else "m/s^2"
            for rotation in angular]


def stream(request: Request, layout: Layout, gravity, wrenches) -> None:
    """Many states: chunks in, results out as they are computed, progress on stderr."""
    from treedyn.pipeline.stream import run  # (its thread pool and the progress bar:

    from .progress import Progress, wanted  # not on a one-state path)

    source = Input.open(request.input, request.dataset_prefix)
    sink = open_sink(request, layout, single=False)
    progress = Progress(wanted(request.quiet, results_on_stdout=request.output is None))
    try:
        run(layout, request.command, source, sink, gravity, wrenches,
            chunk_states(request.command, layout), progress.advance)
    finally:
        progress.close()
