"""``dyn inertia-from-geometry``'s table and CSV: a row per link, its new mass properties
or why it is left alone (the JSON document is the command's)."""
from treedyn.pipeline.naming import csv_writer

from .table import table

HEADERS = ["link", "status", "mass", "density", "com x", "com y", "com z", "ixx", "ixy",
           "ixz", "iyy", "iyz", "izz", "note"]


def _rows(document: dict) -> list[list]:
    """A row per link, as HEADERS name its columns (empty where a link is left alone)."""
    return [[entry["link"], entry["status"], entry.get("mass", ""), entry.get("density", ""),
             *entry.get("com", [""] * 3), *entry.get("inertia", [""] * 6),
             entry.get("reason") or ("convex hull: " + ", ".join(entry["hull"])
                                     if entry["hull"] else "")]
            for entry in document["links"]]


def geometry_table(document: dict) -> str:
    lines = [table(_rows(document), HEADERS)]
    if "written" in document:
        lines.append(f"written: {document['written']['file']}")
    return "\n".join(lines)


def geometry_csv(document: dict, stream) -> None:
    writer = csv_writer(stream)
    writer.writerow([header.replace(" ", "_") for header in HEADERS])
    writer.writerows(_rows(document))
