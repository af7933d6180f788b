"""Per-model constant data for the batched kernels, derived once per Model and cached.

The kernels of :mod:`treedyn.engine.rnea`, :mod:`~treedyn.engine.crba` and
:mod:`~treedyn.engine.aba` do not run on the model's link frames but on *internal* body
frames, chosen so that every 1-dof joint moves along its local z axis:

* body ``i`` of a revolute/continuous or prismatic joint gets the internal frame
  ``x_link = Q_i x_int`` where ``Q_i`` is a constant rotation whose third column is the
  joint axis. Then ``S = e_z`` (angular z for revolute, linear z for prismatic), and the
  parent-to-child transform is ``Xup = X_J(q) X_T`` with a constant 6x6 ``X_T`` (parent
  internal frame -> joint frame before the motion) and ``X_J`` a rotation about z by
  ``theta = q - ref`` (revolute) or a shift ``d = q - ref`` along z (prismatic).
* every other joint (spherical, ball, free, free_world, planar) keeps ``Q_i = I`` and runs
  a generic per-state path with the joint model's own ``transform``/``subspace``/``bias``.

Body inertias and external forces are rotated into the internal frames; the outputs
(tau, M, qdd) are joint-space quantities and do not depend on the choice of body frames.

Bodies are renumbered breadth-first (level = depth in the tree) into *slots* 1..nj; slot 0
is the world. Bodies of one level and one joint kind form a :class:`Group`, processed by one
set of numpy calls with a leading group axis ``k``: all arrays are component-major
(structure of arrays), e.g. velocities ``V[slot, component, state]`` of shape
``(nj + 1, 6, N)``, so a constant 6x6 map over a group is one batched BLAS call.

Articulated/composite inertias are stored as 21 spin coordinates
(:mod:`treedyn.engine.batch.spin`).
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from ..description import skew
from ..model import Model
from .spin import KEPT, NSPIN, column_rows, congruence_map, spin_of

REVOLUTE, PRISMATIC, GENERIC, FREE = "revolute", "prismatic", "generic", "free"
KIND_OF = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC}
KIND_RANK = {REVOLUTE: 0, PRISMATIC: 1, GENERIC: 2, FREE: 2}
FREE_PERM = np.array([3, 4, 5, 0, 1, 2])  # free joint: v = (linear, angular) <-> motion rows
U_ROWS = {REVOLUTE: column_rows(2), PRISMATIC: column_rows(5)}  # U = IA S as spin rows
S_ROW = {REVOLUTE: 2, PRISMATIC: 5}  # the motion component a 1-dof joint moves


def motion_transform(E: np.ndarray, r: np.ndarray) -> np.ndarray:
    """6x6 X = [[E, 0], [-E [r]x, E]] (Featherstone's plx)."""
    X = np.zeros((6, 6))
    X[:3, :3] = X[3:, 3:] = E
    X[3:, :3] = -E @ skew(r)
    return X


def axis_frame(axis: np.ndarray) -> np.ndarray:
    """A rotation Q (3, 3) whose third column is the unit ``axis``."""
    z = np.asarray(axis, dtype=float)
    z = z / np.linalg.norm(z)
    seed = np.array([1.0, 0, 0]) if abs(z[0]) < 0.9 else np.array([0, 1.0, 0])
    x = seed - z * (seed @ z)
    x /= np.linalg.norm(x)
    (z0, z1, z2), (x0, x1, x2) = z.tolist(), x.tolist()  # z x x as np.cross computes it
    y = np.array([z1 * x2 - z2 * x1, z2 * x0 - z0 * x2, z0 * x1 - z1 * x0])
    return np.column_stack([x, y, z])


def _shift_maps() -> tuple[np.ndarray, np.ndarray]:
    """(L1, L2) (21, 21): spin(X_J(d)^T A X_J(d)) = (1 + d L1 + d^2 L2) spin(A) for a shift
    d along z (a prismatic joint)."""
    def shift(d):
        return congruence_map(motion_transform(np.eye(3), np.array([0, 0, d])))
    L1 = (shift(1.0) - shift(-1.0)) / 2
    return L1, (shift(1.0) + shift(-1.0)) / 2 - np.eye(NSPIN)


SHIFT_L1, SHIFT_L2 = _shift_maps()


# ---------------------------------------------------------------------------------------
@dataclass
class Parents:
    """How a group reads its parents' rows and adds into them (slots, world = 0).

    ``read``: a slice (contiguous, one child each) or an index array for ``np.take``;
    with repeated parents the children's contributions are added one member at a time
    (:func:`treedyn.engine.batch.rows.accumulate`).
    """

    slots: np.ndarray  # (k,) parent slot of each member
    read: slice | np.ndarray
    contiguous: bool  # distinct parents forming the slice read


@dataclass
class Group:
    """Bodies of one level and one joint kind (a generic joint is a group of its own)."""

    kind: str
    slots: slice  # internal body slots of the members, contiguous
    joints: np.ndarray  # (k,) model joint indices
    parents: Parents
    at_world: bool  # every member hangs from the world
    dofs: slice  # rows of the internal dof order (1-dof kinds: one per member)
    coords: slice  # rows of the revolute (angle) or prismatic (shift) coordinate arrays
    XT: np.ndarray  # (k, 6, 6) parent internal frame -> joint frame, motion
    XTt: np.ndarray  # (k, 6, 6) its transpose: forces back to the parent
    inertia: np.ndarray  # (k, 6, 6) body inertia, internal frame
    armature: np.ndarray  # (k, 1) (1-dof kinds)
    # spin(XT^T A XT) = L spin(A), L (k, 21, 21): revolute L, or L[:, :, :KEPT] if
    # kept_rows; prismatic (k, 21, 63) [L, L L1, L L2]
    L_aba: np.ndarray
    L_crba: np.ndarray  # revolute: L; prismatic (k, 21, 63) [L, L L1, L L2]
    joint: object = None  # generic: the JointModel
    q_block: slice | None = None  # generic: its q columns
    Q_parent: np.ndarray | None = None  # generic: parent internal rotation (None: identity)
    armature_full: np.ndarray | None = None  # generic: (nv_j,)
    E_T: np.ndarray | None = None  # free root: its placement, world -> joint frame
    kept_rows: bool = False  # revolute, no armature: ABA's Ia has spin rows 0-14 only
    # ABA leaves to root: members whose parent receives its first articulated inertia from
    # them (that write also brings the parent's own I0), and members without children
    first: np.ndarray | None = None  # (k,) bool
    leaves: np.ndarray | None = None  # (l,) slots of the members that have no children
    # kept revolute, every parent distinct, contiguous and first: (k, 21, KEPT + 1)
    # [L_aba | I0 of the parent], applied to [Ia; 1] straight into the parents' rows
    L_first: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.joints)


