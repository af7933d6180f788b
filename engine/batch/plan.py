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
from functools import cached_property

import numpy as np

from ..description import skew
from ..model import Model
from .spin import KEPT, MATRIX_OF_TEN, NSPIN, TEN_OF, column_rows, congruence_map, spin_of

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


def _shift_maps(*basis) -> tuple[np.ndarray, np.ndarray]:
    """(L1, L2) (21, 21): spin(X_J(d)^T A X_J(d)) = (1 + d L1 + d^2 L2) spin(A) for a shift
    d along z (a prismatic joint); in the 10-parameter ``basis`` (10, 10) maps."""
    def shift(d):
        return congruence_map(motion_transform(np.eye(3), np.array([0, 0, d])), *basis)
    L1 = (shift(1.0) - shift(-1.0)) / 2
    return L1, (shift(1.0) + shift(-1.0)) / 2 - np.eye(len(L1))


SHIFT_L1, SHIFT_L2 = _shift_maps()
TEN_SHIFT = _shift_maps(TEN_OF, MATRIX_OF_TEN)


CONGRUENCE_CHUNK = 4096  # joints whose congruence maps are made at once (40 MB of products)


def _congruences(XT: np.ndarray, *basis) -> np.ndarray:
    """(k, n, n) congruence maps of XT (k, 6, 6) in the spin or 10-parameter ``basis``."""
    size = len(basis[0]) if basis else NSPIN
    L = np.zeros((len(XT), size, size))
    for first in range(0, len(XT), CONGRUENCE_CHUNK):  # (chunk, 36, 36) products
        chunk = slice(first, first + CONGRUENCE_CHUNK)
        L[chunk] = congruence_map(XT[chunk], *basis)
    return L


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
    """Bodies of one level and one joint kind (a generic joint is a group of its own).

    The congruence maps (``L_aba``, ``L_crba``, ``L_first``: ABA's and CRBA's, 3.5 KB a
    member) are made on first use, so a model that only runs RNEA never makes them.
    """

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
    # kept revolute, every parent distinct, contiguous and first: the parents' I0
    # (k, 21, 1), which L_first appends to L_aba
    first_I0: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.joints)

    @cached_property
    def _congruence(self) -> np.ndarray:
        """(k, 21, 21) L with spin(XT^T A XT) = L spin(A) (zeros for a generic joint)."""
        if self.kind in (GENERIC, FREE):
            return np.zeros((self.size, NSPIN, NSPIN))
        return _congruences(self.XT)

    @cached_property
    def L_aba(self) -> np.ndarray:
        """Revolute: L, or L[:, :, :KEPT] if kept_rows; prismatic (k, 21, 63) [L, L L1, L L2]."""
        L = self._congruence
        if self.kind == PRISMATIC:
            return self.L_crba
        return np.ascontiguousarray(L[:, :, :KEPT] if self.kept_rows else L)

    @cached_property
    def L_crba(self) -> np.ndarray:
        """Revolute: L; prismatic (k, 21, 63) [L, L L1, L L2]."""
        L = self._congruence
        if self.kind == PRISMATIC:
            return np.ascontiguousarray(np.concatenate([L, L @ SHIFT_L1, L @ SHIFT_L2], axis=2))
        return L

    @cached_property
    def L_ten(self) -> np.ndarray:
        """:attr:`L_crba` on the 10 parameters of a spatial inertia (:mod:`.spin`): revolute
        (k, 10, 10), prismatic (k, 10, 30)."""
        L = _congruences(self.XT, TEN_OF, MATRIX_OF_TEN)
        if self.kind == PRISMATIC:
            return np.ascontiguousarray(np.concatenate([L, L @ TEN_SHIFT[0], L @ TEN_SHIFT[1]], axis=2))
        return L

    @cached_property
    def placement(self) -> tuple[np.ndarray, np.ndarray]:
        """(E (k, 1, 3, 3), r (k, 1, 1, 3)) of XT = plx(E, r), shaped to multiply the rows
        of rotations (k, 3, 3, m) and (k, 3, 1, m) in one batched call each."""
        E = self.XT[:, :3, :3]
        rx = -np.matmul(np.swapaxes(E, 1, 2), self.XT[:, 3:, :3])  # [r]x
        r = np.stack([rx[:, 2, 1], rx[:, 0, 2], rx[:, 1, 0]], axis=1)
        return np.ascontiguousarray(E[:, None]), np.ascontiguousarray(r[:, None, None, :])

    @cached_property
    def L_first(self) -> np.ndarray | None:
        """(k, 21, KEPT + 1) [L_aba | I0 of the parent], applied to [Ia; 1] straight into
        the parents' rows; None unless ``first_I0`` is set."""
        if self.first_I0 is None:
            return None
        return np.ascontiguousarray(np.concatenate([self.L_aba, self.first_I0], axis=2))


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
    order: np.ndarray  # (nj,) joints in slot order (slot = position + 1)
    slot: np.ndarray  # (nj,) slot of each joint
    Q: np.ndarray  # (nj + 1, 3, 3) internal rotation of each slot (link = Q internal)

    def parent_slots(self, model: Model, joints: np.ndarray) -> np.ndarray:
        """(k,) the slot of each joint's parent body (0: the world)."""
        parents = model.parent[joints]
        return np.where(parents >= 0, self.slot[parents], 0)


