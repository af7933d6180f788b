"""Where the bodies a question needs are in the world, and how each dof moves them, for a
batch of states: the fast path under :mod:`treedyn.engine.named` (``dyn frames``,
``dyn jacobian``, ``dyn com``).

The readable twins are :func:`treedyn.engine.kinematics.placements` (joint by joint,
states first) and :func:`~treedyn.engine.kinematics.body_jacobians`; ``tests/
test_named_frames.py`` holds the functions built on this module to them, to Pinocchio and
to MuJoCo.

Layout
------
States run along the **last** axis: a rotation is (3, 3, N), a point (3, N), so each step of
the forward loop is a few whole-array operations on contiguous rows (the layout of
:mod:`treedyn.engine.batch`) rather than N small matrices.

* Only the joints asked for are swept (:func:`ancestry`: the joints that support the
  frames' bodies, or a subtree and its ancestors): a frame at the end of an arm costs that
  arm, not the whole robot.
* A revolute joint's ``E^T = E_const^T + sin E_sin^T + cos E_cos^T`` (its constants,
  :class:`~treedyn.engine.joints.RevoluteJoint`) makes ``R_i = R_parent E_i^T`` one
  product of the parent's rows by a constant (9, 3) block and two scaled sums; any other
  joint type takes its ``transform`` (states first) as it is.
* Conventions are :mod:`treedyn.engine.kinematics`'s: ``R_i`` holds body ``i``'s axes as
  columns in world coordinates, ``p_i`` its origin; a dof's motion ``(w_d, u_d)`` is
  written in world axes about the world origin (Featherstone's (angular, linear)).
"""
from __future__ import annotations

import numpy as np

from .batch.memory import workspace
from .batch.sincos import sincos
from .joints import FreeJoint, RevoluteJoint, SphericalJoint
from .model import Model
from .spatial import cross3


def ancestry(model: Model, bodies) -> np.ndarray:
    """The joints that move ``bodies`` (ancestors or self; -1, the world, has none), sorted
    parents first; linear in the length of the paths."""
    marked = np.zeros(model.njoints, dtype=bool)
    for body in np.unique(np.asarray(bodies, dtype=int)):
        while body >= 0 and not marked[body]:
            marked[body] = True
            body = model.parent[body]
    return np.flatnonzero(marked)


