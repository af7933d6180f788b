"""``dyn bench``'s rows (:mod:`treedyn.pipeline.bench`) as tables for people (their JSON
document and CSV: :func:`treedyn.pipeline.bench.bench_document`, :func:`~treedyn.pipeline.
bench.bench_csv`)."""
from __future__ import annotations

from treedyn.pipeline.bench import STAGES

from .table import table


def bench_table(model, rows: list, file_rows: list | None, split: str) -> str:
    """The rows as tables; ``file_rows`` None: not measured. ``split``: how text files are
    split over processes, said under the file rows."""
    text = (f"model {model.name}: nq={model.nq}, nv={model.nv}, {model.njoints} joints "
            "(engine only, best of repeated calls)\n"
            + table([[r.command, r.states, r.threads, f"{r.rate:,.0f}", f"{r.micros:.3g}"]
                     for r in rows], ["command", "states", "threads", "states/s", "us/state"],
                    colalign=("left", "right", "right", "right", "right")))
    if file_rows is None:
        return text
    return (text + "\n\nfiles: states/s reading the inputs, writing the results, and the "
            "whole 'dyn COMMAND --input F --output F'\n(in this process, after start-up and "
            f"parsing the model; fastest of two runs; {split})\n"
            + table([[r.command, r.format, r.states, r.threads]
                     + [f"{r.rate(stage):,.0f}" for stage in STAGES] for r in file_rows],
                    ["command", "format", "states", "threads", "read", "write", "pipeline"],
                    colalign=("left", "left") + ("right",) * 5))
