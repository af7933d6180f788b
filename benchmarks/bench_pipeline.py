"""Whole-process wall times: ``dyn inverse|forward|mass --input S.npz --output O.npz`` against
a Python script over Pinocchio's parallel API, and the start-up latency of one state.

    python benchmarks/bench_pipeline.py [--states 100000] [--repeats 3]
        [--latency-repeats 10] [--blas-threads 1] [--treedyn-threads N] [--markdown]
        [--no-bytecode-cache] [--formats npz,jsonl,csv] [--base DYN] [--processes N]
        [--skip-batch] [--skip-formats] [--skip-latency]

Model: Talos (``talos_data/robots/talos_reduced.urdf`` from example-robot-data) with a
free-flyer root. ``--states`` random states (random unit quaternion for the root, joints
within their limits: ``treedyn.parsers.load_model(...).random_configuration``; v, a, tau
standard normal) are saved once in an uncompressed ``.npz`` (arrays q, v, a, tau).

Batch (issue 5 targets: inverse and forward <= 0.8x, mass <= 1.0x): each side is a fresh
process that reads the .npz, computes and writes an .npz:

* ``dyn inverse|forward|mass MODEL --free-flyer --input S.npz --output O.npz``;
* a script (written to a temp file, run with the same interpreter) that loads S.npz,
  builds ``pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())``, converts q to
  Pinocchio's layout (joint by joint, by name; continuous joints as cos/sin), and runs
  ``pin.rneaInParallel(2, pool, q, v, a, out)`` / ``pin.abaInParallel(2, pool, q, v, tau,
  out)`` with ``pool = pin.ModelPool(model, 2)`` on (nq, N) / (nv, N) Fortran-ordered
  arrays, or a loop of ``pin.crba`` calls for M (upper triangle symmetrised), and saves the
  result with ``np.savez``.

Both runs of a task alternate within each repeat (so load on the shared machine hits both
alike); the table gives medians and the ratio dyn / Pinocchio of the same run. One
warm-up run of each side also checks that the outputs agree (max relative error: largest
absolute difference over the largest absolute value of Pinocchio's result).

Formats (``--formats npz,jsonl,csv``; targets: the text formats about 2.1x the .npz
pipeline's time, Parquet 1.4x, HDF5 1.0x): ``dyn inverse MODEL --free-flyer --input S.FMT
--output O.FMT`` on the same states written in each format (as ``bench_formats.py`` writes
them), every format and installation in turn within each repeat; the table gives each
median and its ratio to the .npz run of the same installation in the same run, the
number to compare under the shared machine's load. ``--base DYN`` adds another
installation's console script (today's main, say) to every round; ``--processes N`` sets
TREEDYN_PROCESSES for dyn (1: one process; default: dyn's own, parts of a text file
forked over the CPUs).

Latency (target: ``dyn inverse MODEL --free-flyer --q ...`` <= 0.6x of ``python -c "import
pinocchio"``): medians of ``--latency-repeats`` runs of that command and of a few reference
commands that show where start-up goes, then ``python -X importtime`` of the single-state
command (the ten largest cumulative imports) for whoever trims start-up next.

Every child process runs with a bytecode cache (PYTHONDONTWRITEBYTECODE removed,
PYTHONPYCACHEPREFIX set to a temporary folder that the warm-up runs fill), as Python runs
after a pip install, which compiles modules once; without it, an environment that sets
PYTHONDONTWRITEBYTECODE (this one does) recompiles every Python module of both sides on
every run. ``--no-bytecode-cache`` keeps the environment as it is.

OPENBLAS_NUM_THREADS (and OMP_NUM_THREADS, MKL_NUM_THREADS) are set for every child process
from ``--blas-threads`` (default 1: the only threads are the ones each side asks for,
two); TREEDYN_THREADS is left to dyn's default unless ``--treedyn-threads`` is given. The
values are printed in the header.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import print_table, robots_root  # noqa: E402

TALOS = "talos_data/robots/talos_reduced.urdf"
TARGETS = {"inverse": 0.8, "forward": 0.8, "mass": 1.0}
RESULT_KEY = {"inverse": "tau", "forward": "a", "mass": "M"}

# The Pinocchio side: argv = task, urdf, joints.json, states.npz, output.npz, threads.
PINOCCHIO_SCRIPT = r'''
import json
import sys

import numpy as np
import pinocchio as pin

task, urdf, joints_file, states_file, output_file, threads = sys.argv[1:7]
threads = int(threads)
model = pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer())
with open(joints_file) as stream:
    joints = {j["name"]: j for j in json.load(stream)}  # treedyn's q/v layout, by joint name
states = np.load(states_file)
q = states["q"]
count = q.shape[0]

# q in Pinocchio's layout, (nq, N) Fortran-ordered; continuous joints as (cos, sin).
pq = np.empty((model.nq, count), order="F")
qT = q.T
perm_v = np.empty(model.nv, dtype=np.intp)  # Pinocchio dof -> treedyn dof
for j in range(1, model.njoints):
    ours = joints[model.names[j]]
    iq, nq, iv, nv = model.idx_qs[j], model.nqs[j], model.idx_vs[j], model.nvs[j]
    if nq == 2 and nv == 1 and ours["nq"] == 1:
        angle = qT[ours["idx_q"]]
        pq[iq], pq[iq + 1] = np.cos(angle), np.sin(angle)
    else:
        pq[iq:iq + nq] = qT[ours["idx_q"]:ours["idx_q"] + nq]
    perm_v[iv:iv + nv] = np.arange(ours["idx_v"], ours["idx_v"] + nv)
identity = bool((perm_v == np.arange(model.nv)).all())


def columns(name):
    """(nv, N) Fortran-ordered in Pinocchio's dof order (a free view when orders agree)."""
    x = states[name].T
    return x if identity else np.asfortranarray(x[perm_v])


