"""Per-joint blocks of M and of ABA, and lambda_max(M), without forming M: linear in the
model's size.

For models too large for the dense (N, nv, nv) mass matrix (a 100 000-link star). The
readable references are :func:`treedyn.engine.reference.articulated_blocks` (ABA's
D-blocks) and the diagonal blocks of :func:`treedyn.engine.crba.crba`; the tests hold this
module to them and to ``numpy.linalg.eigvalsh`` of the dense M.

Conventions (those of :mod:`treedyn.engine.reference`)
------------------------------------------------------
* ``TreeSweeps.blocks`` runs the backward sweep of CRBA and of ABA together, one tree level
  at a time (deepest first), every joint of a level at once: a Python step per level, not
  per joint. Per joint ``i`` (k dofs) it gives the composite block ``S_i^T Ic_i S_i`` (M's
  diagonal block without armature, Ic_i the inertia of i's whole subtree) and ABA's
  ``D_i = S_i^T IA_i S_i + armature_i``, each (N, k, k), for q (N, nq).
* ``mass_product`` is ``x -> M(q) x`` at one configuration in world coordinates about the
  world origin: with the model's joints depth first (every subtree a contiguous range
  ``i .. subtree_end[i] - 1``), a body's acceleration ``sum_{k ancestor of i} S_k x_k`` is a
  prefix sum and the force its subtree carries is a difference of prefix sums, so one
  product is a few vectorised passes, whatever the depth. Rounding: about ``nv eps`` of
  the largest terms, far below the tolerance of the eigenvalue.
* ``TreeSweeps.largest_eigenvalues`` is ``scipy.sparse.linalg.eigsh`` (Lanczos, k = 1, 'LA') on
  that product: relative residual under ``tol`` (1e-9 by default), so lambda_max is exact
  to about ``tol`` relative (the Ritz value is a lower bound of the true one).
* ``largest_eigenvalue_bounds`` is an upper bound of lambda_max(M) from the traces of M's
  diagonal blocks alone (``TreeSweeps.diagonal_traces``), exact on a star of 1-dof joints
  on a fixed base (M diagonal): a check that passes against it passes against lambda_max,
  which is then not computed.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse.linalg

from .joints import RevoluteJoint
from .model import Model
from .reference import JointTransforms, joint_transform
from .spatial import inertia_to_parent

LANCZOS_VECTORS = 8  # ARPACK's basis: fewer products than its default 20, same values
CHUNK_BYTES = 64 << 20  # working inertias held at once by TreeSweeps.blocks (bytes)


def joint_transforms(model: Model, q: np.ndarray) -> JointTransforms:
    """:func:`treedyn.engine.reference.joint_transforms` (which the tests hold this to), with
    every revolute joint (nearly all the joints of a large model) turned in one call
    (:meth:`~treedyn.engine.joints.RevoluteJoint.transforms`) instead of a call per joint;
    the other joint types take their own ``transform``."""
    nj, joints = model.njoints, model.joint_models
    E, r, S, blocks = [None] * nj, [None] * nj, [None] * nj, [None] * nj
    turning = [j for j, joint in enumerate(joints) if isinstance(joint, RevoluteJoint)]
    if turning:
        members = [joints[j] for j in turning]
        Et, translations = RevoluteJoint.transforms(members, q[:, model.idx_q[turning]])
        starts = model.idx_q[turning].tolist()
        for j, Ej, rj, joint, k in zip(turning, Et, translations, members, starts):
            E[j], r[j], S[j], blocks[j] = Ej, rj, joint.S, q[:, k:k + 1]
    for j, joint in enumerate(joints):
        if E[j] is None:
            blocks[j] = q[:, model.idx_q[j]:model.idx_q[j] + model.nq_joint[j]]
            E[j], r[j], S[j] = joint_transform(joint, blocks[j])
    return JointTransforms(E, r, S, blocks)


def joint_levels(model: Model) -> list[list[np.ndarray]]:
    """The joints by depth (roots first), each level split by joint nv: lists of index
    arrays."""
    depth = model.depth
    order = np.argsort(depth, kind="stable")  # by depth, tree order within a level
    levels = []
    for joints in np.split(order, np.cumsum(np.bincount(depth))[:-1]) if len(depth) else ():
        sizes = model.nv_joint[joints]
        levels.append([joints[sizes == k] for k in np.unique(sizes)])
    return levels


class TreeSweeps:
    """The joint transforms of the states q (N, nq), computed once, and the sweeps over
    the tree levels that use them (see the module doc)."""

    def __init__(self, model: Model, q: np.ndarray):
        self.model = model
        self.q = np.atleast_2d(np.asarray(q, dtype=float))  # (N, nq)
        self.count = len(self.q)
        self.transforms = joint_transforms(model, self.q)  # (nj lists, as the reference)
        self.levels = joint_levels(model)
        self.groups = [self._group(joints) for level in self.levels for joints in level]

    def _group(self, joints: np.ndarray) -> dict:
        """One level's joints of one nv, stacked over all states: S (K, N, 6, k), and for
        those below another joint ("inner") E (K', N, 3, 3), r (K', N, 3)."""
        model, T = self.model, self.transforms
        k = int(model.nv_joint[joints[0]])
        inner = model.parent[joints] >= 0
        child = joints[inner]
        return {"joints": joints, "k": k, "inner": inner, "child": child,
                "parent": model.parent[child],
                "S": self._subspaces(joints, k),
                "E": np.stack([T.E[j] for j in child]) if len(child) else None,
                "r": np.stack([T.r[j] for j in child]) if len(child) else None,
                "dofs": model.idx_v[joints][:, None] + np.arange(k)}  # (K, k)

    def _subspaces(self, joints: np.ndarray, k: int) -> np.ndarray:
        """S (K, N, 6, k) of ``joints``: a read-only broadcast when each is shared by all
        states (6, k), as for revolute and prismatic joints."""
        S = [self.transforms.S[j] for j in joints]
        if all(Sj.ndim == 2 for Sj in S):  # (np.stack's rows, in one concatenation)
            return np.broadcast_to(np.concatenate(S).reshape(len(S), 1, 6, k),
                                   (len(S), self.count, 6, k))
        return np.stack([np.broadcast_to(Sj, (self.count, 6, k)) for Sj in S])

    def blocks(self) -> tuple[list, list]:
        """(composite, articulated): per joint, ``S^T Ic S`` and ABA's D-block, each
        (N, k, k) (see the module doc). States are swept in chunks that keep the working
        inertias under :data:`CHUNK_BYTES`. A singular D-block is passed on to the parent
        with a pseudo-inverse, as the reference does."""
        model = self.model
        chunk = max(1, CHUNK_BYTES // max(1, 2 * 288 * model.njoints))
        out = [(np.empty((len(g["joints"]), self.count, g["k"], g["k"])),
                np.empty((len(g["joints"]), self.count, g["k"], g["k"]))) for g in self.groups]
        for start in range(0, self.count, chunk):
            self._chunk_blocks(slice(start, start + chunk), out)
        self._composite = [C for C, _ in out]  # per group (K, N, k, k): diagonal_traces
        composite: list = [None] * model.njoints
        articulated: list = [None] * model.njoints
        for g, (C, D) in zip(self.groups, out):
            for m, j in enumerate(g["joints"]):
                composite[j], articulated[j] = C[m], D[m]
        return composite, articulated

    def _chunk_blocks(self, rows: slice, out: list) -> None:
        """:meth:`blocks` for the states ``rows`` into ``out`` (per group (C, D)
        (K, N, k, k)): leaves to root, one level at a time."""
        model = self.model
        n = len(range(*rows.indices(self.count)))
        Ic = np.repeat(model.body_inertia[:, None], n, axis=1)  # (nj, n, 6, 6)
        IA = Ic.copy()
        for g, (C, D) in zip(reversed(self.groups), reversed(out)):
            joints, k, inner = g["joints"], g["k"], g["inner"]
            S = g["S"][:, rows]  # (K, n, 6, k)
            St = np.swapaxes(S, -1, -2)
            armature = model.armature[g["dofs"]][:, None, :, None] * np.eye(k)  # (K, 1, k, k)
            U = IA[joints] @ S  # (K, n, 6, k)
            D[:, rows] = St @ U + armature
            C[:, rows] = St @ Ic[joints] @ S
            if not inner.any():
                continue
            child, parent = g["child"], g["parent"]
            E, r = g["E"][:, rows].reshape(-1, 3, 3), g["r"][:, rows].reshape(-1, 3)
            Ui = U[inner]
            Ia = IA[child] - Ui @ np.linalg.pinv(D[inner, rows]) @ np.swapaxes(Ui, -1, -2)
            shape = Ia.shape  # (K', n, 6, 6)
            np.add.at(IA, parent, inertia_to_parent(E, r, Ia.reshape(-1, 6, 6)).reshape(shape))
            np.add.at(Ic, parent, inertia_to_parent(E, r, Ic[child].reshape(-1, 6, 6))
                      .reshape(shape))

    def diagonal_traces(self) -> np.ndarray:
        """(N, nj): the trace of every joint's diagonal block of M, armature included (from
        :meth:`blocks`, which it runs if it has not run)."""
        if not hasattr(self, "_composite"):
            self.blocks()
        model = self.model
        traces = np.empty((self.count, model.njoints))
        for g, C in zip(self.groups, self._composite):
            traces[:, g["joints"]] = np.trace(C, axis1=-2, axis2=-1).T
        return traces + np.bincount(model.dof_joint, model.armature, model.njoints)

    def products_bounded(self, limit: float = 1e50) -> bool:
        """Whether every number :meth:`largest_eigenvalues` multiplies stays far from
        overflow: the bodies' spatial inertias and the sum of every joint translation over
        the states (a bound of every body origin's distance from the world's) under
        ``limit``, so the world inertias (under ``limit``^3) and M x (for a unit x) are
        finite, and so is lambda_max."""
        model = self.model
        translations = np.concatenate(self.transforms.r or [np.zeros((0, 3))])  # (nj N, 3)
        with np.errstate(all="ignore"):
            return bool(np.abs(model.body_inertia).max(initial=0.0) < limit
                        and np.abs(translations).sum() < limit)

    def placements(self) -> tuple[np.ndarray, np.ndarray]:
        """(R (N, nj, 3, 3), p (N, nj, 3)): body axes and origins in the world, roots first
        one level at a time (:func:`treedyn.engine.kinematics.placements` joint by joint)."""
        model, T = self.model, self.transforms
        R = np.empty((self.count, model.njoints, 3, 3))
        p = np.empty((self.count, model.njoints, 3))
        for g in self.groups:
            roots = g["joints"][~g["inner"]]
            for j in roots:
                R[:, j], p[:, j] = np.swapaxes(T.E[j], -1, -2), T.r[j]
            if len(g["child"]):
                child, parent = g["child"], g["parent"]
                R_parent = R[:, parent]  # (N, K', 3, 3)
                R[:, child] = R_parent @ np.swapaxes(g["E"], 0, 1).swapaxes(-1, -2)
                p[:, child] = p[:, parent] + np.einsum("nkab,knb->nka", R_parent, g["r"])
        return R, p

    def world_subspaces(self, R: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Every dof's motion subspace in world coordinates about the world origin, (N, nv,
        6): ``[R S_ang ; R S_lin + p x (R S_ang)]``."""
        model = self.model
        S = np.empty((self.count, model.nv, 6))
        for g in self.groups:
            local = np.swapaxes(g["S"], -1, -2)  # (K, N, k, 6)
            S[:, g["dofs"].ravel()] = np.swapaxes(local, 0, 1).reshape(self.count, -1, 6)
        Rd, pd = R[:, model.dof_joint], p[:, model.dof_joint]  # (N, nv, 3, 3), (N, nv, 3)
        angular = np.einsum("ndab,ndb->nda", Rd, S[..., :3])
        linear = np.einsum("ndab,ndb->nda", Rd, S[..., 3:]) + np.cross(pd, angular)
        return np.concatenate([angular, linear], axis=-1)

    def largest_eigenvalues(self, tol: float = 1e-9) -> np.ndarray:
        """lambda_max(M(q)) (N,) by Lanczos on :func:`mass_product` (see the module doc)."""
        model = self.model
        R, p = self.placements()
        S = self.world_subspaces(R, p)
        largest = np.zeros(self.count)
        start = np.random.default_rng(0).standard_normal(model.nv)

        for s in range(self.count):
            inertia = inertia_to_parent(np.swapaxes(R[s], -1, -2), p[s], model.body_inertia)
            product = mass_product(model, S[s], inertia)
            if model.nv <= 2:  # too small for Lanczos: M column by column
                M = np.stack([product(e) for e in np.eye(model.nv)], axis=1)
                largest[s] = np.linalg.eigvalsh(M)[-1] if model.nv else 0.0
                continue
            largest[s] = lanczos_largest(product, model.nv, start, tol)
        return largest


