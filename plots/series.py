"""Pictures of the diagnostics over samples, joints and logs: ``condition``, ``statics``
and ``check-limits``. Each draws the JSON document its command prints (and, where the
document sums many values, the values it sums)."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from . import sized

OVER, UNDER = "#d62728", "#1f77b4"  # bars above their limit, and below
KIND_UNITS = (("position", "q"), ("velocity", "v"), ("effort", "tau"))


def name_axis(axes, labels: Sequence[str]) -> None:
    """Dof or joint names under the bars, turned and small enough for about 40."""
    size = 8 if len(labels) <= 12 else max(4.5, 8 - (len(labels) - 12) / 8)
    axes.set_xticks(range(len(labels)), labels, rotation=90, fontsize=size)


def ratio_bars(axes, labels: Sequence[str], ratios: Sequence[float | None], **bars):
    """Bars of each name's ratio to its limit (None: no limit, no bar)."""
    heights = [math.nan if r is None else r for r in ratios]
    colours = [OVER if h > 1 else UNDER for h in heights]
    drawn = axes.bar(bars.pop("x", range(len(labels))), heights,
                     color=bars.pop("color", colours), **bars)
    name_axis(axes, labels)
    return drawn


@sized(13, 5.5)
def condition(figure, document: dict, cond: np.ndarray) -> None:
    """``condition``: cond(M) at each sample (``cond``, the values the document's min,
    median and max sum up; log scale) with the --max-cond line, and the weakest direction
    at the worst sample (the unit eigenvector of lambda_min, by dof)."""
    left, right = figure.subplots(1, 2, width_ratios=(1, 1.3))
    samples = np.arange(len(cond))
    left.semilogy(samples, cond, marker=".", linewidth=0.8, label="cond(M)")
    worst = document["worst"]
    left.semilogy([worst["sample"]], [worst["cond"]], "o", color=OVER,
                  label=f"worst: sample {worst['sample']}")
    left.axhline(document["thresholds"]["max_cond"], color="black", linestyle="--",
                 linewidth=1, label="--max-cond")
    left.set_xlabel("sample (0: the neutral configuration)")
    left.set_ylabel("cond(M) = lambda_max / lambda_min (no unit)")
    left.set_title(f"{document['model']}: cond(M) over {document['samples']} configurations "
                   f"(seed {document['seed']})")
    left.legend(fontsize=8)
    direction = worst["weakest_direction"]
    right.bar(range(len(direction)), list(direction.values()), color=UNDER)
    name_axis(right, list(direction))
    right.axhline(0, color="black", linewidth=0.6)
    right.set_ylabel("component (unit vector; rad or m per unit)")
    right.set_title(f"weakest direction at sample {worst['sample']} (lambda_min "
                    f"{worst['lambda_min']:.3g})")


@sized(10, 5.5)
def statics(figure, document: dict) -> None:
    """``statics``: each actuated joint's largest gravity load over its range against its
    effort limit (the document's ``ratio``), and the 1.0 line."""
    axes = figure.subplots()
    joints = document["joints"]
    if not joints:
        axes.set_axis_off()
        axes.set_title(f"{document['model']}: no actuated joint")
        return
    ratio_bars(axes, [j["joint"] for j in joints], [j["ratio"] for j in joints])
    axes.axhline(1.0, color="black", linewidth=1, linestyle="--", label="effort limit (1.0)")
    axes.set_ylabel("max |g_i(q)| / effort limit (no unit)")
    payload = document["payload"]
    load = f"; payload {payload['mass']:g} kg at {payload['frame']}" if payload and \
        payload["mass"] else ""
    axes.set_title(f"{document['model']}: gravity load over the joint ranges against the "
                   f"effort limits{load}")
    axes.legend(fontsize=8)


