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

Articulated/composite inertias are symmetric 6x6 matrices stored as 21 numbers in the
*spin basis* (:data:`SPIN_TERMS`): a rotation about z leaves 7 of them unchanged, turns 4
pairs by ``theta`` and 3 pairs by ``2 theta``, so ``X_J^T I X_J`` costs a few row
operations, and the constant part ``X_T^T (.) X_T`` is one (21, 21) matrix applied to all
states of a group with BLAS.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from .description import skew
from .model import Model

REVOLUTE, PRISMATIC, GENERIC, FREE = "revolute", "prismatic", "generic", "free"
KIND_OF = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC}
KIND_RANK = {REVOLUTE: 0, PRISMATIC: 1, GENERIC: 2, FREE: 2}
FREE_PERM = np.array([3, 4, 5, 0, 1, 2])  # free joint: v = (linear, angular) <-> motion rows

# ---------------------------------------------------------------------------------------
# The spin basis of symmetric 6x6 matrices. Cartesian index 3 * b + alpha: b = 0 angular,
# 1 linear; alpha = x, y, z. Each entry: list of (coefficient, i, j) terms on A[i, j].
# Rows 0-14 are the ones that stay in the articulated inertia IA - U D^-1 U^T of a revolute
# joint about z without armature (that update zeroes every entry in row or column 2);
# rows 15-20 are those entries.
SPIN_TERMS = (
    ((1, 5, 5),),  # 0: zz of block 11 (invariant)
    ((1, 0, 0), (1, 1, 1)), ((1, 3, 3), (1, 4, 4)),  # 1-2: xy traces of 00, 11
    ((1, 0, 3), (1, 1, 4)), ((1, 0, 4), (-1, 1, 3)),  # 3-4: trace and curl of 01
    ((1, 3, 5),), ((1, 0, 5),),  # 5-6: spin-1 pairs, x part
    ((1, 4, 5),), ((1, 1, 5),),  # 7-8: spin-1 pairs, y part
    ((1, 0, 0), (-1, 1, 1)), ((1, 3, 3), (-1, 4, 4)), ((1, 0, 3), (-1, 1, 4)),  # 9-11: spin-2 x
    ((2, 0, 1),), ((2, 3, 4),), ((1, 0, 4), (1, 1, 3)),  # 12-14: spin-2 pairs, y part
    ((1, 2, 2),), ((1, 2, 5),),  # 15-16: zz of 00 and 01 (invariant)
    ((1, 0, 2),), ((1, 2, 3),),  # 17-18: spin-1 pairs, x part
    ((1, 1, 2),), ((1, 2, 4),),  # 19-20: spin-1 pairs, y part
)
NSPIN = 21
KEPT = 15  # rows 0-14: all an articulated inertia past a revolute joint without armature has
# (x rows, y rows, angle multiple): pairs turned by theta or 2 theta under a rotation about
# z; the other 7 rows (0-4, 15-16) do not change under it
ROTATING = ((slice(5, 7), slice(7, 9), 1), (slice(9, 12), slice(12, 15), 2),
            (slice(17, 19), slice(19, 21), 1))


def _spin_matrices() -> tuple[np.ndarray, np.ndarray]:
    """P (21, 36): spin coordinates of vec(A) (row-major, A symmetric); Pinv (36, 21)."""
    P = np.zeros((NSPIN, 36))
    for row, terms in enumerate(SPIN_TERMS):
        for coef, i, j in terms:
            P[row, 6 * i + j] += 0.5 * coef  # symmetric average of A[i, j] and A[j, i]
            P[row, 6 * j + i] += 0.5 * coef
    pairs = [(i, j) for i in range(6) for j in range(i, 6)]
    B = np.zeros((36, len(pairs)))  # basis of symmetric matrices
    for k, (i, j) in enumerate(pairs):
        B[6 * i + j, k] = B[6 * j + i, k] = 1.0
    Pinv = B @ np.linalg.inv(P @ B)
    Pinv[np.abs(Pinv) < 1e-15] = 0.0
    return P, np.round(Pinv * 4) / 4  # entries are multiples of 1/4: make them exact


