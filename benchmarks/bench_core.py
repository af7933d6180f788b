"""Per-state time of treedyn's inverse / mass / forward next to Pinocchio's and MuJoCo's.

    python benchmarks/bench_core.py [--repeats 7] [--batch 10000] [--markdown]
    python benchmarks/bench_core.py --baseline /path/to/other/venv/bin/python [--repeats 5]

URDF models: a 7-dof arm (xarm7, fixed base) and a 30+-dof humanoid (talos_reduced,
free-flyer), both from example-robot-data, against Pinocchio. MJCF model: gymnasium's
humanoid.xml against MuJoCo (parse time too). For N = 1 and N = batch states it prints
the median per-state time of each side and the ratio treedyn / reference (below 1:
treedyn is faster), all measured in the same run.

Parse time of mesh-heavy MJCF (``--parse-only`` runs just these): dm_control's dog (174
binary STL, 20 MB), a scene of every OBJ mesh of example-robot-data that MuJoCo compiles
(real exporters' files, triangles and quads, about 25 MB) and a generated 6 MB torus of
quads with normals and texture coordinates. treedyn's ``load_model`` against
``MjModel.from_xml_path`` with MuJoCo's asset cache cleared before each load, so that
both read every mesh file each time.

Pinocchio runs its C++ algorithms from Python: one call per state for N = 1 and for CRBA,
and rneaInParallel / abaInParallel (1 thread and 2 threads) for batches; treedyn runs its
batches with the same number of threads (``treedyn.engine.configure``: chunks of
states on a thread pool, numpy releasing the GIL), and its mass batches with 1 and 2
threads against the single-threaded loop of crba calls. MuJoCo has no
batched dynamics call, so it runs a Python loop over states: inverse = mj_inverse,
mass = mj_fwdPosition + mj_fullM, forward = mj_forward, with contacts, constraints,
springs, dampers and actuation disabled so it computes the same rigid-body quantities.
``--baseline PYTHON`` times only the batches of the two URDF models (inverse, forward,
mass; 1 and 2 threads) three ways in one run, interleaved repeat by repeat: this install,
the treedyn another interpreter imports (an install of main, say; it serves the same
states in a child process, ``--serve``) and Pinocchio. It prints the medians of wall and
CPU time (``time.process_time``, all threads of the process; Pinocchio's own loop in the
parent) and the ratios ours / Pinocchio and ours / baseline: a change measured against its
base under the same load.

OPENBLAS_NUM_THREADS is pinned to 1 (unless set in the environment) so BLAS never adds
threads of its own: both sides use exactly the threads stated. The header reports what
numpy's BLAS actually uses (threadpoolctl, when installed).
"""
from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import platform
import site
import statistics
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
try:
    import pinocchio as pin  # noqa: E402
except ImportError:  # --serve (a baseline's treedyn) needs no Pinocchio
    pin = None

from treedyn.engine import aba, crba, rnea  # noqa: E402
import treedyn.engine as batching  # noqa: E402
from treedyn.parsers import load_model  # noqa: E402

MJCF_MODEL = ("humanoid.xml (MJCF, gymnasium)", "humanoid.xml")
MODELS = (
    ("xarm7 (7 dof, fixed)", "xarm_description/urdf/xarm7.urdf", False),
    ("talos_reduced (free-flyer)", "talos_data/robots/talos_reduced.urdf", True),
)


