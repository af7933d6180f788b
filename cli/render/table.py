"""Tables for people (tabulate, imported only when a table is printed).

Every text cell and header is shown through :func:`..console.printable`: names in a table
are data from a model or an input file, and a control character in one must not reach the
terminal raw (numbers pass as they are, for tabulate to align them)."""

from collections.abc import Sequence

import numpy as np

from ..console import printable

FLOAT_FORMAT = ".6g"


def table(rows, headers, **options) -> str:
    from tabulate import tabulate

    rows = [[printable(cell) if isinstance(cell, str) else cell for cell in row]
            for row in rows]
    headers = [printable(header) if isinstance(header, str) else header for header in headers]
    return tabulate(rows, headers=headers, floatfmt=FLOAT_FORMAT, **options)


def matrix_table(matrix: np.ndarray, labels: Sequence[str]) -> str:
    rows = [[label, *row] for label, row in zip(labels, matrix)]
    return table(rows, ["", *labels])
