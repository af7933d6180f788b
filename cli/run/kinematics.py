"""The state commands (``dyn frames``, ``jacobian``, ``com``, ``coriolis``, ``centroidal``,
``energy``), made by :func:`state_command`: one state from the command line (q, and v for
the rows that read it), or the states of ``--input`` streamed through the pipeline as
the dynamics' are (:func:`treedyn.pipeline.batch.solve`) into ``--output`` or stdout, by
the row :func:`treedyn.pipeline.kinematics.state_row` makes for what the options ask."""
from __future__ import annotations

import sys
from collections.abc import Callable
from inspect import Parameter

import numpy as np

from treedyn.pipeline import batch
from treedyn.pipeline.chunks import kinematics_chunk
from treedyn.pipeline.compute import compute
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.kinematics import StateRow, state_row, state_sink
from treedyn.pipeline.layout import Layout
from treedyn.pipeline.vectors import refuse_beside_input, single_state
from treedyn.session.environment import STREAM_CHUNK

from ..console import print_document, saying_kept
from ..model import given_layout
from ..options import (DatasetPrefixOpt, DegreesOpt, FormatOpt, FreeFlyerOpt, InputOpt,
                       MimicOpt, ModelArg, OutputOpt, QOpt, VOpt, XacroArgOpt,
                       XacroArgs, command_of, epilog, examples)
from .progress import bar

# (layout, the row) -> the table for people of one state's result
Text = Callable[[Layout, StateRow], Callable[[np.ndarray], str]]


def solve_kinematics(given: dict, name: str, asked: dict, text: Text) -> None:
    """Compute the row of ``name`` for what is ``asked`` for one state (--q) or every state
    of --input, as the options ``given`` (by name) ask, and write it: --output FILE, else
    stdout (JSON, CSV, or a table on a terminal)."""
    layout = given_layout(given)
    row = state_row(name, layout, **asked)
    input, output, prefix = given["input_file"], given["output_file"], given["dataset_prefix"]
    kind = batch.sink_kind(input, output, given["fmt"] and given["fmt"].value,
                           "table" if sys.stdout.isatty() else "json")
    vectors = {"q": given["q"], "v": given.get("v")}
    batch.check_prefix(input, output, prefix)
    if input is None:  # (every refusal before the output's temporary is opened)
        states = single_state(layout, vectors, {})
        result = compute(row.computation, layout, states, None)
        sink = state_sink(layout, row, kind, input, output, prefix, sys.stdout)
        if sink is None:
            if kind == "json":
                return print_document(row.document(result[0]))
            return print(text(layout, row)(result[0]))
        return sink.write_whole(result, states)
    refuse_beside_input(vectors)
    if kind == "table":
        raise UsageError("dyn: many states are written as json or csv (--format), or to "
                         "--output FILE")
    chunk = kinematics_chunk(layout.model, row.computation.shape(layout.model.nv), STREAM_CHUNK)
    with saying_kept(), bar(results_on_stdout=output is None) as advance:
        batch.solve(layout, row.computation, input, output, kind,
                    lambda: state_sink(layout, row, kind, input, output, prefix, sys.stdout),
                    chunk=chunk, progress=advance, dataset_prefix=prefix)


def state_command(name: str, text: Text, doc: str, lines: tuple, extra: dict | None = None,
                  v: bool = False, asks: tuple = ()):
    """The command ``name`` of one state (``--q``, with ``--v`` when ``v``) or the states of
    ``--input``, whose row is :func:`treedyn.pipeline.kinematics.state_row` of the options
    named ``asks`` (a choice by its value) and whose table is ``text``: the options every
    such command shares declared once, its own (``extra``: name -> (annotation, default))
    after the model's, as --help lists them."""
    options = {"model": (ModelArg, Parameter.empty), "xacro_args": (XacroArgs, None),
               **(extra or {}), "q": (QOpt, None), **({"v": (VOpt, None)} if v else {}),
               "degrees": (DegreesOpt, False), "free_flyer": (FreeFlyerOpt, False),
               "input_file": (InputOpt, None), "output_file": (OutputOpt, None),
               "fmt": (FormatOpt, None),
               "xacro_arg": (XacroArgOpt, None), "mimic": (MimicOpt, False),
               "dataset_prefix": (DatasetPrefixOpt, None)}

    def run_command(**given) -> None:
        asked = {key: getattr(given[key], "value", given[key]) for key in asks}
        solve_kinematics(given, name, asked, text)

    return epilog(examples(*lines))(command_of(run_command, options, doc))
