"""``frames``, ``jacobian`` and ``com`` over many states: treedyn's batched engine
(:mod:`treedyn.engine.named`) against a Python loop that calls Pinocchio state by state
and reads the same quantities out, in one process, medians of ``--repeats``.

    python benchmarks/bench_kinematics.py [--states 100000] [--repeats 3] [--frame NAME]
                                          [--clock wall|cpu]

Model: Talos (example-robot-data's ``talos_reduced.urdf``) with a free-flyer root, random
states (``random_configuration``). Per task, Pinocchio's side is, for every state:

* frames: ``framesForwardKinematics`` then ``data.oMf[f]`` (rotation, translation) of the
  frame, copied into an (N, 3, 4) array;
* jacobian: ``computeFrameJacobian(model, data, q, f, LOCAL_WORLD_ALIGNED)``, copied;
* com: ``centerOfMass`` and ``jacobianCenterOfMass``, copied.

treedyn's side is the engine call over all states in chunks of ``--chunk``. Both sides write
into result arrays allocated and touched once, before the timed runs: the first touch of
those hundreds of MB alone varied from 0.03 to 2.7 s on the shared VM, run to run, and a
``dyn ... --input`` run streams chunks instead of holding them. Both sides'
results are compared once (max absolute difference). The issue's target: treedyn in at
most 0.5x Pinocchio's time. The table gives medians and the ratio treedyn / Pinocchio.
``--clock cpu`` times each run by the process's CPU time (user + system) instead of the
wall clock: on a machine other jobs share, the waits for a core drop out.
"""
from __future__ import annotations

import argparse
import glob
import os
import site
import statistics
import time

import numpy as np


def talos() -> str:
    for base in site.getsitepackages():
        found = glob.glob(os.path.join(base, "cmeel.prefix", "share", "example-robot-data",
                                       "robots", "talos_data", "robots", "talos_reduced.urdf"))
        if found:
            return found[0]
    raise SystemExit("example-robot-data is not installed")


def main() -> None:
    import pinocchio as pin
    from treedyn.engine.named import (center_of_mass, frame_jacobians, frame_placements,
                                      frame_set)
    from treedyn.parsers import load_model

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--frame", default="gripper_left_joint")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    path = talos()
    model = load_model(path, free_flyer=True)
    pinmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    data = pinmodel.createData()
    q = model.random_configuration(np.random.default_rng(0), args.states)
    pq = np.array([pin.neutral(pinmodel)] * args.states)
    for i, name in enumerate(model.joint_names):  # (talos: no continuous joints)
        j = pinmodel.getJointId(name)
        start = pinmodel.idx_qs[j]
        pq[:, start:start + model.nq_joint[i]] = q[:, model.idx_q[i]:model.idx_q[i]
                                                     + model.nq_joint[i]]
    order = np.concatenate([np.arange(pinmodel.idx_vs[pinmodel.getJointId(n)],
                                      pinmodel.idx_vs[pinmodel.getJointId(n)]
                                      + model.nv_joint[i])
                            for i, n in enumerate(model.joint_names)])
    frames = frame_set(model, [args.frame])
    f = pinmodel.getFrameId(args.frame)
    aligned = pin.LOCAL_WORLD_ALIGNED

    kept: dict = {}  # each task's result arrays, allocated once and reused by every repeat

    def buffer(name: str, shape: tuple) -> np.ndarray:
        """The (warm) array ``name``: the first touch of hundreds of MB is left out of the
        timed runs, for both sides (on a VM it alone varied from 0.03 to 2.7 s)."""
        if name not in kept:
            kept[name] = np.zeros(shape)
        return kept[name]

    def chunked(compute, name: str, shape: tuple):
        out = buffer(name, (len(q), *shape))
        for s in range(0, len(q), args.chunk):
            out[s:s + args.chunk] = compute(q[s:s + args.chunk])
        return out

    def ours_frames(block):
        R, p = frame_placements(model, block, frames)
        return np.concatenate([R, p[..., None]], axis=3)[:, 0]

    def pin_frames():
        out = buffer("pin frames", (len(pq), 3, 4))
        for n, x in enumerate(pq):
            pin.framesForwardKinematics(pinmodel, data, x)
            out[n, :, :3], out[n, :, 3] = data.oMf[f].rotation, data.oMf[f].translation
        return out

    def pin_jacobian():
        out = buffer("pin jacobian", (len(pq), 6, pinmodel.nv))
        for n, x in enumerate(pq):
            out[n] = pin.computeFrameJacobian(pinmodel, data, x, f, aligned)
        return np.take(out, order, axis=2, out=buffer("pin jacobian ordered", out.shape))

    def ours_com(block):
        _, c, J = center_of_mass(model, block)
        return np.concatenate([c[:, :, None], J], axis=2)

    def pin_com():
        out = buffer("pin com", (len(pq), 3, 1 + pinmodel.nv))
        for n, x in enumerate(pq):
            out[n, :, 0] = pin.centerOfMass(pinmodel, data, x)
            out[n, :, 1:] = pin.jacobianCenterOfMass(pinmodel, data, x)
        return np.take(out, np.concatenate([[0], 1 + order]), axis=2,
                       out=buffer("pin com ordered", out.shape))

    nv = model.nv
    tasks = {"frames": (lambda: chunked(ours_frames, "frames", (3, 4)), pin_frames),
             "jacobian": (lambda: chunked(lambda b: frame_jacobians(
                 model, b, frames, "LOCAL_WORLD_ALIGNED")[:, 0], "jacobian", (6, nv)),
                          pin_jacobian),
             "com": (lambda: chunked(ours_com, "com", (3, 1 + nv)), pin_com)}
    print(f"talos free-flyer, {args.states} states, frame {args.frame}, medians of "
          f"{args.repeats}, {args.clock} clock")
    print(f"{'task':10} {'treedyn s':>10} {'pinocchio s':>12} {'ratio':>7} {'max diff':>9}")
    for name, (ours, theirs) in tasks.items():
        times = {"ours": [], "theirs": []}
        ours(), theirs()  # untimed: allocates and touches both sides' result arrays
        for _ in range(args.repeats):
            for side, run in (("ours", ours), ("theirs", theirs)):
                start = clock()
                result = run()
                times[side].append(clock() - start)
                if side == "ours":
                    mine = result
        diff = float(np.max(np.abs(mine - result)))
        a, b = statistics.median(times["ours"]), statistics.median(times["theirs"])
        print(f"{name:10} {a:10.3f} {b:12.3f} {a / b:7.2f} {diff:9.1e}")


if __name__ == "__main__":
    main()
