"""Results of ``inverse``, ``forward`` and ``mass`` as tables for people at a terminal: a
sink of :mod:`treedyn.pipeline.sinks` that writes tables, not a file format."""
from __future__ import annotations

from collections.abc import Sequence

import sys

from treedyn.pipeline.layout import Layout
from treedyn.pipeline.schema import document_text
from treedyn.pipeline.sinks import Sink

from .sparsity import sparsity_table
from .table import fitted, matrix_table, table


def results_table(layout: Layout, key: str, single: bool, document: dict | None):
    """The tables of the results ``key`` (tau, a or M) on stdout (with ``document``, the
    --sparsity figures under them)."""
    footer = sparsity_table(document, layout.v_labels) if document else ""
    return TableSink(sys.stdout, key, layout.v_labels,  # (the units of M go unused)
                     layout.units("tau" if key == "tau" else "a"), single, footer)


def structure_text(document: dict, layout: Layout, kind: str) -> str:
    """``mass --sparsity`` without M (past its cap): the document the result would carry
    (JSON: ``dofs`` and ``sparsity``), or its figures for people."""
    if kind == "json":
        return document_text({"dofs": list(layout.v_labels), "sparsity": document}, "mass")
    return sparsity_table(document, layout.v_labels)


class TableSink(Sink):
    """Tables for people: a vector as dof/value/unit rows, a matrix with labelled rows."""

    def __init__(self, stream, key: str, labels: Sequence[str], units: Sequence[str] | None,
                 single: bool, footer: str = ""):
        super().__init__(stream)
        self.key, self.labels, self.units = key, list(labels), units
        self.single, self.footer = single, footer

    def write(self, result, states) -> None:
        if result.ndim == 3:
            for i, matrix in enumerate(result):
                title = "" if self.single else f"state {states.where(i)}\n"
                self.stream.write(title + matrix_table(matrix, self.labels) + "\n\n")
        elif self.single:
            rows = [[label, value, unit]
                    for label, value, unit in zip(self.labels, result[0], self.units)]
            self.stream.write(table(rows, ["dof", self.key, "unit"]) + "\n")
        else:
            rows = [[states.where(i), *row] for i, row in enumerate(result)]
            self.stream.write(fitted(table(rows, ["state", *self.labels])) + "\n")

    def finish(self) -> None:
        if self.footer:
            self.stream.write(self.footer + "\n")
        super().finish()
