"""``dyn bench MODEL``: engine throughput of inverse, forward and mass, to size jobs.

Each row times one engine function on seeded random states (q within the joint limits,
v, a and tau normal): one state, then a batch with 1 and with 2 engine threads
(:func:`treedyn.engine.kernels.configured`). A row repeats the call for about ``seconds``
and keeps the best run, reported as states/s and microseconds per state.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np

FUNCTIONS = ("inverse", "forward", "mass")


@dataclass
class Row:
    """One measurement."""

    command: str
    states: int
    threads: int
    seconds: float  # best time of one call

    @property
    def rate(self) -> float:
        return self.states / self.seconds

    @property
    def micros(self) -> float:
        return 1e6 * self.seconds / self.states

    def document(self) -> dict:
        return {"command": self.command, "states": self.states, "threads": self.threads,
                "states_per_s": self.rate, "us_per_state": self.micros}


def calls(model, count: int, seed: int = 0) -> dict:
    """The engine call of each command on ``count`` random states."""
    from treedyn.engine import aba, crba, rnea

    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng, count)
    v, a, tau = (rng.normal(size=(count, model.nv)) for _ in range(3))
    return {"inverse": lambda: rnea(model, q, v, a),
            "forward": lambda: aba(model, q, v, tau),
            "mass": lambda: crba(model, q)}


def best_time(call, seconds: float) -> float:
    """The fastest of repeated calls lasting about ``seconds`` in total (at least 3)."""
    best, spent, runs = float("inf"), 0.0, 0
    while runs < 3 or spent < seconds:
        start = time.perf_counter()
        call()
        took = time.perf_counter() - start
        best, spent, runs = min(best, took), spent + took, runs + 1
    return best


def measure(model, batch: int, seconds: float) -> list[Row]:
    """Rows for every command: N=1, then N=batch with 1 and 2 threads."""
    from treedyn.engine.kernels import configured

    rows = []
    single, many = calls(model, 1), calls(model, batch)
    with np.errstate(all="ignore"):
        for command in FUNCTIONS:
            with configured(threads=1):
                rows.append(Row(command, 1, 1, best_time(single[command], seconds)))
            for threads in (1, 2):
                with configured(threads=threads):
                    rows.append(Row(command, batch, threads,
                                    best_time(many[command], seconds)))
    return rows


def run_bench(model, batch: int, seconds: float, fmt: str) -> None:
    """Measure and print the table (or JSON / CSV) on stdout."""
    rows = measure(model, batch, seconds)
    if fmt == "json":
        print(json.dumps({"model": model.name, "nq": int(model.nq), "nv": int(model.nv),
                          "rows": [row.document() for row in rows]}))
        return
    if fmt == "csv":
        print("command,states,threads,states_per_s,us_per_state")
        for row in rows:
            print(f"{row.command},{row.states},{row.threads},{row.rate!r},{row.micros!r}")
        return
    from .output import table

    print(f"model {model.name}: nq={model.nq}, nv={model.nv}, {model.njoints} joints "
          "(engine only, best of repeated calls)")
    print(table([[r.command, r.states, r.threads, f"{r.rate:,.0f}", f"{r.micros:.3g}"]
                 for r in rows], ["command", "states", "threads", "states/s", "us/state"],
                colalign=("left", "right", "right", "right", "right")))
