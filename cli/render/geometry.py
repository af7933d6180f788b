"""``dyn inertia-from-geometry``'s table: a row per link, its new mass properties or why
it is left alone (its document and CSV are the library's: :mod:`treedyn.pipeline.reports`)."""
from treedyn.pipeline.reports import GEOMETRY_COLUMNS, geometry_rows

from .table import table


def geometry_table(document: dict) -> str:
    lines = [table(geometry_rows(document), list(GEOMETRY_COLUMNS))]
    if "written" in document:
        lines.append(f"written: {document['written']['file']}")
    return "\n".join(lines)
