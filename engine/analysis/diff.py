"""What changed for the dynamics between two models, matched by joint and body names.

Everything is data (:class:`DiffReport`); the caller words and renders it.

Matching
--------
* Joints by name; a floating root joint (``free``) left unmatched on both sides is matched
  to the other's (a URDF floated with a ``root_joint`` against an MJCF ``<freejoint>``)
  and noted. Bodies (the moving bodies of the compact tree, :attr:`Model.bodies`) by name;
  a body's inertia and frame are those of its last joint.
* Joint types compare as the interface names them (``revolute``, ``continuous``, ...), an
  unlimited revolute joint counting as ``continuous`` (MJCF has no continuous joint; an
  unlimited hinge is one). Joints of the same type but different engine layouts (a
  Pinocchio ``free`` against a MuJoCo ``free``; ``spherical`` against ``ball``) are the
  same joint in another convention: a *note*, not a change.

Frames and the common convention
--------------------------------
Two models of one format share their frame conventions, so each quantity is compared in
the file's own frames: a joint's placement in its parent body's frame, a body's com and
inertia in its own frame (the URDF link frame; the MJCF body frame, at the joint's anchor).
A joint moved in its parent is then that joint's change alone (its children, in its
frame, are where they were). Across formats the frames may follow other conventions (an
MJCF body frame turned against the URDF link frame, with the inertia turned with it), so
the common convention is world-aligned axes at the reference configuration ``q0`` (every
joint at zero displacement: 1-dof joints at their ``ref``, balls at identity, free joints
at the world origin): a joint's origin from its parent body's origin, its axis, a body's
com from its origin and its inertia about the com. A frame's own orientation is compared
within a format only: across formats what it does (axes, coms, inertias, the children's
origins) is what is compared. A joint whose parent body changed is compared in the world.
A change's ``detail`` names the frame of its values ("parent", "body", "world",
"world-aligned").

Per joint: type, parent body, placement (anchor translation, m; frame rotation angle,
rad), axis (angle between the old and new axis, rad: pi for a flipped axis), limits
(as displacements from ``ref``), armature, and the coordinates it owns (``idx_q``,
``idx_v``: a joint inserted in the middle of the tree order moves the ones after it).
Per body: mass (relative), com (m), rotational inertia about the com (relative,
Frobenius), and the verdict of each physical-consistency check
(:func:`treedyn.engine.analysis.check_inertia.check_inertia`) that flipped. Model:
total mass (of the moving bodies), gravity. M(q): :mod:`.diff_matrix`.

Two models that have no joint name and no body name in common *share nothing*
(:attr:`DiffReport.shares_nothing`): every change is then an addition or a removal and
nothing was compared, so no size of change means anything; a gate on the sizes
(:meth:`DiffReport.exceeds`) fails.

Tolerances (:class:`DiffOptions`)
---------------------------------
One relative tolerance ``tolerance`` (default 1e-5, so a file written with 6 significant
digits, as MuJoCo's saved XML is, compares equal to its source): masses, inertias and M
relative to the old value; lengths against ``tolerance`` times the model's size (the
largest distance of a joint anchor or com from the world origin at ``q0``, 1 m when that
is zero); angles in radians against ``tolerance``; limits against ``tolerance * max(1,
|limit|)``; armature and gravity against ``tolerance`` times the larger magnitude.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import Model
from ..kinematics import placements
from .check_inertia import check_inertia
from .diff_matrix import MatrixDiff, matrix_diff, zero_configuration

KINDS = ("joint-added", "joint-removed", "type", "parent", "coordinates", "placement",
         "rotation", "axis", "limits", "armature", "body-added", "body-removed", "mass",
         "com", "inertia", "consistency", "total-mass", "gravity")
NOTE_KINDS = ("matched", "layout")
MASS_KINDS = ("mass", "total-mass", "body-added", "body-removed")
AXIS_TYPES = ("revolute", "continuous", "prismatic", "planar")  # joints with an axis


@dataclass(frozen=True)
class DiffOptions:
    tolerance: float = 1e-5  # relative (see the module doc)
    samples: int = 20  # configurations for M: the old model's neutral one, then random ones
    seed: int = 0


@dataclass(frozen=True)
class Change:
    """One difference. ``change`` is its size in ``unit``: "relative" (of the old value,
    of the new one when the old is zero), "m", "rad", or the quantity's own unit ("" for
    the structural kinds, whose size is None)."""

    kind: str  # one of KINDS or NOTE_KINDS
    subject: str  # the joint or body ("" for the model)
    old: object = None  # plain values (None: absent)
    new: object = None
    change: float | None = None
    unit: str = ""
    detail: str = ""  # which part: a check's name, "lower"/"upper", a frame


@dataclass(frozen=True)
class DiffReport:
    changes: tuple[Change, ...]
    notes: tuple[Change, ...]  # conventions and matches that are not changes
    matrix: MatrixDiff | None  # None when no dof is matched
    size: float  # m: the model's size; the lengths' tolerance is tolerance * size
    options: DiffOptions = field(default_factory=DiffOptions)
    shared_joints: int = 0  # joint names both models have
    shared_bodies: int = 0  # body names both models have

    @property
    def shares_nothing(self) -> bool:
        """No joint name and no body name in common: nothing was compared."""
        return self.shared_joints == 0 and self.shared_bodies == 0

    @property
    def max_mass_change(self) -> float:
        """The largest relative change of a body's or the total mass (0 when none)."""
        sizes = [c.change for c in self.changes if c.kind in MASS_KINDS]
        return max(sizes, default=0.0)

    @property
    def max_matrix_change(self) -> float:
        return 0.0 if self.matrix is None else self.matrix.worst

    def exceeds(self, limit: float) -> bool:
        """M or a mass changed by more than ``limit`` (relative), counting only changes
        beyond the tolerance (what is reported); always when the models share nothing."""
        if self.shares_nothing:
            return True
        matrix = self.max_matrix_change if self.matrix is not None and self.matrix.pairs else 0.0
        return self.max_mass_change > limit or matrix > limit


