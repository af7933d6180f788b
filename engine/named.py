"""Named frames -- links, bodies, joints and sites -- their placements and Jacobians, and
the centre of mass, for a batch of states q (N, nq): what ``dyn frames``, ``dyn jacobian``
and ``dyn com`` compute, numpy only: the joints that move the bodies asked, states along
the last axis (:mod:`~treedyn.engine.world_poses`). The readable twins, joint by joint, are
:func:`treedyn.engine.kinematics.attached_placements`, ``attached_jacobians`` and
``weighted_center_of_mass`` (body by body); ``tests/test_named_frames.py`` holds these to
them, to Pinocchio and to MuJoCo.

Frames
------
A *frame* is fixed on a body of the model (:func:`frame_set` finds them by name):

* a **link** (URDF, every link, also one merged by a fixed joint) or **body** (MJCF,
  ``<body>``, the world included): its own frame, Pinocchio's BODY frame (``data.oMf``),
  MuJoCo's ``xpos`` / ``xmat``;
* a **joint**: its child link's frame after the joint's motion. URDF: the joint frame,
  Pinocchio's JOINT frame (``data.oMi``; FIXED_JOINT for a fixed joint). MJCF: at the
  joint's anchor with its body's axes once the joints before it in its body moved
  (MuJoCo's ``xanchor`` and ``xmat`` for a body's last hinge or ball; MuJoCo places the
  anchors of a body's other joints, and of a slide, with the whole body's pose);
* an MJCF **site** (a named ``<site>``): MuJoCo's ``site_xpos`` / ``site_xmat``.

A bare name is a link (body) if there is one, else a joint, else a site; ``joint:NAME`` and
``site:NAME`` reach the others (``link:NAME`` / ``body:NAME`` say the link). A frame's
placement is ``(R, p)``: ``R`` (3, 3) holds its axes as columns in world coordinates,
``p`` (3,) its origin in the world.

Jacobians
---------
:func:`frame_jacobians` gives ``J`` (6, nv) per frame and state, **rows (linear,
angular)** -- Pinocchio's ``getFrameJacobian`` order and MuJoCo's ``jacp`` over ``jacr``,
the reverse of :mod:`~treedyn.engine.kinematics` (whose rows are Featherstone's
(angular, linear), as every motion in the engine). ``reference`` is one of Pinocchio's three:

* ``LOCAL``: the frame's velocity in its own axes, linear part that of its origin;
* ``WORLD``: in world axes, linear part that of the point of the frame's body at the
  world origin now;
* ``LOCAL_WORLD_ALIGNED``: the frame origin's velocity in world axes (MuJoCo's
  ``mj_jacBody`` for a body, ``mj_jacSite`` for a site).

Centre of mass
--------------
:func:`center_of_mass` gives the mass, the centre of mass ``c`` (3,) in the world and
``Jcom`` (3, nv) with ``Jcom v = dc/dt``, of the whole model or of one body's subtree
(the moving body a frame sits on, every link welded to it included, and the bodies below
it; a frame on the world: the whole model, what moves: mass welded to the world is not
counted, as in Pinocchio): Pinocchio's ``centerOfMass`` / ``jacobianCenterOfMass``
(``jacobianSubtreeCenterOfMass`` and ``data.com[joint]`` for a subtree), MuJoCo's
``subtree_com`` and ``mj_jacSubtreeCom``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .kinematics import FRAMES, LOCAL, WORLD
from .model import Model
from .spatial import cross3
from .state import states
from .world_poses import WorldPoses, ancestry, columns_states_first


class Frames(NamedTuple):
    """k frames fixed on bodies, as :func:`frame_set` chose them."""

    names: tuple[str, ...]  # (k,) as asked (a joint that shares a link's name: joint:NAME)
    on_body: np.ndarray  # (k,) int: the body each sits on, -1 for the world
    rotation: np.ndarray  # (k, 3, 3) its axes in its body's frame
    translation: np.ndarray  # (k, 3) its origin in its body's frame


def frame_set(model: Model, names=None) -> Frames:
    """The frames named ``names`` (see the module doc; ``joint:``, ``site:``, ``link:``,
    ``body:`` prefixes), or every link (body), then every joint, then every MJCF site
    when ``names`` is None. KeyError (the name) for a name that is no frame."""
    kinds = {"link": _links(model), "joint": _joints(model), "site": _sites(model)}
    if names is None:
        names = list(kinds["link"])
        for kind in ("joint", "site"):
            names += [f"{kind}:{name}" if name in names else name for name in kinds[kind]]
    chosen = [_find(name, kinds) for name in names]  # (body, R, t) each
    return Frames(tuple(names), np.array([body for body, _, _ in chosen], dtype=int),
                  np.array([R for _, R, _ in chosen], dtype=float).reshape(-1, 3, 3),
                  np.array([t for _, _, t in chosen], dtype=float).reshape(-1, 3))


def frame_placements(model: Model, q, frames: Frames) -> tuple[np.ndarray, np.ndarray]:
    """(R (N, k, 3, 3), p (N, k, 3)) of ``frames`` at q (N, nq): columns of R the frame's
    axes in the world, p its origin in the world. Only the joints that support them
    (:class:`~treedyn.engine.world_poses.WorldPoses`); the readable twin is
    :func:`treedyn.engine.kinematics.attached_placements`."""
    q = states(model, q)[1]
    if model.coupling is not None:
        return frame_placements(model.coupling.full, model.coupling.expand_q(q), frames)
    poses = WorldPoses(model, q, ancestry(model, frames.on_body))
    R_f, p_f = _placed(*poses.of(frames.on_body), frames)  # (k, 3, 3, N), (k, 3, N)
    return np.transpose(R_f, (3, 0, 1, 2)), np.transpose(p_f, (2, 0, 1))


def frame_jacobians(model: Model, q, frames: Frames, reference: str = LOCAL) -> np.ndarray:
    """J (N, k, 6, nv) of ``frames`` at q (N, nq), rows (linear, angular), written in
    ``reference`` (LOCAL, WORLD or LOCAL_WORLD_ALIGNED; see the module doc).

    Column ``d`` of a frame on body ``j`` is dof ``d``'s motion in world axes, ``(w_d,
    u_d)``, when its joint ``k`` supports ``j`` (else zero): the velocity of the world
    origin, ``u_d = R_k S_lin + w_d x (0 - p_k)``, is WORLD; LOCAL_WORLD_ALIGNED takes the
    frame's origin's, ``R_k S_lin + w_d x (p_f - p_k)``, and LOCAL turns both by ``R_f^T``
    (:meth:`~treedyn.engine.world_poses.WorldPoses.columns`: only the joints above the
    frame). The readable twin is :func:`treedyn.engine.kinematics.attached_jacobians`
    (rows (angular, linear))."""
    if reference not in FRAMES:
        raise ValueError(f"unknown reference frame {reference!r}; known: {', '.join(FRAMES)}")
    q = states(model, q)[1]
    if model.coupling is not None:
        c = model.coupling
        return frame_jacobians(c.full, c.expand_q(q), frames, reference) @ c.G
    poses = WorldPoses(model, q, ancestry(model, frames.on_body))
    R_f, p_f = _placed(*poses.of(frames.on_body), frames)  # (k, 3, 3, N), (k, 3, N)
    J = np.empty((len(q), len(frames.names), 6, model.nv))  # (N, k, 6, nv)
    shared = _Shared(poses) if len(frames.names) > 1 else None
    for f, body in enumerate(frames.on_body.tolist()):
        rows = poses.rows_to(body)
        origin = None if reference == WORLD else p_f[f]  # (3, N) the point whose velocity
        if shared is None:  # one frame: one cross product per dof, against p_f - p_k
            lever = np.negative(poses.p[rows])  # (a, 3, N)
            if origin is not None:
                lever += origin
            dofs = poses.columns(rows, lever, None, poses.W.cols)
            block = poses.W.cols[:, :len(dofs)]  # (6, m', N)
        else:
            dofs, block = shared.moved(rows, origin)
        if reference == LOCAL:  # R_f^T x: in the frame's axes
            block = _in_frame(R_f[f], block)
        np.add(block, 0.0, out=block)  # -0.0, a product of exact zeros, prints as 0.0
        columns_states_first(block, dofs, J[:, f])
    return J


class _Shared:
    """Every swept dof's motion about the world origin, ``(u_d, w_d)``, formed once for
    many frames (:meth:`~treedyn.engine.world_poses.WorldPoses.motions`); a frame takes
    its joints' columns and moves them to its origin ``o``: ``u_d + w_d x o``."""

    def __init__(self, poses: WorldPoses):
        self.dofs = poses.motions()[0]  # (m,); poses.W.cols (6, m, N) holds (u, w)
        self.cols = poses.W.cols
        self.first = poses.first  # (J,) each row's first position
        self.widths = poses.model.nv_joint[poses.joints]

    def moved(self, rows, origin) -> tuple[np.ndarray, np.ndarray]:
        """(dofs (m',), block (6, m', N), a new array) of the joints at ``rows``, the
        linear rows the velocity of ``origin`` (3, N) (None: of the world origin)."""
        positions = np.concatenate([np.arange(self.first[r], self.first[r] + self.widths[r])
                                    for r in rows] or [np.zeros(0, dtype=int)])
        block = np.take(self.cols, positions, axis=1)
        if origin is not None:
            block[:3] += cross3(block[3:], origin[:, None], axis=-3)
        return self.dofs[positions], block


