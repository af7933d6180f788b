"""A dynamics command's run (:func:`solve`): the model its options name, one call of the
pipeline (one state: :func:`~treedyn.pipeline.compute.compute`; an input:
:func:`treedyn.pipeline.batch.solve`; many files:
:func:`treedyn.pipeline.cluster.solve_many`), and its results where
they are asked for: --output FILE (format from its extension), else stdout as JSON, CSV
or a table for people (:mod:`..render.results`); a progress bar on stderr."""
from __future__ import annotations

import os
import sys
from functools import partial

from treedyn.pipeline import batch
from treedyn.pipeline.compute import COMPUTATIONS, compute
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from treedyn.pipeline.sinks import Sink
from treedyn.pipeline.vectors import (parse_fext, parse_gravity, refuse_beside_input,
                                      single_state)

from ..console import console, saying_kept
from ..model import chunk_states, given_layout
from ..render.results import results_table, structure_text
from treedyn.session.environment import part_bytes, processes


def solve(command: str, vectors: tuple, given: dict) -> Layout:
    """Compute ``command`` for the state(s) that the options ``given`` (by name, as typed)
    ask for: the ``vectors`` on the command line, else the states of --input; write them.
    Returns the model's layout."""
    layout = given_layout(given)
    model = layout.model
    if given.get("plot") and model.nv ** 2 > batch.MASS_CAP:  # (before any result)
        raise UsageError(f"dyn: --plot: M of this model ({model.nv} dofs) is too large to "
                         "draw")
    gravity, wrenches = parse_gravity(given["gravity"]), parse_fext(given["fext"], model)
    input, output, prefix = given["input_file"], given["output_file"], given["dataset_prefix"]
    batch.check_prefix(input, output, prefix)
    fmt, sparsity = given["fmt"] and given["fmt"].value, given["sparsity"]

    def kind() -> str:  # (checked where the results are opened)
        return batch.sink_kind(input, output, fmt, "table" if sys.stdout.isatty() else "json")

    results = partial(open_results, layout, command, kind, output, sparsity, prefix)
    if input is not None:
        batch.mass_over_cap(layout, command, False)  # (a usage error with many states)
        refuse_beside_input({name: given[name] for name in vectors})
        solve_input(layout, command, given, kind, results, gravity, wrenches)
        return layout
    if given["scheduler"] is not None:
        raise UsageError("dyn: --scheduler needs --input FILES.npz and --output DIR/")
    states = single_state(layout, {name: given[name] for name in vectors}, wrenches)
    if batch.mass_over_cap(layout, command, sparsity and output is None):
        print(structure_text(batch.structure(layout, kind(), False), layout, kind()))
    else:
        with console.stage(f"{command}: computed"):
            result = compute(command, layout, states, gravity)
        results(single=True).write_whole(result, states)
    return layout


def solve_input(layout: Layout, command: str, given: dict, kind, results, gravity,
                wrenches) -> None:
    """The states of --input, into the sink ``results()`` opens (of format ``kind()``)."""
    # the paths of many states load only now: a one-state run does not pay for them
    from treedyn.pipeline.cluster import solve_many, wants_many
    from treedyn.pipeline.heap import for_many_states

    from .progress import Progress, bar, wanted

    input, output, address = given["input_file"], given["output_file"], given["scheduler"]
    with for_many_states(os.environ), saying_kept():
        if wants_many(input, output, address):
            return solve_many(layout, command, input, output, given["fmt"] and given["fmt"]
                              .value, address, given["dataset_prefix"], given["sparsity"],
                              gravity, wrenches, chunk_states(command, layout),
                              lambda: Progress(wanted(results_on_stdout=False)))
        with (bar(results_on_stdout=output is None) as advance,
              console.stage(f"{command}: the states of {input} computed and written")):
            batch.solve(layout, command, input, output, kind(), results, gravity, wrenches,
                        chunk_states(command, layout), advance,
                        1 if given["sparsity"] else processes(), part_bytes(),
                        given["dataset_prefix"])


def open_results(layout: Layout, command: str, kind, output: str | None, sparsity: bool,
                 prefix: str | None, single: bool = False) -> Sink:
    """The sink of the results: --output FILE, else stdout as JSON, CSV (the pipeline's
    sinks) or a table for people; ``kind()`` their format."""
    kinds = kind()
    document = batch.structure(layout, kinds) if sparsity else None
    if kinds == "table" and output is None:
        return results_table(layout, COMPUTATIONS[command].key, single, document)
    return batch.results_sink(layout, command, kinds, output, single, document, prefix,
                              sys.stdout)