def relative(old: float, new: float) -> float:
    """|new - old| relative to |old| (to |new| when old is zero; 0 when both are)."""
    delta = abs(new - old)
    scale = abs(old) or abs(new)
    return delta / scale if scale else 0.0


def angle_between(a: np.ndarray, b: np.ndarray) -> float:
    """Angle (rad) between two direction vectors."""
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    return float(np.arctan2(np.linalg.norm(np.cross(a, b)), a @ b))


def rotation_angle(A: np.ndarray, B: np.ndarray) -> float:
    """Angle (rad) of the rotation A^T B."""
    cosine = (np.trace(A.T @ B) - 1.0) / 2.0
    return float(np.arccos(np.clip(cosine, -1.0, 1.0)))


def joint_type(model: Model, j: int) -> str:
    """The interface's type name, an unlimited revolute joint counting as continuous."""
    kind = model.public_type(j)
    if kind == "revolute" and model.nq_joint[j] == 1:
        q = model.idx_q[j]
        if np.isinf(model.q_lower[q]) and np.isinf(model.q_upper[q]):
            return "continuous"
    return kind


def carried(old: Model, j: int, new: Model, k: int) -> bool:
    """Joint ``j`` of ``old`` and ``k`` of ``new`` take the same coordinates (the same
    type, or revolute and continuous: one angle each), so a configuration carries over."""
    hinge = ("revolute", "continuous")
    types = old.public_type(j), new.public_type(k)
    return types[0] == types[1] or (types[0] in hinge and types[1] in hinge)


def match_joints(old: Model, new: Model) -> tuple[dict[int, int], list[Change]]:
    """({old joint: new joint}, notes): by name, then the free root joints left over."""
    pairs = {j: new.joint_ids[name] for j, name in enumerate(old.joint_names)
             if name in new.joint_ids}
    notes = []
    loose = [[j for j in range(m.njoints) if m.parent[j] < 0 and m.public_type(j) == "free"
              and j not in taken] for m, taken in ((old, set(pairs)), (new, set(pairs.values())))]
    if len(loose[0]) == 1 and len(loose[1]) == 1:
        j, k = loose[0][0], loose[1][0]
        pairs[j] = k
        notes.append(Change("matched", old.joint_names[j], old.joint_names[j],
                            new.joint_names[k], detail="floating root"))
    return dict(sorted(pairs.items())), notes


