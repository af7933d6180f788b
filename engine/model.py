"""The compact-tree model: static structure the algorithms run on.

Joints (one per moving body) are stored parents-first in depth-first order, with flat
integer arrays in the style of MuJoCo and Pinocchio. Body ``i`` is the rigid body moved by
joint ``i``; its frame is joint ``i``'s frame after the joint motion. ``parent[i] == -1``
means the body hangs from the world (the fixed root, or the free-flyer's parent).

Everything derived from the tree (subtrees, nv_subtree, the dof parent array) is computed
once by :func:`build_model`, in flat arrays linear in the size of the tree. The structural
sparsity of M follows from them without an (nv, nv) array: dofs i and j couple only when
one supports the other, i.e. one lies in the other's subtree range
(:func:`treedyn.engine.factor.dof_subtree_end`, :func:`~treedyn.engine.factor.dofs_couple`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from .coupling import Coupling
from .description import Inertia, JointSpec, Mimic, SourceRef, TreeDescription
from .joints import PUBLIC_TYPE, JointModel, between, joint_models
from .rotations import skew


@dataclass(frozen=True)
class Frame:
    """A named link frame: rigidly attached to body ``joint`` (-1: the world) at a pose."""

    name: str
    joint: int
    rotation: np.ndarray  # (3, 3) frame axes in the body frame
    translation: np.ndarray  # (3,) frame origin in the body frame
    source: SourceRef


class JointArrays(NamedTuple):
    """The joints' constant data side by side, for code that treats them all at once."""

    rotation: np.ndarray  # (nj, 3, 3) joint frame in the parent body
    translation: np.ndarray  # (nj, 3)
    axis: np.ndarray  # (nj, 3) unit, joint frame
    ref: np.ndarray  # (nj,)


class MovingBody(NamedTuple):
    """A body of the file that joints move: a URDF link (with the links welded to it) or an
    MJCF <body>, which may have several joints; its inertia and frame sit on the last."""

    name: str
    joints: tuple[int, ...]  # the joints that move it, in tree order (a chain)


