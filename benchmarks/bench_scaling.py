"""Per-state cost of RNEA, ABA and CRBA against the number of bodies, on generated robots.

    python benchmarks/bench_scaling.py [--bodies 10 30 100 300 1000] [--batch 2000]
        [--repeats 5] [--threads 1] [--no-pinocchio] [--markdown]
    python benchmarks/bench_scaling.py --commands [--dyn PATH] [--base PATH] [--repeats 1]
        [--max-links 100000] [--only info inverse "mass --sparsity" check-inertia]

``--commands`` times whole ``dyn`` processes instead: ``info``, ``inverse`` (one state, q
neutral), ``mass --sparsity`` and ``check-inertia``, each with ``--format json`` to
/dev/null, on a star of 1 000, 10 000 and 100 000 links (every revolute joint about z
hangs from the root link) and a chain of 1 000 and 10 000; each link a box inertia, each
joint with limits (``--only`` runs some of the commands, ``--max-links`` leaves out the
larger models). It prints the median wall time, the median CPU time (user + system,
which other processes on a shared machine disturb less) and the peak RSS of each process (from
``/usr/bin/time``, else ``wait4``), its exit code and last stderr line, and the slopes of log(time) against
log(links). Run it with a normal (not editable) installation's ``dyn``; ``--base`` runs
another installation's ``dyn`` alternately, run by run, and adds its times and the ratio of
CPU times (this / base) to the table.

Two families of fixed-base robots with ``n`` bodies, each moved by a revolute joint about a
random unit axis, with a random joint placement and a random physically consistent inertia
(seeded, so every run builds the same robots):

* chain: body k hangs from body k-1 (depth n, the worst case for per-level overhead and
  for CRBA, whose mass matrix is dense: O(n^2) per state);
* tree: a binary tree in heap order, body k hangs from body (k-1)//2 (depth log2 n).

Each robot is written as a URDF string, parsed by ``treedyn.parsers.parse_urdf_string`` +
``build_model``, and (unless ``--no-pinocchio``) written to a temp file for
``pin.buildModelFromUrdf``. Times are medians over ``--repeats`` calls (after a warm-up) of
one batched call on ``--batch`` random states, divided by the number of states. CRBA
batches are capped so the (N, n, n) output stays under ~256 MB (33 states for 1000
bodies); the cap is printed. Pinocchio: ``rneaInParallel`` / ``abaInParallel`` with
``--threads`` threads on a ``ModelPool``, and a loop of ``crba`` calls; treedyn runs with
the same number of threads (``batching.configure``; with more than one thread its chunk is
set to batch / threads so every thread gets a chunk). OPENBLAS_NUM_THREADS is pinned to 1
unless set in the environment.

The slopes are least-squares fits of log(time per state) against log(bodies) over all
sizes, and over the two largest sizes (the asymptotic growth). Issue 5's goal: RNEA and ABA
slope <= 1.1 (linear in bodies); CRBA is expected to grow up to 2 for chains (dense M) and
close to n log n for trees (M has nnz ~ n log n).
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import median_time, print_table  # noqa: E402

from treedyn.engine import aba, build_model, crba, rnea  # noqa: E402
import treedyn.engine as batching  # noqa: E402
from treedyn.parsers import parse_urdf_string  # noqa: E402

CRBA_BYTES = 256 << 20
SHAPES = ("chain", "tree")


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def rpy(R: np.ndarray) -> tuple[float, float, float]:
    """URDF roll-pitch-yaw (R = Rz(yaw) Ry(pitch) Rx(roll)) of a rotation matrix."""
    pitch = math.asin(max(-1.0, min(1.0, -R[2, 0])))
    roll = math.atan2(R[2, 1], R[2, 2])
    yaw = math.atan2(R[1, 0], R[0, 0])
    return roll, pitch, yaw


def fmt(values) -> str:
    return " ".join(f"{x:.9g}" for x in values)


def link_xml(name: str, rng: np.random.Generator) -> str:
    mass = rng.uniform(0.1, 5.0)
    second_moments = rng.uniform(0.005, 0.3, size=3) * mass
    principal = second_moments.sum() - second_moments  # triangle inequality holds
    R = random_rotation(rng)
    I = R @ np.diag(principal) @ R.T
    com = rng.uniform(-0.3, 0.3, size=3)
    return (f'  <link name="{name}"><inertial><origin xyz="{fmt(com)}" rpy="0 0 0"/>'
            f'<mass value="{mass:.9g}"/><inertia ixx="{I[0, 0]:.9g}" ixy="{I[0, 1]:.9g}" '
            f'ixz="{I[0, 2]:.9g}" iyy="{I[1, 1]:.9g}" iyz="{I[1, 2]:.9g}" izz="{I[2, 2]:.9g}"/>'
            f'</inertial></link>\n')


def robot_urdf(shape: str, bodies: int, seed: int = 0) -> str:
    """A fixed-base robot of ``bodies`` revolute-jointed bodies: a chain or a binary tree."""
    rng = np.random.default_rng([seed, bodies, SHAPES.index(shape)])
    parts = [f'<robot name="{shape}{bodies}">\n', link_xml("base", rng)]
    for k in range(bodies):
        parent = "base" if k == 0 else f"b{k - 1 if shape == 'chain' else (k - 1) // 2}"
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        parts.append(link_xml(f"b{k}", rng))
        parts.append(
            f'  <joint name="j{k}" type="revolute"><parent link="{parent}"/><child link="b{k}"/>'
            f'<origin xyz="{fmt(rng.uniform(-0.5, 0.5, size=3))}" '
            f'rpy="{fmt(rpy(random_rotation(rng)))}"/><axis xyz="{fmt(axis)}"/>'
            f'<limit lower="-3" upper="3" effort="100" velocity="10"/></joint>\n')
    parts.append("</robot>\n")
    return "".join(parts)


def slope(bodies, times) -> float:
    return float(np.polyfit(np.log(bodies), np.log(times), 1)[0])


def bench_robot(shape, bodies, args, work):
    text = robot_urdf(shape, bodies)
    model = build_model(parse_urdf_string(text, f"{shape}{bodies}.urdf"))
    assert model.nv == bodies, (model.nv, bodies)
    rng = np.random.default_rng(1)
    batch = args.batch
    q = model.random_configuration(rng, batch)
    v, a, tau = (rng.normal(size=(batch, model.nv)) for _ in range(3))
    crba_batch = max(1, min(batch, CRBA_BYTES // (8 * bodies * bodies)))
    qc = q[:crba_batch]
    chunk = -(-batch // args.threads) if args.threads > 1 else None
    times = {}
    with batching.configured(threads=args.threads, chunk=chunk):
        times["rnea"] = median_time(lambda: rnea(model, q, v, a), args.repeats) / batch
        times["aba"] = median_time(lambda: aba(model, q, v, tau), args.repeats) / batch
        chunk_c = -(-crba_batch // args.threads) if args.threads > 1 else None
        with batching.configured(chunk=chunk_c):
            times["crba"] = median_time(lambda: crba(model, qc), args.repeats) / crba_batch
    row = {"shape": shape, "bodies": bodies, "crba_batch": crba_batch, "treedyn": times}
    if args.pinocchio and bodies <= args.pinocchio_max_bodies:
        row["pinocchio"], row["error"] = bench_pinocchio(model, text, q, v, a, tau, crba_batch,
                                                         args, work, f"{shape}{bodies}")
    return row


def bench_pinocchio(model, text, q, v, a, tau, crba_batch, args, work, name):
    import pinocchio as pin

    path = os.path.join(work, name + ".urdf")
    with open(path, "w") as stream:
        stream.write(text)
    pm = pin.buildModelFromUrdf(path)
    data = pm.createData()
    pool = pin.ModelPool(pm, args.threads)
    # Same joints, possibly another depth-first order: map treedyn's dofs by joint name.
    perm = np.array([model.idx_v[model.joint_names.index(pm.names[j])]
                     for j in range(1, pm.njoints)])
    pq, pv, pa, pt = (np.asfortranarray(x[:, perm].T) for x in (q, v, a, tau))
    out = np.empty((pm.nv, len(q)), order="F")
    batch = len(q)

    def crba_loop():
        for n in range(crba_batch):
            pin.crba(pm, data, pq[:, n])

    times = {
        "rnea": median_time(lambda: pin.rneaInParallel(args.threads, pool, pq, pv, pa, out),
                            args.repeats) / batch,
        "aba": median_time(lambda: pin.abaInParallel(args.threads, pool, pq, pv, pt, out),
                           args.repeats) / batch,
        "crba": median_time(crba_loop, args.repeats) / crba_batch,
    }
    # Agreement on a few states (treedyn's RNEA and ABA against Pinocchio's).
    k = min(batch, 64)
    pin.rneaInParallel(args.threads, pool, pq[:, :k], pv[:, :k], pa[:, :k], out[:, :k])
    ours = rnea(model, q[:k], v[:k], a[:k])[:, perm]
    error = float(np.max(np.abs(ours - out[:, :k].T)) / np.max(np.abs(out[:, :k])))
    pin.abaInParallel(args.threads, pool, pq[:, :k], pv[:, :k], pt[:, :k], out[:, :k])
    ours = aba(model, q[:k], v[:k], tau[:k])[:, perm]
    error = max(error, float(np.max(np.abs(ours - out[:, :k].T)) / np.max(np.abs(out[:, :k]))))
    return times, error


# -- whole commands on large models (--commands) ----------------------------------------

COMMAND_SIZES = {"star": (1_000, 10_000, 100_000), "chain": (1_000, 10_000)}
COMMANDS = (("info", ["info"]), ("inverse", ["inverse"]),
            ("mass --sparsity", ["mass", "--sparsity"]), ("check-inertia", ["check-inertia"]))


def large_urdf(shape: str, links: int) -> str:
    """``links`` links of a box inertia on revolute joints about z with limits: a star (every
    joint hangs from the root link) or a chain (each from the previous link)."""
    parts = [f'<robot name="{shape}{links}">\n<link name="base"><inertial><mass value="1"/>'
             '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'
             '</link>\n']
    for k in range(links):
        parent = "base" if shape == "star" or k == 0 else f"l{k - 1}"
        parts.append(
            f'<link name="l{k}"><inertial><origin xyz="0.05 0 0" rpy="0 0 0"/><mass value="0.5"/>'
            '<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.0025"/></inertial>'
            f'</link>\n<joint name="j{k}" type="revolute"><parent link="{parent}"/><child '
            f'link="l{k}"/><origin xyz="0.1 0 0" rpy="0 0 0"/><axis xyz="0 0 1"/><limit '
            'lower="-2" upper="2" effort="10" velocity="5"/></joint>\n')
    return "".join(parts) + "</robot>\n"


def run_command(dyn: str, args: list[str]) -> tuple[float, float, int, str, float]:
    """(wall s, peak RSS MB, exit code, last stderr line, CPU s) of one dyn process, its output
    discarded. The peak is measured by /usr/bin/time where there is one: a child forked
    from this (large) process would count this process's pages in its own peak until it
    starts dyn; else from wait4."""
    timer = shutil.which("time", path="/usr/bin")
    with tempfile.TemporaryDirectory() as work:
        peak, errors = os.path.join(work, "peak"), os.path.join(work, "errors")
        command = [dyn, *args, "--format", "json"]
        if timer:
            command = [timer, "-f", "%M", "-o", peak, *command]
        with open(errors, "wb") as stream:
            start = time.perf_counter()
            child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stream,
                                     stdin=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        rss = usage.ru_maxrss / 1024
        if timer:
            with open(peak) as stream:
                rss = int(stream.read().split()[-1]) / 1024
        with open(errors, "rb") as stream:
            lines = stream.read().decode(errors="replace").strip().splitlines()
    cpu = usage.ru_utime + usage.ru_stime  # the child's and those it waited for (dyn)
    return wall, rss, child.returncode, lines[-1] if lines else "", cpu


def summary(runs: list[tuple]) -> tuple:
    """(median wall s, largest peak RSS MB, last exit code, last stderr line, median CPU s)
    of :func:`run_command`'s results; () for no runs."""
    if not runs:
        return ()
    return (float(np.median([r[0] for r in runs])), max(r[1] for r in runs), runs[-1][2],
            runs[-1][3], float(np.median([r[4] for r in runs])))