@dataclass(frozen=True)
class Frames:
    """Both models' world poses at q0 (R (nj, 3, 3), p (nj, 3)), the format flag, scales."""

    old_R: np.ndarray
    old_p: np.ndarray
    new_R: np.ndarray
    new_p: np.ndarray
    same_format: bool
    size: float  # m: the model's size (module doc)
    tolerance: float

    @property
    def length(self) -> float:
        """The lengths' tolerance (m)."""
        return self.tolerance * self.size

    def pose(self, side: int, j: int) -> tuple[np.ndarray, np.ndarray]:
        """World pose (R, p) of body ``j`` of the old (0) or new (1) model; the world at -1."""
        if j < 0:
            return np.eye(3), np.zeros(3)
        R, p = (self.old_R, self.old_p) if side == 0 else (self.new_R, self.new_p)
        return R[j], p[j]


def world_frames(old: Model, new: Model, tolerance: float) -> Frames:
    poses = [placements(m, zero_configuration(m)) for m in (old, new)]
    points = [p for (_, p) in poses] + [np.einsum("nij,nj->ni", R, m.body_com) + p
                                        for m, (R, p) in zip((old, new), poses)]
    size = max((float(np.linalg.norm(x, axis=-1).max(initial=0.0)) for x in points), default=0.0)
    size = size if np.isfinite(size) and size > 0 else 1.0
    return Frames(poses[0][0], poses[0][1], poses[1][0], poses[1][1],
                  old.format == new.format, size, tolerance)


def compared(frames: Frames, local: tuple, world: tuple, measure, limit: float, kind: str,
             subject: str, unit: str, frame: str) -> list[Change]:
    """A change when the values (old, new) differ by more than ``limit`` under ``measure``
    (a distance): the file-frame ones (``local``, in ``frame``) for two models of one
    format, else the world-aligned ones (``world``). Its ``detail`` names the frame."""
    if not frames.same_format and frame != "world":
        local, frame = world, "world-aligned"
    size = measure(*local)
    if size <= limit:
        return []
    old, new = local
    return [Change(kind, subject, np.asarray(old).tolist(), np.asarray(new).tolist(), size,
                   unit, frame)]


def distance(a, b) -> float:
    return float(np.linalg.norm(np.asarray(b) - np.asarray(a)))


def joint_changes(old: Model, new: Model, j: int, k: int, frames: Frames) -> list[Change]:
    """What changed in joint ``j`` of ``old``, which is joint ``k`` of ``new``."""
    name, tol = old.joint_names[j], frames.tolerance
    changes = []
    types = joint_type(old, j), joint_type(new, k)
    if types[0] != types[1]:
        changes.append(Change("type", name, types[0], types[1]))
    parents = [m.body_names[m.parent[i]] if m.parent[i] >= 0 else "world"
               for m, i in ((old, j), (new, k))]
    if parents[0] != parents[1]:
        changes.append(Change("parent", name, parents[0], parents[1]))
    if (old.idx_q[j], old.idx_v[j]) != (new.idx_q[k], new.idx_v[k]):
        changes.append(Change("coordinates", name,
                              {"idx_q": int(old.idx_q[j]), "idx_v": int(old.idx_v[j])},
                              {"idx_q": int(new.idx_q[k]), "idx_v": int(new.idx_v[k])}))
    changes += placement_changes(old, new, j, k, frames, parents[0] == parents[1])
    if old.nq_joint[j] == 1 and new.nq_joint[k] == 1:
        changes += limit_changes(old, new, j, k, tol)
    armature = [m.armature[m.idx_v[i]:m.idx_v[i] + m.nv_joint[i]] for m, i in ((old, j), (new, k))]
    if armature[0].shape == armature[1].shape:
        delta = float(np.abs(armature[1] - armature[0]).max(initial=0.0))
        scale = max(float(np.abs(side).max(initial=0.0)) for side in armature)
        if delta > tol * scale:
            changes.append(Change("armature", name, armature[0].tolist(), armature[1].tolist(),
                                  delta, "kg" if types[0] == "prismatic" else "kg m^2"))
    return changes