@dataclass
class Plan:
    """Everything constant the batched kernels need for one model."""

    nj: int
    nq: int
    nv: int
    groups: list[Group]
    slot_joint: np.ndarray  # (nj + 1,) model joint of each slot, -1 for the world
    perm_v: np.ndarray  # (nv,) model dof of each internal dof
    identity_v: bool  # perm_v is the identity
    inv_perm_v: np.ndarray  # (nv,) internal dof of each model dof
    rev_q: np.ndarray  # (nrev,) model q column of each revolute coordinate
    rev_ref: np.ndarray  # (nrev, 1)
    pri_q: np.ndarray  # (npri,)
    pri_ref: np.ndarray  # (npri, 1)
    I0: np.ndarray  # (nj + 1, 21, 1) body inertias in spin coordinates, internal frames
    force_map: np.ndarray  # (nj, 6, 6) model [force, torque] -> internal (torque, force)
    armature: np.ndarray  # (nv, 1) internal dof order
    has_armature: bool
    kmax: int  # largest group
    # CRBA (model dof order): per slot, own columns and subtree columns
    own_cols: list[slice] = field(default_factory=list)
    subtree_cols: list[slice] = field(default_factory=list)
    group_of_slot: list = field(default_factory=list)
    row_in_group: np.ndarray | None = None


