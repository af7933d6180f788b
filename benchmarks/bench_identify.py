"""Identification time and peak memory against the length of the log.

    python benchmarks/bench_identify.py [--states 100000 10000000] [--model ur5|two_link]
        [--terms viscous,coulomb] [--chunk 4096] [--validate 0.2]

Each size runs in a fresh process (so its peak resident memory is its own): a seeded log
of ``--states`` states (q uniform within the limits, v normal, a 2 x normal; tau = Y pi of
the file's parameters with masses 10 % heavier plus 0.05 N m noise) is generated chunk by
chunk and fed to the streaming path ``dyn identify`` runs (regressor, block-QR and Gram
accumulation, base parameters, OLS, consistent fit) -- never held whole, as a log read from
a file is not. Printed per size: seconds for the accumulation (regressor included) and for
the fits, states per second, and the peak RSS (ru_maxrss). The generation of the states
and of tau (a second regressor call) is timed apart and not counted. The model is UR5 from
example-robot-data (``--model two_link``: the fixture, always available).
OPENBLAS_NUM_THREADS is pinned to 1 unless set.

    python benchmarks/bench_identify.py --against-pinocchio [--states 1000000]
        [--reference-states 20000] [--repeats 3]

The whole library call ``dyn identify`` makes (``identify_stream``: the .npz log read,
regressor, factoring on a second thread, weighted fits) on a log of panda (example-robot-
data, 9 dofs with the fingers) of ``--states`` states, against Pinocchio's
computeJointTorqueRegressor in a Python loop over ``--reference-states`` of the same
states, stacked, and numpy's lstsq on them (what a script without dyn does). Printed:
medians over ``--repeats`` of seconds and states per second, and dyn's rate over
Pinocchio's. Peak RSS of the dyn run: bounded by the chunks, not the log.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def model_path(name: str) -> str:
    """The model file of ``name``: the fixture's two-link arm, or example-robot-data's."""
    if name == "two_link":
        return os.path.join(ROOT, "fixtures", "two_link_arm.urdf")
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from reference_models import robots_root

    return os.path.join(robots_root(), *{"ur5": ("ur_description", "urdf", "ur5_robot.urdf"),
                                          "panda": ("panda_description", "urdf",
                                                    "panda.urdf")}[name])


def one_size(path: str, count: int, chunk: int, terms: tuple, validate: float) -> dict:
    import numpy as np

    from treedyn.engine.analysis.consistent import consistent_fit
    from treedyn.engine.analysis.identify import (Accumulator, base_parameters,
                                                  ordinary_least_squares)
    from treedyn.engine import joint_torque_regressor as regressor
    from treedyn.engine.regressor import layout_of, model_parameters
    from treedyn.parsers import load_model

    model = load_model(path)
    layout = layout_of(model, terms)
    pi = model_parameters(model, layout)
    truth = pi.copy()
    truth[0:10 * len(layout.bodies):10] *= 1.1
    accumulator = Accumulator(layout.size, model.nv, validate)
    rng = np.random.default_rng(0)
    generating = accumulating = 0.0
    for start in range(0, count, chunk):
        m = min(chunk, count - start)
        t0 = time.perf_counter()
        q = model.random_configuration(rng, m)
        v, a = rng.normal(size=(m, model.nv)), 2 * rng.normal(size=(m, model.nv))
        t1 = time.perf_counter()
        Y = regressor(model, q, v, a, terms=terms)
        t2 = time.perf_counter()
        tau = Y @ truth + 0.05 * rng.normal(size=(m, model.nv))
        t3 = time.perf_counter()
        accumulator.add(Y, tau)
        t4 = time.perf_counter()
        generating += (t1 - t0) + (t3 - t2)
        accumulating += (t2 - t1) + (t4 - t3)
    t0 = time.perf_counter()
    problem = accumulator.finish()
    base = base_parameters(problem)
    ols = ordinary_least_squares(problem, base)
    fit = consistent_fit(problem, pi, len(layout.bodies), ols.sigma)
    fitting = time.perf_counter() - t0
    return {"states": count, "parameters": layout.size, "rank": base.rank,
            "accumulate_s": accumulating, "fit_s": fitting, "generate_s": generating,
            "states_per_s": count / accumulating, "converged": fit.converged,
            "peak_rss_mb": peak_mb()}


def against_pinocchio(count: int, reference: int, repeats: int) -> None:
    """The comparison of the module doc, printed as a table."""
    import tempfile

    import numpy as np
    import pinocchio as pin

    from treedyn.engine import rnea
    from treedyn.parsers import load_model
    from treedyn.pipeline.heap import for_many_states
    from treedyn.pipeline.regression import identify_stream

    path = model_path("panda")
    model = load_model(path)
    rng = np.random.default_rng(0)
    q = model.random_configuration(rng, count)
    v, a = rng.normal(size=(2, count, model.nv))
    tau = rnea(model, q, v, a) + 0.05 * rng.normal(size=(count, model.nv))
    folder = tempfile.mkdtemp()
    log = os.path.join(folder, "panda.npz")
    np.savez(log, q=q, v=v, a=a, tau=tau)
    ours, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        with for_many_states(os.environ):  # as dyn identify runs it
            identify_stream(model, log)
        ours.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    os.remove(log)
    pinmodel = pin.buildModelFromUrdf(path)
    data = pinmodel.createData()
    theirs, their_cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        Y = np.vstack([pin.computeJointTorqueRegressor(pinmodel, data, q[n], v[n], a[n])
                       for n in range(reference)])
        np.linalg.lstsq(Y, tau[:reference].ravel(), rcond=None)
        theirs.append(time.perf_counter() - start)
        their_cpu.append(time.process_time() - start_cpu)
    dyn_rate = count / float(np.median(ours))
    pin_rate = reference / float(np.median(theirs))
    print(f"panda (nv {model.nv}), OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, "
          f"medians of {repeats}; peak RSS {peak_mb():.0f} MB")
    print("| run | states | s | CPU s | states/s | states per CPU s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, n, wall, seconds in (("dyn identify_stream (.npz)", count, ours, cpu),
                                   ("Pinocchio regressor loop + lstsq", reference, theirs,
                                    their_cpu)):
        print(f"| {name} | {n:,} | {np.median(wall):.2f} | {np.median(seconds):.2f} "
              f"| {n / np.median(wall):,.0f} | {n / np.median(seconds):,.0f} |")
    print(f"dyn / Pinocchio states per second: {dyn_rate / pin_rate:.1f}x (per CPU second: "
          f"{count / np.median(cpu) / (reference / np.median(their_cpu)):.1f}x)")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, nargs="+",
                        help="default: 100000 10000000; with --against-pinocchio 1000000")
    parser.add_argument("--model", choices=("ur5", "two_link"), default="ur5")
    parser.add_argument("--terms", default="viscous,coulomb")
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--validate", type=float, default=0.2)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--against-pinocchio", action="store_true")
    parser.add_argument("--reference-states", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.against_pinocchio:
        against_pinocchio((args.states or [1_000_000])[0], args.reference_states,
                          args.repeats)
        return
    terms = tuple(t for t in args.terms.split(",") if t)
    path = model_path(args.model)
    if args.one is not None:
        print(json.dumps(one_size(path, args.one, args.chunk, terms, args.validate)))
        return
    print(f"model {os.path.basename(path)}, terms {terms or 'none'}, chunk {args.chunk}, "
          f"validate {args.validate}, OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    print("| states | P | rank | accumulate s | fits s | states/s | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for count in args.states or [100_000, 10_000_000]:
        out = subprocess.run([sys.executable, __file__, "--one", str(count), "--model",
                              args.model, "--terms", args.terms, "--chunk", str(args.chunk),
                              "--validate", str(args.validate)],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {r['states']:,} | {r['parameters']} | {r['rank']} | {r['accumulate_s']:.1f} "
              f"| {r['fit_s']:.2f} | {r['states_per_s']:,.0f} | {r['peak_rss_mb']:.0f} |")


if __name__ == "__main__":
    main()
