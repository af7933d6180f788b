"""Joint models: one class per joint type, all operating on a batch of states.

Each joint folds its constant placement into ``transform`` so an algorithm gets the full
parent-to-child transform ``Xup = X_J(q) X_T`` as the pair ``(E, r)`` of
:mod:`treedyn.engine.spatial`. Motion subspaces ``S`` are (6, nv) when constant and
(N, 6, nv) when they depend on q. ``bias`` is the joint's velocity-product acceleration
``c_J`` (zero, and never called, when ``has_bias`` is False).

Coordinates (q block, v block) per type:

=============  ===================================  =====================================
type           q                                    v
=============  ===================================  =====================================
revolute       angle (q - ref)                      angular rate about ``axis``
continuous     angle (one number, not cos/sin)      angular rate about ``axis``
prismatic      displacement (q - ref)               rate along ``axis``
spherical      (qx, qy, qz, qw)  Pinocchio          angular velocity, child frame
ball           (qw, qx, qy, qz)  MuJoCo             angular velocity, child frame
free           (x, y, z, qx, qy, qz, qw)            (linear, angular), child frame (LOCAL)
free_world     (x, y, z, qw, qx, qy, qz)            (linear in parent frame, angular child)
planar         (x, y, theta) in the plane of axis   (vx, vy, wz), child frame
=============  ===================================  =====================================
"""
from __future__ import annotations

import numpy as np

from .description import skew
from .spatial import cross3, quaternion_matrix, rotate

_IDENTITY = np.eye(3)  # (3, 3), never written to


def _subspace_column(axis: np.ndarray, start: int) -> np.ndarray:
    """(6, 1) zeros with ``axis`` (3,) at rows ``start``.. (0: angular, 3: linear)."""
    column = np.zeros((6, 1))
    column[start:start + 3, 0] = axis
    return column


PUBLIC_TYPE = {
    "revolute": "revolute",
    "continuous": "continuous",
    "prismatic": "prismatic",
    "spherical": "spherical",
    "ball": "spherical",
    "free": "free",
    "free_world": "free",
    "planar": "planar",
}



def between(rng: np.random.Generator, low, high, shape) -> np.ndarray:
    """Uniform samples between two limits in either order (a URDF may give lower > upper,
    which Pinocchio loads as written)."""
    return rng.uniform(np.minimum(low, high), np.maximum(low, high), size=shape)

class JointModel:
    """Base: constant placement (rotation R_T, translation p_T) of the joint in its parent."""

    type = ""
    nq = 0
    nv = 0
    has_bias = False
    q_parts: tuple[str, ...] = ("angle",)  # names of the q components
    v_parts: tuple[str, ...] = ()  # names of the v components of a multi-dof joint
    angle_q: tuple[int, ...] = ()  # q entries that are angles (radians)
    angular_v: tuple[int, ...] = ()  # v entries that are angular rates (rad/s)
    velocity_frame = "joint axis"  # where v is expressed, for people reading a layout

    def __init__(self, rotation: np.ndarray, translation: np.ndarray, axis: np.ndarray, ref: float):
        self.rotation = np.asarray(rotation, dtype=float)  # (3, 3) joint frame in parent
        self.translation = np.asarray(translation, dtype=float)  # (3,)
        self.axis = np.asarray(axis, dtype=float)  # (3,) unit, joint frame
        self.ref = float(ref)
        self.E_T = self.rotation.T  # (3, 3) parent -> joint-frame coordinates

    def neutral(self) -> np.ndarray:
        return np.zeros(self.nq)

    def random_configuration(self, rng: np.random.Generator, count: int, lower: np.ndarray,
                             upper: np.ndarray) -> np.ndarray:
        """Uniform within finite limits, else in [-pi, pi] (angles) or [-1, 1] (lengths)."""
        low = np.where(np.isfinite(lower), lower, -np.pi)
        high = np.where(np.isfinite(upper), upper, np.pi)
        return between(rng, low, high, (count, self.nq))

    def _constant_translation(self, count: int) -> np.ndarray:
        return np.broadcast_to(self.translation, (count, 3))

    def subspace_rate(self, qj, vj):
        """dS/dt (N, 6, nv) in the child frame at (qj, vj), None when S is constant (every
        joint whose ``subspace`` does not depend on q); ``subspace_rate(qj, vj) @ vj`` is
        the bias ``c_J``."""
        return None


    @classmethod
    def batch(cls, rotation: np.ndarray, translation: np.ndarray, axis: np.ndarray,
              ref: np.ndarray) -> list[JointModel]:
        """Joints of this type from (k, ...) arrays of their arguments, as ``cls(...)`` makes
        each (a type may build them all at once, with the same products)."""
        return [cls(*arguments) for arguments in zip(rotation, translation, axis, ref.tolist())]

    @classmethod
    def _made(cls, columns: dict[str, np.ndarray], ref: np.ndarray) -> list[JointModel]:
        """Joints of this type with the attributes ``columns`` ((k, ...) arrays, each joint
        gets its row) and ``ref``, without running ``__init__``."""
        names = list(columns)
        made = []
        for values in zip(*[list(columns[name]) for name in names], ref.tolist()):
            joint = cls.__new__(cls)
            joint.__dict__.update(zip(names, values))
            joint.ref = values[-1]
            made.append(joint)
        return made