def peak_ratios(entry: dict, values: dict[str, np.ndarray], dof: int) -> list:
    """Per kind of limit: the largest excursion of the dof's values from the middle of its
    range, as a share of half the range (1: at a bound; |x| / limit for a symmetric one);
    None where the kind is not checked or a side is unbounded."""
    ratios = []
    for kind, _ in KIND_UNITS:
        found = entry[kind]
        if found is None or kind not in values or found["lower"] is None \
                or found["upper"] is None or found["upper"] <= found["lower"]:
            ratios.append(None)
            continue
        middle, half = (found["upper"] + found["lower"]) / 2, (found["upper"] - found["lower"]) / 2
        ratios.append(float(np.max(np.abs(values[kind][:, dof] - middle))) / half
                      if len(values[kind]) else None)
    return ratios


def joined(traces: Sequence[dict]) -> dict[str, np.ndarray]:
    """The chunks' values of each kind of limit, (states, nv) over the whole log."""
    kinds = {kind for trace in traces for kind in trace}
    return {kind: np.concatenate([trace[kind] for trace in traces]) for kind in kinds
            if all(kind in trace for trace in traces)}


@sized(14, 10)
def limits(figure, document: dict, traces: Sequence[dict]) -> None:
    """``check-limits``: per dof the peak ratio of q, v and tau to their limits (bars, the
    1.0 line; :func:`peak_ratios`), then q of each dof with position limits over the log
    between its bounds. ``traces``: the values the document sums (the limits sink's)."""
    values = joined(traces)
    entries = document["joints"]
    top, bottom = figure.subfigures(2, 1, height_ratios=(1, 1.6))
    axes = top.subplots()
    labels = [entry["dof"] for entry in entries]
    ratios = np.array([peak_ratios(entry, values, k) for k, entry in enumerate(entries)],
                      dtype=float).reshape(len(entries), len(KIND_UNITS))
    width = 0.8 / len(KIND_UNITS)
    for k, ((kind, short), colour) in enumerate(zip(KIND_UNITS, ("#1f77b4", "#2ca02c",
                                                                   "#9467bd"))):
        ratio_bars(axes, labels, list(ratios[:, k]), x=np.arange(len(labels)) + (k - 1) * width,
                   width=width, color=colour, label=f"{short}: {kind}")
    axes.axhline(1.0, color=OVER, linewidth=1, linestyle="--", label="limit (1.0)")
    axes.set_ylabel("peak |x - middle| / half range (1: at a limit)")
    axes.set_title(f"{document['model']}, {document['input']}: {document['offending_states']} "
                   f"of {document['states']} states outside a limit")
    axes.legend(fontsize=8, ncols=4)
    limits_over_time(bottom, entries, values.get("position"))


def state_grid(figure, count: int, per_column: int):
    """``count`` plots over the log's states in columns of at most ``per_column``, sharing
    their state axis (labelled under the last row; the cells left over hidden): the
    plots, in order."""
    columns = max(1, math.ceil(count / per_column))
    rows = max(1, math.ceil(count / columns))
    grid = figure.subplots(rows, columns, sharex=True, squeeze=False).ravel()
    for axes in grid[count:]:
        axes.set_axis_off()
    for axes in grid[:count][-columns:]:
        axes.set_xlabel("state (log order)", fontsize=7)
        axes.xaxis.set_tick_params(labelbottom=True)
    return grid[:count]


def name_plot(axes, text: str) -> None:
    """A small plot of a grid named by a title over it (a y label would run into its
    neighbours' at 40 plots)."""
    axes.set_title(text, fontsize=7, pad=2)
    axes.tick_params(labelsize=6)


def limits_over_time(figure, entries: Sequence[dict], q: np.ndarray | None) -> None:
    """q of every dof with position limits over the log (state index), its bounds
    dashed."""
    bounded = [k for k, entry in enumerate(entries) if entry["position"] is not None]
    if q is None or not bounded:
        figure.suptitle("no dof has position limits")
        return
    states = np.arange(len(q))
    for axes, k in zip(state_grid(figure, len(bounded), 8), bounded):
        found = entries[k]["position"]
        axes.plot(states, q[:, k], linewidth=0.9, color=UNDER)
        for bound in (found["lower"], found["upper"]):
            if bound is not None:
                axes.axhline(bound, color=OVER, linewidth=0.8, linestyle="--")
        name_plot(axes, f"{entries[k]['dof']} ({found['unit']})")
    figure.suptitle("q over the log between its limits (dashed)", fontsize=9)