P_SPIN, PINV_SPIN = _spin_matrices()


def _column_rows(column: int) -> np.ndarray:
    """Spin rows holding A[:, column] (for a z column: each is one raw entry)."""
    rows = []
    for i in range(6):
        target = np.zeros(36)
        target[6 * i + column] += 0.5
        target[6 * column + i] += 0.5
        match = [r for r in range(NSPIN) if np.array_equal(P_SPIN[r], target)]
        rows.append(match[0])
    return np.array(rows)


U_ROWS = {REVOLUTE: _column_rows(2), PRISMATIC: _column_rows(5)}  # U = IA S as spin rows
S_ROW = {REVOLUTE: 2, PRISMATIC: 5}  # the motion component a 1-dof joint moves


def spin_of(A: np.ndarray) -> np.ndarray:
    """Spin coordinates (..., 21) of symmetric matrices (..., 6, 6)."""
    return A.reshape(A.shape[:-2] + (36,)) @ P_SPIN.T


def matrix_of(w: np.ndarray) -> np.ndarray:
    """Symmetric matrices (..., 6, 6) from spin coordinates (..., 21)."""
    return (w @ PINV_SPIN.T).reshape(w.shape[:-1] + (6, 6))


def congruence_map(X: np.ndarray) -> np.ndarray:
    """(21, 21) L with spin(X^T A X) = L spin(A) for symmetric A."""
    return P_SPIN @ np.kron(X.T, X.T) @ PINV_SPIN


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
    return np.column_stack([x, np.cross(z, x), z])


# ---------------------------------------------------------------------------------------
@dataclass
class Parents:
    """How a group reads its parents' rows and adds into them (slots, world = 0).

    ``read``: a slice (contiguous, one child each) or an index array for ``np.take``.
    ``unique``/``starts``: for the backward accumulation; with repeated parents the
    children's contributions are summed per parent (``np.add.reduceat``) first.
    """

    slots: np.ndarray  # (k,) parent slot of each member
    read: slice | np.ndarray
    unique: np.ndarray  # (u,) distinct parent slots, ascending
    starts: np.ndarray | None  # (u,) first member of each distinct parent; None: all distinct
    contiguous: bool  # unique parents form the slice read


@dataclass
class Group:
    """Bodies of one level and one joint kind (a generic joint is a group of its own)."""

    kind: str
    level: int
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
    L: np.ndarray  # (k, 21, 21) spin(XT^T A XT) = L spin(A)
    # revolute: L, or L[:, :, :KEPT] if kept_rows; prismatic (k, 21, 63) [L, L L1, L L2]
    L_aba: np.ndarray
    L_crba: np.ndarray  # revolute: L; prismatic (k, 21, 63) [L, L L1, L L2]
    joint: object = None  # generic: the JointModel
    q_block: slice | None = None  # generic: its q columns
    Q_parent: np.ndarray | None = None  # generic: parent internal rotation (None: identity)
    dof_count: int = 1
    armature_full: np.ndarray | None = None  # generic: (nv_j,)
    E_T: np.ndarray | None = None  # free root: its placement, world -> joint frame
    kept_rows: bool = False  # revolute, no armature: ABA's Ia has spin rows 0-14 only
    # ABA leaves to root: members whose parent receives its first articulated inertia from
    # them (that write also brings the parent's own W0), and members without children
    first: np.ndarray | None = None  # (k,) bool
    leaves: np.ndarray | None = None  # (l,) slots of the members that have no children
    # kept revolute, every parent distinct, contiguous and first: (k, 21, KEPT + 1)
    # [L_aba | W0 of the parent], applied to [Ia; 1] straight into the parents' rows
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
    W0: np.ndarray  # (nj + 1, 21, 1) body inertias in spin coordinates, internal frames
    force_map: np.ndarray  # (nj, 6, 6) model [force, torque] -> internal (torque, force)
    armature: np.ndarray  # (nv, 1) internal dof order
    has_armature: bool
    kmax: int  # largest group
    generic_dofs: int  # largest dof count of a generic joint
    Q: np.ndarray  # (nj + 1, 3, 3) internal rotation of each slot (link = Q internal)
    # CRBA (model dof order): per slot, own columns and subtree columns
    own_cols: list[slice] = field(default_factory=list)
    subtree_cols: list[slice] = field(default_factory=list)
    group_of_slot: list = field(default_factory=list)
    row_in_group: np.ndarray | None = None


