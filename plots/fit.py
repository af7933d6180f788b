"""``identify``'s picture: the logged torques against the fitted model's, and the
residuals against the fit's sigma."""
from __future__ import annotations

import math
import warnings

import numpy as np

from treedyn.pipeline.layout import Layout
from treedyn.pipeline.drives import Drives
from treedyn.pipeline.errors import StatesWarning
from treedyn.pipeline.regression import Rows, log_rows
from treedyn.pipeline.source import Input

from . import sized
from .series import name_plot, state_grid


def torques(layout: Layout, path: str, result, gravity, prefix: str | None = None,
            chunk: int = 4096) -> dict[str, np.ndarray]:
    """The log at ``path`` read again, as the fit read it: ``measured`` (states, nv), the
    logged tau less what the parameters do not explain (armature, external forces), and
    the torques Y pi of the OLS and of the consistent parameters of ``result`` (an
    :class:`~treedyn.engine.analysis.identify_report.Identification`), every state (the
    held-out ones too; a log of positions with v and a estimated as the fit did)."""
    columns = result.layout
    pi = {"ols": result.ols.full(result.base), "consistent": result.fit.pi.copy()}
    index, values = Drives(False, tuple(result.settings.get("known", {}).items())).columns(
        columns)  # --known: fixed, not fitted; the predictions hold them
    for parameters in pi.values():
        parameters[index] = values
    found = {"measured": [], "ols": [], "consistent": []}
    rows = Rows(layout, columns, gravity, Drives(), (np.zeros(0, dtype=int), np.zeros(0)))
    with warnings.catch_warnings():  # (the fit's read of the log said them already)
        warnings.simplefilter("ignore", StatesWarning)
        for Y, target in log_rows(rows, Input.open(path, prefix), chunk,
                                  result.settings.get("cutoff")):  # Y (m, nv, P)
            found["measured"].append(target)
            for key, parameters in pi.items():
                found[key].append(Y @ parameters)
    return {key: np.concatenate(parts) if parts else np.zeros((0, layout.model.nv))
            for key, parts in found.items()}


@sized(14, 9)
def identify(figure, document: dict, series: dict[str, np.ndarray], layout: Layout) -> None:
    """Per dof (one plot each, a shared state axis) the measured torque and the OLS and
    consistent fits' predictions (``series``, :func:`torques`), then the histogram of the
    OLS residuals (every dof's) with a Gaussian of the document's ``sigma`` over it."""
    nv = len(document["residuals"]["dofs"])
    left, right = figure.subfigures(1, 2, width_ratios=(2.2, 1))
    grid = state_grid(left, nv, 10)
    states = np.arange(len(series["measured"]))
    for k, (axes, name) in enumerate(zip(grid, document["residuals"]["dofs"])):
        unit = "N m" if layout.angular[k] else "N"
        axes.plot(states, series["measured"][:, k], color="black", linewidth=0.8,
                  label="measured")
        axes.plot(states, series["ols"][:, k], color="#1f77b4", linewidth=0.8, label="OLS")
        axes.plot(states, series["consistent"][:, k], color="#ff7f0e", linewidth=0.8,
                  linestyle="--", label="consistent")
        name_plot(axes, f"{name} ({unit})")
    left.legend(handles=grid[0].lines, loc="outside lower center", ncols=3, fontsize=8)
    left.suptitle(f"{document['model']}: measured and predicted tau", fontsize=10)
    residual_histogram(right.subplots(), document["sigma"],
                       (series["measured"] - series["ols"]).ravel())


def residual_histogram(axes, sigma: float, residuals: np.ndarray) -> None:
    """The residuals' density, and the normal density of the fitted ``sigma`` over it."""
    finite = residuals[np.isfinite(residuals)]
    axes.hist(finite, bins=min(60, max(10, int(math.sqrt(max(len(finite), 1))))),
              density=True, color="#1f77b4", alpha=0.6, label="OLS residuals")
    if sigma > 0:
        span = max(4 * sigma, float(np.max(np.abs(finite))) if finite.size else 0.0)
        x = np.linspace(-span, span, 401)
        axes.plot(x, np.exp(-0.5 * (x / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi)),
                  color="#d62728", label=f"normal, sigma {sigma:.3g}")
    axes.set_xlabel("measured - predicted tau (N m or N)")
    axes.set_ylabel("density (1 / (N m))")
    axes.set_title("residuals of the OLS fit", fontsize=10)
    axes.legend(fontsize=8)
