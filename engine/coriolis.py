"""The Coriolis matrix C(q, v) (nv, nv): ``C v`` is the velocity-product part of the
generalized forces, ``h(q, v) - g(q)``, and ``dM/dt - 2 C`` is skew-symmetric. C is not
unique; this is Pinocchio's ``computeCoriolisMatrix`` (``src/algorithm/rnea.hxx``), the
sum over the bodies ``k`` of

    C = sum_k J_k^T (I_k dJ_k/dt + B_k J_k),
    B_k = (crf(v_k) I_k - I_k crm(v_k)) / 2 + icrf(I_k v_k) / 2,

everything in world axes about the world origin, (angular, linear): ``J_k`` (6, nv) body
k's Jacobian, ``I_k`` (6, 6) its spatial inertia, ``v_k = J_k v`` its spatial velocity,
``crm`` / ``crf`` spatial_v2's motion and force cross products and ``icrf(h)`` the matrix
with ``icrf(h) m = crf(m) h``. The first half of ``B_k`` is half the inertia's rate
``dI_k/dt``; the second is skew-symmetric, so ``C + C^T = dM/dt``. The columns of ``J_k``
and their rates are the dofs' ``S_d`` and ``dS_d/dt``
(:func:`treedyn.engine.jacobian_dot.world_rates`).

:func:`coriolis` (batched) sums the bodies by composites as Pinocchio does: with
``Ic_j = sum I_k`` and ``Bc_j = sum B_k`` over body j's subtree, entry ``(d, e)`` of dofs
of joints ``a`` and ``b`` is ``S_d . (Ic_b dS_e + Bc_b S_e)`` when ``b`` is ``a`` or below
it, ``S_d . (Ic_a dS_e + Bc_a S_e)`` when ``b`` is above ``a``, zero when neither supports
the other. :func:`coriolis_reference` is the sum itself, one state, body by body.
``tests/test_coriolis.py`` holds the two to each other and to Pinocchio.
"""
from __future__ import annotations

import numpy as np

from .jacobian_dot import world_rates
from .kinematics import WORLD, body_jacobians, placements
from .model import Model
from .named import support
from .reference import crf, crm
from .rotations import skew
from .spatial import motion_matrix
from .state import finish, states


def coriolis(model: Model, q, v=None) -> np.ndarray:
    """C (N, nv, nv) at q (N, nq), v (N, nv) (None: zeros, and C is zero); (nv, nv) for one
    state (q (nq,), v (nv,)). A coupled model (mimic joints enforced):
    ``G^T C_full(q_full, G v) G``."""
    batch, q, v = states(model, q, v)[:3]
    v = np.zeros((batch.count, model.nv)) if v is None else v
    if model.coupling is not None:
        c = model.coupling
        C = coriolis(c.full, c.expand_q(q), c.expand_v(v))
        return finish(c.project_matrix(C), batch)
    R, p, S, ov, dS = world_rates(model, q, v)
    X = motion_matrix(np.swapaxes(R, -1, -2), p)  # (N, nj, 6, 6) world -> body motions
    I = np.swapaxes(X, -1, -2) @ model.body_inertia @ X  # (N, nj, 6, 6) in the world
    half = _force_cross(ov / 2) @ I  # (N, nj, 6, 6): crf(v_k / 2) I_k
    h = (I @ ov[..., None])[..., 0] / 2  # (N, nj, 6) half the bodies' momenta
    B = half + np.swapaxes(half, -1, -2) + _momentum_cross(h)  # (N, nj, 6, 6)
    for i in reversed(range(model.njoints)):  # composites, leaves to root
        parent = model.parent[i]
        if parent >= 0:
            I[:, parent] += I[:, i]
            B[:, parent] += B[:, i]
    Ic, Bc = I[:, model.dof_joint], B[:, model.dof_joint]  # (N, nv, 6, 6): each dof's joint
    F = (Ic @ dS[..., None] + Bc @ S[..., None])[..., 0]  # (N, nv, 6) rows at or above
    A = (Ic @ S[..., None])[..., 0]  # (N, nv, 6) Ic_a S_d (Ic symmetric)
    Bt = (np.swapaxes(Bc, -1, -2) @ S[..., None])[..., 0]  # (N, nv, 6) Bc_a^T S_d
    k = model.dof_joint
    below = (k[:, None] <= k[None, :]) & (k[None, :] < model.subtree_end[k][:, None])
    above = (k[None, :] < k[:, None]) & (k[:, None] < model.subtree_end[k][None, :])
    C = (np.einsum("ndx,nex->nde", S, F) * below
         + (np.einsum("ndx,nex->nde", A, dS) + np.einsum("ndx,nex->nde", Bt, S)) * above)
    return finish(C, batch)


