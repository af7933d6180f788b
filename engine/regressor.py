"""The joint torque regressor: tau = Y(q, v, a) pi, linear in the inertial parameters.

Parameters (Pinocchio's ``Inertia.toDynamicParameters`` order), 10 per body of
``model.bodies`` (a URDF link with the links welded to it, an MJCF <body>)::

    pi_b = (m, m c_x, m c_y, m c_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz)

with ``c`` the centre of mass and ``I`` the rotational inertia about the *body origin*,
both in the body's frame ``model.body_frames[j]`` of the joint ``j`` that carries its
inertia (the last joint of an MJCF body with several). Columns: body ``b``'s ten at
``10 b``, in ``model.bodies`` order, then the optional per-joint terms, for every dof of
a joint that is not a floating base: ``armature`` (tau += armature a), ``viscous``
(tau += viscous v) and ``coulomb`` (tau += coulomb sign(v)), each term's dofs together.

Body regressor (Featherstone's conventions, as :mod:`treedyn.engine.reference`): a body
with spatial velocity ``v = (w, u)`` and gravity-shifted acceleration ``a = (dw, du)`` in its
frame, ``a_c = du + w x u`` (the origin's classical acceleration minus gravity), needs the
force ``(torque, force) = Yb(v, a) pi_b`` with::

    torque = [ 0,    -[a_c]x,             L(dw) + [w]x L(w) ]
    force  = [ a_c,  [dw]x + [w]x [w]x,   0                 ]

where ``L(w) iota = I w`` for iota = (Ixx, Ixy, Iyy, Ixz, Iyz, Izz). Joint ``i``'s rows
gather the bodies of its subtree: ``Y[i, b] = S_i^T X_{b->i}^T Yb``.

:func:`regressor_reference` is the readable path, one state at a time;
:func:`treedyn.engine.batch.regressor.regressor` the batched one, held to it by
``tests/test_regressor.py`` (``test_batched_equals_reference``).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .inertia_forms import TENSOR_INDEX, dynamic_parameters, spatial_inertia
from .model import Model
from .reference import crm, one_state
from .rotations import skew
from .state import world_acceleration

PARAMETERS = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
JOINT_TERMS = ("armature", "viscous", "coulomb")
FLOATING = ("free", "free_world")


class Layout(NamedTuple):
    """The columns of a model's regressor."""

    bodies: tuple[str, ...]  # (nb,) names, model.bodies order
    body_joint: np.ndarray  # (nb,) the joint carrying each body's inertia
    terms: tuple[str, ...]  # per-joint terms, a subset of JOINT_TERMS in that order
    term_dofs: np.ndarray  # (nd,) the dofs that take per-joint terms
    names: tuple[str, ...]  # (P,) "body.m", "body.Ixx", ..., "armature.joint" ...

    @property
    def size(self) -> int:
        return len(self.names)

    @property
    def inertial(self) -> int:
        """Number of inertial columns, 10 nb."""
        return 10 * len(self.bodies)


def layout_of(model: Model, terms=()) -> Layout:
    """The regressor columns of ``model`` with the per-joint ``terms`` (names from JOINT_TERMS)."""
    unknown = [t for t in terms if t not in JOINT_TERMS]
    if unknown:
        raise ValueError(f"unknown per-joint term {unknown[0]!r}; known: {', '.join(JOINT_TERMS)}")
    terms = tuple(t for t in JOINT_TERMS if t in terms)
    bodies = tuple(body.name for body in model.bodies)
    body_joint = np.array([body.joints[-1] for body in model.bodies], dtype=int)
    dofs = [d for d in range(model.nv) if model.joint_types[model.dof_joint[d]] not in FLOATING]
    labels = [_dof_label(model, d) for d in dofs]
    names = [f"{b}.{p}" for b in bodies for p in PARAMETERS]
    names += [f"{term}.{label}" for term in terms for label in labels]
    return Layout(bodies, body_joint, terms, np.array(dofs, dtype=int), tuple(names))


def _dof_label(model: Model, dof: int) -> str:
    joint = int(model.dof_joint[dof])
    name = model.joint_names[joint]
    return name if model.nv_joint[joint] == 1 else f"{name}:{dof - model.idx_v[joint]}"


