"""External wrenches given on named link frames, moved onto the bodies the engine uses."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .model import Model
from .spatial import cross3


def external_forces(model: Model, wrenches: Mapping[str, np.ndarray], count: int | None = None
                    ) -> np.ndarray:
    """Per-body wrenches (count, nj, 6) from ``{frame name: [fx, fy, fz, tx, ty, tz]}``.

    Each wrench is expressed in the named link frame about that frame's origin (a link
    merged by a fixed joint keeps its own frame). It is moved to the body that carries the
    frame: ``f_body = R f``, ``t_body = R t + p x (R f)``. A wrench on a frame welded to
    the world has no effect on the dynamics and is dropped. A wrench may be (6,) shared
    by all states or (count, 6); ``count`` defaults to the wrenches' common N (1 if every
    wrench is (6,)). Unknown names raise KeyError, other shapes ValueError.
    """
    arrays = {name: np.asarray(wrench, dtype=float) for name, wrench in wrenches.items()}
    for name, wrench in arrays.items():
        if wrench.shape[-1:] != (6,) or wrench.ndim > 2:
            raise ValueError(f"the wrench on {name!r} has shape {wrench.shape}; expected (6,) "
                             f"or (N, 6): [fx, fy, fz, tx, ty, tz]")
    sizes = {len(wrench) for wrench in arrays.values() if wrench.ndim == 2} - {1}
    if count is None:
        count = max(sizes, default=1)
    if sizes - {count}:
        listed = ", ".join(f"{name!r} has {len(wrench)}" for name, wrench in arrays.items()
                           if wrench.ndim == 2)
        raise ValueError(f"the wrenches disagree on the number of states ({count}): {listed}")
    fext = np.zeros((count, model.njoints, 6))
    for name, wrench in arrays.items():
        frame = model.frame(name)
        if frame.joint < 0:
            continue
        wrench = np.broadcast_to(wrench, (count, 6))
        force = wrench[:, :3] @ frame.rotation.T
        lever = np.broadcast_to(frame.translation, force.shape)
        torque = wrench[:, 3:] @ frame.rotation.T + cross3(lever, force)
        fext[:, frame.joint, :3] += force
        fext[:, frame.joint, 3:] += torque
    return fext