def _force_cross(m: np.ndarray) -> np.ndarray:
    """crf(m) (..., 6, 6) of motions m (..., 6): ``crf(m) @ f = m x* f``."""
    w, u = skew(m[..., :3]), skew(m[..., 3:])
    out = np.zeros(m.shape[:-1] + (6, 6))
    out[..., :3, :3] = out[..., 3:, 3:] = w
    out[..., :3, 3:] = u
    return out


def _momentum_cross(h: np.ndarray) -> np.ndarray:
    """icrf(h) (..., 6, 6) of forces h (..., 6): ``icrf(h) @ m = crf(m) @ h``."""
    out = np.zeros(h.shape[:-1] + (6, 6))
    out[..., :3, :3] = -skew(h[..., :3])
    out[..., :3, 3:] = out[..., 3:, :3] = -skew(h[..., 3:])
    return out


def coriolis_reference(model: Model, q, v) -> np.ndarray:
    """C (nv, nv) at one state q (nq,), v (nv,): the sum over the bodies of the module
    doc, one body at a time, with spatial_v2's 6x6 ``crm`` / ``crf`` (readable twin of
    :func:`coriolis`). ``dJ_k`` column ``d`` (joint ``i``) is ``crm(v_i) J_k[:, d]`` plus
    the rate of a joint's own q-dependent ``S``."""
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    if model.coupling is not None:
        c = model.coupling
        C = coriolis_reference(c.full, c.expand_q(q[None])[0], c.expand_v(v[None])[0])
        return c.G.T @ C @ c.G
    J = body_jacobians(model, q, WORLD)  # (nj, 6, nv) world axes about the origin
    R, p = placements(model, q)
    own = _own_rates(model, q, v, R, p)  # (6, nv)
    supports = support(model, np.arange(model.njoints))  # (nj, nv)
    C = np.zeros((model.nv, model.nv))
    for k in range(model.njoints):
        vk = J[k] @ v  # body k's velocity
        dJ = np.zeros((6, model.nv))
        for d in range(model.nv):
            i = model.dof_joint[d]
            if supports[k, d]:
                dJ[:, d] = crm(J[i] @ v) @ J[k][:, d] + own[:, d]
        Xk = motion_matrix(R[k].T, p[k])  # world -> body k, motions
        Ik = Xk.T @ model.body_inertia[k] @ Xk  # body k's inertia in the world
        Bk = (crf(vk) @ Ik - Ik @ crm(vk)) / 2 + _momentum_cross(Ik @ vk) / 2
        C += J[k].T @ (Ik @ dJ + Bk @ J[k])
    return C


def _own_rates(model: Model, q, v, R, p) -> np.ndarray:
    """(6, nv): ``X_i dS_local/dt`` of every dof, world axes about the origin (zero but
    for joints whose S depends on q)."""
    own = np.zeros((6, model.nv))
    for i, joint in enumerate(model.joint_models):
        dofs = slice(model.idx_v[i], model.idx_v[i] + model.nv_joint[i])
        rate = joint.subspace_rate(q[None, model.idx_q[i]:model.idx_q[i] + model.nq_joint[i]],
                                   v[None, dofs])
        if rate is not None:
            own[:3, dofs] = R[i] @ rate[0, :3]
            own[3:, dofs] = R[i] @ rate[0, 3:] + skew(p[i]) @ own[:3, dofs]
    return own