# ------------------------------------------------------------------- parameter algebra
def rotated_parameters(rotation: np.ndarray) -> np.ndarray:
    """P (10, 10) with pi' = P pi for the same body in a frame whose axes are
    ``x = rotation @ x'`` (same origin): I' = R^T I R, h' = R^T h."""
    B = np.zeros((6, 6))
    B[:3, :3] = B[3:, 3:] = rotation
    basis = spatial_inertia(np.eye(10))  # (10, 6, 6), linear in the parameters
    return dynamic_parameters(B.T @ basis @ B).T


def model_parameters(model: Model, layout: Layout) -> np.ndarray:
    """pi (P,) of the file: its inertias; its armature for the armature term, zero friction."""
    pi = np.zeros(layout.size)
    pi[:layout.inertial] = dynamic_parameters(model.body_inertia[layout.body_joint]).ravel()
    if "armature" in layout.terms:
        start = layout.inertial + layout.terms.index("armature") * len(layout.term_dofs)
        pi[start:start + len(layout.term_dofs)] = model.armature[layout.term_dofs]
    return pi


def body_regressor(v: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Yb (N, 6, 10) for body velocities v and gravity-shifted accelerations a (N, 6),
    (angular, linear) rows out as (torque, force); see the module doc."""
    w, u, dw, du = v[:, :3], v[:, 3:], a[:, :3], a[:, 3:]
    ac = du + np.cross(w, u)
    Y = np.zeros((len(v), 6, 10))
    Y[:, 3:, 0] = ac
    Y[:, :3, 1:4] = -skew(ac)
    wx = skew(w)
    Y[:, 3:, 1:4] = skew(dw) + wx @ wx
    Y[:, :3, 4:] = _lin(dw) + wx @ _lin(w)
    return Y


def _lin(w: np.ndarray) -> np.ndarray:
    """L(w) (N, 3, 6): L(w) iota = I w for iota = (Ixx, Ixy, Iyy, Ixz, Iyz, Izz)."""
    out = np.zeros(w.shape[:-1] + (3, 6))
    for row in range(3):
        for column in range(3):
            out[..., row, TENSOR_INDEX[row, column]] += w[..., column]
    return out


def joint_term_columns(layout: Layout, v: np.ndarray | None, a: np.ndarray | None,
                       out: np.ndarray) -> None:
    """The per-joint term columns of out (N, nv, P) from v, a (N, nv) (None: zeros)."""
    nd = len(layout.term_dofs)
    for k, term in enumerate(layout.terms):
        source = a if term == "armature" else v
        if source is None:
            continue
        values = source[:, layout.term_dofs]
        if term == "coulomb":
            values = np.sign(values)
        columns = layout.inertial + k * nd + np.arange(nd)
        out[:, layout.term_dofs, columns] = values


# ------------------------------------------------------------------------- reference
def regressor_reference(model: Model, q, v=None, a=None, gravity=None, terms=()) -> np.ndarray:
    """Y (nv, P) at one state: velocities and accelerations root to leaves (as
    :func:`treedyn.engine.reference.rnea_reference`), each body's Yb, carried to every
    ancestor joint ``i`` as ``S_i^T X^T Yb``."""
    layout = layout_of(model, terms)
    qdd = np.zeros(model.nv) if a is None else np.asarray(a, dtype=float)
    qd = np.zeros(model.nv) if v is None else np.asarray(v, dtype=float)
    J = one_state(model, q, qd)
    # a_world = (0, -g): the world's spatial acceleration that gravity is modelled by
    a_world = world_acceleration(model, gravity)
    parent = model.parent
    vel, acc = [None] * model.njoints, [None] * model.njoints
    for i in range(model.njoints):
        p = parent[i]
        vel[i] = (J.Xup[i] @ vel[p] if p >= 0 else 0.0) + J.vJ[i]
        acc[i] = (J.Xup[i] @ (acc[p] if p >= 0 else a_world) + J.S[i] @ qdd[J.dofs[i]]
                  + J.cJ[i] + crm(vel[i]) @ J.vJ[i])
    Y = np.zeros((model.nv, layout.size))
    for b, j in enumerate(layout.body_joint):
        F = body_regressor(vel[j][None], acc[j][None])[0]  # (6, 10)
        i = j
        while i >= 0:
            Y[J.dofs[i], 10 * b:10 * b + 10] = J.S[i].T @ F
            F = J.Xup[i].T @ F
            i = parent[i]
    joint_term_columns(layout, qd[None], qdd[None], Y[None])
    return Y