def bench_commands(args) -> None:
    """Every command of COMMANDS on the star and chain of COMMAND_SIZES: a markdown table of
    median wall and CPU time and peak RSS, then the log-log slopes of wall time against links."""
    rows = []
    sizes_of = {shape: [n for n in sizes if n <= args.max_links]
                for shape, sizes in COMMAND_SIZES.items()}
    commands = [(name, words) for name, words in COMMANDS if name in args.only]
    with tempfile.TemporaryDirectory(prefix="bench_scaling_") as work:
        for shape, sizes in sizes_of.items():
            for links in sizes:
                path = os.path.join(work, f"{shape}{links}.urdf")
                with open(path, "w") as stream:
                    stream.write(large_urdf(shape, links))
                for name, words in commands:
                    runs, base = [], []
                    for _ in range(args.repeats):  # alternating with --base, if given
                        runs.append(run_command(args.dyn, [words[0], path, *words[1:]]))
                        if args.base:
                            base.append(run_command(args.base, [words[0], path, *words[1:]]))
                    rows.append((shape, links, name, *summary(runs), *summary(base)))
                    print(f"  done {shape} {links} {name}", file=sys.stderr, flush=True)
    version = subprocess.run([args.dyn, "--version"], capture_output=True, text=True).stdout
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"numpy {np.__version__}, {version.strip()}; median of {args.repeats} run(s), "
          "output to /dev/null as JSON; peak RSS of the process"
          + (f"; base {args.base}, alternating run by run" if args.base else ""))
    head = ["shape", "links", "command", "wall s", "CPU s", "peak RSS MB", "exit", "stderr"]
    if args.base:
        head += ["base wall s", "base CPU s", "base peak RSS MB", "CPU ratio"]
    table = []
    for shape, links, name, wall, rss, code, note, cpu, *base in rows:
        table.append([shape, f"{links:,}", name, f"{wall:.2f}", f"{cpu:.2f}", f"{rss:.0f}",
                      str(code), note[:90].replace("|", "/")])
        if args.base:
            table[-1] += [f"{base[0]:.2f}", f"{base[4]:.2f}", f"{base[1]:.0f}",
                          f"{cpu / base[4]:.2f}x"]
    print_table(head, table, True)
    print()
    slopes = []
    for shape, sizes in sizes_of.items():
        for name, _ in commands:
            times = [row[3] for row in rows if row[0] == shape and row[2] == name]
            slopes.append([shape, name, f"{slope(sizes, times):.2f}",
                           f"{slope(sizes[-2:], times[-2:]):.2f}"])
    print_table(["shape", "command", "slope (all)", "slope (largest two)"],
                [row for row in slopes if len(sizes_of[row[0]]) >= 2], True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, nargs="+", default=[10, 30, 100, 300, 1000])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=SHAPES)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of both treedyn and Pinocchio's InParallel calls")
    parser.add_argument("--no-pinocchio", dest="pinocchio", action="store_false")
    parser.add_argument("--pinocchio-max-bodies", type=int, default=300,
                        help="skip Pinocchio above this size: its Data grows faster than "
                        "quadratically with the chain length (createData() for a 300-body "
                        "chain takes ~1.7 GB, for 1000 bodies it exhausts 23 GB)")
    parser.add_argument("--markdown", action="store_true", help="print README tables")
    parser.add_argument("--commands", action="store_true",
                        help="time whole dyn processes instead (info, inverse, mass "
                        "--sparsity, check-inertia) on stars of 1 000 to 100 000 links and "
                        "chains of 1 000 and 10 000: wall time and peak RSS, as markdown")
    parser.add_argument("--dyn", default=shutil.which("dyn") or "dyn",
                        help="the dyn program --commands runs (default: the one on PATH)")
    parser.add_argument("--base", help="--commands: another dyn program (another "
                        "installation) run alternately with --dyn, for the ratio of the two")
    parser.add_argument("--max-links", type=int, default=100_000,
                        help="--commands: leave out the models larger than this")
    parser.add_argument("--only", nargs="+", default=[name for name, _ in COMMANDS],
                        choices=[name for name, _ in COMMANDS], metavar="COMMAND",
                        help="--commands: run only these of " +
                        ", ".join(repr(name) for name, _ in COMMANDS))
    args = parser.parse_args()
    if args.commands:
        return bench_commands(args)

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_scaling_") as work:
        for shape in args.shapes:
            for bodies in args.bodies:
                rows.append(bench_robot(shape, bodies, args, work))
                print(f"  done {shape} {bodies}", file=sys.stderr, flush=True)

    versions = f"numpy {np.__version__}"
    if args.pinocchio:
        import pinocchio as pin

        versions += f", pinocchio {pin.__version__}"
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{versions}, OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, "
          f"{args.threads} thread(s) on both sides; revolute joints with random axes; "
          f"batch {args.batch} states (CRBA capped at {CRBA_BYTES >> 20} MB of output), "
          f"median of {args.repeats}; times in us per state"
          + (f"; Pinocchio up to {args.pinocchio_max_bodies} bodies" if args.pinocchio else ""))
    algorithms = ("rnea", "aba", "crba")
    head = ["shape", "bodies"] + [f"{alg} us" for alg in algorithms]
    if args.pinocchio:
        head += [f"pin {alg} us" for alg in algorithms] + [f"{alg} ratio" for alg in algorithms]
        head += ["max rel. error"]
    head += ["crba N"]
    table = []
    for row in rows:
        t = row["treedyn"]
        cells = [row["shape"], str(row["bodies"])] + [f"{t[alg] * 1e6:.2f}" for alg in algorithms]
        if args.pinocchio and "pinocchio" in row:
            p = row["pinocchio"]
            cells += [f"{p[alg] * 1e6:.2f}" for alg in algorithms]
            cells += [f"{t[alg] / p[alg]:.2f}x" for alg in algorithms]
            cells += [f"{row['error']:.1e}"]
        elif args.pinocchio:
            cells += ["(skipped)"] * 7
        cells += [str(row["crba_batch"])]
        table.append(cells)
    print_table(head, table, args.markdown)
    print()

    head = ["shape", "algorithm", "treedyn slope (all)", "treedyn slope (largest two)"]
    if args.pinocchio:
        head += ["pinocchio slope (all)", "pinocchio slope (largest two)"]
    head += ["goal"]
    table = []
    for shape in args.shapes:
        subset = [row for row in rows if row["shape"] == shape]
        bodies = [row["bodies"] for row in subset]
        if len(bodies) < 2:
            continue
        for alg in algorithms:
            cells = [shape, alg]
            for side in ("treedyn", "pinocchio") if args.pinocchio else ("treedyn",):
                points = [(row["bodies"], row[side][alg]) for row in subset if side in row]
                if len(points) < 2:
                    cells += ["-", "-"]
                    continue
                sizes, times = zip(*points)
                cells += [f"{slope(sizes, times):.2f}", f"{slope(sizes[-2:], times[-2:]):.2f}"]
            if alg == "crba":
                cells.append("growth (up to 2 expected for chains)")
            else:
                all_slope = slope(bodies, [row["treedyn"][alg] for row in subset])
                cells.append(f"<= 1.1: {'yes' if all_slope <= 1.1 else 'no'}")
            table.append(cells)
    print_table(head, table, args.markdown)


if __name__ == "__main__":
    main()
