"""``dyn bench``'s rows (:mod:`treedyn.pipeline.bench`) as tables, JSON or CSV."""
from __future__ import annotations


from treedyn.pipeline.bench import STAGES
from treedyn.pipeline.schema import document_text

from .table import table


def bench_text(model, rows: list, file_rows: list | None, fmt: str, split: str) -> str:
    """The rows in ``fmt`` (table, json or csv); ``file_rows`` None: not measured.
    ``split``: how text files are split over processes, said under the file rows."""
    lines = [line for row in file_rows or () for line in row.documents()]
    if fmt == "json":
        document = {"model": model.name, "nq": int(model.nq), "nv": int(model.nv),
                    "rows": [row.document() for row in rows]}
        if file_rows is not None:
            document["files"] = lines
        return document_text(document, "bench")
    if fmt == "csv":
        return "\n".join(["command,states,threads,states_per_s,us_per_state,stage,format"]
                         + [f"{row.command},{row.states},{row.threads},{row.rate!r},"
                            f"{row.micros!r},engine," for row in rows]
                         + [",".join(str(line[key]) if isinstance(line[key], (int, str))
                                     else repr(line[key]) for key in line) for line in lines])
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
