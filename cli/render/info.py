"""``dyn info``: the compact tree as a JSON document, a CSV of joints, and a table with the
tree drawn (without recursion, so chains deeper than Python's stack draw too)."""

import numpy as np

from treedyn.pipeline import naming
from ..console import printable
from .table import table


def info_document(model, gravity: np.ndarray | None) -> dict:
    """What ``dyn info --format json`` prints (the keys of interface.md, and a few more)."""
    joints = []
    # the index arrays as Python ints once (not a numpy scalar per joint and column)
    parent, idx_q, nq, idx_v, nv, subtree = (a.tolist() for a in (
        model.parent, model.idx_q, model.nq_joint, model.idx_v, model.nv_joint,
        model.nv_subtree))
    for j, name in enumerate(model.joint_names):
        joint = {"name": name, "type": model.public_type(j),
                 "parent": model.joint_names[parent[j]] if parent[j] >= 0 else "world",
                 "idx_q": idx_q[j], "nq": nq[j], "idx_v": idx_v[j], "nv": nv[j],
                 "nv_subtree": subtree[j], "body": model.body_names[j]}
        mimic = model.mimic.get(name)
        if mimic is not None:
            joint["mimic"] = {"joint": mimic.joint, "multiplier": float(mimic.multiplier),
                              "offset": float(mimic.offset)}
            if model.coupling is not None:
                joint["mimic"]["enforced"] = bool(j in model.coupling.mimic)
        joints.append(joint)
    return {
        "name": model.name, "format": model.format, "source": model.source,
        "nq": int(model.nq), "nv": int(model.nv),
        "gravity": (model.gravity if gravity is None else gravity).tolist(),
        # MuJoCo's mj_getTotalmass counts bodies welded to the world, Pinocchio's
        # computeTotalMass does not
        "total_mass": model.total_mass + (model.world_mass if model.format == "mjcf" else 0.0),
        "joints": joints, "bodies": bodies_document(model),
        # (not the world link --free-flyer makes up, which is in no file)
        "world_links": [f.name for f in model.frames if f.joint < 0 and f.source.file],
        "world_mass": float(model.world_mass),
        "ignored": dict(model.description.ignored),
        "tree": tree_document(model),
        "layout": layout_document(model),
    }


def bodies_document(model) -> list[dict]:
    """One entry per moving body of the file: the joints that move it (``joint`` the last,
    which carries its frame), its mass, its com in its own frame, and its links (the body
    and the links welded to it; not the joint-anchor frames of an MJCF body)."""
    anchors = {frame for frame, body in zip(model.body_frames, model.body_names)
               if frame != body}
    frames, links = {}, {}  # frame name -> frame; joint -> its links in model.frames order
    for frame in model.frames:
        frames.setdefault(frame.name, frame)
        if frame.name not in anchors:
            links.setdefault(frame.joint, []).append(frame.name)
    own = [frames[body.name] for body in model.bodies]
    coms = _body_coms(model, own)
    masses = (model.body_mass + 0.0).tolist()  # a sum of one mass: -0.0 is 0.0 there too
    bodies = []
    for body, com in zip(model.bodies, coms):
        last = body.joints[-1]
        mass = masses[last] if len(body.joints) == 1 else \
            float(model.body_mass[list(body.joints)].sum())
        bodies.append({
            "name": body.name, "joint": model.joint_names[last],
            "joints": [model.joint_names[j] for j in body.joints],
            "mass": mass, "com": com, "links": links.get(last, []),
        })
    return bodies


def _body_coms(model, own: list) -> list[list[float]]:
    """Each body's com in its own frame ``own`` (a frame per body): ``R.T @ (com - t)``.
    Where R is the identity (up to signed zeros) and no difference is -0.0, the product is
    the difference itself, bit for bit; it is computed per body only elsewhere."""
    count = len(own)
    rotations = np.array([frame.rotation for frame in own], dtype=float).reshape(count, 3, 3)
    offsets = np.array([frame.translation for frame in own], dtype=float).reshape(count, 3)
    lasts = [body.joints[-1] for body in model.bodies]
    differences = model.body_com[lasts].reshape(count, 3) - offsets
    plain = np.all(rotations == np.eye(3), axis=(1, 2)) & \
        ~np.any(np.signbit(differences) & (differences == 0.0), axis=1)
    coms = differences.tolist()
    for k in np.flatnonzero(~plain).tolist():
        coms[k] = (own[k].rotation.T @ differences[k]).tolist()
    return coms


def layout_document(model) -> dict:
    """Every entry of q and v: its index, label (the name every input and output uses),
    joint and component (and, for v, its frame)."""
    q_entries, v_entries = [], []
    q_labels, v_labels = naming.q_labels(model), naming.v_labels(model)
    for j, name in enumerate(model.joint_names):
        joint = model.joint_models[j]
        if model.nq_joint[j] == 0:  # a mimic joint (--mimic) has no entries
            continue
        for k, part in enumerate(joint.q_parts):
            index = int(model.idx_q[j]) + k
            q_entries.append({"index": index, "label": q_labels[index], "joint": name,
                              "part": part})
        for k, part in enumerate(naming.v_parts(joint)):
            index = int(model.idx_v[j]) + k
            v_entries.append({"index": index, "label": v_labels[index], "joint": name,
                              "part": part, "frame": joint.velocity_frame})
    return {"q": q_entries, "v": v_entries}


def tree_document(model) -> list[dict]:
    """Per joint in tree order: depth, parent, children and the ranges of its subtree --
    ``subtree_joints`` [first, end) in ``joints``, ``subtree_dofs`` [first, end) in v. The
    support of a joint is its chain of parents (lists of names per joint would grow with the
    square of a chain's length)."""
    names = model.joint_names
    children = joint_children(model)
    depths: list[int] = []
    tree = []
    parents, ends, firsts, own, subtree = (a.tolist() for a in (
        model.parent, model.subtree_end, model.idx_v, model.nv_joint, model.nv_subtree))
    for j, name in enumerate(names):
        parent = parents[j]  # parents come first
        depths.append(depths[parent] + 1 if parent >= 0 else 0)
        first = firsts[j]
        tree.append({
            "joint": name, "depth": depths[j],
            "parent": names[parent] if parent >= 0 else "world",
            "children": [names[c] for c in children[j]],
            "subtree_joints": [j, ends[j]],
            "dofs": [first, first + own[j]],
            "subtree_dofs": [first, first + subtree[j]],
        })
    return tree


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


def joint_children(model) -> list[list[int]]:
    """The children of each joint (nj lists), in tree order."""
    children: list[list[int]] = [[] for _ in range(model.njoints)]
    for j, parent in enumerate(model.parent.tolist()):
        if parent >= 0:
            children[parent].append(j)
    return children


JOINT_COLUMNS = ("name", "type", "parent", "idx_q", "nq", "idx_v", "nv", "nv_subtree", "body")


def info_csv(document: dict, stream) -> None:
    """The joints of ``info`` as CSV, one row per joint in tree order."""
    writer = naming.csv_writer(stream)
    writer.writerow(JOINT_COLUMNS)
    writer.writerows([joint[c] for c in JOINT_COLUMNS] for joint in document["joints"])


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