def placement_changes(old: Model, new: Model, j: int, k: int, frames: Frames,
                      same_parent: bool) -> list[Change]:
    """The joint's origin, frame and axis at zero displacement (module doc): in its
    parent's frame, or world-aligned from the parent's origin; against a different
    parent, in the world."""
    name, tol = old.joint_names[j], frames.tolerance
    jo, jn = old.joint_models[j], new.joint_models[k]
    (_, pp), (_, sp) = frames.pose(0, old.parent[j]), frames.pose(1, new.parent[k])
    (Rj, pj), (Sj, sj) = frames.pose(0, j), frames.pose(1, k)
    world = {"placement": (pj - pp, sj - sp), "rotation": (Rj, Sj),
             "axis": (Rj @ jo.axis, Sj @ jn.axis)}
    local = {"placement": (jo.translation, jn.translation), "rotation": (jo.rotation, jn.rotation),
             "axis": (jo.rotation @ jo.axis, jn.rotation @ jn.axis)}
    frame = "parent"
    if not same_parent:
        local = world = {**world, "placement": (pj, sj)}
        frame = "world"
    # a frame's own orientation is a convention of its format: across formats what it
    # does (axes, coms, inertias, the children's origins) is compared world-aligned
    measures = {"placement": (distance, frames.length, "m")}
    if frames.same_format:
        measures["rotation"] = (rotation_angle, tol, "rad")
    if carried(old, j, new, k) and joint_type(old, j) in AXIS_TYPES:
        measures["axis"] = (angle_between, tol, "rad")
    changes = []
    for kind, (measure, limit, unit) in measures.items():
        changes += compared(frames, local[kind], world[kind], measure, limit, kind, name, unit,
                            frame)
    return changes


def limit_changes(old: Model, new: Model, j: int, k: int, tol: float) -> list[Change]:
    """Lower and upper limits, as displacements from each joint's ref (a limit that one
    side has and the other not is a change of size None)."""
    changes = []
    refs = old.joint_models[j].ref, new.joint_models[k].ref
    unit = "m" if old.public_type(j) == "prismatic" else "rad"
    for detail, bounds in (("lower", (old.q_lower, new.q_lower)),
                           ("upper", (old.q_upper, new.q_upper))):
        a = float(bounds[0][old.idx_q[j]]) - refs[0]
        b = float(bounds[1][new.idx_q[k]]) - refs[1]
        if a == b:  # the same number, or both unlimited
            continue
        if not (np.isfinite(a) and np.isfinite(b)):
            changes.append(Change("limits", old.joint_names[j], a, b, None, unit, detail))
        elif abs(b - a) > tol * max(1.0, abs(a), abs(b)):
            changes.append(Change("limits", old.joint_names[j], a, b, abs(b - a), unit, detail))
    return changes


def body_changes(old: Model, new: Model, frames: Frames) -> list[Change]:
    """Added and removed bodies; mass, com and inertia of the bodies both models have."""
    ours = {body.name: body.joints[-1] for body in old.bodies}
    theirs = {body.name: body.joints[-1] for body in new.bodies}
    changes = [Change("body-removed", name, float(old.body_mass[j]), None,
                      1.0 if old.body_mass[j] else 0.0, "relative")
               for name, j in ours.items() if name not in theirs]
    changes += [Change("body-added", name, None, float(new.body_mass[k]),
                       1.0 if new.body_mass[k] else 0.0, "relative")
                for name, k in theirs.items() if name not in ours]
    for name, j in ours.items():
        if name in theirs:
            changes += inertia_changes(old, new, name, j, theirs[name], frames)
    return changes


