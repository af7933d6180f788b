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
from .joints import RevoluteJoint
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
        self.qT = np.ascontiguousarray(q.T)  # (nq, N)
        count = len(q)
        self.slot = np.full(model.njoints, -1)
        self.slot[joints] = np.arange(len(joints))
        J, m = len(joints), int(model.nv_joint[joints].sum())
        self.W = workspace(("world_poses", J, m), model, count, lambda _: {
            "R": (J, 3, 3), "p": (J, 3), "work": (3, 9), "w": (m, 3), "u": (m, 3),
            "lever": (m, 3), "spare": (m, 3)}).view(count)
        self.R, self.p = self.W.R, self.W.p  # (J, 3, 3, N), (J, 3, N)
        self.work = self.W.work  # (3, 9, N): one joint's products
        turning = [row for row, i in enumerate(joints.tolist())
                   if isinstance(model.joint_models[i], RevoluteJoint)]
        theta = (self.qT[model.idx_q[joints[turning]]]
                 - np.array([model.joint_models[joints[row]].ref for row in turning])[:, None])
        self.sin, self.cos = dict(zip(turning, np.sin(theta))), dict(zip(turning, np.cos(theta)))
        for row, i in enumerate(joints):
            parent = model.parent[i]
            self._place(row, i, self.slot[parent] if parent >= 0 else -1)

    def _place(self, row: int, i: int, up: int) -> None:
        """Body i's ``R_i = R_parent E_i^T`` and ``p_i = p_parent + R_parent r_i`` (the
        parent's row ``up``; -1: the world)."""
        model, joint = self.model, self.model.joint_models[i]
        R, p = self.R[row], self.p[row]
        if row in self.sin:
            if up < 0:  # R = E^T = E_const^T + s E_sin^T + c E_cos^T
                np.multiply(joint.E_sin.T[..., None], self.sin[row], out=R)
                R += joint.E_cos.T[..., None] * self.cos[row]
                R += joint.E_const.T[..., None]
                p[:] = joint.translation[:, None]
                return
            self._turn(joint, self.R[up], R, self.sin[row], self.cos[row])
            np.matmul(joint.translation[None], self.R[up], out=p[:, None])
            p += self.p[up]
            return
        qj = self.q[:, model.idx_q[i]:model.idx_q[i] + model.nq_joint[i]]
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

    def _turn(self, joint: RevoluteJoint, Rp: np.ndarray, R: np.ndarray, s, c) -> None:
        """A revolute joint's ``R = Rp rotation Rot(axis, theta)`` into R (3, 3, N). About a
        coordinate axis ``±e_k`` only two columns of ``X = Rp rotation`` turn,
        ``X_i' = c X_i + s X_j``, ``X_j' = c X_j - s X_i`` ((i, j, k) cyclic; X = Rp when the
        joint's rotation is the identity, as in most URDFs): a third of the general form's
        memory traffic, ``Rp (E_const^T + s E_sin^T + c E_cos^T)`` in one product."""
        terms = self.work  # (3, 9, N)
        k = np.flatnonzero(joint.axis)
        if len(k) != 1 or abs(joint.axis[k[0]]) != 1.0:
            np.matmul(np.concatenate([joint.E_const, joint.E_sin, joint.E_cos]), Rp, out=terms)
            np.multiply(terms[:, 3:6], s, out=R)  # row a: Rp E_const^T | E_sin^T | E_cos^T
            np.multiply(terms[:, 6:9], c, out=terms[:, 3:6])
            R += terms[:, 3:6]
            R += terms[:, 0:3]
            return
        k = int(k[0])
        i, j = (k + 1) % 3, (k + 2) % 3
        X = Rp if np.array_equal(joint.rotation, np.eye(3)) else np.matmul(
            joint.rotation.T, Rp, out=terms[:, 0:3])  # (3, 3, N): row a of Rp rotation
        if joint.axis[k] < 0:
            s = np.negative(s, out=terms[0, 3])
        np.multiply(X[:, i], c, out=R[:, i])
        R[:, i] += np.multiply(X[:, j], s, out=terms[:, 4])
        np.multiply(X[:, j], c, out=R[:, j])
        R[:, j] -= np.multiply(X[:, i], s, out=terms[:, 4])
        R[:, k] = X[:, k]

    def of(self, bodies: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(R (k, 3, 3, N), p (k, 3, N)) of ``bodies`` (each swept; -1: the world)."""
        count = self.qT.shape[1]
        R = np.empty((len(bodies), 3, 3, count))
        p = np.empty((len(bodies), 3, count))
        for f, body in enumerate(bodies):
            if body < 0:
                R[f], p[f] = np.eye(3)[..., None], 0.0
            else:
                R[f], p[f] = self.R[self.slot[body]], self.p[self.slot[body]]
        return R, p

    def turned(self, x: np.ndarray) -> np.ndarray:
        """R_i x_i (J, 3, N) in the world for one body-fixed vector per swept joint x (J, 3)
        (a batched product: faster than the equivalent einsum)."""
        return np.matmul(x[:, None, None, :], self.R)[:, :, 0]

    def centres(self) -> np.ndarray:
        """The swept bodies' centres of mass in the world, ``p_i + R_i com_i`` (J, 3, N), a
        new array."""
        c = self.turned(self.model.body_com[self.joints])
        c += self.p
        return c

    def motions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(dofs (m,), w (m, 3, N), u (m, 3, N)): every dof of the swept joints, in dof
        order, and its motion in world axes about the world origin, ``w = R_k S_ang``,
        ``u = R_k S_lin + p_k x w`` (a revolute joint's S is its axis: all at once)."""
        model = self.model
        nv_joint = model.nv_joint[self.joints]
        dofs = np.concatenate([model.idx_v[k] + np.arange(n)
                               for k, n in zip(self.joints.tolist(), nv_joint.tolist())]
                              or [np.zeros(0, dtype=int)])  # in dof order (depth first)
        first = np.r_[0, np.cumsum(nv_joint)[:-1]]  # (J,) each joint's first position
        rows = np.repeat(np.arange(len(self.joints)), nv_joint)  # (m,)
        w, u = self.W.w, self.W.u  # (m, 3, N) each
        revolute = np.array([isinstance(model.joint_models[k], RevoluteJoint)
                             for k in self.joints], dtype=bool).reshape(-1)
        axes = np.array([model.joint_models[k].axis if turns else np.zeros(3)
                         for k, turns in zip(self.joints, revolute)]).reshape(-1, 3)
        turned = self.turned(axes)  # (J, 3, N): R_k axis_k, no gather
        w[first[revolute]] = turned[revolute]  # (R S_lin: zero for them)
        linear = []  # (positions, R S_lin) of the other joints
        for row in np.flatnonzero(~revolute):
            k = self.joints[row]
            at = slice(first[row], first[row] + nv_joint[row])
            qj = self.q[:, model.idx_q[k]:model.idx_q[k] + model.nq_joint[k]]
            S = model.joint_models[k].subspace(qj)  # (6, j) or (N, 6, j)
            if S.ndim == 2:  # row a of R_k S: S^T (j, 3) times row a of R_k (3, N)
                w[at] = np.swapaxes(np.matmul(S[:3].T, self.R[row]), 0, 1)  # (j, 3, N)
                linear.append((at, np.swapaxes(np.matmul(S[3:].T, self.R[row]), 0, 1)))
            else:
                w[at] = np.einsum("abn,nbm->man", self.R[row], S[:, :3])
                linear.append((at, np.einsum("abn,nbm->man", self.R[row], S[:, 3:])))
        cross3(np.take(self.p, rows, axis=0, out=self.W.lever), w, axis=-2, out=u)
        for at, part in linear:
            u[at] += part
        return dofs, w, u


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