def ours_order(result):
    """(N, nv[, nv]) in treedyn's dof order, for the comparison only."""
    if identity:
        return result
    inverse = np.argsort(perm_v)
    return result[:, inverse][:, :, inverse] if result.ndim == 3 else result[:, inverse]


if task in ("inverse", "forward"):
    v = columns("v")
    other = columns("a" if task == "inverse" else "tau")
    out = np.empty((model.nv, count), order="F")
    pool = pin.ModelPool(model, threads)
    if task == "inverse":
        pin.rneaInParallel(threads, pool, pq, v, other, out)
    else:
        pin.abaInParallel(threads, pool, pq, v, other, out)
    result = out.T  # (N, nv), C-ordered view
else:
    data = model.createData()
    result = np.empty((count, model.nv, model.nv))
    for n in range(count):
        result[n] = pin.crba(model, data, pq[:, n])  # upper triangle (and diagonal) filled
    lower = np.tril_indices(model.nv, -1)
    for start in range(0, count, 4096):  # symmetrise chunk by chunk
        block = result[start:start + 4096]
        block[:, lower[0], lower[1]] = block[:, lower[1], lower[0]]
np.savez(output_file, **{{"inverse": "tau", "forward": "a", "mass": "M"}[task]: ours_order(result)})
'''


def child_env(args, pycache: str) -> dict:
    env = dict(os.environ)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = str(args.blas_threads)
    if args.treedyn_threads:
        env["TREEDYN_THREADS"] = str(args.treedyn_threads)
    if not args.no_bytecode_cache:  # as after a pip install: modules are not recompiled
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def dyn_executable() -> str:
    """The console script installed next to this interpreter (not a pyenv shim)."""
    here = os.path.join(os.path.dirname(sys.executable), "dyn")
    if os.path.exists(here):
        return here
    found = shutil.which("dyn")
    if not found:
        raise SystemExit("dyn is not installed: pip install -e .")
    return found


def wall(command, env) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}\n"
                         f"{done.stderr.decode(errors='replace')[-2000:]}")
    return elapsed


def max_relative_error(ours: np.ndarray, theirs: np.ndarray) -> float:
    return float(np.max(np.abs(ours - theirs)) / max(np.max(np.abs(theirs)), 1e-300))


def make_states(path: str, model, count: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng, count)
    v, a, tau = (rng.normal(size=(count, model.nv)) for _ in range(3))
    np.savez(path, q=q, v=v, a=a, tau=tau)


def bench_batch(args, env, work, urdf, model):
    states = os.path.join(work, "states.npz")
    make_states(states, model, args.states)
    joints = os.path.join(work, "joints.json")
    with open(joints, "w") as stream:
        json.dump([{"name": name, "idx_q": int(model.idx_q[j]), "nq": int(model.nq_joint[j]),
                    "idx_v": int(model.idx_v[j]), "nv": int(model.nv_joint[j])}
                   for j, name in enumerate(model.joint_names)], stream)
    script = os.path.join(work, "pinocchio_pipeline.py")
    with open(script, "w") as stream:
        stream.write(PINOCCHIO_SCRIPT)
    dyn = dyn_executable()
    ours_out, theirs_out = os.path.join(work, "dyn_out.npz"), os.path.join(work, "pin_out.npz")
    rows = []
    for task in args.tasks:
        ours = [dyn, task, urdf, "--free-flyer", "--input", states, "--output", ours_out]
        theirs = [sys.executable, script, task, urdf, joints, states, theirs_out, "2"]
        # Warm-up (page cache, .pyc) and the correctness check.
        wall(ours, env)
        wall(theirs, env)
        key = RESULT_KEY[task]
        with np.load(ours_out) as a, np.load(theirs_out) as b:
            error = max_relative_error(a[key], b[key])
        t_ours, t_theirs = [], []
        for _ in range(args.repeats):
            t_ours.append(wall(ours, env))
            t_theirs.append(wall(theirs, env))
        for path in (ours_out, theirs_out):
            os.remove(path)
        m_ours, m_theirs = statistics.median(t_ours), statistics.median(t_theirs)
        rows.append((task, m_ours, m_theirs, m_ours / m_theirs, TARGETS[task], error))
    return rows


ROWS = 16384  # rows per Parquet row group and HDF5 chunk of the written inputs


def write_inputs(folder: str, model, count: int, formats) -> dict[str, str]:
    from treedyn.pipeline.bench import random_states
    from treedyn.pipeline.trajectory import write_states

    vectors = random_states(model, count)
    paths = {}
    for fmt in formats:
        path = paths[fmt] = os.path.join(folder, f"states.{fmt}")
        if fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.table({kind: pa.FixedSizeListArray.from_arrays(
                values.ravel(), values.shape[1]) for kind, values in vectors.items()})
            pq.write_table(table, path, row_group_size=ROWS)
        elif fmt == "h5":
            import h5py

            with h5py.File(path, "w") as file:
                for kind, values in vectors.items():
                    file.create_dataset(kind, data=values,
                                        chunks=(min(ROWS, len(values)), values.shape[1]))
        else:
            write_states(path, vectors)
    return paths


FORMAT_TARGETS = {"jsonl": 2.1, "csv": 2.1, "parquet": 1.4, "h5": 1.0}


def bench_formats(args, env, work, urdf, model):
    """Rows (format, installation, median s, ratio to the same installation's .npz run)."""
    formats = args.formats.split(",")
    if "npz" not in formats:
        formats.insert(0, "npz")
    paths = write_inputs(work, model, args.states, formats)
    sides = {"this": dyn_executable(), **({"base": args.base} if args.base else {})}
    env = dict(env)
    if args.processes:
        env["TREEDYN_PROCESSES"] = str(args.processes)
    times = {(fmt, side): [] for fmt in formats for side in sides}
    for repeat in range(args.repeats + 1):  # the first round warms the caches, not counted
        for (fmt, side), spent in times.items():
            output = os.path.join(work, f"out-{side}.{fmt}")
            took = wall([sides[side], "inverse", urdf, "--free-flyer", "--input", paths[fmt],
                         "--output", output], env)
            if repeat:
                spent.append(took)
    medians = {key: statistics.median(spent) for key, spent in times.items()}
    return [(fmt, side, os.path.getsize(paths[fmt]) / 2 ** 20, median,
             median / medians["npz", side]) for (fmt, side), median in medians.items()]


def bench_latency(args, env, urdf, model):
    dyn = dyn_executable()
    q = model.random_configuration(np.random.default_rng(1), 1)[0]
    q_text = ",".join(f"{x:.6f}" for x in q)
    single = [dyn, "inverse", urdf, "--free-flyer", "--q", q_text]
    commands = [
        ("dyn inverse talos --free-flyer --q ... (one state)", single),
        ('python -c "import pinocchio"', [sys.executable, "-c", "import pinocchio"]),
        ('python -c "import treedyn.cli.commands.dynamics"',
         [sys.executable, "-c", "import treedyn.cli.commands.dynamics"]),
        ("python -c: import treedyn.cli.commands.dynamics + load_model(talos, free_flyer=True)",
         [sys.executable, "-c", "import treedyn.cli.commands.dynamics; "
          "from treedyn.parsers import load_model; "
          f"load_model({urdf!r}, free_flyer=True)"]),
        ("dyn --version", [dyn, "--version"]),
        ('python -c "import numpy"', [sys.executable, "-c", "import numpy"]),
        ('python -c "pass"', [sys.executable, "-c", "pass"]),
    ]
    shim = shutil.which("dyn")
    if shim and os.path.realpath(shim) != os.path.realpath(dyn):
        commands.append((f"the same one state through PATH's dyn ({shim})", [shim] + single[1:]))
    for _, command in commands:  # warm-up
        wall(command, env)
    times = {label: [] for label, _ in commands}
    for _ in range(args.latency_repeats):  # interleaved
        for label, command in commands:
            times[label].append(wall(command, env))
    medians = [(label, statistics.median(times[label])) for label, _ in commands]
    reference = medians[1][1]
    rows = [(label, t, t / reference) for label, t in medians]
    done = subprocess.run([sys.executable, "-X", "importtime", dyn] + single[1:], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    imports = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            own, cumulative, name = line[len("import time:"):].split("|", 2)
            imports.append((int(cumulative), int(own), name.rstrip()))
    total = sum(own for _, own, _ in imports)
    top_level = sorted((i for i in imports if not i[2].startswith("  ")), reverse=True)[:10]
    by_self = sorted(imports, key=lambda i: i[1], reverse=True)[:10]
    return rows, top_level, by_self, total


def header(args, env) -> str:
    import pinocchio as pin

    cache = ("as the environment has it" if args.no_bytecode_cache
             else "on (PYTHONPYCACHEPREFIX, filled by the warm-up runs)")
    return (f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"numpy {np.__version__}, pinocchio {pin.__version__}; "
            f"OPENBLAS_NUM_THREADS={env['OPENBLAS_NUM_THREADS']} (also OMP/MKL) for every "
            f"process, TREEDYN_THREADS={env.get('TREEDYN_THREADS', 'unset (dyn default)')}, "
            f"Pinocchio 2 threads; bytecode cache: {cache}; "
            f"talos_reduced --free-flyer, {args.states} states; "
            f"batch: median of {args.repeats} runs after a warm-up, "
            f"latency: median of {args.latency_repeats}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3, help="batch runs per side and task")
    parser.add_argument("--latency-repeats", type=int, default=10)
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="OPENBLAS_NUM_THREADS (and OMP/MKL) of every child process")
    parser.add_argument("--treedyn-threads", type=int, default=None,
                        help="TREEDYN_THREADS for dyn (default: unset, dyn's own default)")
    parser.add_argument("--tasks", nargs="+", default=["inverse", "forward", "mass"],
                        choices=["inverse", "forward", "mass"])
    parser.add_argument("--skip-batch", action="store_true")
    parser.add_argument("--formats", default="npz,jsonl,csv",
                        help="inputs of the formats table (npz, jsonl, csv, parquet, h5)")
    parser.add_argument("--base", help="another dyn's console script, for the formats table")
    parser.add_argument("--processes", type=int, default=None,
                        help="TREEDYN_PROCESSES for the formats table (default: dyn's own)")
    parser.add_argument("--skip-formats", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--markdown", action="store_true", help="print README tables")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep the environment's PYTHONDONTWRITEBYTECODE (compile every run)")
    args = parser.parse_args()
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
    pycache = tempfile.TemporaryDirectory(prefix="bench_pipeline_pycache_")
    env = child_env(args, pycache.name)

    from treedyn.parsers import load_model

    urdf = os.path.join(robots_root(), TALOS)
    model = load_model(urdf, free_flyer=True)
    print(header(args, env))
    print()
    if not args.skip_batch:
        with tempfile.TemporaryDirectory(prefix="bench_pipeline_") as work:
            rows = bench_batch(args, env, work, urdf, model)
        print_table(("task", "dyn s", "pinocchio script s", "ratio", "target", "meets",
                     "max rel. error"),
                    [(task, f"{a:.3f}", f"{b:.3f}", f"{r:.2f}x", f"<= {t:.1f}x",
                      "yes" if r <= t else "no", f"{e:.1e}") for task, a, b, r, t, e in rows],
                    args.markdown)
        print()
    if not args.skip_formats:
        with tempfile.TemporaryDirectory(prefix="bench_pipeline_formats_") as work:
            rows = bench_formats(args, env, work, urdf, model)
        processes = f"TREEDYN_PROCESSES={args.processes or 'unset'}"
        print_table(("input -> output", "dyn", "input MB", "s", "ratio to npz", "target"),
                    [(f"{fmt} -> {fmt}", side, f"{size:.0f}", f"{t:.3f}", f"{r:.2f}x",
                      f"~{FORMAT_TARGETS[fmt]:.1f}x" if fmt in FORMAT_TARGETS else "")
                     for fmt, side, size, t, r in rows], args.markdown)
        print(f"(dyn inverse, {processes}; median of {args.repeats} after a warm-up round)")
        print()
    if not args.skip_latency:
        rows, top_level, by_self, total = bench_latency(args, env, urdf, model)
        table = []
        for k, (label, t, ratio) in enumerate(rows):
            note = ""
            if k == 0:
                note = f"target <= 0.6x: {'yes' if ratio <= 0.6 else 'no'}"
            elif k == 1:
                note = "reference"
            table.append((label, f"{t * 1e3:.0f}", f"{ratio:.2f}x", note))
        print_table(("command", "wall ms", "vs import pinocchio", "note"), table, args.markdown)
        print()
        print(f"python -X importtime of the one-state dyn command: {total / 1e3:.0f} ms of "
              "imports in all (one run, us).")
        for title, imports in (("Top-level imports, largest cumulative:", top_level),
                               ("Modules with the largest self time:", by_self)):
            print(title)
            if args.markdown:
                print("```")
            print(f"{'cumulative':>10} {'self':>8}  module")
            for cumulative, own, name in imports:
                print(f"{cumulative:>10} {own:>8}  {name if title.startswith('Top') else name.strip()}")
            if args.markdown:
                print("```")


if __name__ == "__main__":
    main()
