"""External wrenches given on named link frames, moved onto the bodies the engine uses."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .model import Model
from .spatial import cross3


def external_forces(model: Model, wrenches: Mapping[str, np.ndarray], count: int = 1) -> np.ndarray:
    """Per-body wrenches (count, nj, 6) from ``{frame name: [fx, fy, fz, tx, ty, tz]}``.

    Each wrench is expressed in the named link frame about that frame's origin (a link
    merged by a fixed joint keeps its own frame). It is moved to the body that carries the
    frame: ``f_body = R f``, ``t_body = R t + p x (R f)``. A wrench on a frame welded to
    the world has no effect on the dynamics and is dropped. A wrench may be (6,) shared
    by all states or (count, 6). Unknown names raise KeyError.
    """
    fext = np.zeros((count, model.njoints, 6))
    for name, wrench in wrenches.items():
        frame = model.frame(name)
        if frame.joint < 0:
            continue
        wrench = np.broadcast_to(np.asarray(wrench, dtype=float), (count, 6))
        force = wrench[:, :3] @ frame.rotation.T
        lever = np.broadcast_to(frame.translation, force.shape)
        torque = wrench[:, 3:] @ frame.rotation.T + cross3(lever, force)
        fext[:, frame.joint, :3] += force
        fext[:, frame.joint, 3:] += torque
    return fext
