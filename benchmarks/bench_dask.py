"""The Dask path against the single-machine path: whole ``dyn`` processes over several files.

    python benchmarks/bench_dask.py [--files 4] [--states 100000] [--repeats 3]
        [--tasks inverse forward] [--markdown]

Model: Talos (``talos_data/robots/talos_reduced.urdf`` from example-robot-data) with a
free-flyer root. ``--files`` uncompressed ``.npz`` files of ``--states`` random states each
(as in bench_pipeline.py) are written to a temporary folder; then, alternating within each
repeat, whole processes run

* ``dyn TASK MODEL --free-flyer --input 'logs/*.npz' --output single/`` (one file after
  another on this machine, the engine's two threads), and
* the same with ``--scheduler local``: a LocalCluster of 2 worker processes x 1 thread
  started by dyn, the model scattered to both once, one task per file
  (:mod:`treedyn.pipeline.cluster`).

The table gives the medians, the ratio Dask / single machine and the states per second of
each; a warm-up run of each checks that every output array is identical (np.array_equal).
On one 2-core machine the cluster cannot beat the engine's own two threads: the row shows
what starting the cluster and shipping tasks cost, which a job on a real cluster (several
machines, ``--scheduler tcp://HOST:8786``) pays once. Child processes get
OPENBLAS_NUM_THREADS=1 and a bytecode cache, as in bench_pipeline.py.
"""
from __future__ import annotations

import argparse
import glob
import os
import platform
import statistics
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import print_table, robots_root  # noqa: E402
from bench_pipeline import TALOS, dyn_executable, make_states, wall  # noqa: E402

RESULT_KEY = {"inverse": "tau", "forward": "a", "mass": "M"}


def child_env(pycache: str) -> dict:
    env = dict(os.environ)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = "1"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def identical(folder_a: str, folder_b: str, key: str) -> bool:
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder_a, "*.npz")))
    if names != sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder_b, "*.npz"))):
        return False
    for name in names:
        with np.load(os.path.join(folder_a, name)) as a, np.load(os.path.join(folder_b, name)) as b:
            if not np.array_equal(a[key], b[key]):
                return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--states", type=int, default=100_000, help="states per file")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", nargs="+", default=["inverse", "forward"],
                        choices=sorted(RESULT_KEY))
    parser.add_argument("--markdown", action="store_true", help="print a README table")
    args = parser.parse_args()

    import distributed

    from treedyn.parsers import load_model

    urdf = os.path.join(robots_root(), TALOS)
    model = load_model(urdf, free_flyer=True)
    dyn = dyn_executable()
    total = args.files * args.states
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_dask_") as work:
        env = child_env(os.path.join(work, "pycache"))
        logs = os.path.join(work, "logs")
        os.mkdir(logs)
        for k in range(args.files):
            make_states(os.path.join(logs, f"log{k}.npz"), model, args.states, seed=k)
        pattern = os.path.join(logs, "*.npz")
        for task in args.tasks:
            single_out = os.path.join(work, "single") + os.sep
            dask_out = os.path.join(work, "dask") + os.sep
            single = [dyn, task, urdf, "--free-flyer", "--input", pattern, "--output", single_out]
            on_cluster = [dyn, task, urdf, "--free-flyer", "--input", pattern, "--output", dask_out,
                          "--scheduler", "local"]
            wall(single, env)
            wall(on_cluster, env)
            same = identical(single_out, dask_out, RESULT_KEY[task])
            t_single, t_dask = [], []
            for _ in range(args.repeats):
                t_single.append(wall(single, env))
                t_dask.append(wall(on_cluster, env))
            a, b = statistics.median(t_single), statistics.median(t_dask)
            rows.append((task, f"{a:.2f}", f"{b:.2f}", f"{b / a:.2f}x", f"{total / a:,.0f}",
                         f"{total / b:,.0f}", "yes" if same else "NO"))
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"numpy {np.__version__}, dask.distributed {distributed.__version__}; talos_reduced "
          f"--free-flyer, {args.files} files x {args.states} states; median of {args.repeats} "
          "whole processes; LocalCluster 2 workers x 1 thread; OPENBLAS_NUM_THREADS=1")
    print_table(("task", "single machine s", "--scheduler local s", "ratio", "single states/s",
                 "dask states/s", "identical outputs"), rows, args.markdown)


if __name__ == "__main__":
    main()
