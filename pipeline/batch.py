"""A dynamics computation (``inverse``, ``forward``, ``mass``) from the states one input
names to the output it names, run the way that input asks (:func:`solve`): streamed in one
process (:func:`.stream.run`), or a large JSON Lines file cut over worker processes
(:func:`.parts.run_parts`); and what a command checks before it computes: M's size
(:func:`mass_over_cap`), a structure it can write (:func:`structure`), the format of its
results (:func:`sink_kind`), an HDF5 group (:func:`check_prefix`). One state given as
vectors is :func:`.compute.compute` and :meth:`.sinks.Sink.write_whole`; many files (a
pattern, an output folder, a Dask cluster) are :mod:`.cluster`'s.

Runs that have clean-up to do (worker processes, temporary parts, a cluster's outputs) end
by SIGTERM and SIGHUP as by Ctrl-C: :func:`.signals.ended_by_signals`.
"""
from __future__ import annotations

import glob
import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

from treedyn.engine.analysis.sparsity import DENSE_KEYS, sparsity_document

from .errors import UsageError, warn
from .compute import COMPUTATIONS, Computation
from .layout import Layout
from .outputs import file_sink, open_sink, output_format
from .paths import refuse_input_as_output
from .schema import versioned
from .signals import ended_by_signals
from .sinks import Sink
from .source import CHUNK, INPUT_FORMATS, Input

if TYPE_CHECKING:
    from .stream import Progress

MASS_CAP = 1 << 24  # entries of M (nv x nv) that dyn mass computes and writes: 128 MiB of
# doubles, nv <= 4096. Its text (JSON, CSV, a table) holds some 20 bytes an entry, copied a
# few times on its way out: at the cap a chain's JSON run peaks at 1.2 GB (1.8 GB with
# --sparsity, which factors M at 3 configurations), and one of a 10 000-dof chain (800 MB
# of doubles, 2 GB of JSON text) would pass any 2 GB budget.
HDF5 = (".h5", ".hdf5")


def mass_over_cap(layout: Layout, command: str, structure_alone: bool) -> bool:
    """Whether ``mass`` answers without M: False when M is within :data:`MASS_CAP` (or the
    command is another); True when ``structure_alone`` may be given instead (``--sparsity``
    of one state to stdout), with one warning; else a usage error, before anything is
    computed."""
    nv = int(layout.model.nv)
    if command != "mass" or nv * nv <= MASS_CAP:
        return False
    size = (f"M of this model is {nv} x {nv} = {nv * nv:,} entries "
            f"({8 * nv * nv / 2 ** 30:.3g} GiB of doubles), past the {MASS_CAP:,} "
            "dyn mass writes")
    if structure_alone:
        warn(f"{size}: --sparsity gives the structure alone, without "
             f"{', '.join(DENSE_KEYS)}")
        return True
    raise UsageError(f"dyn: {size}; --sparsity without --input and --output gives its "
                     "structure, and dyn inverse and dyn forward run on models of any size")


def structure(layout: Layout, kind: str, dense: bool = True) -> dict:
    """The ``--sparsity`` document of M (without what grows with M unless ``dense``), or a
    usage error where results of format ``kind`` cannot carry it."""
    if kind == "csv":
        raise UsageError("dyn: --sparsity is written in json, npz and table formats, not csv")
    coupling = layout.model.coupling
    if coupling is not None and not coupling.tree_sparse:
        raise UsageError("dyn: --sparsity describes M on the tree; with --mimic this model's "
                         "M couples branches (a mimic joint away from its master's subtree), "
                         "so it has no tree-ordered factor")
    return sparsity_document(layout.model, dense=dense)


def sink_kind(input: str | None, output: str | None, fmt: str | None, default: str) -> str:
    """The format of the results: ``output``'s extension (``fmt``, when given, must agree),
    else ``fmt``, else ``default``."""
    if output is None:
        return fmt or default
    if input is not None and output.lower().endswith(".json"):
        raise UsageError(f"{output}: many states are written as JSON Lines, one object per "
                         "line, which is not one JSON document: name the file .jsonl")
    return output_format(output, fmt)


def check_prefix(input: str | None, output: str | None, prefix: str | None) -> None:
    """An HDF5 group ``prefix`` (names joined by /) needs an HDF5 input or output (stdin
    may be one; a pattern of input files, when it matches one)."""
    if prefix is None:
        return
    if any(part in (".", "..") for part in prefix.strip("/").split("/")) or "//" in prefix:
        raise UsageError(f"dyn: --dataset-prefix {prefix!r}: a group path is names joined by "
                         "/ (no '.', '..' or empty names)")
    files = [path for path in (input, output) if path is not None]
    if input is not None and glob.has_magic(input):
        files += glob.glob(input)
    if not any(path.lower().endswith(HDF5) or path == "-" for path in files):  # (stdin: any)
        raise UsageError("dyn: --dataset-prefix names the group of an .h5/.hdf5 --input or "
                         "--output; there is none here")