@dataclass
class _Tree:
    """The build's view of the model: joint kinds, depths, slots and internal frames."""

    kinds: list[str]  # (nj,) REVOLUTE, PRISMATIC, GENERIC or FREE
    depth: np.ndarray  # (nj,) 0 for a joint on the world
    order: list[int]  # joints in slot order (slot = position + 1)
    slot: np.ndarray  # (nj,) slot of each joint
    Q: np.ndarray  # (nj + 1, 3, 3) internal rotation of each slot (link = Q internal)

    def parent_slot(self, model: Model, j: int) -> int:
        return int(self.slot[model.parent[j]]) if model.parent[j] >= 0 else 0


def build_plan(model: Model) -> Plan:
    tree = _slot_order(model)
    perm_v, dof_start = _dof_order(model, tree.order)
    inertia_int = _internal_inertias(model, tree)
    I0 = spin_of(inertia_int)[:, :, None]  # (nj + 1, 21, 1)
    groups, coordinates = _groups(model, tree, inertia_int, dof_start)
    _first_contributions(groups, I0, model.njoints)
    rev_q, rev_ref, pri_q, pri_ref = coordinates
    return Plan(
        nj=model.njoints, nq=model.nq, nv=model.nv, groups=groups,
        slot_joint=np.array([-1] + tree.order, dtype=int), perm_v=perm_v,
        identity_v=bool(np.array_equal(perm_v, np.arange(model.nv))),
        inv_perm_v=np.argsort(perm_v),
        rev_q=np.array(rev_q, dtype=int), rev_ref=np.array(rev_ref, dtype=float).reshape(-1, 1),
        pri_q=np.array(pri_q, dtype=int), pri_ref=np.array(pri_ref, dtype=float).reshape(-1, 1),
        I0=I0, force_map=_force_map(model, tree),
        armature=model.armature[perm_v].reshape(-1, 1).copy(),
        has_armature=bool(np.any(model.armature != 0)),
        kmax=max([g.size for g in groups] or [1]), **_crba_columns(model, tree, groups))


def _slot_order(model: Model) -> _Tree:
    """Joint kinds, breadth-first slots (a level sorted by kind, then parent slot, then
    joint) and the internal frame of every slot."""
    nj, parent = model.njoints, model.parent
    kinds = [KIND_OF.get(t, GENERIC) for t in model.joint_types]
    for i, t in enumerate(model.joint_types):  # Pinocchio's free-flyer on the world: own path
        if t == "free" and parent[i] < 0:
            kinds[i] = FREE
    depth = model.depth
    levels: list[list[int]] = [[] for _ in range(int(depth.max(initial=-1)) + 1)]
    for i in range(nj):  # the joints of each level in increasing order
        levels[depth[i]].append(i)
    slot = np.zeros(nj, dtype=int)
    order: list[int] = []
    for members in levels:
        members.sort(key=lambda i: (KIND_RANK[kinds[i]], slot[parent[i]] if parent[i] >= 0 else 0, i))
        for i in members:
            order.append(i)
            slot[i] = len(order)
    Q = np.repeat(np.eye(3)[None], nj + 1, axis=0)
    frames: dict[bytes, np.ndarray] = {}  # axis bits -> its frame (joints share few axes)
    for i in range(nj):
        if kinds[i] in (REVOLUTE, PRISMATIC):
            axis = model.joint_models[i].axis
            key = axis.tobytes()
            if key not in frames:
                frames[key] = axis_frame(axis)
            Q[slot[i]] = frames[key]
    return _Tree(kinds, depth, order, slot, Q)


def _dof_order(model: Model, order: list[int]) -> tuple[np.ndarray, dict[int, int]]:
    """(perm_v (nv,): model dof of each internal dof, first internal dof of each joint)."""
    perm_v = np.concatenate([np.arange(model.idx_v[j], model.idx_v[j] + model.nv_joint[j])
                             for j in order] or [np.zeros(0, dtype=int)]).astype(int)
    dof_start, cursor = {}, 0
    for j in order:
        dof_start[j] = cursor
        cursor += int(model.nv_joint[j])
    return perm_v, dof_start


def _blockdiag(R: np.ndarray) -> np.ndarray:
    B = np.zeros((6, 6))
    B[:3, :3] = B[3:, 3:] = R
    return B


