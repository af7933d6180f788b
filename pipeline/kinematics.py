"""Rows of :data:`.compute.COMPUTATIONS` for the named frames: ``frames``, ``jacobian`` and
``com`` of a subtree. Their results depend on the frames asked, so each is a
:class:`.compute.Computation` made for them, which :func:`.stream.run` and
:func:`.compute.compute` take in place of a row's name and run like any other (the table
itself never grows). Per state (one array, what every sink writes):

* ``frames``: ``T`` (k, 3, 4), ``[R | p]`` of each frame: the columns of R its axes in the
  world, p its origin (:func:`treedyn.engine.named.frame_placements`);
* ``jacobian``: ``J`` (6, nv), rows (linear, angular)
  (:func:`treedyn.engine.named.frame_jacobians`); with its time variation (``dot``):
  ``J_Jdot`` (2, 6, nv), ``[J, Jdot]``, from q and v
  (:func:`treedyn.engine.jacobian_dot.frame_jacobian_rates`);
* ``com``: ``com`` (3, 1 + nv), ``[c | Jcom]`` (:func:`.compute.center_of_mass_rows`).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from treedyn.engine.named import Frames, frame_jacobians, frame_placements

from .compute import COMPUTATIONS, Computation, center_of_mass_rows


def frame_poses(model, states, fext, gravity, frames: Frames) -> np.ndarray:
    R, p = frame_placements(model, states.q, frames)  # (N, k, 3, 3), (N, k, 3)
    return np.concatenate([R, p[..., None]], axis=3)  # (N, k, 3, 4)


def frame_jacobian(model, states, fext, gravity, frames: Frames, reference: str) -> np.ndarray:
    return frame_jacobians(model, states.q, frames, reference)[:, 0]  # (N, 6, nv)


def frame_jacobian_and_rate(model, states, fext, gravity, frames: Frames,
                            reference: str) -> np.ndarray:
    from treedyn.engine.jacobian_dot import frame_jacobian_rates
    J = frame_jacobians(model, states.q, frames, reference)[:, 0]  # (N, 6, nv)
    Jdot = frame_jacobian_rates(model, states.q, states.v, frames, reference)[:, 0]
    return np.stack([J, Jdot], axis=1)  # (N, 2, 6, nv)


def kinematics(command: str, frames: Frames | None = None, reference: str = "LOCAL",
               root: int = -1, dot: bool = False) -> Computation:
    """The row of ``command`` ("frames", "jacobian", "com") for ``frames`` (jacobian: one
    frame, with its time variation when ``dot``; com: the subtree of body ``root``, -1: the
    whole model)."""
    if command == "jacobian" and dot:
        return Computation("J_Jdot", ("q", "v"), False,
                           partial(frame_jacobian_and_rate, frames=frames,
                                   reference=reference), lambda nv: (2, 6, nv))
    if command == "frames":
        return Computation("T", ("q",), False, partial(frame_poses, frames=frames),
                          lambda nv, k=len(frames.names): (k, 3, 4))
    if command == "jacobian":
        return Computation("J", ("q",), False, partial(frame_jacobian, frames=frames,
                                                      reference=reference),
                          lambda nv: (6, nv))
    if root < 0:
        return COMPUTATIONS["com"]
    return Computation("com", ("q",), False, partial(center_of_mass_rows, root=root),
                       COMPUTATIONS["com"].dims)
