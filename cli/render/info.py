"""``dyn info``: the compact tree as a table with the tree drawn (without recursion, so
chains deeper than Python's stack draw too); its JSON document and CSV are
:mod:`treedyn.pipeline.reports`'."""

from treedyn.engine.analysis.summary import joint_children
from treedyn.pipeline import naming
from treedyn.pipeline.reports import JOINT_COLUMNS
from ..console import printable
from .table import table


DRAWN_DEPTH = 32  # levels of the tree drawing indented; deeper lines show their depth


def tree_lines(model) -> list[str]:
    """An indented ASCII drawing of the tree: joint (type) -> body [mass], dofs, subtree.

    The joints of an MJCF body with several joints follow each other; its mass is shown at
    the last one. Drawn depth first with a stack of (joint, prefix, last child, depth): a
    chain of a thousand joints is deeper than Python's recursion limit. Past
    :data:`DRAWN_DEPTH` levels the indent stops growing and a line starts with its depth in
    brackets, so the drawing stays linear in the size of the tree."""
    lines = ["world"]
    shown = naming.shown
    children = joint_children(model)
    roots = [j for j in range(model.njoints) if model.parent[j] < 0]
    stack = [(root, "", index == len(roots) - 1, 0) for index, root in enumerate(roots)][::-1]
    while stack:
        j, prefix, last, depth = stack.pop()
        first, own = int(model.idx_v[j]), int(model.nv_joint[j])
        dofs = f"v[{first}]" if own == 1 else f"v[{first}:{first + own}]"
        subtree = f"supports v[{first}:{first + int(model.nv_subtree[j])}]"
        if own == 0 and model.coupling is not None:  # a mimic joint (--mimic)
            dofs = f"no dofs (mimics {shown(model.mimic[model.joint_names[j]].joint)})"
            subtree = f"supports v[{first}:{first + int(model.nv_subtree[j])}]" \
                if model.nv_subtree[j] else "supports none"
        body = model.body_names[j]
        mass = (f" [{model.body_mass[j]:g} kg]" if j + 1 == model.njoints
                or model.body_names[j + 1] != body or model.parent[j + 1] != j else "")
        marker = f"[{depth}] " if depth >= DRAWN_DEPTH else ""
        lines.append(f"{prefix}{marker}{'`- ' if last else '|- '}{shown(model.joint_names[j])}"
                     f" ({model.public_type(j)}) -> {shown(body)}{mass}  {dofs}, {subtree}")
        below = prefix + ("   " if last else "|  ") if depth + 1 < DRAWN_DEPTH else prefix
        stack += [(child, below, index == len(children[j]) - 1, depth + 1)
                  for index, child in enumerate(children[j])][::-1]
    return lines


def info_table(document: dict, model=None) -> str:
    """The info document for people; with ``model``, the tree is drawn too. Names, tags and
    the path come from the model file: they are shown escaped (:func:`.naming.shown`)."""
    d = document
    shown = naming.shown  # a table for people shows long names shortened
    joints = table([[shown(str(joint[c])) for c in JOINT_COLUMNS] for joint in d["joints"]],
                   JOINT_COLUMNS)
    bodies = table([[shown(b["name"]), ", ".join(map(shown, b["joints"])), b["mass"],
                     ", ".join(map(shown, b["links"]))]
                    for b in d["bodies"]], ["body", "joints", "mass [kg]", "links"],
                   maxcolwidths=[None, 40, None, 60])
    mimics = [f"  {shown(j['name'])} = {j['mimic']['multiplier']:g} * "
              f"{shown(j['mimic']['joint'])} + {j['mimic']['offset']:g}"
              + ("" if j["mimic"].get("enforced", True) else " (a planar or floating joint: "
                 "not enforced, as in Pinocchio)")
              for j in d["joints"] if "mimic" in j]
    enforced = any(j["mimic"].get("enforced") for j in d["joints"] if "mimic" in j)
    ignored = ", ".join(f"{count} <{shown(tag)}>" for tag, count in sorted(d["ignored"].items()))
    lines = [
        f"model {shown(d['name'])} ({d['format']}, {printable(d['source'])}): nq={d['nq']}, "
        f"nv={d['nv']}, {len(d['joints'])} joints",
        *(["", "tree (joint (type) -> body [mass], its dofs, the dofs it supports):",
            *tree_lines(model)] if model is not None else []),
        "", "joints in tree order:", joints,
        "", "bodies (links welded by fixed joints are merged into their body):", bodies,
        "", "coordinate layout" + (" (q = qpos, v = qvel):" if d["format"] == "mjcf"
                                   else ":"), layout_table(d["layout"]),
        "",
        f"welded to the world: {', '.join(map(shown, d['world_links'])) or 'nothing'} "
        f"(mass {d['world_mass']:g} kg, no effect on the dynamics)",
        f"total mass: {d['total_mass']:g} kg"
        + (" (MuJoCo's, with the bodies welded to the world)"
           if d["format"] == "mjcf" and d["world_mass"] else ""),
        "gravity: " + ", ".join(f"{g:g}" for g in d["gravity"]) + " m/s^2",
        ("mimic joints (enforced: no coordinates of their own; tau, M and a of the coupled "
         "system):" if enforced else "mimic joints (reported, not enforced):")
        + ("" if mimics else " none"),
        *mimics,
        f"ignored by the parser: {ignored or 'nothing'}",
    ]
    return "\n".join(lines)


def layout_table(layout: dict) -> str:
    """q and v entries side by side: index, label and component; v's frame once per joint."""
    rows = []
    for k in range(max(len(layout["q"]), len(layout["v"]))):
        q = layout["q"][k] if k < len(layout["q"]) else None
        v = layout["v"][k] if k < len(layout["v"]) else None
        first_of_joint = v is not None and (k == 0 or layout["v"][k - 1]["joint"] != v["joint"])
        rows.append([k, naming.shown(q["label"]) if q else "", q["part"] if q else "",
                     naming.shown(v["label"]) if v else "", v["part"] if v else "",
                     v["frame"] if first_of_joint else ""])
    return table(rows, ["index", "q", "(part)", "v", "(part)", "v expressed in"])