def _internal_inertias(model: Model, tree: _Tree) -> np.ndarray:
    """Body inertias (nj + 1, 6, 6) in the internal frames, by slot (the world's zero)."""
    inertia_int = np.zeros((model.njoints + 1, 6, 6))
    for i in range(model.njoints):
        B = _blockdiag(tree.Q[tree.slot[i]])
        inertia_int[tree.slot[i]] = B.T @ model.body_inertia[i] @ B
    return inertia_int


def _force_map(model: Model, tree: _Tree) -> np.ndarray:
    """(nj, 6, 6) by slot - 1: model [force, torque] -> internal (torque, force)."""
    force_map = np.zeros((model.njoints, 6, 6))
    for s in range(len(tree.order)):
        Qt = tree.Q[s + 1].T
        force_map[s, :3, 3:] = Qt  # torque (model columns 3:6) -> internal rows 0:3
        force_map[s, 3:, :3] = Qt  # force (model columns 0:3) -> internal rows 3:6
    return force_map


def _groups(model: Model, tree: _Tree, inertia_int: np.ndarray, dof_start: dict):
    """The groups in slot order, and the (rev_q, rev_ref, pri_q, pri_ref) lists."""
    nj, order, kinds, depth = model.njoints, tree.order, tree.kinds, tree.depth
    groups: list[Group] = []
    coordinates: tuple[list, list, list, list] = ([], [], [], [])
    position = 0
    while position < nj:
        kind, level = kinds[order[position]], depth[order[position]]
        end = position + 1
        if kind not in (GENERIC, FREE):
            while end < nj and kinds[order[end]] == kind and depth[order[end]] == level:
                end += 1
        members = np.array(order[position:end], dtype=int)
        groups.append(_group(model, tree, kind, members, slice(position + 1, end + 1),
                             inertia_int, dof_start, coordinates))
        position = end
    return groups, coordinates


CONGRUENCE_CHUNK = 4096  # joints whose congruence maps are made at once (40 MB of products)


def _group(model: Model, tree: _Tree, kind: str, members: np.ndarray, slots: slice,
           inertia_int: np.ndarray, dof_start: dict, coordinates) -> Group:
    """One group: its constant transforms, congruence maps and coordinate rows."""
    k = len(members)
    pslots = np.array([tree.parent_slot(model, j) for j in members], dtype=int)
    XT = np.repeat(np.eye(6)[None], k, axis=0)  # (k, 6, 6); generic joints: identity
    L = np.zeros((k, NSPIN, NSPIN))
    if kind not in (GENERIC, FREE):
        for m, j in enumerate(members):
            jm, Qp = model.joint_models[j], tree.Q[pslots[m]]
            XT[m] = motion_transform(tree.Q[tree.slot[j]].T @ jm.E_T @ Qp, Qp.T @ jm.translation)
        for first in range(0, k, CONGRUENCE_CHUNK):  # (chunk, 36, 36) products at a time
            L[first:first + CONGRUENCE_CHUNK] = congruence_map(XT[first:first + CONGRUENCE_CHUNK])
    coords = slice(0, 0)
    if kind in (REVOLUTE, PRISMATIC):
        q_list, ref_list = coordinates[:2] if kind == REVOLUTE else coordinates[2:]
        coords = slice(len(q_list), len(q_list) + k)
        q_list += [model.idx_q[j] for j in members]
        ref_list += [model.joint_models[j].ref for j in members]
    arm = model.armature[model.idx_v[members]][:, None]
    kept_rows = kind == REVOLUTE and not np.any(arm)
    if kind == REVOLUTE:
        L_aba, L_crba = (L[:, :, :KEPT] if kept_rows else L), L
    elif kind == PRISMATIC:
        L_aba = L_crba = np.concatenate([L, L @ SHIFT_L1, L @ SHIFT_L2], axis=2)
    else:
        L_aba = L_crba = L
    first_dof = dof_start[members[0]]
    ndof = int(model.nv_joint[members].sum())
    group = Group(
        kind=kind, slots=slots, joints=members, parents=_parents(pslots),
        at_world=bool(np.all(pslots == 0)), dofs=slice(first_dof, first_dof + ndof),
        coords=coords, XT=XT, XTt=np.ascontiguousarray(np.swapaxes(XT, 1, 2)),
        inertia=inertia_int[slots], armature=arm, L_aba=np.ascontiguousarray(L_aba),
        L_crba=np.ascontiguousarray(L_crba), kept_rows=kept_rows)
    if kind in (GENERIC, FREE):
        j = int(members[0])
        group.joint = model.joint_models[j]
        group.q_block = slice(int(model.idx_q[j]), int(model.idx_q[j] + model.nq_joint[j]))
        Qp = tree.Q[pslots[0]]
        group.Q_parent = None if np.array_equal(Qp, np.eye(3)) else Qp
        group.E_T = model.joint_models[j].E_T.copy()
        group.armature_full = model.armature[model.idx_v[j]:model.idx_v[j] + model.nv_joint[j]].copy()
    return group