def robots_root() -> str:
    for base in site.getsitepackages():
        root = os.path.join(base, "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(root):
            return root
    raise SystemExit("example-robot-data is not installed: pip install example-robot-data")


def median_time(function, repeats: int) -> float:
    """Median wall time of ``function()`` over ``repeats`` runs, after one warm-up."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def pinocchio_state(model, pinmodel, q, v, a, tau):
    """Pinocchio's (nq, N)/(nv, N) column arrays for the same states (joint orders match)."""
    pq = np.empty((len(q), pinmodel.nq))
    for i, name in enumerate(model.joint_names):
        j = pinmodel.getJointId(name)
        block = q[:, model.idx_q[i]:model.idx_q[i] + model.nq_joint[i]]
        if model.joint_types[i] == "continuous":
            block = np.column_stack([np.cos(block[:, 0]), np.sin(block[:, 0])])
        pq[:, pinmodel.idx_qs[j]:pinmodel.idx_qs[j] + block.shape[1]] = block
    return [np.asfortranarray(x.T) for x in (pq, v, a, tau)]


def bench_model(label, path, free_flyer, batch, repeats):
    model = load_model(path, free_flyer=free_flyer)
    pinmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer
                else pin.buildModelFromUrdf(path))
    data = pinmodel.createData()
    pool = pin.ModelPool(pinmodel, 2)
    rng = np.random.default_rng(0)
    q = model.random_configuration(rng, batch)
    v, a, tau = (rng.normal(size=(batch, model.nv)) for _ in range(3))
    pq, pv, pa, ptau = pinocchio_state(model, pinmodel, q, v, a, tau)
    out = np.empty((pinmodel.nv, batch), order="F")
    rows = []

    def single(ours, theirs, name):
        t_ours = median_time(ours, repeats)
        t_pin = median_time(theirs, repeats)
        rows.append((label, name, 1, t_ours * 1e6, t_pin * 1e6, "1 call", t_ours / t_pin))

    q0, v0, a0, tau0 = q[0], v[0], a[0], tau[0]
    p0 = [x[:, 0].copy() for x in (pq, pv, pa, ptau)]
    single(lambda: rnea(model, q0, v0, a0), lambda: pin.rnea(pinmodel, data, p0[0], p0[1], p0[2]), "inverse")
    single(lambda: crba(model, q0), lambda: pin.crba(pinmodel, data, p0[0]), "mass")
    single(lambda: aba(model, q0, v0, tau0), lambda: pin.aba(pinmodel, data, p0[0], p0[1], p0[3]), "forward")

    def batched(ours, theirs, name, how):
        t_ours = median_time(ours, repeats) / batch
        t_pin = median_time(theirs, repeats) / batch
        rows.append((label, name, batch, t_ours * 1e6, t_pin * 1e6, how, t_ours / t_pin))

    def crba_loop():
        for n in range(batch):
            pin.crba(pinmodel, data, pq[:, n])

    for threads in (1, 2):
        plural = "s" if threads > 1 else ""
        how = f"InParallel, {threads} thread{plural} (both)"
        with batching.configured(threads=threads):
            batched(lambda: rnea(model, q, v, a),
                    lambda: pin.rneaInParallel(threads, pool, pq, pv, pa, out), "inverse", how)
            batched(lambda: aba(model, q, v, tau),
                    lambda: pin.abaInParallel(threads, pool, pq, pv, ptau, out), "forward", how)
    for threads in (1, 2):
        with batching.configured(threads=threads):
            batched(lambda: crba(model, q), crba_loop, "mass",
                    f"loop of crba calls (treedyn {threads} thread{'s' if threads > 1 else ''})")
    return rows


def cases(batch: int, root: str) -> dict:
    """{(model, algorithm, threads): (treedyn call, Pinocchio call or None)} of the URDF
    batches under example-robot-data's ``root`` (Pinocchio's when it is installed)."""
    table = {}
    for label, relative, free_flyer in MODELS:
        path = os.path.join(root, relative)
        model = load_model(path, free_flyer=free_flyer)
        rng = np.random.default_rng(0)
        q = model.random_configuration(rng, batch)
        v, a, tau = (rng.normal(size=(batch, model.nv)) for _ in range(3))
        theirs = pinocchio_calls(model, path, free_flyer, q, v, a, tau) if pin else {}
        for threads in (1, 2):
            table[label, "inverse", threads] = (lambda m=model, q=q, v=v, a=a: rnea(m, q, v, a),
                                                theirs.get(("inverse", threads)))
            table[label, "forward", threads] = (lambda m=model, q=q, v=v, t=tau: aba(m, q, v, t),
                                                theirs.get(("forward", threads)))
            table[label, "mass", threads] = (lambda m=model, q=q: crba(m, q), theirs.get("mass"))
    return table


