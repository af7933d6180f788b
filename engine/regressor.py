"""The joint torque regressor: tau = Y(q, v, a) pi, linear in the inertial parameters.

Parameters (Pinocchio's ``Inertia.toDynamicParameters`` order), 10 per body of
``model.bodies`` (a URDF link with the links welded to it, an MJCF <body>)::

    pi_b = (m, m c_x, m c_y, m c_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz)

with ``c`` the centre of mass and ``I`` the rotational inertia about the *body origin*,
both in the body's frame ``model.body_frames[j]`` of the joint ``j`` that carries its
inertia (the last joint of an MJCF body with several). Columns: body ``b``'s ten at
``10 b``, in ``model.bodies`` order, then the optional per-joint terms in the order of
:data:`JOINT_TERMS`, each term's dofs together, for every dof of a joint that is not a
floating base; a term's column at dof ``j`` (its parameter the coefficient):

=============  ====================================  =====================================
``armature``   a_j                                   rotor inertia
``viscous``    v_j                                   viscous friction
``coulomb``    sign(v_j)                             symmetric Coulomb friction
``coulomb+``   max(sign(v_j), 0) (1 for v_j > 0)     Coulomb friction moving positive
``coulomb-``   min(sign(v_j), 0) (-1 for v_j < 0)    Coulomb friction moving negative (>= 0)
``offset``     1                                     a constant torque (sensor offset)
``stribeck``   exp(-(v_j/v_s)^2) sign(v_j)           static minus Coulomb friction f_s - f_c
``smooth``     tanh(v_j/eps)                         Coulomb friction smoothed over eps
``gain``       -i_j (the drive's current; zero here)  the drive's gain k_j: tau_j = k_j i_j
=============  ====================================  =====================================

with v_s and eps of :class:`JointTerms` (``stribeck_velocity``, ``smooth_velocity``). The
gain's column is the logged current's (Y pi - k i = 0 when the log holds currents, not
torques): the regressor leaves it zero for the identification to fill from its log.
sign(0) = 0: a dof at rest takes no Coulomb force. Without rests (v_j never 0) the
columns of coulomb+, coulomb- and offset are dependent (coulomb+ - coulomb- = offset) and
only two of their combinations are determined.

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

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .inertia_forms import TENSOR_INDEX, dynamic_parameters, spatial_inertia
from .model import Model
from .reference import crm, one_state
from .rotations import skew
from .state import world_acceleration

PARAMETERS = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
JOINT_TERMS = ("armature", "viscous", "coulomb", "coulomb+", "coulomb-", "offset", "stribeck",
               "smooth", "gain")
VELOCITY_TERMS = ("viscous", "coulomb", "coulomb+", "coulomb-", "stribeck", "smooth")  # need v
SIGNED_TERMS = ("offset",)  # terms whose coefficient may be negative
FLOATING = ("free", "free_world")


@dataclass(frozen=True)
class JointTerms:
    """Per-joint terms (names from JOINT_TERMS) with their shape parameters (rad/s or m/s):
    ``stribeck_velocity`` v_s and ``smooth_velocity`` eps (module doc)."""

    names: tuple = ()
    stribeck_velocity: float = 0.1
    smooth_velocity: float = 0.01

    @classmethod
    def of(cls, terms) -> "JointTerms":
        """``terms`` as JointTerms (a sequence of names, or JointTerms), checked and in
        JOINT_TERMS order."""
        given = terms if isinstance(terms, JointTerms) else cls(tuple(terms))
        unknown = [t for t in given.names if t not in JOINT_TERMS]
        if unknown:
            raise ValueError(f"unknown term {unknown[0]!r} (known: {', '.join(JOINT_TERMS)})")
        for name, value in (("stribeck_velocity", given.stribeck_velocity),
                            ("smooth_velocity", given.smooth_velocity)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        names = tuple(t for t in JOINT_TERMS if t in given.names)
        return cls(names, float(given.stribeck_velocity), float(given.smooth_velocity))


class Layout(NamedTuple):
    """The columns of a model's regressor."""

    bodies: tuple[str, ...]  # (nb,) names, model.bodies order
    body_joint: np.ndarray  # (nb,) the joint carrying each body's inertia
    terms: tuple[str, ...]  # per-joint terms, a subset of JOINT_TERMS in that order
    term_dofs: np.ndarray  # (nd,) the dofs that take per-joint terms
    names: tuple[str, ...]  # (P,) "body.m", "body.Ixx", ..., "armature.joint" ...
    shape: JointTerms = JointTerms()  # the terms with their shape parameters

    @property
    def size(self) -> int:
        return len(self.names)

    @property
    def inertial(self) -> int:
        """Number of inertial columns, 10 nb."""
        return 10 * len(self.bodies)