class RevoluteJoint(JointModel):
    type = "revolute"
    nq = nv = 1
    angle_q = angular_v = (0,)

    @staticmethod
    def constants(axis: np.ndarray, E_T: np.ndarray) -> dict[str, np.ndarray]:
        """The constant factors of k joints ((k, 3) axes, (k, 3, 3) E_T): E_J =
        Rot(axis, theta)^T = I - sin K + (1 - cos) K^2, folded with E_T, and S; one joint's
        (``__init__``) and a whole type's (``batch``) through the same products."""
        K = skew(axis)  # (k, 3, 3)
        K2 = np.matmul(K, K)
        S = np.zeros((len(axis), 6, 1))
        S[:, :3, 0] = axis
        return {"E_const": np.matmul(_IDENTITY + K2, E_T), "E_sin": np.matmul(-K, E_T),
                "E_cos": np.matmul(-K2, E_T), "S": S}  # (k, 3, 3) x 3, (k, 6, 1)

    @classmethod
    def batch(cls, rotation, translation, axis, ref):
        E_T = np.swapaxes(rotation, 1, 2)  # each rotation.T, a view as in __init__
        return cls._made({"rotation": rotation, "translation": translation, "axis": axis,
                          "E_T": E_T, **cls.constants(axis, E_T)}, ref)

    def __init__(self, rotation, translation, axis, ref):
        super().__init__(rotation, translation, axis, ref)
        for name, value in self.constants(self.axis[None], self.E_T[None]).items():
            setattr(self, name, value[0])

    def neutral(self):
        return np.array([self.ref])

    def transform(self, qj):
        theta = qj[:, 0] - self.ref
        s = np.sin(theta)[:, None, None]
        c = np.cos(theta)[:, None, None]
        E = self.E_const + s * self.E_sin + c * self.E_cos
        return E, self._constant_translation(len(qj))

    @staticmethod
    def transforms(joints: list, qj: np.ndarray):
        """``transform`` of many revolute joints at once, their angles qj (N, K): E
        (K, N, 3, 3), each the same sum in the same order as ``transform``'s (bit for bit),
        and r (K, N, 3) (a read-only broadcast)."""
        theta = (qj - [joint.ref for joint in joints]).T  # (K, N)
        E = np.multiply(_rows(joints, "E_sin")[:, None], np.sin(theta)[..., None, None])
        E += _rows(joints, "E_const")[:, None]
        E += _rows(joints, "E_cos")[:, None] * np.cos(theta)[..., None, None]
        r = np.broadcast_to(_rows(joints, "translation")[:, None], (len(joints), len(qj), 3))
        return E, r

    def subspace(self, qj):
        return self.S


def _rows(joints: list, name: str) -> np.ndarray:
    """The attribute ``name`` (an array of one shape) of every joint, stacked (K, ...): one
    concatenation, without a view of each."""
    rows = [getattr(joint, name) for joint in joints]
    return np.concatenate(rows).reshape(len(joints), *rows[0].shape)


class ContinuousJoint(RevoluteJoint):
    type = "continuous"