def inertia_changes(old: Model, new: Model, name: str, j: int, k: int,
                    frames: Frames) -> list[Change]:
    tol, changes = frames.tolerance, []
    masses = float(old.body_mass[j]), float(new.body_mass[k])
    if abs(masses[1] - masses[0]) > tol * max(abs(masses[0]), abs(masses[1])):
        changes.append(Change("mass", name, masses[0], masses[1], relative(*masses),
                              "relative"))
    R, S = frames.pose(0, j)[0], frames.pose(1, k)[0]
    com = old.body_com[j], new.body_com[k]
    changes += compared(frames, com, (R @ com[0], S @ com[1]), distance, frames.length,
                           "com", name, "m", "body")
    inertia = old.body_rotational_inertia[j], new.body_rotational_inertia[k]
    world = R @ inertia[0] @ R.T, S @ inertia[1] @ S.T
    scale = float(np.linalg.norm(inertia[0]) or np.linalg.norm(inertia[1]))  # as relative()

    def size(a, b) -> float:  # Frobenius norms: the same in the file and world axes
        return distance(a, b) / scale if scale else 0.0

    changes += compared(frames, inertia, world, size, tol, "inertia", name, "relative", "body")
    return changes


def verdicts(model: Model) -> dict[tuple[str, str, str], str]:
    """(link or body, check, scope) -> "error", "warning" or "ok" of every inertia check."""
    with np.errstate(all="ignore"):
        report = check_inertia(model)
    return {(f.body, f.check, f.scope): (f.severity if f.status == "fail" else "ok")
            for f in report.findings}


def consistency_changes(old: Model, new: Model) -> list[Change]:
    """The physical-consistency checks whose verdict differs, on links both models have."""
    before, after = verdicts(old), verdicts(new)
    return [Change("consistency", body, verdict, after[key], detail=check)
            for key, verdict in before.items() for body, check, _ in [key]
            if key in after and after[key] != verdict]


def model_changes(old: Model, new: Model, tol: float) -> list[Change]:
    changes = []
    masses = old.total_mass, new.total_mass
    if abs(masses[1] - masses[0]) > tol * max(abs(masses[0]), abs(masses[1])):
        changes.append(Change("total-mass", "", masses[0], masses[1], relative(*masses),
                              "relative"))
    g = np.asarray(old.gravity, dtype=float), np.asarray(new.gravity, dtype=float)
    if distance(*g) > tol * max(np.linalg.norm(g[0]), np.linalg.norm(g[1])):
        changes.append(Change("gravity", "", g[0].tolist(), g[1].tolist(), distance(*g),
                              "m/s^2"))
    return changes


def layout_notes(old: Model, new: Model, pairs: dict[int, int]) -> list[Change]:
    """Matched joints whose coordinates follow different conventions (a quaternion's
    order, the frame of a free joint's linear velocity)."""
    notes = []
    for j, k in pairs.items():
        jo, jn = old.joint_models[j], new.joint_models[k]
        if joint_type(old, j) == joint_type(new, k) and (
                jo.q_parts != jn.q_parts or jo.velocity_frame != jn.velocity_frame):
            notes.append(Change("layout", old.joint_names[j],
                                {"q": list(jo.q_parts), "v": jo.velocity_frame},
                                {"q": list(jn.q_parts), "v": jn.velocity_frame}))
    return notes


def diff(old: Model, new: Model, options: DiffOptions = DiffOptions()) -> DiffReport:
    """Every change from ``old`` to ``new`` that matters for the dynamics (module doc)."""
    pairs, notes = match_joints(old, new)
    frames = world_frames(old, new, options.tolerance)
    changes = [Change("joint-removed", name, joint_type(old, j), None)
               for j, name in enumerate(old.joint_names) if j not in pairs]
    matched = set(pairs.values())
    changes += [Change("joint-added", name, None, joint_type(new, k))
                for k, name in enumerate(new.joint_names) if k not in matched]
    for j, k in pairs.items():
        changes += joint_changes(old, new, j, k, frames)
    changes += body_changes(old, new, frames)
    changes += consistency_changes(old, new)
    changes += model_changes(old, new, options.tolerance)
    same = {j: k for j, k in pairs.items() if carried(old, j, new, k)}
    matrix = matrix_diff(old, new, same, options.samples, options.seed, options.tolerance)
    shared_bodies = {body.name for body in old.bodies} & {body.name for body in new.bodies}
    return DiffReport(tuple(changes), tuple(notes + layout_notes(old, new, pairs)), matrix,
                      frames.size, options, len(set(old.joint_names) & set(new.joint_names)),
                      len(shared_bodies))
