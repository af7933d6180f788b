"""Text pipelines in one process against worker processes: text inputs split over them
(cli/run/parts.py); an .npz input runs in one process both ways (its text workers were
removed: they gave no gain once orjson wrote the text).

    python benchmarks/bench_parts.py [--states 100000] [--repeats 3] [--markdown]

Model: Talos (``talos_reduced.urdf`` from example-robot-data) with a free-flyer root.
``--states`` random states (seeded) are written once as JSON Lines, CSV and .npz; then, for
each input format and command, ``dyn COMMAND MODEL --free-flyer --input F --output O`` runs
as a fresh process with ``TREEDYN_PROCESSES=1`` (one process) and with dyn's default (one
worker per CPU, at most 8), alternating within each repeat so the shared machine's load
hits both alike. The table gives the median wall times and their ratio, and whether the
outputs are byte for byte the same (the workers' promise). Processes run with a bytecode
cache, as after a pip install (see bench_pipeline.py).
"""
from __future__ import annotations

import argparse
import filecmp
import os
import platform
import statistics
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import print_table, robots_root  # noqa: E402
from bench_pipeline import TALOS, dyn_executable, wall  # noqa: E402

CASES = (("jsonl", "inverse", ".jsonl"), ("jsonl", "forward", ".npz"), ("csv", "inverse", ".csv"),
         ("csv", "mass", ".npz"), ("npz", "inverse", ".csv"), ("npz", "forward", ".jsonl"))


def write_inputs(folder: str, model, count: int) -> dict[str, str]:
    """The same random states as JSON Lines, CSV and .npz (all of q, v, a, tau), written
    as dyn bench writes its samples."""
    from treedyn.pipeline.bench import random_states, write_states

    vectors = random_states(model, count)
    paths = {fmt: os.path.join(folder, f"states.{fmt}") for fmt in ("jsonl", "csv", "npz")}
    for fmt, path in paths.items():
        write_states(path, fmt, vectors)
    return paths


def same_output(first: str, second: str) -> bool:
    if not first.endswith(".npz"):
        return filecmp.cmp(first, second, shallow=False)
    with np.load(first) as a, np.load(second) as b:
        return a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--states", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    from treedyn.cli.run.pool import processes
    from treedyn.parsers import load_model

    urdf = os.path.join(robots_root(), TALOS)
    model = load_model(urdf, free_flyer=True)
    dyn = dyn_executable()
    with tempfile.TemporaryDirectory(prefix="bench-parts-") as work:
        paths = write_inputs(work, model, args.states)
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1",
               "PYTHONPYCACHEPREFIX": os.path.join(work, "pycache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("TREEDYN_PROCESSES", None)
        rows = []
        for fmt, command, extension in CASES:
            size = os.path.getsize(paths[fmt]) / 2 ** 20
            times = {1: [], 0: []}
            outputs = {}
            for _ in range(args.repeats + 1):  # the first round warms the bytecode cache
                for split in (1, 0):
                    output = os.path.join(work, f"out{split}{extension}")
                    outputs[split] = output
                    run_env = {**env, "TREEDYN_PROCESSES": "1"} if split == 1 else env
                    times[split].append(wall([dyn, command, urdf, "--free-flyer", "--input",
                                              paths[fmt], "--output", output], run_env))
            one, split = (statistics.median(times[k][1:]) for k in (1, 0))
            rows.append([f"{fmt} -> {extension[1:]}", command, f"{size:.0f}", f"{one:.2f}",
                         f"{split:.2f}", f"{split / one:.2f}x",
                         "yes" if same_output(outputs[1], outputs[0]) else "NO"])
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},"
          f" numpy {np.__version__}; talos_reduced --free-flyer, {args.states} states; "
          f"{processes()} worker processes by default; median of {args.repeats} after a "
          "warm-up\n")
    print_table(["input -> output", "command", "input MB", "one process s", "workers s",
                 "ratio", "identical output"], rows, args.markdown)


if __name__ == "__main__":
    main()