BOUND_MARGIN = 1e-3  # relative: covers the rounding of the bound's sums and of Lanczos


def largest_eigenvalue_bounds(model: Model, traces: np.ndarray) -> np.ndarray:
    """Upper bounds of lambda_max(M(q)) (N,) from ``traces`` (N, nj), the traces t_i of
    M's diagonal blocks: ``(1 + BOUND_MARGIN) max_i sum_k t_k`` over the joints k related
    to i (its ancestors, i and its descendants), each sum a few prefix sums over the
    depth-first joint order.

    Why it bounds: M is positive semidefinite, so each block's norm is at most its trace,
    ``|M_ik| <= sqrt(t_i t_k)``, and M_ik = 0 when neither of i, k is an ancestor of the
    other; so ``x^T M x <= y^T B y`` with y_i = |x_i| and B_ik = sqrt(t_i t_k) on related
    pairs, and ``lambda_max(B) <= max_i (B w)_i / w_i`` with w_i = sqrt(t_i). Exact for a
    star of 1-dof joints on a fixed base (M diagonal), the trace of M for a chain. The sums
    round to about nv^2 eps of the bound, under the margin to nv ~ 10^6."""
    t = np.maximum(np.atleast_2d(traces), 0.0)  # (rounding of a massless block's zero)
    nj, end = model.njoints, model.subtree_end
    left = np.zeros((len(t), nj + 1))
    np.add.at(left, (slice(None), end), t)  # joint k's term leaves the prefix sums at end[k]
    ancestors = np.cumsum(t - left[:, :nj], axis=1)  # i's ancestors' and its own
    prefix = np.zeros((len(t), nj + 1))
    np.cumsum(t, axis=1, out=prefix[:, 1:])
    related = ancestors + prefix[:, end] - prefix[:, :nj] - t  # + its subtree's, i once
    return (1.0 + BOUND_MARGIN) * related.max(axis=1, initial=0.0)


