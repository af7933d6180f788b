"""A model's computation run over many states: chunks read from a source, computed and
written to a sink as they come (:func:`run`).

A file output appears only complete (see :mod:`.sinks`): after a bad row or an interrupt
the file is unchanged, the states before the stop are in NAME.partial.EXT, and the error
raised says how many (:func:`stopped`).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from treedyn.engine import Model

from .chunks import computation_chunk
from .compute import Computation, collect, compute, computation_of
from .errors import CorruptInput, Ended, OutputError, UsageError, warn
from .layout import Layout
from .signals import ended_by_signals
from .sinks import NpzSink, Sink, states_text
from .source import CHUNK, Input

Progress = Callable[[int, "int | None", "float | None"], None]  # (states, total, share read)


def run(model: Model | Layout, command: str | Computation, source: Input | str | os.PathLike,
        sink: Sink | str | os.PathLike, gravity=None, wrenches: dict | None = None,
        chunk: int = CHUNK, progress: Progress | None = None) -> Sink:
    """Stream the states of ``source`` through ``COMPUTATIONS[command]`` (``"inverse"``,
    ``"forward"``, ``"mass"``, ``"com"``; or a row made for named frames,
    :func:`.kinematics.kinematics`) of ``model`` into ``sink``.

    ``model``: a :class:`~treedyn.engine.Model`, or its :class:`~.layout.Layout` (with
    ``degrees``: angles in degrees in the states and results). ``source``: an
    :class:`~.source.Input` or a path (any input format; ``"-"``: stdin).
    ``sink``: a :class:`~.sinks.Sink` or a path (format from its extension, see
    :func:`.outputs.open_sink`). ``gravity`` (3,), else the model's; ``wrenches``: external
    forces by link name for every state. ``progress(states, total, share)`` is called after
    each chunk written. ``chunk``: the most states read at a time (fewer when their
    results would pass 8 MB, :func:`.chunks.computation_chunk`). Returns the closed sink
    (``sink.count`` states written).

    A chunk is computed on a worker thread while the next one is read and the previous one
    written (numpy releases the GIL in the engine, so parsing and writing overlap it);
    results are written in input order. On an error, the states before the bad one are
    computed and written, kept as :func:`stopped` says, and the error raised; SIGTERM and
    SIGHUP in the main thread stop it as Ctrl-C does (:func:`.signals.ended_by_signals`).
    """
    layout = model if isinstance(model, Layout) else Layout.of(model)
    if not isinstance(source, Input):
        source = Input.open(os.fspath(source))
    if not isinstance(sink, Sink):
        from .outputs import open_sink

        computation = computation_of(command)
        sink = open_sink(os.fspath(sink), computation.key,
                         computation.shape(layout.model.nv), layout.v_labels)
    kinds = computation_of(command).kinds
    about_v = kinds == ("q", "v")  # (C, the momentum, the energy, Jdot: v is half of it)
    size = computation_chunk(command, layout.model, chunk)  # (fewer for large M)
    chunks = source.chunks(layout, kinds, wrenches or {}, size)
    if isinstance(sink, NpzSink):  # the count is known once the first chunk is read
        sink.total = lambda: source.total
    worker = ThreadPoolExecutor(1, thread_name_prefix="dyn-compute")
    try:
        with ended_by_signals():  # SIGTERM, SIGHUP: the output kept as for Ctrl-C
            pending = None  # (future, states, share of the input read) of the chunk computed
            for states in ahead(chunks):
                if about_v and states is not None and states.v is None:  # (said once)
                    about_v = False
                    warn(f"{source.name}: the states have no v: computed with v = 0")
                done = None if pending is None else (
                    collect(pending[0].result, pending[1], sink), *pending[1:])
                pending = None if states is None else (
                    worker.submit(compute, command, layout, states, gravity), states,
                    source.consumed())
                if done is not None:
                    result, states_done, consumed = done
                    before = sink.count
                    sink.put(result, states_done)
                    if progress is not None:
                        progress(sink.count - before, source.total, consumed)
            sink.close()  # (a signal while the file is completed: kept as for any other)
    except BaseException as error:
        raise stopped(sink, error) from None
    finally:
        worker.shutdown(wait=True)
    return sink


def ahead(chunks):
    """The chunks, then None; a read error (a bad row) is raised one step late, after the
    None, so that the chunk still being computed is written first."""
    try:
        yield from chunks
    except Exception as error:  # noqa: BLE001 -- re-raised below, after the last chunk
        yield None
        raise error from None
    yield None


def stopped(sink: Sink, error: BaseException) -> BaseException:
    """End the output after an error (:meth:`.Sink.keep`: a file is left unchanged and the
    states completed go to NAME.partial.EXT); a UsageError then also says what was kept.
    An interrupt (KeyboardInterrupt, :class:`Ended`) is returned as it is, with what was
    kept in its ``kept`` attribute, for the caller to say.

    A damaged input (a failed CRC-32) is only found once the damaged part was read, so the
    states before it are not known to be good: nothing is kept then.
    """
    if isinstance(error, OutputError):  # the sink has kept what it could, and says so
        return error
    if isinstance(error, CorruptInput):
        count = states_text(sink.count)
        were = "were" if sink.count != 1 else "was"
        if sink.path is None:
            return UsageError(f"{error}; the {count} written to stdout before this was "
                              f"found {were} read from that file and may be wrong")
        sink.discard()
        before = "is unchanged" if sink.existed else "is not written"
        return UsageError(f"{error}; {sink.where()} {before} and nothing is kept: the "
                          f"{count} computed {were} read from that file and may be wrong")
    held = sink.keep()
    if isinstance(error, (KeyboardInterrupt, Ended)):
        if held or sink.path is not None:
            error.kept = sink.outcome(held)
        return error
    if not isinstance(error, UsageError) or not (held or sink.count):
        return error  # (a bad first row: the output is as it was, as for any bad input)
    return UsageError(f"{error}; stopped there: {sink.outcome(held, before_it=True)}")


def check_limits(layout: Layout, path: str, output: str | None = None, stream=None,
                 gravity=None, chunk: int = CHUNK, progress: Progress | None = None,
                 prefix: str | None = None, chosen=None, trace: bool = False):
    """``dyn check-limits``' run: the states of the file ``path`` (an HDF5 one's group
    ``prefix``) through :data:`.compute.EFFORT` into one :class:`~.sinks.LimitsSink`,
    whose JSON document goes into the file ``output`` (.json, whole once complete), else
    onto ``stream`` (None: ``sink.document()`` alone); ``chosen``: the findings selected
    (:func:`.findings.selection`); ``trace``: q and the ratios kept for a picture. The
    log streams (``gravity``, ``chunk``, ``progress`` as :func:`run` takes them). Returns
    the closed sink."""
    from .compute import EFFORT
    from .outputs import open_limits_sink
    from .sinks import LimitsSink

    source = Input.open(path, prefix)
    head = {"model": layout.model.name, "input": source.name}
    sink = (open_limits_sink(output, layout, head, path) if output is not None
            else LimitsSink(stream, layout, head))
    sink.chosen = chosen
    if trace:
        sink.trace()
    return run(layout, EFFORT, source, sink, gravity, chunk=chunk, progress=progress)
