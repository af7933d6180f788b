"""A motion written as a log the commands read back (``dyn excite``'s output): the states
q, v, a (and tau, when given) and their time t, in one file, complete or not at all (the
sinks' temporary and rename, :mod:`.outputs`).

* ``.npz``: arrays ``q`` (N, nq), ``v``, ``a``, ``tau`` (N, nv), ``t`` (N,), ``dofs`` (nv,);
* ``.csv``: columns ``q:<label>`` .., ``v:<label>`` .., ``a:<label>`` .., ``tau:<label>``
  .., ``t``;
* ``.jsonl``: one object per state, ``{"q": [..], "v": [..], "a": [..], "tau": [..], "t":
  x}``.

``t`` is read by no command and warned about by none (:data:`.layout.TIME`).
"""
from __future__ import annotations

import numpy as np
import orjson

from .errors import UsageError
from .layout import TIME, Layout
from .naming import q_labels
from .outputs import csv_header, open_target, output_format
from .sinks import CsvSink, NpzSink, Sink, TextSink, npz_extra


class StatesLines(TextSink):
    """JSON Lines of whole states: rows of the ``kinds`` side by side, parted at
    ``widths``, then t."""

    def __init__(self, stream, kinds, widths, path: str | None = None):
        super().__init__(stream, path)
        self.kinds, self.cuts = kinds, np.cumsum(widths)

    def text(self, result) -> str:
        lines = []
        for row in result:
            *vectors, t = np.split(row, self.cuts)
            state = dict(zip(self.kinds, vectors))
            state[TIME] = float(t[0])
            lines.append(orjson.dumps(state, option=orjson.OPT_SERIALIZE_NUMPY))
        return (b"\n".join(lines) + b"\n").decode() if lines else ""


def write_states(path: str, layout: Layout, t: np.ndarray, states: dict) -> Sink:
    """The ``states`` ({"q": (N, nq), "v", "a" and optionally "tau": (N, nv)}) at times t
    (N,) into the file ``path`` (.npz, .csv or .jsonl: module doc); returns the closed
    sink."""
    kind = output_format(path, None)
    if kind not in ("npz", "csv", "json"):
        raise UsageError(f"{path}: a motion is written as .npz, .csv or .jsonl, not {kind}")
    model = layout.model
    stream, temporary, existed = open_target(path, kind == "npz")
    rows = np.hstack([*states.values(), t[:, None]])
    if kind == "npz":
        extra = npz_extra(layout.v_labels)
        extra.update({k: x for k, x in states.items() if k != "q"}, t=t)
        sink: Sink = NpzSink(stream, "q", (model.nq,), extra, path)
        rows = states["q"]
    elif kind == "csv":
        header = [name for k in states for name in csv_header(
            k, q_labels(model) if k == "q" else layout.v_labels)]
        sink = CsvSink(stream, header + [TIME], path)
    else:
        sink = StatesLines(stream, tuple(states), [x.shape[1] for x in states.values()], path)
    sink.temporary, sink.existed = temporary, existed
    sink.write_whole(rows, None)
    return sink
