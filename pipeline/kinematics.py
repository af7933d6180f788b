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

The state commands (``dyn frames``, ``jacobian``, ``com``, ``coriolis``, ``centroidal``,
``energy``) ask one of these rows or of :data:`.compute.COMPUTATIONS`' for what their
options name: :func:`state_row` makes it (:data:`STATE_ROWS`, a maker per command), with
the labels of a result's numbers and one state's JSON document; the tables for people
are the command line's.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from math import prod

import numpy as np

from treedyn.engine.named import Frames, frame_jacobians, frame_placements, frame_set

from .compute import COMPUTATIONS, Computation, center_of_mass_rows
from .errors import UsageError
from .outputs import file_sink, open_sink
from .sinks import Sink


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


# --------------------------------------------------------------------- the state commands

JACOBIAN_ROWS = ("vx", "vy", "vz", "wx", "wy", "wz")  # a Jacobian's rows: linear, angular
REFERENCES = {"local": "LOCAL", "world": "WORLD", "aligned": "LOCAL_WORLD_ALIGNED"}
MOMENTUM_ROWS = ("px", "py", "pz", "kx", "ky", "kz")  # linear, then angular momentum about c
INERTIA_AXES = ("vx", "vy", "vz", "wx", "wy", "wz")  # Ig's columns: the centroidal motion
ENERGIES = ("kinetic", "potential")


@dataclass(frozen=True)
class StateRow:
    """A state command's row made for what is asked (:func:`state_row`): the computation,
    the labels of a result's numbers (CSV columns, flattened in the result's order), and
    ``document``, one state's result as its JSON document; ``frames``: the frames' names,
    ``mass``: the mass whose centre ``com`` gives."""

    computation: Computation
    labels: list
    document: Callable[[np.ndarray], dict]
    frames: tuple = ()
    mass: float = 0.0


def named(layout, names) -> Frames:
    """The engine's frames named ``names`` (None: all); one UsageError for a wrong name."""
    try:
        return frame_set(layout.model, names)
    except KeyError as error:
        raise UsageError(f"dyn: {layout.model.source}: no link, body, joint or site named "
                         f"{error.args[0]!r} (joint:NAME names a joint, site:NAME a site)"
                         ) from None


def frames_row(layout, frame=None) -> StateRow:
    chosen = named(layout, frame or None)
    labels = [f"{name}|{'p' if c == 3 else 'R'}{r}{'' if c == 3 else c}"
              for name in chosen.names for r in range(3) for c in range(4)]
    return StateRow(kinematics("frames", chosen), labels, lambda T: {
        "frames": list(chosen.names), "p": T[:, :, 3].tolist(), "R": T[:, :, :3].tolist()},
        tuple(chosen.names))


def jacobian_row(layout, frame, reference="local", dot=False, v=None) -> StateRow:
    if v is not None and not dot:
        raise UsageError("dyn: --v is read with --dot only (J depends on q alone)")
    dofs = list(layout.v_labels)
    labels = [f"{row}|{dof}" for row in JACOBIAN_ROWS for dof in dofs]
    if dot:
        labels = [f"{which}|{label}" for which in ("J", "Jdot") for label in labels]

    def document(J):
        rates = {"Jdot": J[1].tolist()} if dot else {}
        return {"J": (J[0] if dot else J).tolist(), **rates, "frame": frame,
                "reference": reference, "dofs": dofs}
    computation = kinematics("jacobian", named(layout, [frame]), REFERENCES[reference],
                             dot=dot)
    return StateRow(computation, labels, document, (frame,))


def com_row(layout, subtree=None) -> StateRow:
    model = layout.model
    root = -1 if subtree is None else int(named(layout, [subtree]).on_body[0])
    bodies = slice(0, None) if root < 0 else slice(root, int(model.subtree_end[root]))
    mass = float(model.body_mass[bodies].sum())
    if not mass > 0:
        raise UsageError(f"dyn: {model.source}: "
                         f"{'the subtree of ' + subtree if subtree else 'the model'} "
                         "has no mass, so no centre of mass")
    labels = [f"{axis}|{column}" for axis in "xyz" for column in ["com", *layout.v_labels]]
    return StateRow(kinematics("com", root=root), labels, lambda C: {
        "mass": mass, "com": C[:, 0].tolist(), "Jcom": C[:, 1:].tolist()}, mass=mass)


def coriolis_row(layout) -> StateRow:
    dofs = list(layout.v_labels)
    return StateRow(COMPUTATIONS["coriolis"], dofs, lambda C: {"C": C.tolist(), "dofs": dofs})


def centroidal_row(layout) -> StateRow:
    model = layout.model
    if not model.total_mass > 0:
        raise UsageError(f"dyn: {model.source}: the model has no moving mass, so no centre "
                         "of mass to take the momentum about")
    columns = [*layout.v_labels, "hg", *(f"Ig_{axis}" for axis in INERTIA_AXES)]
    nv = model.nv
    return StateRow(COMPUTATIONS["centroidal"],
                    [f"{row}|{column}" for row in MOMENTUM_ROWS for column in columns],
                    lambda C: {"Ag": C[:, :nv].tolist(), "hg": C[:, nv].tolist(),
                               "Ig": C[:, nv + 1:].tolist()})


def energy_row(layout) -> StateRow:
    return StateRow(COMPUTATIONS["energy"], list(ENERGIES),
                    lambda E: dict(zip(ENERGIES, E.tolist())))


STATE_ROWS = {"frames": frames_row, "jacobian": jacobian_row, "com": com_row,
              "coriolis": coriolis_row, "centroidal": centroidal_row, "energy": energy_row}


def state_row(command: str, layout, **asked) -> StateRow:
    """The row of the state command ``command`` (a key of :data:`STATE_ROWS`) for the
    model of ``layout`` and what is ``asked`` (frames: ``frame``, a list of names; jacobian: ``frame``,
    ``reference`` of :data:`REFERENCES`, ``dot``, and ``v``, which needs ``dot``; com:
    ``subtree``); a UsageError for a frame that is not there, a centre of no mass, or a
    state's result of more than :data:`.batch.MASS_CAP` numbers (before anything is
    computed)."""
    from .batch import MASS_CAP

    row = STATE_ROWS[command](layout, **asked)
    computation, model = row.computation, layout.model
    size = prod(computation.shape(model.nv))
    if size > MASS_CAP:  # (C is nv x nv, as M: the same cap)
        raise UsageError(f"dyn: {model.source}: one state's {computation.key} of this model "
                         f"holds {size:,} numbers ({8 * size / 2 ** 30:.3g} GiB of doubles), "
                         f"past the {MASS_CAP:,} a state's result may hold")
    return row


def state_sink(layout, row: StateRow, kind: str, input: str | None, output: str | None,
               prefix: str | None = None, stream=None) -> Sink | None:
    """The sink of a state command's results of format ``kind`` (:func:`.batch.sink_kind`):
    into the file ``output`` (an HDF5 one's group ``prefix``), else into ``stream``
    (stdout) for the states of an ``input`` or CSV; None: one state's result is the
    caller's to show (its ``row.document``, or a table). (:func:`state_row` has refused a
    result too large to hold.)"""
    computation = row.computation
    shape = computation.shape(layout.model.nv)
    if output is not None:
        return open_sink(output, computation.key, shape, row.labels, kind,
                         dataset_prefix=prefix)
    if kind in ("json", "csv") and (input is not None or kind == "csv"):
        return file_sink(stream, None, kind, computation.key, shape, row.labels, {})
    return None