def results_sink(layout: Layout, command: str, kind: str, output: str | None,
                 single: bool = False, document: dict | None = None,
                 dataset_prefix: str | None = None, stream=None) -> Sink:
    """The sink of ``COMPUTATIONS[command]``'s results of format ``kind`` (not a table):
    into the file ``output`` (its temporary until complete), else into ``stream``
    (stdout). ``single``: one state's JSON names the dofs too; ``document``: the
    ``--sparsity`` document (its pattern stored beside arrays, all of it in JSON). One
    state's JSON is the command's document: its ``"schema"`` first (:mod:`.schema`), then
    the result (the sink's ``key``)."""
    computation = COMPUTATIONS[command]
    labels = layout.v_labels
    extra = (versioned({computation.key: None, "dofs": list(labels)}, command)
             if single and kind == "json" else {})
    if document and kind == "json":
        extra["sparsity"] = document
    pattern = document["pattern"] if document else None
    shape = computation.shape(layout.model.nv)
    if output is not None:
        return open_sink(output, computation.key, shape, labels, kind, extra, pattern,
                         dataset_prefix)
    return file_sink(stream, None, kind, computation.key, shape, labels, extra, pattern)


def solve(layout: Layout, command: str | Computation, input: str, output: str | None,
          kind: str, open_results: Callable[[], Sink], gravity=None, wrenches: dict | None = None,
          chunk: int = CHUNK, progress: Progress | None = None, workers: int = 1,
          part_bytes: int | None = None, dataset_prefix: str | None = None) -> None:
    """The states of the file ``input`` (``"-"``: stdin; an HDF5 one's group
    ``dataset_prefix``) through ``COMPUTATIONS[command]`` (or ``command`` itself, a state
    command's :class:`.compute.Computation`, which runs in one process) of ``layout`` into
    the sink ``open_results()`` opens, results of format ``kind`` into the file ``output``
    (None: stdout): over ``workers`` processes, parts of ``part_bytes`` (else PART_BYTES),
    when :func:`splits` says so, else in this one. ``gravity``, ``wrenches``, ``chunk`` and
    ``progress`` as for :func:`.stream.run`. An output that is the input is refused."""
    from .parts import PART_BYTES  # (these two, with their pools: not on a one-state path)
    from .stream import run

    refuse_input_as_output(input, output)
    part_bytes = part_bytes or PART_BYTES
    arguments = (layout, command, input, open_results, output, kind, workers, part_bytes,
                 gravity, wrenches, chunk, progress)
    if not (splits(command, input, kind, workers, part_bytes) and split(*arguments)):
        with ended_by_signals():  # (from before the output is opened)
            run(layout, command, Input.open(input, dataset_prefix), open_results(), gravity,
                wrenches, chunk, progress)


def splits(command: str | Computation, path: str, kind: str, workers: int,
           part_bytes: int) -> bool:
    """Whether the input ``path`` is cut over ``workers`` processes: a regular JSON Lines
    file of two parts or more, results as JSON Lines, CSV or .npz (Parquet and HDF5 are
    written by one process; a table is the caller's). ``mass`` into an .npz runs in one
    process: the join of the parts copies nv x nv numbers a state, and the split was only
    1.15x faster (benchmarks/bench_parts.py). A CSV input is never split: pyarrow's
    threaded reader (:mod:`.csvfile`) came within 1.28x of the split (7-dof arm), and beat
    it on the two-link arm. JSON Lines: the split beat pyarrow's threaded JSON reader by
    2.13x on 7-dof arm states and 1.55x on the two-link arm's. A state command's row (a
    :class:`.compute.Computation`, not a name the workers look up) runs in one process."""
    if (not isinstance(command, str) or path == "-" or kind not in ("json", "csv", "npz")
            or workers < 2 or (command == "mass" and kind == "npz")
            or not os.path.isfile(path)):
        return False
    return (INPUT_FORMATS.get(os.path.splitext(path)[1].lower()) == "jsonl"
            and os.path.getsize(path) >= split_bytes(part_bytes))


def split_bytes(part_bytes: int | None = None) -> int:
    """The size from which a JSON Lines input is split (:func:`splits`): two parts of
    ``part_bytes`` (None: PART_BYTES)."""
    from .parts import PART_BYTES

    return 2 * (part_bytes or PART_BYTES)


def split(layout, command, path, open_sink, output, kind, workers, part_bytes, *rest) -> bool:
    """:func:`.parts.run_parts` with the process's signals made safe for it; False when
    the file could not be split (nothing done, nothing opened). Ctrl-C, SIGTERM, SIGHUP and
    a closed stdout end the process as they end one, once the temporary parts are removed."""
    # The parent talks to the workers through pipes: a worker that dies (Ctrl-C) must not
    # end it through SIGPIPE before it cleans up. A reader of stdout that goes away ends
    # it as it would end one process (dyn lets SIGPIPE do that), after the clean-up.
    quiet_end = signal.getsignal(signal.SIGPIPE) == signal.SIG_DFL
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    broken_pipe = False
    from .parts import run_parts

    with ended_by_signals():  # from before the parts' folder is made: a signal never leaves it
        try:
            return run_parts(layout, command, path, open_sink, output, kind, workers,
                             part_bytes, *rest) is not None
        except BrokenPipeError:
            if output is not None or not quiet_end:
                raise
            broken_pipe = True  # stdout's reader went away: end as one process does
            return True
        finally:
            signal.signal(signal.SIGPIPE, signal.SIG_DFL if quiet_end else signal.SIG_IGN)
            if broken_pipe:
                os.kill(os.getpid(), signal.SIGPIPE)
