"""The state commands (``dyn frames``, ``jacobian``, ``com``, ``coriolis``, ``centroidal``,
``energy``), made by :func:`state_command`: one state from the
command line (q, and v for the rows that read it), or the states of ``--input`` streamed
through the pipeline (:func:`treedyn.pipeline.stream.run`) into ``--output`` or stdout, by
the row :func:`treedyn.pipeline.kinematics.kinematics` makes for the frames asked (or a
row of :data:`treedyn.pipeline.compute.COMPUTATIONS`)."""
from __future__ import annotations

import sys
from math import prod
from collections.abc import Callable
from inspect import Parameter

import numpy as np

from treedyn.pipeline.batch import MASS_CAP, sink_kind
from treedyn.pipeline.chunks import kinematics_chunk
from treedyn.pipeline.compute import Computation, compute
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.layout import Layout
from treedyn.pipeline.outputs import file_sink, open_sink
from treedyn.pipeline.source import Input
from treedyn.pipeline.stream import run
from treedyn.pipeline.vectors import refuse_beside_input, single_state

from ..console import print_document, saying_kept
from ..model import load, xacro_arguments
from ..options import (DatasetPrefixOpt, DegreesOpt, FormatOpt, FreeFlyerOpt, InputOpt,
                       MimicOpt, ModelArg, OutputOpt, QOpt, VOpt, XacroArgOpt,
                       XacroArgs, command_of, epilog, examples)
from treedyn.session.environment import STREAM_CHUNK


# (layout) -> (the row computed, labels of a result's numbers, the one-state
# JSON document of a result, the one-state table of a result)
Select = Callable[[Layout], tuple[Computation, list, Callable[[np.ndarray], dict],
                                  Callable[[np.ndarray], str]]]


def solve_kinematics(given: dict, select: Select) -> None:
    """Compute the command's row for one state (--q) or every state of --input, as the
    options ``given`` (by name) ask, and write it: --output FILE, else stdout (JSON, CSV,
    or a table on a terminal)."""
    model = load(given["model"], given["free_flyer"], mimic=given["mimic"],
                 xacro=xacro_arguments(given["xacro_args"], given["xacro_arg"]))
    layout = Layout.of(model, given["degrees"])
    computation, labels, document, text = select(layout)
    shape = computation.shape(model.nv)
    size = prod(shape)
    if size > MASS_CAP:  # (C is nv x nv, as M: the same cap, before anything is computed)
        raise UsageError(f"dyn: {model.source}: one state's {computation.key} of this model "
                         f"holds {size:,} numbers ({8 * size / 2 ** 30:.3g} GiB of doubles), "
                         f"past the {MASS_CAP:,} a state's result may hold")
    input, output, prefix = given["input_file"], given["output_file"], given["dataset_prefix"]
    kind = sink_kind(input, output, given["fmt"] and given["fmt"].value,
                     "table" if sys.stdout.isatty() else "json")
    if output is not None:
        sink = open_sink(output, computation.key, shape, labels, kind, dataset_prefix=prefix)
    elif kind in ("json", "csv") and (input is not None or kind == "csv"):
        sink = file_sink(sys.stdout, None, kind, computation.key, shape, labels, {})
    else:
        sink = None
    vectors = {"q": given["q"], "v": given.get("v")}
    if input is None:
        states = single_state(layout, vectors, {})
        result = compute(computation, layout, states, None)
        if sink is None:
            print_document(document(result[0])) if kind == "json" else print(text(result[0]))
            return
        return sink.write_whole(result, states)
    refuse_beside_input(vectors)
    if kind == "table":
        raise UsageError("dyn: many states are written as json or csv (--format), or to "
                         "--output FILE")
    with saying_kept():
        run(layout, computation, Input.open(input, prefix), sink,
            chunk=kinematics_chunk(model, shape, STREAM_CHUNK))


def state_command(select: Callable, doc: str, lines: tuple, extra: dict | None = None,
                  v: bool = False):
    """A command of one state (``--q``, with ``--v`` when ``v``) or the states of
    ``--input``, whose row is ``select(given, layout)`` (:data:`Select`, with the options
    given by name): the options every such command shares declared once, its own
    (``extra``: name -> (annotation, default)) after the model's, as --help lists them."""
    options = {"model": (ModelArg, Parameter.empty), "xacro_args": (XacroArgs, None),
               **(extra or {}), "q": (QOpt, None), **({"v": (VOpt, None)} if v else {}),
               "degrees": (DegreesOpt, False), "free_flyer": (FreeFlyerOpt, False),
               "input_file": (InputOpt, None), "output_file": (OutputOpt, None),
               "fmt": (FormatOpt, None),
               "xacro_arg": (XacroArgOpt, None), "mimic": (MimicOpt, False),
               "dataset_prefix": (DatasetPrefixOpt, None)}

    def run_command(**given) -> None:
        solve_kinematics(given, lambda layout: select(given, layout))

    return epilog(examples(*lines))(command_of(run_command, options, doc))