class PrismaticJoint(JointModel):
    type = "prismatic"
    nq = nv = 1
    q_parts = ("displacement",)

    def __init__(self, rotation, translation, axis, ref):
        super().__init__(rotation, translation, axis, ref)
        self.direction = self.rotation @ self.axis  # (3,) axis in parent coordinates
        self.S = _subspace_column(self.axis, 3)  # (6, 1)

    def neutral(self):
        return np.array([self.ref])

    def random_configuration(self, rng, count, lower, upper):
        low = np.where(np.isfinite(lower), lower, -1.0)
        high = np.where(np.isfinite(upper), upper, 1.0)
        return between(rng, low, high, (count, 1))

    def transform(self, qj):
        E = np.broadcast_to(self.E_T, (len(qj), 3, 3))
        return E, self.translation + (qj[:, :1] - self.ref) * self.direction

    def subspace(self, qj):
        return self.S


def _random_quaternions(rng: np.random.Generator, count: int) -> np.ndarray:
    """Uniform unit quaternions (count, 4) as (x, y, z, w)."""
    quat = rng.normal(size=(count, 4))
    return quat / np.linalg.norm(quat, axis=1, keepdims=True)


def _quaternion_rotation(quat: np.ndarray, scalar_first: bool, out=None) -> np.ndarray:
    """Child-in-parent rotation (N, 3, 3), or into ``out`` (3, 3, N), of quaternions (N, 4)
    stored (w, x, y, z) when ``scalar_first``, else (x, y, z, w)."""
    if scalar_first:
        return quaternion_matrix(quat[:, 0], quat[:, 1], quat[:, 2], quat[:, 3], out)
    return quaternion_matrix(quat[:, 3], quat[:, 0], quat[:, 1], quat[:, 2], out)