def _in_frame(R: np.ndarray, block: np.ndarray) -> np.ndarray:
    """``R^T x`` for each 3-row part x of block (6, m, N), R (3, 3, N) a frame's axes: a
    new array (column by column of R, faster than one einsum)."""
    out = np.empty(block.shape)
    scratch = np.empty(block.shape[1:])
    for part in (0, 3):
        x = block[part:part + 3]
        for a in range(3):
            y = out[part + a]
            np.multiply(x[0], R[0, a], out=y)
            y += np.multiply(x[1], R[1, a], out=scratch)
            y += np.multiply(x[2], R[2, a], out=scratch)
    return out


def center_of_mass(model: Model, q, root: int = -1) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, c (N, 3), Jcom (N, 3, nv)) of the bodies of body ``root``'s subtree (-1: all)
    at q (N, nq): ``c = sum m_i c_i / m`` over the bodies' centres of mass
    ``c_i = p_i + R_i com_i`` in the world, and ``Jcom = sum m_i J_ci / m``, the mass-weighted
    Jacobians of those points. Column ``d`` (joint ``k`` at ``p_k``, motion ``w_d = R_k
    S_ang`` in world axes) is ``(m_k R_k S_lin + w_d x (h_k - m_k p_k)) / m`` with ``m_k``
    and ``h_k`` the mass and first moment ``sum m_i c_i`` of the bodies counted that joint
    ``k`` moves: for a revolute joint, ``m_k / m`` times ``w_d`` across the lever from the
    joint to that subtree's centre, summed in one pass from the leaves (:meth:`~treedyn.
    engine.world_poses.WorldPoses.column`). A subtree without mass has no centre: c and
    Jcom are NaN. The readable twin is :func:`treedyn.engine.kinematics.
    weighted_center_of_mass`."""
    q = states(model, q)[1]
    if model.coupling is not None:
        c = model.coupling
        mass, com, J = center_of_mass(c.full, c.expand_q(q), root)
        return mass, com, J @ c.G
    bodies = np.arange(model.njoints) if root < 0 else np.arange(root, model.subtree_end[root])
    poses = WorldPoses(model, q, ancestry(model, bodies))
    swept = poses.joints  # (J,) the bodies counted and the joints that move them
    m = np.where(np.isin(swept, bodies), model.body_mass[swept], 0.0)  # (J,)
    mass = float(m.sum())
    Jcom = np.empty((len(q), 3, model.nv))  # (N, 3, nv)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = m / mass  # (J,) the weights m_i / m: NaN when there is no mass
        h = poses.centres()  # (J, 3, N): c_i, then
        h *= m[:, None, None]  # the weighted first moments m_i c_i / m,
        c, dofs = _columns(poses, h, m)  # (3, N), (m,); m becomes the subtrees' m_k / m
    poses.W.cols[:3] += 0.0  # -0.0, a product of exact zeros, prints as 0.0
    columns_states_first(poses.W.cols[:3], dofs, Jcom)
    if not mass > 0:
        Jcom[:] = np.nan
    return mass, np.ascontiguousarray(c.T), Jcom


def _columns(poses: WorldPoses, h: np.ndarray, m_k: np.ndarray) -> tuple[np.ndarray, list]:
    """The centre of mass c (3, N) and the dofs (m,) whose Jcom columns (3, m, N) are then
    in ``poses.W.cols[:3]``, from the bodies' own weighted first moments h (J, 3, N) and
    weights m (J,): one pass from the leaves adds each row, complete, to its parent's (its
    first moment and its weight, so m becomes the subtrees' m_k), turns it into the lever
    ``h_k - m_k p_k`` and crosses the joint's motion with it while it is in cache (h and
    m are overwritten)."""
    c = np.zeros(h.shape[1:])
    parent, slot, p, cols = poses.model.parent, poses.slot, poses.p, poses.W.cols
    turn = np.empty(h.shape[1:])  # (3, N) m_k p_k
    first = poses.first
    dofs = [None] * len(poses.joints)
    for row in range(len(poses.joints) - 1, -1, -1):
        up = parent[poses.joints[row]]
        total = h[slot[up]] if up >= 0 else c
        total += h[row]
        if up >= 0:  # (the children's rows, after this one, are in m_k[row] already)
            m_k[slot[up]] += m_k[row]
        h[row] -= np.multiply(p[row], m_k[row], out=turn)
        dofs[row] = poses.column(row, h[row], m_k[row], cols[:3, first[row]:], None)
    return c, [d for ds in dofs for d in ds]


def _placed(R, p, frames: Frames) -> tuple[np.ndarray, np.ndarray]:
    """(R_f (k, 3, 3, N), p_f (k, 3, N)) of ``frames`` from their bodies' R (k, 3, 3, N)
    and p (k, 3, N), states last."""
    return (np.einsum("kacn,kcb->kabn", R, frames.rotation),
            p + np.einsum("kacn,kc->kan", R, frames.translation))


def support(model: Model, on_body: np.ndarray) -> np.ndarray:
    """(k, nv) 1.0 where dof d's joint supports body ``on_body[f]`` (is it or an ancestor:
    ``k <= j < subtree_end[k]``), 0.0 elsewhere and for the world (-1)."""
    k = model.dof_joint[None, :]
    j = on_body[:, None]
    return ((k <= j) & (j < model.subtree_end[k]) & (j >= 0)).astype(float)


def subtree_root(model: Model, name: str) -> int:
    """The body whose subtree the frame ``name`` roots (:func:`center_of_mass`'s ``root``):
    the body it sits on, -1 for a frame on the world. KeyError for an unknown name."""
    return int(frame_set(model, [name]).on_body[0])


def _links(model: Model) -> dict[str, tuple]:
    """Link (body) name -> (body, R, t) on it: every link of the description but the ones
    the MJCF parser adds at a joint's anchor (a joint frame, under the joint)."""
    added = {link.name for link in model.description.links if link.body}
    return {f.name: (f.joint, f.rotation, f.translation) for f in model.frames
            if f.name not in added}


def _joints(model: Model) -> dict[str, tuple]:
    """Joint name -> (body, R, t) of its child link: every moving joint, and URDF's fixed
    joints (MJCF's fixed ones are the parser's welds, not the file's)."""
    frames = {f.name: (f.joint, f.rotation, f.translation) for f in model.frames}
    urdf = model.format in ("urdf", "sdf")  # fixed joints of the file, not welds of ours
    return {joint.name: frames[joint.child] for joint in model.description.joints
            if (joint.type != "fixed" or urdf) and joint.child in frames}


def _sites(model: Model) -> dict[str, tuple]:
    """MJCF site name -> (body, R, t): its link frame's pose composed with its own."""
    frames = {f.name: f for f in model.frames}
    placed = {}
    for site in model.description.sites:
        link = frames[site.link]
        placed[site.name] = (link.joint, link.rotation @ site.rotation,
                             link.translation + link.rotation @ site.translation)
    return placed


def _find(name: str, kinds: dict[str, dict]) -> tuple:
    """(body, R, t) of the frame ``name``: a prefixed name in its kind; else a link, a
    joint, a site, in that order."""
    prefix, _, rest = name.partition(":")
    kind = {"link": "link", "body": "link", "joint": "joint", "site": "site"}.get(prefix)
    if kind is not None and rest in kinds[kind]:
        return kinds[kind][rest]
    for kind in ("link", "joint", "site"):
        if name in kinds[kind]:
            return kinds[kind][name]
    raise KeyError(name)
