"""A model as data: its joints, bodies and tree as JSON-ready documents (what ``dyn info``
prints, with the layout of q and v the pipeline names), linear in the model's size."""
from __future__ import annotations

import numpy as np


def model_summary(model, gravity: np.ndarray | None = None) -> dict:
    """The model as data: name, format, sizes, gravity (``gravity``, else the model's), total
    mass, every joint (its indices, its mimic relation), body (:func:`bodies_document`) and
    the tree (:func:`tree_document`), the links welded to the world and what the parser
    ignored."""
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
        # (not a world link a floating base adds, which is in no file)
        "world_links": [f.name for f in model.frames if f.joint < 0 and f.source.file],
        "world_mass": float(model.world_mass),
        "ignored": dict(model.description.ignored),
        "tree": tree_document(model),
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
    coms = body_coms(model, own)
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


def body_coms(model, own: list) -> list[list[float]]:
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


def joint_children(model) -> list[list[int]]:
    """The children of each joint (nj lists), in tree order."""
    children: list[list[int]] = [[] for _ in range(model.njoints)]
    for j, parent in enumerate(model.parent.tolist()):
        if parent >= 0:
            children[parent].append(j)
    return children