def lanczos_largest(product, n: int, start: np.ndarray, tol: float) -> float:
    """The largest eigenvalue of the symmetric operator ``product`` (n > 2) by eigsh from
    ``start`` (n,); 0 for the zero operator (a random start it maps to 0), nan when
    ARPACK neither converges nor has a converged Ritz value."""
    if not np.any(product(start)):
        return 0.0  # ARPACK stops on a zero vector
    operator = scipy.sparse.linalg.LinearOperator((n, n), matvec=product, dtype=float)
    try:
        values = scipy.sparse.linalg.eigsh(operator, k=1, which="LA", tol=tol, v0=start,
                                           ncv=min(n, LANCZOS_VECTORS),
                                           return_eigenvectors=False)
    except scipy.sparse.linalg.ArpackNoConvergence as failure:
        values = failure.eigenvalues
    except scipy.sparse.linalg.ArpackError:
        values = ()
    return float(values[0]) if len(values) else float("nan")


def mass_product(model: Model, S: np.ndarray, inertia: np.ndarray):
    """``x -> M x`` (nv,) at one configuration from every dof's motion subspace S (nv, 6)
    and every body's spatial inertia (nj, 6, 6), both in world coordinates about the world
    origin (armature included): body accelerations as prefix sums over the depth-first
    joint order, their subtrees' forces as differences of prefix sums."""
    nj, end = model.njoints, model.subtree_end
    rows = np.arange(nj)
    # joint k's motion leaves the prefix sum at end[k]: flat places in a (6, nj + 1) array
    leaving = (np.arange(6)[:, None] * (nj + 1) + end).ravel()
    S = np.ascontiguousarray(S.T)  # (6, nv): prefix sums run along contiguous rows
    inertia = np.ascontiguousarray(np.moveaxis(inertia, 0, -1))  # (6, 6, nj)
    one_dof = bool(np.all(model.nv_joint == 1))  # else every joint has dofs (compact tree)

    def product(x: np.ndarray) -> np.ndarray:
        x = np.ravel(x)
        motion = S * x  # (6, nv): S_i x_i
        if not one_dof:
            motion = np.add.reduceat(motion, model.idx_v, axis=1)  # (6, nj) per joint
        left = np.bincount(leaving, motion.ravel(), 6 * (nj + 1)).reshape(6, nj + 1)
        acceleration = np.cumsum(motion - left[:, :nj], axis=1)  # (6, nj)
        force = np.einsum("abj,bj->aj", inertia, acceleration)
        total = np.zeros((6, nj + 1))
        np.cumsum(force, axis=1, out=total[:, 1:])
        carried = total[:, end] - total[:, rows]  # (6, nj): the force of each subtree
        if not one_dof:
            carried = carried[:, model.dof_joint]
        return np.einsum("ad,ad->d", S, carried) + model.armature * x

    return product