def build_plan(model: Model) -> Plan:
    tree = _slot_order(model)
    perm_v, dof_start = _dof_order(model, tree.order)
    inertia_int = _internal_inertias(model, tree)
    I0 = spin_of(inertia_int)[:, :, None]  # (nj + 1, 21, 1)
    groups, coordinates = _groups(model, tree, inertia_int, dof_start)
    _first_contributions(groups, I0, model.njoints)
    rev_q, rev_ref, pri_q, pri_ref = (*coordinates[REVOLUTE].arrays(),
                                      *coordinates[PRISMATIC].arrays())
    return Plan(
        nj=model.njoints, nq=model.nq, nv=model.nv, groups=groups,
        slot_joint=np.concatenate([[-1], tree.order]).astype(int), perm_v=perm_v,
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
    rank = np.array([KIND_RANK[kind] for kind in kinds], dtype=int).reshape(nj)
    by_level = np.argsort(depth, kind="stable")  # each level's joints in increasing order
    bounds = np.searchsorted(depth[by_level], np.arange(int(depth.max(initial=-1)) + 2))
    slot = np.zeros(nj, dtype=int)
    order = np.zeros(nj, dtype=int)
    for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        members = by_level[start:end]
        if end - start > 1:  # by kind, then parent slot, then joint
            parents = parent[members]
            members = members[np.lexsort((members, np.where(parents >= 0, slot[parents], 0),
                                          rank[members]))]
        order[start:end] = members
        slot[members] = np.arange(start + 1, end + 1)
    Q = np.repeat(np.eye(3)[None], nj + 1, axis=0)
    moving = np.flatnonzero(rank < KIND_RANK[GENERIC])  # revolute and prismatic joints
    if len(moving):  # one frame per distinct axis (bit for bit; joints share few axes)
        axes = np.ascontiguousarray(model.joint_arrays.axis[moving])
        bits = axes.view(np.dtype((np.void, axes.itemsize * 3)))[:, 0]
        distinct, first, which = np.unique(bits, return_index=True, return_inverse=True)
        frames = np.array([axis_frame(axes[k]) for k in first]).reshape(len(distinct), 3, 3)
        Q[slot[moving]] = frames[which.reshape(-1)]
    return _Tree(kinds, depth, order, slot, Q)


def _dof_order(model: Model, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(perm_v (nv,): model dof of each internal dof, (nj,) first internal dof of each
    joint)."""
    counts = model.nv_joint[order]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int)[:len(order)]
    perm_v = (np.repeat(model.idx_v[order] - starts, counts) + np.arange(int(counts.sum())))
    dof_start = np.zeros(model.njoints, dtype=int)
    dof_start[order] = starts
    return perm_v.astype(int), dof_start


def _internal_inertias(model: Model, tree: _Tree) -> np.ndarray:
    """Body inertias (nj + 1, 6, 6) in the internal frames, by slot (the world's zero):
    ``B^T I B`` with B = blockdiag(Q, Q), for all bodies at once (the same products)."""
    B = np.zeros((model.njoints, 6, 6))
    B[:, :3, :3] = B[:, 3:, 3:] = tree.Q[tree.slot]
    inertia_int = np.zeros((model.njoints + 1, 6, 6))
    inertia_int[tree.slot] = np.matmul(np.matmul(np.swapaxes(B, 1, 2), model.body_inertia), B)
    return inertia_int


def _force_map(model: Model, tree: _Tree) -> np.ndarray:
    """(nj, 6, 6) by slot - 1: model [force, torque] -> internal (torque, force)."""
    force_map = np.zeros((model.njoints, 6, 6))
    Qt = np.swapaxes(tree.Q[1:], 1, 2)
    force_map[:, :3, 3:] = Qt  # torque (model columns 3:6) -> internal rows 0:3
    force_map[:, 3:, :3] = Qt  # force (model columns 0:3) -> internal rows 3:6
    return force_map


@dataclass
class _Coordinates:
    """The revolute (or prismatic) coordinates met so far: q columns and references."""

    q: list = field(default_factory=list)
    ref: list = field(default_factory=list)
    count: int = 0

    def add(self, q: np.ndarray, ref: np.ndarray) -> slice:
        """Append a group's columns; the rows they take."""
        self.q.append(q)
        self.ref.append(ref)
        self.count += len(q)
        return slice(self.count - len(q), self.count)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return tuple(np.concatenate(part) if part else np.zeros(0) for part in (self.q, self.ref))


def _groups(model: Model, tree: _Tree, inertia_int: np.ndarray, dof_start: dict):
    """The groups in slot order, and the revolute and prismatic coordinates by kind."""
    nj, order, kinds, depth = model.njoints, tree.order, tree.kinds, tree.depth
    groups: list[Group] = []
    coordinates = {REVOLUTE: _Coordinates(), PRISMATIC: _Coordinates()}
    position = 0
    while position < nj:
        kind, level = kinds[order[position]], depth[order[position]]
        end = position + 1
        if kind not in (GENERIC, FREE):
            while end < nj and kinds[order[end]] == kind and depth[order[end]] == level:
                end += 1
        members = order[position:end]
        groups.append(_group(model, tree, kind, members, slice(position + 1, end + 1),
                             inertia_int, dof_start, coordinates))
        position = end
    return groups, coordinates


def _group(model: Model, tree: _Tree, kind: str, members: np.ndarray, slots: slice,
           inertia_int: np.ndarray, dof_start: np.ndarray, coordinates) -> Group:
    """One group: its constant transforms, congruence maps and coordinate rows."""
    k = len(members)
    pslots = tree.parent_slots(model, members)
    XT = np.repeat(np.eye(6)[None], k, axis=0)  # (k, 6, 6); generic joints: identity
    if kind not in (GENERIC, FREE):
        XT = _placements(model.joint_arrays, tree, members, pslots)
    coords = slice(0, 0)
    if kind in (REVOLUTE, PRISMATIC):
        coords = coordinates[kind].add(model.idx_q[members], model.joint_arrays.ref[members])
    arm = model.armature[model.idx_v[members]][:, None]
    kept_rows = kind == REVOLUTE and not np.any(arm)
    first_dof = int(dof_start[members[0]])
    ndof = int(model.nv_joint[members].sum())
    group = Group(
        kind=kind, slots=slots, joints=members, parents=_parents(pslots),
        at_world=bool(np.all(pslots == 0)), dofs=slice(first_dof, first_dof + ndof),
        coords=coords, XT=XT, XTt=np.ascontiguousarray(np.swapaxes(XT, 1, 2)),
        inertia=inertia_int[slots], armature=arm, kept_rows=kept_rows)
    if kind in (GENERIC, FREE):
        j = int(members[0])
        group.joint = model.joint_models[j]
        group.q_block = slice(int(model.idx_q[j]), int(model.idx_q[j] + model.nq_joint[j]))
        Qp = tree.Q[pslots[0]]
        group.Q_parent = None if np.array_equal(Qp, np.eye(3)) else Qp
        group.E_T = model.joint_models[j].E_T.copy()
        group.armature_full = model.armature[model.idx_v[j]:model.idx_v[j] + model.nv_joint[j]].copy()
    return group


def _placements(joints, tree: _Tree, members: np.ndarray, pslots: np.ndarray) -> np.ndarray:
    """(k, 6, 6) X_T of 1-dof joints: :func:`motion_transform` of ``Q_i^T E_T Q_parent`` and
    ``Q_parent^T p_T``, for all members at once (the same products as one at a time)."""
    Qp = tree.Q[pslots]
    E_T = np.swapaxes(joints.rotation[members], 1, 2)  # each R^T, as JointModel.E_T
    E = np.matmul(np.matmul(np.swapaxes(tree.Q[tree.slot[members]], 1, 2), E_T), Qp)
    r = np.matmul(np.swapaxes(Qp, 1, 2), joints.translation[members][:, :, None])[:, :, 0]
    X = np.zeros((len(members), 6, 6))
    X[:, :3, :3] = X[:, 3:, 3:] = E
    X[:, 3:, :3] = np.matmul(-E, skew(r))
    return X


def _parents(slots: np.ndarray) -> Parents:
    k = len(slots)
    distinct = len(np.unique(slots)) == k
    contiguous = distinct and np.array_equal(slots, np.arange(slots[0], slots[0] + k))
    read = slice(int(slots[0]), int(slots[0]) + k) if contiguous else slots.copy()
    return Parents(slots, read, contiguous)


def _crba_columns(model: Model, tree: _Tree, groups: list[Group]) -> dict:
    """CRBA's per-slot bookkeeping: group and row in it, own and subtree dof columns."""
    nj = model.njoints
    group_of_slot: list = [None]
    row_in_group = np.zeros(nj + 1, dtype=int)
    for g in groups:
        group_of_slot += [g] * g.size
        row_in_group[g.slots] = np.arange(g.size)
    start = model.idx_v[tree.order].tolist()
    own = (model.idx_v + model.nv_joint)[tree.order].tolist()
    end = (model.idx_v + model.nv_subtree)[tree.order].tolist()
    own_cols = [slice(0, 0)] + [slice(a, b) for a, b in zip(start, own)]
    subtree_cols = [slice(0, 0)] + [slice(a, b) for a, b in zip(start, end)]
    return {"own_cols": own_cols, "subtree_cols": subtree_cols,
            "group_of_slot": group_of_slot, "row_in_group": row_in_group}


def _first_contributions(groups: list[Group], I0: np.ndarray, nj: int) -> None:
    """Set each group's ``first``, ``leaves`` and ``first_I0`` for ABA's backward sweep.

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
        parents, member = np.unique(g.parents.slots, return_index=True)  # first child each
        g.first[member] = ~written[parents]
        written[parents] = True
        if g.kept_rows and g.parents.contiguous and g.first.all():
            g.first_I0 = I0[g.parents.read]


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