def layout_of(model: Model, terms=()) -> Layout:
    """The regressor columns of ``model`` with the per-joint ``terms`` (names from
    JOINT_TERMS, or :class:`JointTerms`)."""
    shape = JointTerms.of(terms)
    terms = shape.names
    bodies = tuple(body.name for body in model.bodies)
    body_joint = np.array([body.joints[-1] for body in model.bodies], dtype=int)
    dofs = [d for d in range(model.nv) if model.joint_types[model.dof_joint[d]] not in FLOATING]
    labels = [_dof_label(model, d) for d in dofs]
    names = [f"{b}.{p}" for b in bodies for p in PARAMETERS]
    names += [f"{term}.{label}" for term in terms for label in labels]
    return Layout(bodies, body_joint, terms, np.array(dofs, dtype=int), tuple(names), shape)


def term_columns(layout: Layout, term: str) -> np.ndarray:
    """The column indices (nd,) of one per-joint term of ``layout``."""
    nd = len(layout.term_dofs)
    start = layout.inertial + layout.terms.index(term) * nd
    return np.arange(start, start + nd)


def signed_columns(layout: Layout) -> np.ndarray:
    """The columns (k,) whose coefficients may be negative: the SIGNED_TERMS' (a fit keeps
    the other per-joint terms' non-negative)."""
    columns = [term_columns(layout, t) for t in layout.terms if t in SIGNED_TERMS]
    return np.concatenate(columns) if columns else np.zeros(0, dtype=int)


def without_rests(layout: Layout, identifiable: np.ndarray) -> list[str]:
    """The dof labels (those of ``layout.names``) whose coulomb+, coulomb- and offset
    columns (two or three of them in ``layout``) a log left dependent (``identifiable``
    (P,) False for one of them; pass a column with no effect as True: a dof that never
    moves is still throughout): the log never holds that dof still (module doc)."""
    present = [t for t in ("coulomb+", "coulomb-", "offset") if t in layout.terms]
    if len(present) < 2:
        return []
    columns = np.stack([term_columns(layout, t) for t in present])  # (k, nd)
    loose = ~identifiable[columns].all(axis=0)
    return [layout.names[c].split(".", 1)[1] for c in columns[0][loose]]


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
        pi[term_columns(layout, "armature")] = model.armature[layout.term_dofs]
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
    """The per-joint term columns of out (N, nv, P) from v, a (N, nv) (None: zeros; the
    offset's column is 1 whatever the state). Module doc: the columns' formulas."""
    for term in layout.terms:
        source = a if term == "armature" else v
        if term == "gain":  # the log's current, filled by the identification
            continue
        if term == "offset":
            values = np.ones((len(out), len(layout.term_dofs)))
        elif source is None:
            continue
        else:
            values = term_values(term, source[:, layout.term_dofs], layout.shape)
        out[:, layout.term_dofs, term_columns(layout, term)] = values


def term_values(term: str, x: np.ndarray, shape: JointTerms) -> np.ndarray:
    """One term's column values from x (a for armature, v otherwise), any shape."""
    if term in ("armature", "viscous"):
        return x
    if term == "coulomb":
        return np.sign(x)
    if term == "coulomb+":
        return np.maximum(np.sign(x), 0.0)
    if term == "coulomb-":
        return np.minimum(np.sign(x), 0.0)
    if term == "stribeck":
        return np.exp(-np.square(x / shape.stribeck_velocity)) * np.sign(x)
    if term == "smooth":
        return np.tanh(x / shape.smooth_velocity)
    return np.ones_like(x)  # offset


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