class SphericalJoint(JointModel):
    """Ball joint; ``scalar_first`` selects MuJoCo's (w, x, y, z) over Pinocchio's (x, y, z, w)."""

    type = "spherical"
    nq, nv = 4, 3
    q_parts = ("qx", "qy", "qz", "qw")
    v_parts = ("wx", "wy", "wz")
    velocity_frame = "child frame"
    angular_v = (0, 1, 2)
    scalar_first = False
    S = np.vstack([np.eye(3), np.zeros((3, 3))])  # (6, 3)

    def neutral(self):
        return np.array([1.0, 0, 0, 0]) if self.scalar_first else np.array([0, 0, 0, 1.0])

    def random_configuration(self, rng, count, lower, upper):
        quat = _random_quaternions(rng, count)
        return np.roll(quat, 1, axis=1) if self.scalar_first else quat

    def rotation_of(self, quat: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Child-in-parent rotation (N, 3, 3) of a quaternion block (N, 4) in this layout;
        into ``out`` (3, 3, N), states last, when given."""
        return _quaternion_rotation(quat, self.scalar_first, out)

    def transform(self, qj):
        E = np.swapaxes(self.rotation_of(qj), 1, 2) @ self.E_T
        return E, self._constant_translation(len(qj))

    def subspace(self, qj):
        return self.S


class BallJoint(SphericalJoint):
    type = "ball"
    q_parts = ("qw", "qx", "qy", "qz")
    scalar_first = True


class FreeJoint(JointModel):
    """Pinocchio's free-flyer, LOCAL convention: v = (linear, angular) in the child frame."""

    type = "free"
    nq, nv = 7, 6
    q_parts = ("x", "y", "z", "qx", "qy", "qz", "qw")
    v_parts = ("vx", "vy", "vz", "wx", "wy", "wz")
    velocity_frame = "child frame (LOCAL)"
    angular_v = (3, 4, 5)
    scalar_first = False
    S = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])  # (6, 6)

    def neutral(self):
        rotation = [1.0, 0, 0, 0] if self.scalar_first else [0, 0, 0, 1.0]
        return np.array([0.0, 0, 0] + rotation)

    def random_configuration(self, rng, count, lower, upper):
        quat = _random_quaternions(rng, count)
        if self.scalar_first:
            quat = np.roll(quat, 1, axis=1)
        return np.hstack([rng.uniform(-1.0, 1.0, size=(count, 3)), quat])

    def rotation_of(self, qj: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The rotation of the block qj (N, 7) (:meth:`SphericalJoint.rotation_of`)."""
        return _quaternion_rotation(qj[:, 3:7], self.scalar_first, out)

    def transform(self, qj):
        E = np.swapaxes(self.rotation_of(qj), 1, 2) @ self.E_T
        return E, self.translation + qj[:, :3] @ self.rotation.T

    def subspace(self, qj):
        return self.S


class FreeWorldJoint(FreeJoint):
    """MuJoCo's free joint: v = (linear velocity in the parent frame, angular in the child).

    With ``E_J = R^T`` the child's spatial velocity is ``(w, E_J v_lin)``, so
    ``S = [[0, 1], [E_J, 0]]`` depends on q and the bias is ``(0, -w x E_J v_lin)``.
    """

    type = "free_world"
    q_parts = ("x", "y", "z", "qw", "qx", "qy", "qz")
    velocity_frame = "linear: world frame; angular: body frame"
    scalar_first = True
    has_bias = True

    def subspace(self, qj):
        S = np.zeros((len(qj), 6, 6))
        S[:, :3, 3:] = np.eye(3)
        S[:, 3:, :3] = np.swapaxes(self.rotation_of(qj), 1, 2)
        return S

    def subspace_rate(self, qj, vj):
        """dS/dt: ``d(E_J)/dt = -w x E_J`` with w the angular velocity in the child frame."""
        rate = np.zeros((len(qj), 6, 6))
        rate[:, 3:, :3] = -skew(vj[:, 3:]) @ np.swapaxes(self.rotation_of(qj), 1, 2)
        return rate

    def bias(self, qj, vj):
        linear_child = rotate(np.swapaxes(self.rotation_of(qj), 1, 2), vj[:, :3])
        bias = np.zeros((len(qj), 6))
        bias[:, 3:] = -cross3(vj[:, 3:], linear_child)
        return bias


class PlanarJoint(JointModel):
    """Planar joint in the plane normal to ``axis``: q = (x, y, theta), v local (vx, vy, wz).

    For ``axis = z`` this is Pinocchio's JointModelPlanar (x, y in the joint's xy plane).
    For another axis the in-plane directions are ``e1`` (x projected on the plane, or y when
    x is parallel to the axis) and ``e2 = axis x e1``.
    """

    type = "planar"
    nq = nv = 3
    q_parts = ("x", "y", "theta")
    v_parts = ("vx", "vy", "wz")
    velocity_frame = "child frame"
    angle_q = (2,)
    angular_v = (2,)

    def __init__(self, rotation, translation, axis, ref):
        super().__init__(rotation, translation, axis, ref)
        seed = np.array([1.0, 0, 0]) if abs(self.axis[0]) < 0.9 else np.array([0, 1.0, 0])
        e1 = seed - self.axis * (seed @ self.axis)
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(self.axis, e1)
        self.in_plane = np.stack([e1, e2])  # (2, 3)
        revolute = RevoluteJoint(self.rotation, self.translation, self.axis, 0.0)
        self.E_const, self.E_sin, self.E_cos = revolute.E_const, revolute.E_sin, revolute.E_cos
        S = np.zeros((6, 3))
        S[3:, 0] = e1
        S[3:, 1] = e2
        S[:3, 2] = self.axis
        self.S = S  # (6, 3)

    def random_configuration(self, rng, count, lower, upper):
        return np.hstack([rng.uniform(-1.0, 1.0, size=(count, 2)),
                          rng.uniform(-np.pi, np.pi, size=(count, 1))])

    def transform(self, qj):
        s = np.sin(qj[:, 2])[:, None, None]
        c = np.cos(qj[:, 2])[:, None, None]
        E = self.E_const + s * self.E_sin + c * self.E_cos
        return E, self.translation + (qj[:, :2] @ self.in_plane) @ self.rotation.T

    def subspace(self, qj):
        return self.S


def joint_models(types: list[str], arrays) -> tuple[JointModel, ...]:
    """The joint models of joints of engine ``types`` (nj,), whose rotations, translations,
    axes and references are ``arrays`` (:class:`treedyn.engine.model.JointArrays`): made
    type by type, each joint as ``JOINT_CLASSES[type](R, p, axis, ref)`` makes it."""
    nj = len(types)
    models: list = [None] * nj
    by_type: dict[str, list[int]] = {}
    for j, name in enumerate(types):
        by_type.setdefault(name, []).append(j)
    for name, members in by_type.items():
        rows = np.array(members, dtype=int).reshape(len(members))
        made = JOINT_CLASSES[name].batch(*(np.ascontiguousarray(part[rows]) for part in arrays))
        for j, joint in zip(members, made):
            models[j] = joint
    return tuple(models)


JOINT_CLASSES = {
    cls.type: cls
    for cls in (RevoluteJoint, ContinuousJoint, PrismaticJoint, SphericalJoint, BallJoint,
                FreeJoint, FreeWorldJoint, PlanarJoint)
}
