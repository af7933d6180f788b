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
from treedyn.engine.regressor import term_columns

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
        for name, _ in self.known:
            if name not in columns.names:
                raise UsageError(f"dyn: --known {name}: no such parameter (names as "
                                 "identify's: BODY.m, BODY.mx, ..., TERM.DOF)")
            index.append(columns.names.index(name))
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
            target = target - Y[:, :, index] @ values
            Y[:, :, index] = 0.0
        return target