@dataclass(frozen=True)
class Model:
    """The compact tree of one robot, as :func:`build_model` derives it (fields below)."""

    name: str
    format: str  # "urdf" or "mjcf"
    source: str  # path of the model file
    joint_names: tuple[str, ...]  # (nj,)
    joint_types: tuple[str, ...]  # (nj,) engine types (see treedyn.engine.joints)
    joint_models: tuple[JointModel, ...]  # (nj,)
    joint_sources: tuple[SourceRef, ...]  # (nj,)
    # (nj,) the body each joint moves (MJCF: the <body> name; a body with several joints
    # names each of them, and its inertia and frame sit on the last)
    body_names: tuple[str, ...]
    # (nj,) the link frame each body is expressed in: its inertia and its row of fext. For
    # URDF the joint's child link; for MJCF the joint's own frame at its anchor
    # (``leg/leg_joint``), which is the <body> frame only when the joint sits at its origin
    body_frames: tuple[str, ...]
    parent: np.ndarray  # (nj,) int, -1 for the world
    idx_q: np.ndarray  # (nj,) int
    nq_joint: np.ndarray  # (nj,) int
    idx_v: np.ndarray  # (nj,) int
    nv_joint: np.ndarray  # (nj,) int
    nv_subtree: np.ndarray  # (nj,) int, dofs of joint i and all its descendants
    subtree_end: np.ndarray  # (nj,) int, joints i .. subtree_end[i]-1 form i's subtree
    depth: np.ndarray  # (nj,) int, joints between i and the world: 0 at a root
    dof_joint: np.ndarray  # (nv,) int, joint owning each dof
    dof_parent: np.ndarray  # (nv,) int, previous dof on the path to the root, -1 at the root
    nq: int
    nv: int
    body_inertia: np.ndarray  # (nj, 6, 6) spatial inertia about the body origin, body frame
    body_mass: np.ndarray  # (nj,)
    body_com: np.ndarray  # (nj, 3) in the body frame
    body_rotational_inertia: np.ndarray  # (nj, 3, 3) about the com, body frame
    armature: np.ndarray  # (nv,)
    gravity: np.ndarray  # (3,) world frame
    q_neutral: np.ndarray  # (nq,)
    q_lower: np.ndarray  # (nq,) -inf where unlimited
    q_upper: np.ndarray  # (nq,) +inf where unlimited
    # (nv,) the largest |effort| (N m or N) and |velocity| (rad/s or m/s) each dof may
    # take, +inf where the file gives none (docs/fidelity.md: the rules of each format);
    # only 1-dof joints have them, a mimic's dof in a coupled model is its master's
    effort_limit: np.ndarray
    velocity_limit: np.ndarray
    actuated: np.ndarray  # (nv,) bool: something drives the dof (URDF: its joint moves)
    limit_sources: tuple[SourceRef, ...]  # (nj,) where each joint's effort limit is written
    frames: tuple[Frame, ...]  # every link of the description, merged or not
    bodies: tuple[MovingBody, ...]  # (nbodies,) the file's moving bodies, in tree order
    mimic: dict[str, Mimic]  # joint name -> mimic relation as written (enforced: coupling)
    world_mass: float  # mass welded to the world (ignored by the dynamics)
    description: TreeDescription
    # the mimic joints enforced (treedyn.engine.coupling.couple): the coordinates above are
    # then the reduced ones, and the algorithms run the uncoupled coupling.full through it
    coupling: Coupling | None = None

    @property
    def njoints(self) -> int:
        return len(self.joint_names)

    @property
    def total_mass(self) -> float:
        return float(self.body_mass.sum())

    def public_type(self, joint: int) -> str:
        """Joint type as the machine interface names it."""
        return PUBLIC_TYPE[self.joint_types[joint]]

    @cached_property
    def joint_ids(self) -> dict[str, int]:
        """Joint name -> its index (the names are unique), built on first use."""
        return {name: j for j, name in enumerate(self.joint_names)}

    @cached_property
    def joint_arrays(self) -> JointArrays:
        """The joint models' placements, axes and references as (nj, ...) arrays."""
        nj, models = self.njoints, self.joint_models
        return JointArrays(
            np.array([m.rotation for m in models], dtype=float).reshape(nj, 3, 3),
            np.array([m.translation for m in models], dtype=float).reshape(nj, 3),
            np.array([m.axis for m in models], dtype=float).reshape(nj, 3),
            np.array([m.ref for m in models], dtype=float).reshape(nj))

    def joint_index(self, name: str) -> int:
        return self.joint_ids[name]

    def frame(self, name: str) -> Frame:
        for frame in self.frames:
            if frame.name == name:
                return frame
        raise KeyError(name)

    def random_configuration(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """(count, nq) random configurations within limits (unit quaternions where needed).

        Joint after joint, each drawing its ``count`` numbers; a run of joints that draw
        as JointModel does (one angle) is drawn in one call, the same numbers in the same
        order."""
        q = np.empty((count, self.nq))
        run: list[int] = []  # q columns of the current run of one-angle joints
        sizes = self.nq_joint.tolist()
        for i, joint in enumerate(self.joint_models):
            if sizes[i] == 1 and type(joint).random_configuration is PLAIN_DRAW:
                run.append(int(self.idx_q[i]))
                continue
            run = self._draw_angles(rng, q, run)
            if sizes[i] == 0:  # a mimic joint follows its master
                continue
            block = slice(self.idx_q[i], self.idx_q[i] + sizes[i])
            q[:, block] = joint.random_configuration(rng, count, self.q_lower[block],
                                                     self.q_upper[block])
        self._draw_angles(rng, q, run)
        return q

    def _draw_angles(self, rng: np.random.Generator, q: np.ndarray, columns: list[int]) -> list:
        """Fill the ``columns`` of ``q`` (one-angle joints, in order) as each joint's
        JointModel.random_configuration would, joint after joint; an empty run."""
        if columns:
            lower, upper = self.q_lower[columns, None], self.q_upper[columns, None]
            low = np.where(np.isfinite(lower), lower, -np.pi)
            high = np.where(np.isfinite(upper), upper, np.pi)
            q[:, columns] = between(rng, low, high, (len(columns), len(q))).T
        return []


PLAIN_DRAW = JointModel.random_configuration


class ModelError(ValueError):
    """The description does not form a valid tree (the parsers report file and line)."""


def build_model(description: TreeDescription) -> Model:
    """Merge fixed joints, order joints depth-first parents-first, and derive every index."""
    links = {link.name: link for link in description.links}
    _check_tree(description, links)
    children: dict[str, list[JointSpec]] = {name: [] for name in links}
    for joint in description.joints:
        children[joint.parent].append(joint)

    joints: list[JointSpec] = []
    parents: list[int] = []
    body_links: list[str] = []
    body_frames: list[str] = []
    frames: list[Frame] = []
    # the moving joints' placements in their parent body: the pose of the link they hang
    # from (position in ``poses``) and their own, multiplied once the walk is done
    placed_on: list[int] = []
    poses: list[tuple[np.ndarray, np.ndarray]] = []
    identity, origin = np.eye(3), np.zeros(3)

    # Depth-first, children in description order, with an explicit stack (a 1000-body
    # chain is deeper than Python's recursion limit). An entry attaches ``link``, posed at
    # (rotation, translation) in body ``body``; ``joint`` is the moving joint that creates
    # that body first, or None when the link is welded to ``body``.
    stack = [(description.world_link, -1, identity, origin, None, -1)]
    while stack:
        link, body, rotation, translation, joint, pose = stack.pop()
        if joint is not None:
            joints.append(joint)
            placed_on.append(pose)
            parents.append(body)
            body_links.append(links[link].body or link)
            body_frames.append(link)
            body, rotation, translation = len(joints) - 1, identity, origin
        spec = links[link]
        frames.append(Frame(link, body, rotation, translation, spec.source))
        pose = len(poses)
        poses.append((rotation, translation))
        for child in reversed(children[link]):
            if child.type == "fixed":
                stack.append((child.child, body, rotation @ child.rotation,
                              rotation @ child.translation + translation, None, -1))
            else:
                stack.append((child.child, body, identity, origin, child, pose))

    _check_reached(description, links, frames)
    inertias = _body_inertias([links[frame.name].inertia for frame in frames], frames,
                              len(joints))
    placements = _placements(joints, [poses[k] for k in placed_on])
    return _assemble(description, joints, placements, parents, body_links, body_frames,
                     inertias[1:], frames, float(inertias[0, 3, 3]))


def _placements(joints: list[JointSpec], poses: list[tuple[np.ndarray, np.ndarray]]
                ) -> tuple[np.ndarray, np.ndarray]:
    """(rotation (nj, 3, 3), translation (nj, 3)): each joint's placement re-expressed in its
    moving parent body's frame, ``R_link @ R_joint`` and ``R_link @ p_joint + p_link``
    with (R_link, p_link) the pose of the link it hangs from: the same products as one
    joint at a time, for all at once."""
    nj = len(joints)
    R = np.array([pose[0] for pose in poses], dtype=float).reshape(nj, 3, 3)
    p = np.array([pose[1] for pose in poses], dtype=float).reshape(nj, 3)
    rotation = np.array([j.rotation for j in joints], dtype=float).reshape(nj, 3, 3)
    translation = np.array([j.translation for j in joints], dtype=float).reshape(nj, 3, 1)
    with np.errstate(all="ignore"):  # a placement that overflows is check_finite's to say
        return np.matmul(R, rotation), np.matmul(R, translation)[:, :, 0] + p


def _body_inertias(inertias: list[Inertia], frames: list[Frame], nj: int) -> np.ndarray:
    """(nj + 1, 6, 6): the world's spatial inertia (first), then each body's, about its
    origin in its frame: the sum, in ``frames`` order, of its links' inertias placed at
    their frames. What ``inertia.transformed(R, t).spatial()`` gives one link, for all at
    once (the same products, so the same numbers)."""
    count = len(inertias)
    mass = np.array([i.mass for i in inertias], dtype=float).reshape(count)
    com = np.array([i.com for i in inertias], dtype=float).reshape(count, 3)
    tensor = np.array([i.inertia for i in inertias], dtype=float).reshape(count, 3, 3)
    R = np.array([f.rotation for f in frames], dtype=float).reshape(count, 3, 3)
    t = np.array([f.translation for f in frames], dtype=float).reshape(count, 3)
    spatial = np.empty((count, 6, 6))
    with np.errstate(over="ignore", invalid="ignore"):  # check-inertia reports overflows
        com = np.matmul(R, com[:, :, None])[:, :, 0] + t
        tensor = np.matmul(np.matmul(R, tensor), np.swapaxes(R, 1, 2))
        hx, c = skew(mass[:, None] * com), skew(com)
        spatial[:, :3, :3] = tensor - np.matmul(mass[:, None, None] * c, c)
        spatial[:, :3, 3:] = hx
        spatial[:, 3:, :3] = -hx
        spatial[:, 3:, 3:] = mass[:, None, None] * np.eye(3)
        bodies = np.zeros((nj + 1, 6, 6))
        np.add.at(bodies, np.array([f.joint for f in frames], dtype=int) + 1, spatial)
    return bodies


def _check_tree(description: TreeDescription, links: dict) -> None:
    """Every link but the world link is the child of exactly one joint, else ModelError
    (that every link hangs from the world link, so there is no cycle, is checked by
    :func:`_check_reached` once the walk is done). The parsers check this with file and
    line; a description built by hand meets it here."""
    if description.world_link not in links:
        raise ModelError(f"the world link {description.world_link!r} is not a link")
    # a fixed joint may share its name with a moving one (Pinocchio's free-flyer root_joint
    # beside a fixed joint root_joint: only the moving one is a coordinate)
    for kind, names in (("link", [link.name for link in description.links]),
                        ("joint", [j.name for j in description.joints if j.type != "fixed"]),
                        ("fixed joint", [j.name for j in description.joints if j.type == "fixed"])):
        if len(set(names)) == len(names):  # the common case, without counting
            continue
        repeated = sorted(name for name, count in Counter(names).items() if count > 1)
        raise ModelError(f"two {kind}s are named {repeated[0]!r}")
    parent_joint: dict[str, str] = {}
    for joint in description.joints:
        if joint.parent not in links or joint.child not in links:
            role = "parent" if joint.parent not in links else "child"
            raise ModelError(f"joint {joint.name!r}: its {role} link "
                             f"{getattr(joint, role)!r} is not a link")
        if joint.child == description.world_link:
            raise ModelError(f"joint {joint.name!r} moves the world link {joint.child!r}")
        if joint.child in parent_joint:
            raise ModelError(f"link {joint.child!r} is the child of two joints: "
                             f"{parent_joint[joint.child]!r} and {joint.name!r}")
        parent_joint[joint.child] = joint.name


def _check_reached(description: TreeDescription, links: dict, frames: list[Frame]) -> None:
    """Every link was reached walking down from the world link (with one parent per link,
    what a cycle holds never is), else ModelError naming the first link that was not."""
    if len(frames) == len(links):
        return
    reached = {frame.name for frame in frames}
    loose = [name for name in links if name not in reached]
    if loose:
        raise ModelError(f"link {loose[0]!r} does not hang from the world link "
                         f"{description.world_link!r} (no joint chain leads to it, or a cycle)")


def _assemble(description, joints, placements, parents, body_links, body_frames, inertias,
              frames, world_mass) -> Model:
    nj = len(joints)
    parent = np.array(parents, dtype=int).reshape(nj)
    arrays = JointArrays(*placements,
                         np.array([j.axis for j in joints], dtype=float).reshape(nj, 3),
                         np.array([j.ref for j in joints], dtype=float).reshape(nj))
    models = joint_models([j.type for j in joints], arrays)
    index = _indexing(parent, models)
    nq_joint, nv_joint, idx_q, idx_v = (index[k] for k in ("nq_joint", "nv_joint", "idx_q", "idx_v"))
    nq, nv = int(nq_joint.sum()), int(nv_joint.sum())
    body_inertia = np.array(inertias).reshape(nj, 6, 6)
    body_mass, body_com, body_rotational_inertia = _rigid(body_inertia)
    q_neutral = np.concatenate([j.neutral if j.neutral is not None else m.neutral()
                                for j, m in zip(joints, models)] or [np.zeros(0)])
    q_lower = np.full(nq, -np.inf)
    q_upper = np.full(nq, np.inf)
    one = nq_joint == 1  # the joints whose limits are q's
    q_lower[idx_q[one]] = np.array([j.lower for j in joints], dtype=float).reshape(nj)[one]
    q_upper[idx_q[one]] = np.array([j.upper for j in joints], dtype=float).reshape(nj)[one]
    armature = np.repeat(np.array([j.armature for j in joints], dtype=float).reshape(nj),
                         nv_joint)
    effort, velocity, actuated = _effort_limits(joints, nv_joint)

    model = Model(
        name=description.name,
        format=description.format,
        source=description.source,
        joint_names=tuple(j.name for j in joints),
        joint_types=tuple(j.type for j in joints),
        joint_models=models,
        joint_sources=tuple(j.source for j in joints),
        body_names=tuple(body_links),
        body_frames=tuple(body_frames),
        parent=parent,
        **index,
        nq=nq,
        nv=nv,
        body_inertia=body_inertia,
        body_mass=body_mass,
        body_com=body_com,
        body_rotational_inertia=body_rotational_inertia,
        armature=armature,
        gravity=np.asarray(description.gravity, dtype=float),
        q_neutral=q_neutral,
        q_lower=q_lower,
        q_upper=q_upper,
        effort_limit=effort,
        velocity_limit=velocity,
        actuated=actuated,
        limit_sources=tuple(j.limit_source for j in joints),
        frames=tuple(frames),
        bodies=_moving_bodies(body_links),
        mimic={j.name: j.mimic for j in joints if j.mimic is not None},
        world_mass=world_mass,
        description=description,
    )
    model.__dict__["joint_arrays"] = arrays  # what the property would make again from them
    return model


ONE_DOF_TYPES = ("revolute", "continuous", "prismatic")  # the joints limits apply to


def _effort_limits(joints: list[JointSpec], nv_joint: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(effort_limit, velocity_limit, actuated), each (nv,): a 1-dof joint's limits as its
    JointSpec gives them (+inf if none), and whether it is driven (a revolute, continuous
    or prismatic joint is unless the parser says otherwise); other joints' dofs are
    unlimited and not driven."""
    one = np.array([j.type in ONE_DOF_TYPES for j in joints], dtype=bool)
    effort = np.where(one, [abs(j.effort) for j in joints], np.inf)
    velocity = np.where(one, [abs(j.velocity) for j in joints], np.inf)
    actuated = one & np.array([j.actuated is not False for j in joints], dtype=bool)
    return (np.repeat(effort.astype(float), nv_joint), np.repeat(velocity.astype(float), nv_joint),
            np.repeat(actuated, nv_joint))


def _rigid(spatial: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mass (n,), com (n, 3), rotational inertia about the com (n, 3, 3)) of spatial
    inertias (n, 6, 6): :meth:`Inertia.from_spatial` for all at once (the same numbers; a
    body without positive mass has its com at 0 and its tensor as it is)."""
    mass = spatial[:, 3, 3].copy()
    h = np.stack([spatial[:, 2, 4], spatial[:, 0, 5], spatial[:, 1, 3]], axis=1)  # (n, 3)
    massive = ~(mass <= 0.0)  # (n,) (nan too, as from_spatial computes on)
    with np.errstate(all="ignore"):
        com = np.where(massive[:, None], h / mass[:, None], 0.0)
        c = skew(com)
        inertia = spatial[:, :3, :3] + np.matmul(mass[:, None, None] * c, c)
        tensor = np.where(massive[:, None, None], 0.5 * (inertia + np.swapaxes(inertia, 1, 2)),
                          spatial[:, :3, :3])
    return mass, com, tensor


def _indexing(parent: np.ndarray, models: tuple) -> dict[str, np.ndarray]:
    """Coordinate and dof bookkeeping of a tree in depth-first order: per joint nq_joint,
    nv_joint, idx_q, idx_v, subtree_end, nv_subtree, depth (nj,); per dof dof_joint, dof_parent
    (nv,). Linear in the tree's size (M's pattern is left to :mod:`treedyn.engine.factor`)."""
    nj = len(models)
    nq_joint = np.array([m.nq for m in models], dtype=int).reshape(nj)
    nv_joint = np.array([m.nv for m in models], dtype=int).reshape(nj)
    idx_q = np.concatenate([[0], np.cumsum(nq_joint)[:-1]]).astype(int)[:nj]
    idx_v = np.concatenate([[0], np.cumsum(nv_joint)[:-1]]).astype(int)[:nj]
    nv = int(nv_joint.sum())
    parents = parent.tolist()  # the walks below on Python ints, not numpy scalars
    ends = list(range(1, nj + 1))
    for i in reversed(range(nj)):
        p = parents[i]
        if p >= 0 and ends[i] > ends[p]:
            ends[p] = ends[i]
    subtree_end = np.array(ends, dtype=int).reshape(nj)
    levels = [0] * nj
    for i, p in enumerate(parents):  # a parent comes before its children
        if p >= 0:
            levels[i] = levels[p] + 1
    depth = np.array(levels, dtype=int).reshape(nj)
    dofs_before = np.concatenate([[0], np.cumsum(nv_joint)]).astype(int)  # (nj + 1,)
    nv_subtree = (dofs_before[subtree_end] - dofs_before[:nj]).astype(int)
    dof_joint = np.repeat(np.arange(nj), nv_joint)
    # each dof follows the one before it in its joint; a joint's first dof follows its
    # parent's last one (-1: none)
    dof_parent = np.arange(nv, dtype=int) - 1
    last_of_parent = np.where(parent >= 0, idx_v[parent] + nv_joint[parent] - 1, -1)
    dof_parent[idx_v[nv_joint > 0]] = last_of_parent[nv_joint > 0]
    return {"nq_joint": nq_joint, "nv_joint": nv_joint, "idx_q": idx_q, "idx_v": idx_v,
            "subtree_end": subtree_end, "depth": depth, "nv_subtree": nv_subtree,
            "dof_joint": dof_joint,
            "dof_parent": dof_parent}


def _moving_bodies(body_names: list[str]) -> tuple[MovingBody, ...]:
    """Group the joints by the body they move (names are unique per body; the joints of
    an MJCF <body> with several follow each other in tree order, a chain)."""
    chains: dict[str, list[int]] = {}
    for j, name in enumerate(body_names):
        chains.setdefault(name, []).append(j)
    return tuple(MovingBody(name, tuple(joints)) for name, joints in chains.items())
