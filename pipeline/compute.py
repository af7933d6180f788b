"""One chunk of states through the engine: the batched call, and its errors in words.

A state whose result is not finite stops the run there: :class:`PartialResult` carries
the results before it, so they are written first. Forward dynamics says why it is
singular, naming the joints that move no mass (:mod:`treedyn.engine.analysis.singularity`),
or that M(q) overflows. On a model where M can be singular with finite accelerations (a
body without mass or inertia along some direction: ``may_be_singular``), forward also
refuses the first state whose M is singular in double precision, naming the joints whose
motions coincide there, rather than print the rounding noise ABA divided by.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from treedyn.engine import aba, crba, external_forces, rnea
from treedyn.engine.analysis.singularity import (coinciding_joints, indefinite,
                                                 may_be_singular, singular_joints,
                                                 singular_matrices, singular_states)

from .errors import PartialResult, UsageError
from .layout import Layout
from .sinks import Sink
from .naming import listing


def collect(result, states, sink: Sink) -> np.ndarray:
    """The result of a chunk of ``states`` (``result()`` returns or raises it); if state k
    of it failed, the k results before it are written and the error raised."""
    try:
        return result()
    except PartialResult as error:
        if len(error.result):
            sink.put(error.result, states)
        raise UsageError(str(error)) from None


@dataclass(frozen=True)
class Computation:
    """A batched engine function over states: one row of :data:`COMPUTATIONS`."""

    key: str  # the result's name in every output: "tau"
    kinds: tuple[str, ...]  # the vectors a state holds, in the order of --input's columns
    square: bool  # a state's result is (nv, nv); else (nv,)
    engine: Callable  # (model, states, fext (N, nb, 6) or None, gravity) -> (N, nv[, nv])
    dims: Callable[[int], tuple[int, ...]] | None = None  # a state's result shape from nv,
    # when it is neither (nv,) nor (nv, nv) (:mod:`.kinematics`)

    def shape(self, nv: int) -> tuple[int, ...]:
        if self.dims is not None:
            return self.dims(nv)
        return (nv, nv) if self.square else (nv,)


def inverse_dynamics(model, states, fext, gravity) -> np.ndarray:
    return rnea(model, states.q, states.v, states.a, fext, gravity)  # (N, nv)


def forward_dynamics(model, states, fext, gravity) -> np.ndarray:
    return aba(model, states.q, states.v, states.tau, fext, gravity)  # (N, nv)


def mass_matrix(model, states, fext, gravity) -> np.ndarray:
    return crba(model, states.q)  # (N, nv, nv)


def center_of_mass_rows(model, states, fext, gravity, root: int = -1) -> np.ndarray:
    """[c | Jcom] (N, 3, 1 + nv): the centre of mass in the world, then its Jacobian
    (:func:`treedyn.engine.named.center_of_mass`; ``root``: a body's subtree)."""
    from treedyn.engine.named import center_of_mass  # (scipy, with the tree sweeps: not
    # at the start of every dyn inverse)
    _, c, Jcom = center_of_mass(model, states.q, root)
    return np.concatenate([c[:, :, None], Jcom], axis=2)


def coriolis_matrix(model, states, fext, gravity) -> np.ndarray:
    from treedyn.engine.coriolis import coriolis  # (with the tree sweeps, as com)
    return coriolis(model, states.q, states.v)  # (N, nv, nv)


def centroidal_rows(model, states, fext, gravity) -> np.ndarray:
    """[Ag | hg | Ig] (N, 6, nv + 1 + 6): the centroidal momentum matrix, the momentum
    Ag v and the centroidal composite inertia, rows (linear, angular)
    (:func:`treedyn.engine.centroidal.centroidal_momentum`)."""
    from treedyn.engine.centroidal import centroidal_momentum  # (loaded when asked, as com)
    Ag, hg, Ig = centroidal_momentum(model, states.q, states.v)
    return np.concatenate([Ag, hg[:, :, None], Ig], axis=2)


def energy_rows(model, states, fext, gravity) -> np.ndarray:
    """[kinetic, potential] (N, 2) (:func:`treedyn.engine.energy.energy`)."""
    from treedyn.engine.energy import energy  # (loaded when asked, as com)
    return energy(model, states.q, states.v, gravity)


COMPUTATIONS = {  # a new batch command: an engine function and a row here
    "inverse": Computation("tau", ("q", "v", "a"), False, inverse_dynamics),
    "forward": Computation("a", ("q", "v", "tau"), False, forward_dynamics),
    "mass": Computation("M", ("q",), True, mass_matrix),
    "com": Computation("com", ("q",), False, center_of_mass_rows, lambda nv: (3, nv + 1)),
    "coriolis": Computation("C", ("q", "v"), True, coriolis_matrix),
    "centroidal": Computation("centroidal", ("q", "v"), False, centroidal_rows,
                              lambda nv: (6, nv + 7)),
    "energy": Computation("energy", ("q", "v"), False, energy_rows, lambda nv: (2,)),
}  # frames and jacobian name frames: :func:`.kinematics.kinematics` makes their rows


def effort(model, states, fext, gravity) -> np.ndarray:
    """The joint forces a state's effort limits are checked on: the log's tau when it has
    one, else inverse dynamics of q, v and a (a missing v or a is zero)."""
    if states.tau is not None:
        return states.tau  # (N, nv)
    return inverse_dynamics(model, states, fext, gravity)


# check-limits' row (not a command of the table): q, v, a and tau read, tau computed
EFFORT = Computation("tau", ("q", "v", "a", "tau"), False, effort)


def computation_of(command: str | Computation) -> Computation:
    """The row ``COMPUTATIONS[command]``, or ``command`` itself when it is a row (one made
    for the frames asked, :func:`.kinematics.kinematics`)."""
    return command if isinstance(command, Computation) else COMPUTATIONS[command]


def compute(command: str | Computation, layout: Layout, states, gravity) -> np.ndarray:
    """One batched engine call of ``command`` (a name of :data:`COMPUTATIONS`, or a row)
    for a chunk of states; non-finite results are errors (:class:`PartialResult` holds
    those before)."""
    model = layout.model
    with np.errstate(all="ignore"):
        fext = (external_forces(model, states.wrenches, states.count) if states.wrenches
                else None)
        try:
            result = computation_of(command).engine(model, states, fext, gravity)
        except np.linalg.LinAlgError:
            raise UsageError(f"{states.where(0)}: {SINGULAR}") from None
        if command == "forward" and layout.degrees:
            result /= layout.v_scale
    finite = np.isfinite(result.reshape(states.count, -1)).all(axis=1)
    if command == "forward" and finite.all() and may_be_singular(model):
        finite = ~singular_states(model, states.q)
    if not finite.all():
        bad = int(np.argmin(finite))
        problem = OVERFLOW
        if command == "forward":
            problem = singular_problem(model, states.q[bad]) or problem
        raise PartialResult(f"{states.where(bad)}: {problem}", result[:bad])
    return result


OVERFLOW = "the result is not finite (it overflows)"
SINGULAR = ("forward dynamics is singular here (a joint moves no mass or inertia?); "
            "see dyn check-inertia")


def singular_problem(model, q: np.ndarray) -> str:
    """Why forward dynamics is singular at q: M(q) overflows; the joints whose motions
    coincide (M singular, not indefinite: its null direction holds a joint whose own ABA
    D-block is regular); the joints whose D-block is not positive definite (they move no
    mass); "" when M(q) is regular (a non-finite result then overflowed)."""
    with np.errstate(all="ignore"):
        M = crba(model, q)
    if not np.isfinite(M).all():
        return "M(q) is not finite here (it overflows)"
    names = singular_joints(model, q)
    if singular_matrices(model, M[None])[0] and not indefinite(M):
        together = coinciding_joints(model, M)
        if len(together) > 1 and not set(together) <= set(names):
            return (f"forward dynamics is singular here: M(q) is singular, the motions of "
                    f"joints {listing(together, 4)} coincide (nothing with mass or inertia "
                    "moves between them); see dyn condition")
    if names:
        return (f"forward dynamics is singular here: joint{'s' if len(names) > 1 else ''} "
                f"{listing(names, 4)} move{'' if len(names) > 1 else 's'} no positive mass "
                "or inertia; see dyn check-inertia")
    return SINGULAR if singular_matrices(model, M[None])[0] else ""
