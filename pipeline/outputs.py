"""Opening an output file: its format from its extension, the temporary it is written to
until complete (:mod:`.paths`), and the sink that writes a computation's results into it.

``open_sink(path, key, shape, labels)`` is what a Python caller uses; the command line
adds stdout and tables for people (:mod:`treedyn.cli.run.request`).
"""
from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Sequence

from .errors import UsageError
from .paths import refuse_input_as_output, remove_stale, temporary_name, writing
from .sinks import OUTPUT_FORMATS, CsvSink, JsonSink, LimitsSink, NpzSink, Sink, npz_extra

BINARY = ("npz", "parquet", "hdf5")  # the formats written as bytes


def open_sink(path: str, key: str, shape: tuple[int, ...], labels: Sequence[str],
              fmt: str | None = None, extra: dict | None = None, pattern=None,
              dataset_prefix: str | None = None) -> Sink:
    """The sink that writes results ``key`` (each of ``shape``: ``(nv,)`` or ``(nv, nv)``)
    for the dofs ``labels`` into the file ``path``, in the format of its extension
    (``fmt``, when given, must agree). ``extra``: more keys of each JSON line; ``pattern``:
    M's structural pattern, stored beside the results of arrays formats. The file appears
    only complete, when the sink is closed (see :mod:`.sinks`)."""
    kind = output_format(path, fmt)
    if kind == "parquet":  # the optional extras: one line before the output is created
        from .parquet import require_arrow
        require_arrow()
    elif kind == "hdf5":
        from .hdf5 import require_h5py
        require_h5py()
    return open_file(path, kind in BINARY, lambda stream: file_sink(
        stream, path, kind, key, shape, labels, extra or {}, pattern, dataset_prefix))


def open_file(path: str, binary: bool, make: Callable[[object], Sink]) -> Sink:
    """The sink ``make(stream)`` over the output ``path``'s temporary (:func:`open_target`),
    which it renames onto ``path`` once complete: every output file is opened here."""
    stream, temporary, existed = open_target(path, binary)
    sink = make(stream)
    sink.temporary, sink.existed = temporary, existed
    return sink


def file_sink(stream, path: str | None, kind: str, key: str, shape: tuple[int, ...],
              labels: Sequence[str], extra: dict, pattern=None,
              dataset_prefix: str | None = None) -> Sink:
    """The sink of format ``kind`` (json, csv, npz, parquet, hdf5) over an open ``stream``
    (a file's temporary, or stdout: ``path`` None)."""
    if kind == "json":
        return JsonSink(stream, key, extra, path)
    if kind == "csv":
        return CsvSink(stream, csv_header(key, labels), path)
    arrays = npz_extra(labels, pattern)
    if kind == "npz":
        return NpzSink(stream, key, shape, arrays, path)
    if kind == "parquet":
        from .parquet import ParquetSink
        return ParquetSink(stream, key, shape, arrays, path)
    from .hdf5 import Hdf5Sink
    return Hdf5Sink(stream, key, shape, arrays, path, dataset_prefix)


def open_limits_sink(path: str, layout, head: dict, input_name: str | None = None
                     ) -> LimitsSink:
    """The sink of ``dyn check-limits``' one JSON document into the file ``path`` (.json;
    not the input file ``input_name``), written whole once complete."""
    if output_format(path, None) != "json":
        raise UsageError(f"{path}: the limits' summary is one JSON document: name the "
                         "file .json")
    refuse_input_as_output(input_name, path)
    return open_file(path, False, lambda stream: LimitsSink(stream, layout, head, path))


def output_format(path: str, requested: str | None) -> str:
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
    ``existed``: a file was at ``path`` before. A file the run reads is refused
    (:func:`.paths.writing`)."""
    writing(path)
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
    """tau:<joint> (tau:<joint>:<k> for multi-dof joints); M:<row dof>|<column dof> (and
    C: of the Coriolis matrix)."""
    if key in ("M", "C"):
        return [f"{key}:{row}|{column}" for row in labels for column in labels]
    return [f"{key}:{label}" for label in labels]
