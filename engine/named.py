"""Named frames -- links, bodies and joints -- their placements and Jacobians, and the centre
of mass, for a batch of states q (N, nq): what ``dyn frames``, ``dyn jacobian`` and
``dyn com`` compute, numpy only, on :mod:`treedyn.engine.kinematics`.

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
``site:NAME`` reach the others (``link:NAME`` / ``body:NAME`` say the link). A frame's placement is
``(R, p)``: ``R`` (3, 3) holds its axes as columns in world coordinates, ``p`` (3,) its
origin in the world.

Jacobians
---------
:func:`frame_jacobians` gives ``J`` (6, nv) per frame and state, **rows (linear,
angular)** -- Pinocchio's ``getFrameJacobian`` order and MuJoCo's ``jacp`` over ``jacr``,
the reverse of :mod:`~treedyn.engine.kinematics`, whose (angular, linear) rows are
reordered here. ``reference`` is one of Pinocchio's three:

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
it; a frame on the world: the whole model, which is what moves: mass welded to the world
is not counted, as in Pinocchio): Pinocchio's ``centerOfMass`` / ``jacobianCenterOfMass`` (``data.com[joint]`` and
``jacobianSubtreeCenterOfMass`` for a subtree), MuJoCo's ``subtree_com`` and
``mj_jacSubtreeCom``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .kinematics import (LOCAL, LOCAL_WORLD_ALIGNED, attached_jacobians,
                         attached_placements, body_jacobians, placements)
from .model import Model
from .state import states

LINEAR_FIRST = [3, 4, 5, 0, 1, 2]  # (angular, linear) rows -> (linear, angular)


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
    axes in the world, p its origin in the world."""
    q = states(model, q)[1]
    return attached_placements(model, q, frames.on_body, frames.rotation, frames.translation)


def frame_jacobians(model: Model, q, frames: Frames, reference: str = LOCAL) -> np.ndarray:
    """J (N, k, 6, nv) of ``frames`` at q (N, nq), rows (linear, angular), written in
    ``reference`` (LOCAL, WORLD or LOCAL_WORLD_ALIGNED; see the module doc)."""
    q = states(model, q)[1]
    J = attached_jacobians(model, q, frames.on_body, frames.rotation, frames.translation,
                           reference)  # (N, k, 6, nv), (angular, linear)
    return J[:, :, LINEAR_FIRST]


def center_of_mass(model: Model, q, root: int = -1) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, c (N, 3), Jcom (N, 3, nv)) of the bodies of body ``root``'s subtree (-1: all)
    at q (N, nq): ``c = sum m_i c_i / m`` over the bodies' centres of mass
    ``c_i = p_i + R_i com_i`` in the world, and ``Jcom = sum m_i J_ci / m`` with ``J_ci``
    the linear rows of body ``i``'s LOCAL_WORLD_ALIGNED Jacobian moved to ``c_i``
    (``u + w x (c_i - p_i)``). A subtree without mass has no centre: c and Jcom are NaN."""
    q = states(model, q)[1]
    bodies = (slice(0, model.njoints) if root < 0 else
              slice(root, int(model.subtree_end[root])))
    m = model.body_mass[bodies]  # (b,)
    mass = float(m.sum())
    R, p = placements(model, q)  # (N, nj, 3, 3), (N, nj, 3)
    R, p = R[:, bodies], p[:, bodies]
    lever = (R @ model.body_com[bodies, :, None])[..., 0]  # (N, b, 3): c_i - p_i, world axes
    J = body_jacobians(model, q, LOCAL_WORLD_ALIGNED)[:, bodies]  # (N, b, 6, nv)
    J_c = J[:, :, 3:] + np.cross(J[:, :, :3], lever[..., None], axisa=2, axisb=2, axisc=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.einsum("b,nbi->ni", m, p + lever) / mass  # (N, 3)
        Jcom = np.einsum("b,nbiv->niv", m, J_c) / mass  # (N, 3, nv)
    return mass, c, Jcom


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
    urdf = model.format == "urdf"
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