class WorldPoses:
    """``R`` (J, 3, 3, N) and ``p`` (J, 3, N): the world placements, states last, of the
    joints ``joints`` (closed under parents, sorted) of the model at q (N, nq); ``slot[i]``
    is joint i's row (-1 when not swept).

    Its arrays are views of the thread's work arena (:func:`~treedyn.engine.batch.memory.
    workspace`), reused across calls so that large batches do not page-fault fresh
    temporaries: they hold until the next engine call in this thread, so what a caller
    keeps is copied out (every function of :mod:`treedyn.engine.named` returns new arrays).
    """

    def __init__(self, model: Model, q: np.ndarray, joints: np.ndarray):
        self.model, self.joints = model, joints
        self.q = q  # (N, nq)
        count = len(q)
        self.slot = np.full(model.njoints, -1)
        widths = model.nv_joint[joints]  # (J,)
        self.first = np.cumsum(widths) - widths  # (J,) each row's first dof in the columns
        self.slot[joints] = np.arange(len(joints))
        self.turns = _turns(model, joints)  # per row: (angle, k, sign, plain) or None
        angles = [row for row, turn in enumerate(self.turns) if turn is not None]
        J, m, T = len(joints), int(model.nv_joint[joints].sum()), len(angles)
        self.W = workspace(("world_poses", J, m, T), model, count, lambda _: {
            "R": (J, 3, 3), "p": (J, 3), "work": (3, 9), "cols": (6, m), "sin": (T,),
            "cos": (T,), "scratch": (4, T)}).view(count)
        self.R, self.p = self.W.R, self.W.p  # (J, 3, 3, N), (J, 3, N)
        self.work = self.W.work  # (3, 9, N): one joint's products
        if T:  # sin and cos of every revolute angle at once (the table's, ~1 ulp)
            theta, t1, t2, index = self.W.scratch
            arrays = model.joint_arrays
            turning = joints[angles]
            np.subtract(q[:, _slice(model.idx_q[turning])].T, arrays.ref[turning, None],
                        out=theta)
            sincos(theta, self.W.sin, self.W.cos, t1, t2, index.view(np.intp))
        for row, i in enumerate(joints.tolist()):
            parent = model.parent[i]
            self._place(row, i, self.slot[parent] if parent >= 0 else -1)

    def _place(self, row: int, i: int, up: int) -> None:
        """Body i's ``R_i = R_parent E_i^T`` and ``p_i = p_parent + R_parent r_i`` (the
        parent's row ``up``; -1: the world)."""
        model, joint = self.model, self.model.joint_models[i]
        R, p = self.R[row], self.p[row]
        turn = self.turns[row]
        if turn is not None:
            s, c = self.W.sin[turn[0]], self.W.cos[turn[0]]
            if up < 0:  # R = E^T = E_const^T + s E_sin^T + c E_cos^T
                np.multiply(joint.E_sin.T[..., None], s, out=R)
                R += joint.E_cos.T[..., None] * c
                R += joint.E_const.T[..., None]
                p[:] = joint.translation[:, None]
                return
            self._turn(joint, turn, self.R[up], R, s, c)
            if not joint.translation.any():  # (many URDF joints sit at their parent's origin)
                np.copyto(p, self.p[up])
                return
            np.matmul(joint.translation[None], self.R[up], out=p[:, None])
            p += self.p[up]
            return
        qj = self.q[:, model.idx_q[i]:model.idx_q[i] + model.nq_joint[i]]
        if isinstance(joint, (FreeJoint, SphericalJoint)):
            self._quaternion(joint, qj, up, R, p)
            return
        E, r = joint.transform(qj)  # (N, 3, 3), (N, 3)
        E, r = np.broadcast_to(E, (len(qj), 3, 3)), np.broadcast_to(r, (len(qj), 3))
        if up < 0:
            R[:] = np.transpose(E, (2, 1, 0))
            p[:] = r.T
            return
        Rp = self.R[up]
        np.einsum("acn,nbc->abn", Rp, E, out=R)
        np.einsum("acn,nc->an", Rp, r, out=p)
        p += self.p[up]

    def _quaternion(self, joint, qj: np.ndarray, up: int, R: np.ndarray, p: np.ndarray):
        """A free or ball joint's ``R = R_parent rotation Q`` and ``p = p_parent +
        R_parent r``, ``Q`` its quaternion's rotation and ``r`` its origin in the parent
        (``translation + rotation x`` for a free joint), states last throughout."""
        plain = np.array_equal(joint.rotation, np.eye(3))
        Q = joint.rotation_of(qj, out=R if up < 0 and plain else self.work[:, 0:3])
        if up < 0 and not plain:
            np.einsum("ac,cbn->abn", joint.rotation, Q, out=R)
        elif up >= 0:  # row a of R_parent rotation, then its product with Q
            X = np.matmul(joint.rotation.T, self.R[up], out=self.work[:, 3:6])
            np.einsum("acn,cbn->abn", X, Q, out=R)
        if not isinstance(joint, FreeJoint):
            r = np.broadcast_to(joint.translation[:, None], p.shape)
        else:
            r = np.matmul(joint.rotation, qj[:, :3].T, out=self.work[0, 6:9])
            r += joint.translation[:, None]
        if up < 0:
            p[:] = r
            return
        np.einsum("acn,cn->an", self.R[up], r, out=p)
        p += self.p[up]

    def _turn(self, joint: RevoluteJoint, turn: tuple, Rp: np.ndarray, R: np.ndarray, s,
              c) -> None:
        """A revolute joint's ``R = Rp rotation Rot(axis, theta)`` into R (3, 3, N). About a
        coordinate axis ``±e_k`` only two columns of ``X = Rp rotation`` turn,
        ``X_i' = c X_i + s X_j``, ``X_j' = c X_j - s X_i`` ((i, j, k) cyclic; X = Rp when the
        joint's rotation is the identity, as in most URDFs): a third of the general form's
        memory traffic, ``Rp (E_const^T + s E_sin^T + c E_cos^T)`` in one product."""
        terms = self.work  # (3, 9, N)
        _, k, sign, plain = turn
        if k < 0:
            np.matmul(np.concatenate([joint.E_const, joint.E_sin, joint.E_cos]), Rp, out=terms)
            np.multiply(terms[:, 3:6], s, out=R)  # row a: Rp E_const^T | E_sin^T | E_cos^T
            np.multiply(terms[:, 6:9], c, out=terms[:, 3:6])
            R += terms[:, 3:6]
            R += terms[:, 0:3]
            return
        i, j = (k + 1) % 3, (k + 2) % 3
        X = Rp if plain else np.matmul(joint.rotation.T, Rp, out=terms[:, 0:3])  # (3, 3, N)
        if sign < 0:
            s = np.negative(s, out=terms[0, 3])
        np.multiply(X[:, i], c, out=R[:, i])
        R[:, i] += np.multiply(X[:, j], s, out=terms[:, 4])
        np.multiply(X[:, j], c, out=R[:, j])
        R[:, j] -= np.multiply(X[:, i], s, out=terms[:, 4])
        R[:, k] = X[:, k]

    def of(self, bodies: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(R (k, 3, 3, N), p (k, 3, N)) of ``bodies`` (each swept; -1: the world)."""
        count = self.q.shape[0]
        R = np.empty((len(bodies), 3, 3, count))
        p = np.empty((len(bodies), 3, count))
        for f, body in enumerate(bodies):
            if body < 0:
                R[f], p[f] = np.eye(3)[..., None], 0.0
            else:
                R[f], p[f] = self.R[self.slot[body]], self.p[self.slot[body]]
        return R, p

    def centres(self) -> np.ndarray:
        """The swept bodies' centres of mass in the world, ``p_i + R_i com_i`` (J, 3, N), a
        new array."""
        c = np.empty_like(self.p)
        for row, com in enumerate(self.model.body_com[self.joints]):
            np.matmul(com[None], self.R[row], out=c[row][:, None])  # row a: R_a . com
        c += self.p
        return c

    def rows_to(self, body: int) -> list[int]:
        """The rows of the joints that move ``body`` (-1: none), parents first."""
        rows = []
        while body >= 0:
            rows.append(int(self.slot[body]))
            body = self.model.parent[body]
        return rows[::-1]

    def columns(self, rows, lever: np.ndarray, scale, out: np.ndarray) -> list[int]:
        """The dofs (m,) of the swept joints at ``rows``, in that order, and each one's
        motion, component-major: ``out[3:, n] = w_d = R_k S_ang`` and ``out[:3, n] =
        scale_k R_k S_lin + w_d x lever_k`` (3, N) for dof ``d`` of joint ``k`` (row
        ``rows[a]``, ``lever[a]`` (3, N), ``scale[a]`` or 1 when None), out (6, >= m, N).
        ``lever_k = -p_k`` is the motion about the world origin ``u_d``; a point ``o``'s
        velocity is ``o - p_k`` (:meth:`column`)."""
        dofs = []
        for a, row in enumerate(rows):
            n = len(dofs)
            dofs += self.column(row, lever[a], 1.0 if scale is None else scale[a],
                                out[:3, n:], out[3:, n:])
        return dofs

    def column(self, row: int, lever: np.ndarray, scale: float, lin: np.ndarray,
               w: np.ndarray | None) -> range:
        """The dofs of the swept joint at ``row`` (k), and into the first j columns of lin
        and w (3, >= j, N) each one's ``scale R_k S_lin + w_d x lever`` and ``w_d = R_k
        S_ang`` (:meth:`columns`); w None: not kept. A revolute joint about ``±e_k``:
        ``w_d = ±`` a column of ``R_k`` (its ``S_lin`` is zero), the sign taken by the
        order of the cross product."""
        model, i = self.model, int(self.joints[row])
        joint, turn, dofs = model.joint_models[i], self.turns[row], model.idx_v[i]
        dofs = range(dofs, dofs + model.nv_joint[i])
        if turn is not None and turn[1] >= 0:
            axis = self.R[row][:, turn[1]]  # (3, N)
            if w is not None:
                np.multiply(axis, turn[2], out=w[:, 0])
            cross3(*((axis, lever) if turn[2] > 0 else (lever, axis)), axis=-2, out=lin[:, 0])
            return dofs
        w = self.work[:, :len(dofs)] if w is None else w[:, :len(dofs)]  # (3, j, N)
        if turn is not None:
            np.matmul(joint.axis[None], self.R[row], out=w)  # (3, 1, N)
            cross3(w[:, 0], lever, axis=-2, out=lin[:, 0])
            return dofs
        qj = self.q[:, model.idx_q[i]:model.idx_q[i] + model.nq_joint[i]]
        S = joint.subspace(qj)  # (6, j) or (N, 6, j)
        if S.ndim == 2:  # row a of R_k S: S^T (j, 3) times row a of R_k (3, N)
            np.matmul(S[:3].T, self.R[row], out=w)
            linear = np.matmul(S[3:].T, self.R[row])
        else:
            np.einsum("abn,nbm->amn", self.R[row], S[:, :3], out=w)
            linear = np.einsum("abn,nbm->amn", self.R[row], S[:, 3:])
        linear *= scale
        lin[:, :len(dofs)] = cross3(w, lever[:, None], axis=-3)
        lin[:, :len(dofs)] += linear
        return dofs

    def motions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(dofs (m,), w (m, 3, N), u (m, 3, N)): every dof of the swept joints, in dof
        order, and its motion in world axes about the world origin, ``w = R_k S_ang``,
        ``u = R_k S_lin + p_k x w`` (:meth:`columns`; views of the work arena)."""
        cols = self.W.cols  # (6, m, N)
        dofs = self.columns(range(len(self.joints)), np.negative(self.p), None, cols)
        cols += 0.0  # -0.0 (a product of exact zeros) prints as 0.0
        return (np.array(dofs, dtype=int), np.swapaxes(cols[3:], 0, 1),
                np.swapaxes(cols[:3], 0, 1))


def _turns(model: Model, joints: np.ndarray) -> list:
    """Per swept joint, None for a joint that is not revolute, else (its angle's row among
    the revolute ones, k for an axis ``±e_k`` else -1, the sign, whether its rotation is
    the identity)."""
    arrays, turns, angle = model.joint_arrays, [], 0
    axes = arrays.axis[joints]  # (J, 3)
    k = np.argmax(np.abs(axes), axis=1).tolist()
    single = (np.count_nonzero(axes, axis=1) == 1).tolist()
    signs = np.sign(axes[np.arange(len(joints)), k]).tolist()
    plain = (arrays.rotation[joints] == np.eye(3)).all(axis=(1, 2)).tolist()
    for row, i in enumerate(joints.tolist()):
        if not isinstance(model.joint_models[i], RevoluteJoint):
            turns.append(None)
            continue
        coordinate = single[row] and abs(axes[row, k[row]]) == 1.0
        turns.append((angle, k[row] if coordinate else -1, signs[row], plain[row]))
        angle += 1
    return turns


def columns_states_first(source: np.ndarray, dofs, out: np.ndarray, tile: int = 512) -> None:
    """``out[:, :, dofs] = source`` (a, m, N) with the states' axis moved first, and zero
    in every other column of out (N, a, nv), ``tile`` states at a time: a transposed copy
    through the cache, each tile zeroed (when a column has no dof) and filled while it is
    in cache (for (6, 16, 4096) doubles into (4096, 6, 38), 0.8 ms where zeroing it all,
    then one ufunc pass through a transposed view took 1.2-1.5 ms)."""
    pieces = runs(np.asarray(dofs, dtype=int))
    gaps = len(dofs) < out.shape[-1]
    for start in range(0, out.shape[0], tile):
        block = out[start:start + tile]
        if gaps:
            block[...] = 0.0
        for positions, columns in pieces:
            np.copyto(block[..., columns],
                      source[:, positions, start:start + tile].transpose(2, 0, 1))


def _slice(indices: np.ndarray):
    """``indices`` as a slice when they are consecutive (a view, not a gather)."""
    if len(indices) and np.array_equal(indices, np.arange(indices[0], indices[0] + len(indices))):
        return slice(int(indices[0]), int(indices[0]) + len(indices))
    return indices


def subtree_sums(x: np.ndarray, end: np.ndarray, axis: int = 0) -> np.ndarray:
    """For every joint k along ``axis`` of ``x`` (joints depth first, so that each subtree
    is the range ``k .. end[k] - 1``), the sum of ``x`` over its subtree: a difference of
    prefix sums, linear in the number of joints."""
    x = np.moveaxis(x, axis, 0)
    total = np.zeros((len(x) + 1,) + x.shape[1:])
    np.cumsum(x, axis=0, out=total[1:])
    return np.moveaxis(total[end] - total[:len(x)], 0, axis)


def runs(indices: np.ndarray) -> list[tuple[slice, slice]]:
    """The runs of consecutive numbers in sorted ``indices``: (positions, values) slice
    pairs, so ``out[..., values] = x[..., positions]`` copies as slices (a fancy index
    over a transposed array is several times slower)."""
    if not len(indices):
        return []
    breaks = np.flatnonzero(np.diff(indices) != 1) + 1
    starts, stops = np.r_[0, breaks], np.r_[breaks, len(indices)]
    return [(slice(a, b), slice(indices[a], indices[a] + b - a))
            for a, b in zip(starts.tolist(), stops.tolist())]
