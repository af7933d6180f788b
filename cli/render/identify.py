"""Rendering ``dyn identify``: the tables for people (the JSON document is
:func:`treedyn.pipeline.reports.identify_document`)."""
from __future__ import annotations

from treedyn.pipeline.naming import listing
from .table import fitted, table, wrapped


def _number(x, digits: int = 6) -> str:
    """A number of the document, "-" for null (a non-finite value)."""
    return "-" if x is None else f"{x:.{digits}g}"


def identify_table(document: dict) -> str:
    """What the log determines, the base parameters, the bodies and the residuals."""
    states = document["states"]
    lines = [f"model {document['model']}: {states['train']} states fitted"
             + (f", {states['validate']} held out" if states["validate"] else "")
             + f" ({document['equations']} equations, {document['parameters']} parameters)",
             f"base parameters: {document['rank']}; condition number "
             f"{_number(document['condition'], 4)} (columns scaled: "
             f"{_number(document['condition_scaled'], 4)}); residual sigma "
             f"{_number(document['sigma'], 4)} N m",
             ""]
    unseen = document["unidentifiable"]
    if unseen["no_effect"]:
        lines.append(wrapped(f"no effect in this log ({len(unseen['no_effect'])}): "
                             f"{listing(unseen['no_effect'], 12)}"))
    if unseen["in_combination"]:
        lines.append(wrapped(f"only in combinations ({len(unseen['in_combination'])}): "
                             f"{listing(unseen['in_combination'], 12)}"))
    lines.append(wrapped(f"identifiable alone ({len(document['identifiable'])}): "
                         f"{listing(document['identifiable'], 12)}"))
    if document["joint_sigma"] is not None:
        lines.append("rows weighted by 1/sigma per dof (N m or N): " + ", ".join(
            f"{dof} {_number(s, 4)}" for dof, s in zip(document["residuals"]["dofs"],
                                                      document["joint_sigma"])))
    rows = [[row["name"], row["ols"], row["std"], _number(row["relative_std"], 3),
             row["consistent"], row["file"]] for row in document["base"]]
    lines += ["", fitted(table(rows, ["base parameter", "OLS", "std", "%std", "consistent",
                                      "file"]))]
    rows = []
    for body in document["bodies"]:
        for key in ("file", "identified"):
            values = body[key]
            inertia = values["inertia"]
            rows.append([body["body"] if key == "file" else "", key, values["mass"],
                         " ".join(_number(x, 4) for x in values["com"]),
                         " ".join(_number(inertia[i][j], 4) for i, j in
                                  ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))),
                         _number(values["margin"])])
    lines += ["", table(rows, ["body", "", "mass", "com", "Ixx Iyy Izz Ixy Ixz Iyz (com)",
                               "margin"])]
    if document["joint_terms"]:
        rows = [[t["name"], t["file"], t["identified"]] for t in document["joint_terms"]]
        lines += ["", table(rows, ["joint term", "file", "identified"])]
    lines += ["", residual_table(document["residuals"])]
    if len(document["files"]) > 1:
        rows = [[f["file"], f["states"], *f["rms"]] for f in document["files"]]
        lines += ["", "OLS torque RMS per dof, per log\n"
                  + table(rows, ["log", "states", *document["residuals"]["dofs"]])]
    fit = document["fit"]
    if not fit["converged"]:
        lines += ["", f"the consistent fit did not converge: {fit['message']}"]
    return "\n".join(lines)


def residual_table(residuals: dict) -> str:
    """Torque RMS per joint (N m or N) of the file's, the OLS and the consistent parameters."""
    headers, columns = ["dof"], []
    for split in ("train", "validate"):
        if split in residuals:
            for key in ("file", "ols", "consistent"):
                headers.append(f"{split} {key}")
                columns.append(residuals[split][key])
    for key in ("ols", "consistent"):
        if "validate_normalised" in residuals:
            headers.append(f"validate {key} / tau")
            columns.append(residuals["validate_normalised"][key])
    rows = [[dof, *[column[k] for column in columns]] for k, dof in enumerate(residuals["dofs"])]
    return "torque RMS per dof\n" + fitted(table(rows, headers))
