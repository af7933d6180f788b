"""What the identification's log measures and what is known beforehand
(``dyn identify --current --known``).

A log from drives that report currents i instead of torques: tau_j = k_j i_j with an
unknown gain k_j per dof (the ``gain`` term). Then every equation reads
``Y pi - k i = 0``: homogeneous, so the parameters are known only up to a common scale, and
a *known* parameter gives it -- a mass (of a payload), a first moment, or one drive's gain
(a torque constant from its datasheet). A known parameter's column moves to the right-hand
side (target -= Y_c value_c) and is zeroed, so the fit sees it as fixed; the consistent
fit's prior holds it at that value. Known parameters also apply to a torque log.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treedyn.engine.regressor import Layout as Columns
from treedyn.engine.regressor import SIGNED_TERMS, signed_columns, term_columns

from .errors import UsageError
from .vectors import name_value


@dataclass(frozen=True)
class Drives:
    """``current``: the log's tau holds the drives' currents (the gain term fits k);
    ``known``: (name, value) of parameters fixed beforehand (names as the columns')."""

    current: bool = False
    known: tuple = ()

    @classmethod
    def of(cls, current: bool, specs=None) -> "Drives":
        """From ``--current`` and the ``--known NAME=VALUE`` texts."""
        pairs = []
        for spec in specs or ():
            name, value = name_value(spec)
            if not np.isfinite(value):
                raise UsageError(f"dyn: --known {spec!r}: expected NAME=VALUE, a finite number")
            if name in dict(pairs):
                raise UsageError(f"dyn: --known {spec!r}: {name} is given twice")
            pairs.append((name, value))
        return cls(current, tuple(pairs))

    def columns(self, columns: Columns) -> tuple[np.ndarray, np.ndarray]:
        """(indices (k,), values (k,)) of the known parameters; UsageError for a name that
        is no column, and for a current log without the gain term or a scale."""
        if self.current and "gain" not in columns.terms:
            raise UsageError("dyn: --current needs the gain term (--terms gain,...): the "
                             "log's tau holds currents, tau = gain x current")
        if "gain" in columns.terms and not self.current:
            raise UsageError("dyn: --terms gain fits currents: give --current (the log's "
                             "tau holds the drives' currents)")
        if self.current and not self.known:
            raise UsageError("dyn: --current needs a scale: --known NAME=VALUE (a mass, a "
                             "first moment or one drive's gain.DOF)")
        index = []
        for name, value in self.known:
            if name not in columns.names:
                raise UsageError(f"dyn: --known {name}: no such parameter (names as "
                                 "identify's: BODY.m, BODY.mx, ..., TERM.DOF)")
            index.append(columns.names.index(name))
            if value < 0 and index[-1] in non_negative(columns):
                raise UsageError(f"dyn: --known {name}={value:g}: {impossible(name)}")
        return np.array(index, dtype=int), np.array([v for _, v in self.known], dtype=float)

    def target(self, columns: Columns, known, Y: np.ndarray, tau: np.ndarray,
               measured: np.ndarray) -> np.ndarray:
        """The right-hand side (m, nv) of a chunk: ``measured`` (the log's tau less what no
        parameter explains) for a torque log, less that part alone for a current log, whose
        gain columns of Y (m, nv, P) take -i (``tau``, the log's column); then the known
        columns moved over and zeroed in Y."""
        target = measured
        if self.current:
            target = measured - tau  # the known torques' part, negated
            Y[:, columns.term_dofs, term_columns(columns, "gain")] = -tau[:, columns.term_dofs]
        index, values = known
        if len(index):
            with np.errstate(over="ignore", invalid="ignore"):
                torques = Y[:, :, index] * values  # (m, nv, k): each known parameter's
                squares = np.einsum("mjk,mjk->k", torques, torques)
            if not np.isfinite(squares).all():  # (the fit sums squares of the target)
                name, value = self.known[int(np.flatnonzero(~np.isfinite(squares))[0])]
                raise UsageError(f"dyn: --known {name}={value:g}: its torques overflow (the "
                                 "sums of their squares pass 1e308): not a value the log "
                                 "can be fitted with")
            target = target - Y[:, :, index] @ values
            Y[:, :, index] = 0.0
        return target


# the regressor's parameters no body can have negative: its mass and the moments of inertia
# about the axes of its frame (the diagonal of a positive semi-definite inertia)
NON_NEGATIVE = ("m", "Ixx", "Iyy", "Izz")


def non_negative(columns: Columns) -> set:
    """The columns whose value cannot be negative: each body's :data:`NON_NEGATIVE`, and
    the per-joint terms the fit keeps non-negative (all but the signed ones)."""
    inertial = {i for i, name in enumerate(columns.names[:columns.inertial])
                if name.rsplit(".", 1)[1] in NON_NEGATIVE}
    signed = set(signed_columns(columns).tolist())
    return inertial | (set(range(columns.inertial, columns.size)) - signed)


def impossible(name: str) -> str:
    """Why the parameter ``name`` (a :func:`non_negative` column's) cannot be negative."""
    kind = name.rsplit(".", 1)[1]
    if kind == "m":
        return "a mass cannot be negative"
    if kind in NON_NEGATIVE:
        return "a moment of inertia about an axis cannot be negative"
    return (f"the fit keeps {name.split('.', 1)[0]} coefficients non-negative (of the "
            f"per-joint terms, only {', '.join(SIGNED_TERMS)} may be negative)")