def _parents(slots: np.ndarray) -> Parents:
    k = len(slots)
    unique, first = np.unique(slots, return_index=True)
    distinct = len(unique) == k
    contiguous = distinct and np.array_equal(slots, np.arange(slots[0], slots[0] + k))
    read = slice(int(slots[0]), int(slots[0]) + k) if contiguous else slots.copy()
    return Parents(slots, read, unique, None if distinct else np.sort(first), contiguous)


def build_plan(model: Model) -> Plan:
    nj = model.njoints
    parent = model.parent
    kinds = [KIND_OF.get(t, GENERIC) for t in model.joint_types]
    for i, t in enumerate(model.joint_types):  # Pinocchio's free-flyer on the world: own path
        if t == "free" and parent[i] < 0:
            kinds[i] = FREE
    depth = np.zeros(nj, dtype=int)
    for i in range(nj):
        depth[i] = 0 if parent[i] < 0 else depth[parent[i]] + 1

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
    slot_joint = np.array([-1] + order, dtype=int)

    Q = np.repeat(np.eye(3)[None], nj + 1, axis=0)
    for i in range(nj):
        if kinds[i] in (REVOLUTE, PRISMATIC):
            Q[slot[i]] = axis_frame(model.joint_models[i].axis)

    # internal dof order
    perm_v = np.concatenate([np.arange(model.idx_v[j], model.idx_v[j] + model.nv_joint[j])
                             for j in order] or [np.zeros(0, dtype=int)]).astype(int)
    dof_start = {}
    cursor = 0
    for j in order:
        dof_start[j] = cursor
        cursor += int(model.nv_joint[j])

    def blockdiag(R):
        B = np.zeros((6, 6))
        B[:3, :3] = B[3:, 3:] = R
        return B

    inertia_int = np.zeros((nj + 1, 6, 6))
    for i in range(nj):
        B = blockdiag(Q[slot[i]])
        inertia_int[slot[i]] = B.T @ model.body_inertia[i] @ B
    W0 = spin_of(inertia_int)[:, :, None]
    force_map = np.zeros((nj, 6, 6))
    for s, j in enumerate(order):
        Qt = Q[s + 1].T
        force_map[s, :3, 3:] = Qt  # torque (model columns 3:6) -> internal rows 0:3
        force_map[s, 3:, :3] = Qt  # force (model columns 0:3) -> internal rows 3:6

    # prismatic shift map: spin(X_J(d)^T A X_J(d)) = (1 + d L1 + d^2 L2) spin(A)
    def shift(d):
        return congruence_map(motion_transform(np.eye(3), np.array([0, 0, d])))
    L1 = (shift(1.0) - shift(-1.0)) / 2
    L2 = (shift(1.0) + shift(-1.0)) / 2 - np.eye(NSPIN)

    groups: list[Group] = []
    rev_q, rev_ref, pri_q, pri_ref = [], [], [], []
    position = 0
    while position < nj:
        j0 = order[position]
        kind, level = kinds[j0], depth[j0]
        end = position + 1
        if kind not in (GENERIC, FREE):
            while end < nj and kinds[order[end]] == kind and depth[order[end]] == level:
                end += 1
        members = np.array(order[position:end], dtype=int)
        k = len(members)
        pslots = np.array([slot[parent[j]] if parent[j] >= 0 else 0 for j in members], dtype=int)
        XT = np.zeros((k, 6, 6))
        L = np.zeros((k, NSPIN, NSPIN))
        for m, j in enumerate(members):
            jm = model.joint_models[j]
            Qp = Q[pslots[m]]
            if kind in (GENERIC, FREE):
                XT[m] = np.eye(6)
                continue
            E_c = Q[slot[j]].T @ jm.E_T @ Qp
            XT[m] = motion_transform(E_c, Qp.T @ jm.translation)
            L[m] = congruence_map(XT[m])
        coords = slice(0, 0)
        if kind == REVOLUTE:
            coords = slice(len(rev_q), len(rev_q) + k)
            rev_q += [model.idx_q[j] for j in members]
            rev_ref += [model.joint_models[j].ref for j in members]
        elif kind == PRISMATIC:
            coords = slice(len(pri_q), len(pri_q) + k)
            pri_q += [model.idx_q[j] for j in members]
            pri_ref += [model.joint_models[j].ref for j in members]
        arm = np.array([model.armature[model.idx_v[j]] for j in members])[:, None]
        kept_rows = kind == REVOLUTE and not np.any(arm)
        if kind == REVOLUTE:
            L_aba, L_crba = (L[:, :, :KEPT] if kept_rows else L), L
        elif kind == PRISMATIC:
            L_aba = np.concatenate([L, L @ L1, L @ L2], axis=2)
            L_crba = L_aba
        else:
            L_aba = L_crba = L
        first_dof = dof_start[members[0]]
        ndof = int(sum(model.nv_joint[j] for j in members))
        group = Group(
            kind=kind, level=int(level), slots=slice(position + 1, end + 1), joints=members,
            parents=_parents(pslots), at_world=bool(np.all(pslots == 0)),
            dofs=slice(first_dof, first_dof + ndof), coords=coords, XT=XT,
            XTt=np.ascontiguousarray(np.swapaxes(XT, 1, 2)), inertia=inertia_int[position + 1:end + 1],
            armature=arm, L=L, L_aba=np.ascontiguousarray(L_aba), L_crba=np.ascontiguousarray(L_crba),
            kept_rows=kept_rows)
        if kind in (GENERIC, FREE):
            j = int(members[0])
            group.joint = model.joint_models[j]
            group.q_block = slice(int(model.idx_q[j]), int(model.idx_q[j] + model.nq_joint[j]))
            Qp = Q[pslots[0]]
            group.Q_parent = None if np.array_equal(Qp, np.eye(3)) else Qp
            group.dof_count = int(model.nv_joint[j])
            group.E_T = model.joint_models[j].E_T.copy()
            group.armature_full = model.armature[model.idx_v[j]:model.idx_v[j] + model.nv_joint[j]].copy()
        groups.append(group)
        position = end

    _first_contributions(groups, W0, nj)
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
        own_cols[slot[j]] = slice(start, start + int(model.nv_joint[j]))
        subtree_cols[slot[j]] = slice(start, start + int(model.nv_subtree[j]))

    return Plan(
        nj=nj, nq=model.nq, nv=model.nv, groups=groups, slot_joint=slot_joint, perm_v=perm_v,
        identity_v=bool(np.array_equal(perm_v, np.arange(model.nv))),
        inv_perm_v=np.argsort(perm_v),
        rev_q=np.array(rev_q, dtype=int), rev_ref=np.array(rev_ref, dtype=float).reshape(-1, 1),
        pri_q=np.array(pri_q, dtype=int), pri_ref=np.array(pri_ref, dtype=float).reshape(-1, 1),
        W0=W0, force_map=force_map, armature=model.armature[perm_v].reshape(-1, 1).copy(),
        has_armature=bool(np.any(model.armature != 0)),
        kmax=max([g.size for g in groups] or [1]),
        generic_dofs=max([g.dof_count for g in groups if g.kind == GENERIC] or [0]),
        Q=Q, own_cols=own_cols, subtree_cols=subtree_cols, group_of_slot=group_of_slot,
        row_in_group=row_in_group)


def _first_contributions(groups: list[Group], W0: np.ndarray, nj: int) -> None:
    """Set each group's ``first``, ``leaves`` and ``L_first`` for ABA's backward sweep.

    ABA starts every articulated inertia from the body's own W0 and adds the children's
    contributions. Instead of writing W0 into all of them first, a body without children
    copies its W0 when its group comes up, and the first child to contribute to a body
    (in the sweep's order, leaves to root) writes W0 plus its contribution.
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
                np.concatenate([g.L_aba, W0[g.parents.read]], axis=2))


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
