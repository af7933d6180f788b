"""States per second of ``dyn inverse`` per file format, whole processes, against another
installation of dyn (today's main, say).

    python benchmarks/bench_formats.py [--states 100000] [--repeats 3]
        [--base /path/to/other/venv/bin/dyn] [--formats jsonl,csv,npz,parquet,h5]
        [--markdown]

Model: Talos (``talos_reduced.urdf`` from example-robot-data) with a free-flyer root.
``--states`` random states (seeded; q, v, a, tau) are written once in every format, as a
user's tool would write them: JSON Lines and CSV as ``dyn bench`` writes its samples,
.npz with ``np.savez``, Parquet with pyarrow (list columns ``q``, ``v``, ``a``, ``tau``,
row groups of 16 384 rows), HDF5 with h5py (datasets ``q``, ``v``, ``a``, ``tau``,
chunked by 16 384 rows). Each case is ``dyn inverse MODEL --free-flyer --input F --output
O`` with the output in the input's format, a fresh process; the dyn of this interpreter
and the ``--base`` one alternate within each repeat,
so the shared machine's load hits both alike. The table gives states/s from the median
wall time and the ratio to the base of the same run. The first round warms the bytecode
cache (not counted); processes run with one BLAS thread and dyn's default processes.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from importlib import metadata

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import print_table, robots_root  # noqa: E402
from bench_pipeline import TALOS, dyn_executable, wall, write_inputs  # noqa: E402

FORMATS = ("jsonl", "csv", "npz", "parquet", "h5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--states", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--base", help="another dyn to compare with (its console script)")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    from treedyn.parsers import load_model

    formats = args.formats.split(",")
    urdf = os.path.join(robots_root(), TALOS)
    model = load_model(urdf, free_flyer=True)
    ours = dyn_executable()
    with tempfile.TemporaryDirectory(prefix="bench-formats-") as work:
        paths = write_inputs(work, model, args.states, formats)
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1",
               "PYTHONPYCACHEPREFIX": os.path.join(work, "pycache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("TREEDYN_PROCESSES", None)
        rows = []
        for fmt in formats:
            sides = {"this": ours}
            if args.base:
                sides["base"] = args.base
            times: dict[str, list[float]] = {side: [] for side in sides}
            for _ in range(args.repeats + 1):
                for side, dyn in sides.items():
                    output = os.path.join(work, f"out-{side}.{fmt}")
                    times[side].append(wall([dyn, "inverse", urdf, "--free-flyer", "--input",
                                             paths[fmt], "--output", output], env))
            rate = {side: args.states / statistics.median(t[1:]) for side, t in times.items()}
            size = os.path.getsize(paths[fmt]) / 2 ** 20
            base = rate.get("base")
            rows.append([f"{fmt} -> {fmt}", f"{size:.0f}", f"{rate['this']:,.0f}",
                         "" if base is None else f"{base:,.0f}",
                         "" if base is None else f"{rate['this'] / base:.2f}x"])
    versions = [f"numpy {np.__version__}"]
    for name in ("orjson", "pysimdjson", "pyarrow", "h5py"):
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, {', '.join(versions)}; talos_reduced --free-flyer, "
          f"dyn inverse, {args.states} states; median of {args.repeats} after a warm-up\n")
    print_table(["input -> output", "input MB", "states/s", "base states/s", "ratio"], rows,
                args.markdown)


if __name__ == "__main__":
    main()