def _parents(slots: np.ndarray) -> Parents:
    k = len(slots)
    distinct = len(np.unique(slots)) == k
    contiguous = distinct and np.array_equal(slots, np.arange(slots[0], slots[0] + k))
    read = slice(int(slots[0]), int(slots[0]) + k) if contiguous else slots.copy()
    return Parents(slots, read, contiguous)


def _crba_columns(model: Model, tree: _Tree, groups: list[Group]) -> dict:
    """CRBA's per-slot bookkeeping: group and row in it, own and subtree dof columns."""
    nj = model.njoints
    group_of_slot = [None] * (nj + 1)
    row_in_group = np.zeros(nj + 1, dtype=int)
    for g in groups:
        for m, s in enumerate(range(g.slots.start, g.slots.stop)):
            group_of_slot[s] = g
            row_in_group[s] = m
    own_cols = [slice(0, 0)] * (nj + 1)
    subtree_cols = [slice(0, 0)] * (nj + 1)
    for j in range(nj):
        start = int(model.idx_v[j])
        own_cols[tree.slot[j]] = slice(start, start + int(model.nv_joint[j]))
        subtree_cols[tree.slot[j]] = slice(start, start + int(model.nv_subtree[j]))
    return {"own_cols": own_cols, "subtree_cols": subtree_cols,
            "group_of_slot": group_of_slot, "row_in_group": row_in_group}


def _first_contributions(groups: list[Group], I0: np.ndarray, nj: int) -> None:
    """Set each group's ``first``, ``leaves`` and ``L_first`` for ABA's backward sweep.

    ABA starts every articulated inertia from the body's own I0 and adds the children's
    contributions. Instead of writing I0 into all of them first, a body without children
    copies its I0 when its group comes up, and the first child to contribute to a body
    (in the sweep's order, leaves to root) writes I0 plus its contribution.
    """
    children = np.zeros(nj + 1, dtype=int)
    for g in groups:
        if not g.at_world:
            np.add.at(children, g.parents.slots, 1)
    written = np.zeros(nj + 1, dtype=bool)
    for g in reversed(groups):
        slots = np.arange(g.slots.start, g.slots.stop)
        leaves = slots[children[slots] == 0]
        g.leaves = leaves if len(leaves) else None
        g.first = np.zeros(g.size, dtype=bool)
        if g.at_world:
            continue
        for member, parent in enumerate(g.parents.slots):
            g.first[member] = not written[parent]
            written[parent] = True
        if g.kept_rows and g.parents.contiguous and g.first.all():
            g.L_first = np.ascontiguousarray(
                np.concatenate([g.L_aba, I0[g.parents.read]], axis=2))


# ---------------------------------------------------------------------------------------
_CACHE: dict[int, tuple[weakref.ref, Plan]] = {}
_CACHE_LOCK = threading.Lock()


def plan_of(model: Model) -> Plan:
    """The model's :class:`Plan`, built on first use and cached for the model's lifetime.

    Keyed on the object (a frozen Model with array fields is not hashable): an entry is
    dropped when the model is garbage collected.
    """
    key = id(model)
    entry = _CACHE.get(key)
    if entry is not None and entry[0]() is model:
        return entry[1]
    plan = build_plan(model)
    with _CACHE_LOCK:
        _CACHE[key] = (weakref.ref(model, lambda _ref, key=key: _CACHE.pop(key, None)), plan)
    return plan
