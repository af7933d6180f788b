"""Tables for people (tabulate, imported only when a table is printed)."""

from collections.abc import Sequence

import numpy as np

FLOAT_FORMAT = ".6g"


def table(rows, headers, **options) -> str:
    from tabulate import tabulate

    return tabulate(rows, headers=headers, floatfmt=FLOAT_FORMAT, **options)


def matrix_table(matrix: np.ndarray, labels: Sequence[str]) -> str:
    rows = [[label, *row] for label, row in zip(labels, matrix)]
    return table(rows, ["", *labels])