def pinocchio_calls(model, path: str, free_flyer: bool, q, v, a, tau) -> dict:
    """Pinocchio's calls on the same states: InParallel by threads, a loop of crba."""
    pinmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer
                else pin.buildModelFromUrdf(path))
    data, pool = pinmodel.createData(), pin.ModelPool(pinmodel, 2)
    pq, pv, pa, ptau = pinocchio_state(model, pinmodel, q, v, a, tau)
    out = np.empty((pinmodel.nv, len(q)), order="F")

    def crba_loop():
        for n in range(pq.shape[1]):
            pin.crba(pinmodel, data, pq[:, n])

    calls = {"mass": crba_loop}
    for threads in (1, 2):
        calls["inverse", threads] = lambda t=threads: pin.rneaInParallel(t, pool, pq, pv, pa, out)
        calls["forward", threads] = lambda t=threads: pin.abaInParallel(t, pool, pq, pv, ptau, out)
    return calls


def timed(function, threads: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one call with treedyn on ``threads`` threads."""
    with batching.configured(threads=threads):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        return time.perf_counter() - wall, time.process_time() - cpu


def serve(batch: int, root: str) -> None:
    """--serve: time the case named on each stdin line (JSON), answer (wall, cpu) as JSON."""
    import json
    import sys

    table = cases(batch, root)
    for line in sys.stdin:
        label, algorithm, threads = json.loads(line)
        print(json.dumps(timed(table[label, algorithm, threads][0], threads)), flush=True)


def bench_baseline(python: str, batch: int, repeats: int) -> list:
    """Rows (case, wall and CPU medians of ours, the baseline's and Pinocchio's), each case
    one call of each per repeat, in turn, after one warm-up call of each."""
    import json
    import subprocess

    root = robots_root()
    child = subprocess.Popen([python, __file__, "--serve", root, "--batch", str(batch)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def baseline(key):
        child.stdin.write(json.dumps(key) + "\n")
        child.stdin.flush()
        return tuple(json.loads(child.stdout.readline()))

    rows = []
    for key, (ours, theirs) in cases(batch, root).items():
        threads = key[2]
        runs = {"ours": lambda: timed(ours, threads), "base": lambda: baseline(key),
                "pin": lambda: timed(theirs, threads)}
        times = {name: [] for name in runs}
        for repeat in range(repeats + 1):
            for name, run in runs.items():
                result = run()
                if repeat:
                    times[name].append(result)
        rows.append((key, {name: [statistics.median(t[k] for t in values) / batch * 1e6
                                  for k in (0, 1)] for name, values in times.items()}))
    child.stdin.close()
    child.wait()
    return rows


def print_baseline(rows, python: str) -> None:
    print(f"# baseline: {python}; us/state, median wall (cpu)")
    head = ("model", "algorithm", "threads", "treedyn", "baseline", "pinocchio",
            "ours/pin wall", "ours/pin cpu", "ours/base wall", "ours/base cpu")
    table = []
    for (label, algorithm, threads), t in rows:
        ours, base, pin_ = t["ours"], t["base"], t["pin"]
        table.append((label, algorithm, str(threads), *(f"{x[0]:.2f} ({x[1]:.2f})" for x in (ours, base, pin_)),
                      *(f"{a[k] / b[k]:.2f}x" for a, b in ((ours, pin_), (ours, base)) for k in (0, 1))))
    print_table(head, table, False)


def gymnasium_assets() -> str:
    import importlib.util

    spec = importlib.util.find_spec("gymnasium")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("gymnasium is not installed: pip install gymnasium")
    return os.path.join(spec.submodule_search_locations[0], "envs", "mujoco", "assets")


def bench_mjcf(label, path, batch, repeats):
    """treedyn against MuJoCo on one MJCF model: parse time and per-state times."""
    import mujoco

    flags = mujoco.mjtDisableBit
    rows = []
    t_ours = median_time(lambda: load_model(path), repeats)
    t_mj = median_time(lambda: mujoco.MjModel.from_xml_path(path), repeats)
    rows.append((label, "parse", 1, t_ours * 1e6, t_mj * 1e6, "MjModel.from_xml_path",
                 t_ours / t_mj))
    model = load_model(path)
    m = mujoco.MjModel.from_xml_path(path)
    for bit in (flags.mjDSBL_CONTACT, flags.mjDSBL_CONSTRAINT, flags.mjDSBL_SPRING,
                flags.mjDSBL_DAMPER, flags.mjDSBL_ACTUATION):
        m.opt.disableflags |= bit
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    q = model.random_configuration(rng, batch)
    v, a, tau = (rng.normal(size=(batch, model.nv)) for _ in range(3))
    dense = np.empty((m.nv, m.nv))

    def mj_inverse(count):
        for n in range(count):
            d.qpos[:], d.qvel[:], d.qacc[:] = q[n], v[n], a[n]
            mujoco.mj_inverse(m, d)

    def mj_mass(count):
        for n in range(count):
            d.qpos[:] = q[n]
            mujoco.mj_fwdPosition(m, d)
            mujoco.mj_fullM(m, d, dense)

    def mj_forward(count):
        for n in range(count):
            d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q[n], v[n], tau[n]
            mujoco.mj_forward(m, d)

    for count in (1, batch):
        cases = (("inverse", lambda: rnea(model, q[:count], v[:count], a[:count]), mj_inverse),
                 ("mass", lambda: crba(model, q[:count]), mj_mass),
                 ("forward", lambda: aba(model, q[:count], v[:count], tau[:count]), mj_forward))
        for name, ours, theirs in cases:
            t_ours = median_time(ours, repeats) / count
            t_mj = median_time(lambda: theirs(count), repeats) / count
            rows.append((label, name, count, t_ours * 1e6, t_mj * 1e6, "Python loop of mj_* calls",
                         t_ours / t_mj))
    return rows


def bench_parse(label, path, repeats):
    """treedyn's load_model against MuJoCo's from_xml_path (asset cache cleared) on one model."""
    import mujoco

    def mujoco_load():
        mujoco.mj_clearCache(mujoco.mj_getCache())
        mujoco.MjModel.from_xml_path(path)

    t_ours = median_time(lambda: load_model(path), repeats)
    t_mj = median_time(mujoco_load, repeats)
    return [(label, "parse", 1, t_ours * 1e6, t_mj * 1e6, "MjModel.from_xml_path, no cache",
             t_ours / t_mj)]


def mesh_models(folder: str) -> list[tuple[str, str]]:
    """(label, path) of the mesh-heavy MJCF models, written into ``folder`` where needed."""
    import mujoco

    models = []
    spec = importlib.util.find_spec("dm_control")
    if spec is not None and spec.submodule_search_locations:
        dog = os.path.join(spec.submodule_search_locations[0], "suite", "dog.xml")
        models.append(("dog.xml (dm_control, 20 MB STL)", dog))
    objs = []
    for path in sorted(glob.glob(os.path.join(robots_root(), "**", "*.obj"), recursive=True)):
        try:  # the files MuJoCo compiles alone (a flat plane does not)
            mujoco.MjModel.from_xml_string(_mesh_scene([path]))
            objs.append(path)
        except ValueError:
            pass
    scene = os.path.join(folder, "erd_obj_meshes.xml")
    with open(scene, "w") as stream:
        stream.write(_mesh_scene(objs))
    size = sum(os.path.getsize(p) for p in objs) >> 20
    models.append((f"{len(objs)} OBJ meshes (example-robot-data, {size} MB)", scene))
    torus = os.path.join(folder, "torus.obj")
    _write_torus(torus, 400, 100)
    scene = os.path.join(folder, "torus.xml")
    with open(scene, "w") as stream:
        stream.write(_mesh_scene([torus]))
    models.append((f"torus of quads (OBJ, {os.path.getsize(torus) >> 20} MB)", scene))
    return models


def _mesh_scene(meshes: list[str]) -> str:
    """An MJCF model with one free body per mesh file."""
    assets = "".join(f'<mesh name="m{k}" file="{path}"/>' for k, path in enumerate(meshes))
    bodies = "".join(f'<body name="b{k}"><freejoint/><geom type="mesh" mesh="m{k}"/></body>'
                     for k in range(len(meshes)))
    return f"<mujoco><asset>{assets}</asset><worldbody>{bodies}</worldbody></mujoco>"


def _write_torus(path: str, n: int, m: int) -> None:
    """A closed torus of n x m quads as exporters write it (v, vt, vn, f v/vt/vn)."""
    u, w = np.meshgrid(np.linspace(0, 2 * np.pi, n, endpoint=False),
                       np.linspace(0, 2 * np.pi, m, endpoint=False), indexing="ij")
    ring = 0.1 + 0.03 * np.cos(w)
    points = np.stack([ring * np.cos(u), ring * np.sin(u), 0.03 * np.sin(w)], -1).reshape(-1, 3)
    normals = np.stack([np.cos(w) * np.cos(u), np.cos(w) * np.sin(u), np.sin(w)], -1)
    lines = ["# torus", "o torus"] + [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in points]
    lines += [f"vt {a:.6f} {b:.6f}" for a, b in zip(u.ravel() / 6.3, w.ravel() / 6.3)]
    lines += [f"vn {x:.4f} {y:.4f} {z:.4f}" for x, y, z in normals.reshape(-1, 3)]
    index = np.arange(n * m).reshape(n, m) + 1
    quads = np.stack([index, np.roll(index, -1, 0), np.roll(np.roll(index, -1, 0), -1, 1),
                      np.roll(index, -1, 1)], -1).reshape(-1, 4)
    lines += ["f " + " ".join(f"{k}/{k}/{k}" for k in quad) for quad in quads]
    with open(path, "w") as stream:
        stream.write("\n".join(lines) + "\n")


def blas_threads() -> str:
    """What numpy's BLAS really uses, from threadpoolctl when it is installed."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl not installed"
    pools = [f"{p.get('internal_api')} {p.get('num_threads')} threads" for p in threadpool_info()
             if p.get("user_api") == "blas"]
    return ", ".join(pools) or "no BLAS pool found"


def print_table(head, rows, markdown: bool) -> None:
    """Rows of strings as a Markdown table, or as aligned columns."""
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(str(r[k])) for r in [head] + rows) for k in range(len(head))]
        for row in [head] + rows:
            print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--markdown", action="store_true", help="print a README table")
    parser.add_argument("--threads", type=int, default=None,
                        help="treedyn threads where not stated (default: its own setting)")
    parser.add_argument("--parse-only", action="store_true",
                        help="only the parse times of the mesh-heavy MJCF models")
    parser.add_argument("--baseline", metavar="PYTHON",
                        help="also time another install's treedyn (that interpreter), interleaved")
    parser.add_argument("--serve", metavar="ROOT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.batch, args.serve)
    if args.baseline:
        return print_baseline(bench_baseline(args.baseline, args.batch, args.repeats), args.baseline)
    if args.threads:
        batching.configure(threads=args.threads)
    root = robots_root()
    rows = []
    if not args.parse_only:
        for label, relative, free_flyer in MODELS:
            rows += bench_model(label, os.path.join(root, relative), free_flyer, args.batch,
                                args.repeats)
    import mujoco

    if not args.parse_only:
        rows += bench_mjcf(MJCF_MODEL[0], os.path.join(gymnasium_assets(), MJCF_MODEL[1]),
                           args.batch, args.repeats)
    with tempfile.TemporaryDirectory() as folder:
        for label, path in mesh_models(folder):
            rows += bench_parse(label, path, args.repeats)
    header = ("model", "algorithm", "N", "treedyn us/state", "reference us/state",
              "reference path", "ratio")
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}, "
          f"pinocchio {pin.__version__}, mujoco {mujoco.__version__}, "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']} ({blas_threads()}), "
          f"treedyn chunk {batching.settings.chunk} states, {batching.settings.threads} threads "
          f"unless stated, median of {args.repeats}")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print(f"| {row[0]} | {row[1]} | {row[2]} | {row[3]:.2f} | {row[4]:.2f} | {row[5]} | {row[6]:.1f}x |")
    else:
        for row in [header] + [(*r[:3], f"{r[3]:.2f}", f"{r[4]:.2f}", r[5], f"{r[6]:.1f}x") for r in rows]:
            print("  ".join(f"{str(cell):<26}" if k in (0, 5) else f"{str(cell):>18}"
                            for k, cell in enumerate(row)))


if __name__ == "__main__":
    main()
