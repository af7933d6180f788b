"""A dynamics command as typed, and what it asks for: chunk sizes, and the sink its
results go to (``--output``'s extension, else ``--format``, else a table on a terminal
and JSON in a pipe)."""
from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from dataclasses import dataclass
from typing import Optional

from treedyn.engine.analysis.sparsity import DENSE_KEYS, sparsity_document

from ..console import warn
from ..errors import UsageError
from ..io.hdf5 import Hdf5Sink, require_h5py
from ..io.layout import Layout
from ..io.parquet import ParquetSink, require_arrow
from ..io.paths import remove_stale, temporary_name
from ..io.sinks import OUTPUT_FORMATS, CsvSink, JsonSink, NpzSink, Sink, TableSink, npz_extra
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


RESULT_KEY = {"inverse": "tau", "forward": "a", "mass": "M"}


CHUNK_BYTES = 8 << 20  # a chunk's results stay about this size ...


CHUNK_FLOOR = 32  # ... but hold at least this many states: the engine's per-level work is


def chunk_states(command: str, layout: Layout) -> int:
    """States per chunk: STREAM_CHUNK (TREEDYN_STREAM_CHUNK), fewer when a chunk's results
    would pass CHUNK_BYTES (mass matrices of large models), so memory stays small whatever
    the output format."""
    nv = max(layout.model.nv, 1)
    per_state = 8 * (nv * nv if command == "mass" else nv)
    return min(STREAM_CHUNK, max(CHUNK_FLOOR, CHUNK_BYTES // per_state))


def open_sink(request: Request, layout: Layout, single: bool) -> Sink:
    """Where the results go: --output FILE (format from its extension) or stdout."""
    key = RESULT_KEY[request.command]
    labels = layout.v_labels
    kind = sink_kind(request)
    sparsity = structure(request, layout) if request.sparsity else None
    if kind == "parquet":  # the optional extras: one line before the output is created
        require_arrow()
    elif kind == "hdf5":
        require_h5py()
    path = request.output
    stream, temporary, existed = ((sys.stdout, None, False) if path is None
                                  else open_target(path, kind in ("npz", "parquet", "hdf5")))
    sink: Sink
    if kind == "json":
        extra = {"dofs": list(labels)} if single else {}
        if sparsity:
            extra["sparsity"] = sparsity
        sink = JsonSink(stream, key, extra, path)
    elif kind == "csv":
        sink = CsvSink(stream, csv_header(key, labels), path)
    elif kind in ("npz", "parquet", "hdf5"):
        shape = (layout.model.nv,) * (2 if key == "M" else 1)
        pattern = sparsity["pattern"] if sparsity else None
        extra = npz_extra(labels, pattern)
        if kind == "npz":
            sink = NpzSink(stream, key, shape, extra, path)
        elif kind == "parquet":
            sink = ParquetSink(stream, key, shape, extra, path)
        else:
            sink = Hdf5Sink(stream, key, shape, extra, path, request.dataset_prefix)
    else:
        footer = sparsity_table(sparsity, layout.v_labels) if sparsity else ""
        sink = TableSink(stream, key, layout.v_labels, units(request.command, layout), single,
                         footer)
    sink.temporary, sink.existed = temporary, existed
    return sink


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


def output_format(path: str, requested: Optional[str]) -> str:
    """The format --output's extension asks for (an explicit --format must agree)."""
    kind = OUTPUT_FORMATS.get(os.path.splitext(path)[1].lower())
    if kind is None:
        raise UsageError(f"{path}: unknown output format "
                         f"'{os.path.splitext(path)[1] or path}' (use .jsonl, .csv, .npz, "
                         ".parquet or .h5)")
    if requested is not None and requested != kind:
        raise UsageError(f"dyn: --format {requested} conflicts with --output {path}; "
                         "the extension decides the file's format")
    return kind


def open_output(path: str, binary: bool):
    """(file, created): ``path`` opened for writing as it is, without a temporary (a worker's
    part file, a device), created if missing but not emptied, and whether it was created."""
    created = not os.path.exists(path)  # (a link to nothing: its file is created)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
    except OSError as error:
        raise UsageError(f"{path}: cannot write ({error.strerror or error})") from None
    if binary:
        return os.fdopen(descriptor, "wb"), created
    return os.fdopen(descriptor, "w", encoding="utf-8", newline=""), created


def open_target(path: str, binary: bool):
    """(file, temporary, existed) for the output ``path``: a new file ``temporary`` in the
    folder of the file ``path`` names (``.<name>.<pid>-<host>.<random>.part``, see
    :mod:`..io.paths`; temporaries of this output left by runs that are gone are removed
    first), with the mode of the file it will replace (else 0666 less the umask), which the
    sink renames onto ``path`` once complete; or ``path`` itself (temporary None) when it
    exists and is not a regular file (a device, a pipe), written as the results come.
    ``existed``: a file was at ``path`` before."""
    target = os.path.realpath(path)  # through a link: the file it names
    existed = os.path.exists(target)
    if existed and not os.path.isfile(target):
        return open_output(path, binary)[0], None, True
    remove_stale(target)
    while True:
        temporary = temporary_name(target)
        try:
            descriptor = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
        except OSError as error:
            raise UsageError(f"{path}: cannot write ({error.strerror or error})") from None
    with contextlib.suppress(OSError):  # the replaced file's permissions carry over
        os.chmod(descriptor, stat.S_IMODE(os.stat(target).st_mode))
    if binary:
        return os.fdopen(descriptor, "w+b"), temporary, existed
    return os.fdopen(descriptor, "w", encoding="utf-8", newline=""), temporary, existed


def csv_header(key: str, labels) -> list[str]:
    """tau:<joint> (tau:<joint>:<k> for multi-dof joints); M:<row dof>|<column dof>."""
    if key == "M":
        return [f"M:{row}|{column}" for row in labels for column in labels]
    return [f"{key}:{label}" for label in labels]


def units(command: str, layout: Layout) -> list[str]:
    """Unit of each dof of the result, for tables."""
    angular = layout.angular
    if command == "inverse":
        return ["N m" if rotation else "N" for rotation in angular]
    return [("deg/s^2" if layout.degrees else "rad/s^2") if rotation else "m/s^2"
            for rotation in angular]
