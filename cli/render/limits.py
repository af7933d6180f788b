"""``dyn check-limits``' summary as a table for people: one row per dof and kind of limit."""
from .table import table

KIND_NAMES = (("position", "q"), ("velocity", "v"), ("effort", "tau"))


def limits_table(document: dict) -> str:
    """A row per dof and limit checked: the bounds, the states outside, the first (state
    and where it came from) and the worst value with its excess; then a line of totals."""
    rows = []
    for entry in document["joints"]:
        for kind, short in KIND_NAMES:
            found = entry[kind]
            if found is None:
                continue
            first, worst = found["first"], found["worst"]
            rows.append([entry["dof"], short, bounds_text(found, short), found["unit"],
                         found["count"],
                         "" if first is None else f"{first['state']}: {first['where']}",
                         "" if worst is None else worst["value"],
                         "" if worst is None else worst["excess"]])
    checked = ", ".join(document["checked"]) or "nothing"
    total = (f"{document['offending_states']} of {document['states']} states outside a "
             f"limit" if not document["ok"] else f"all {document['states']} states within "
                                                  "the limits")
    tau = f"; tau: {document['tau']}" if document["tau"] else ""
    footer = f"{document['model']}, {document['input']}: {total} (checked: {checked}{tau})"
    if not rows:
        return footer + "\n(no dof has a limit)"
    return table(rows, ["dof", "", "limits", "unit", "outside", "first: where", "worst",
                        "excess"]) + "\n" + footer


def bounds_text(found: dict, short: str) -> str:
    """'[-1.5, 1.5]' ('(-inf, 2]' for a side unbounded); '|v| <= 10' for velocity and
    effort limits."""
    lower, upper = found["lower"], found["upper"]
    if short != "q" and lower is not None and upper is not None and lower == -upper:
        return f"|{short}| <= {upper:g}"
    left = "(-inf" if lower is None else f"[{lower:g}"
    right = "inf)" if upper is None else f"{upper:g}]"
    return f"{left}, {right}"
