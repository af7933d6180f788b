"""``dyn statics`` (:mod:`treedyn.engine.statics`): the largest |g_i(q)| over the joint
ranges against brute force (dense grids on small arms, many random configurations on
panda), its argmax and the payload against Pinocchio's ``computeGeneralizedGravity``, the
rigorous bound above every sample, the payload capacity against brute force and at its
argmax exactly the limit, exit codes and GitHub annotations at the ``<limit>`` lines."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from random_trees import random_description
from reference_models import robot_urdfs
from treedyn.engine import build_model
from treedyn.engine.analysis.statics import PayloadSpec, statics_report
from treedyn.engine.rnea import generalized_gravity
from treedyn.engine.statics import Payload, Space, capacity_of, payload_model, statics
from treedyn.parsers import load_model

ROOT = Path(__file__).resolve().parents[1]
ARM = str(ROOT / "fixtures" / "two_link_arm.urdf")
ARM_MJCF = str(ROOT / "fixtures" / "mjcf" / "two_link_arm.xml")
PANDA = [p for p in robot_urdfs() if p.endswith("panda_description/urdf/panda.urdf")]
REL = 1e-6


def grid(model, points: int) -> np.ndarray:
    """(points^d, nq) every combination of ``points`` values of each varied joint."""
    space = Space.of(model)
    axes = [np.linspace(lo, hi, points) for lo, hi in zip(space.lower, space.upper)]
    Q = np.tile(model.q_neutral, (points ** len(axes), 1))
    Q[:, space.index] = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(axes))
    return Q


def polished(model, Q: np.ndarray, dof: int, starts: int = 3) -> float:
    """max |g_dof| over Q, then each of the best ``starts`` refined by scipy's L-BFGS-B
    (bounds, numeric gradient): the brute-force reference."""
    from scipy.optimize import minimize
    space = Space.of(model)
    values = np.abs(generalized_gravity(model, Q)[:, dof])
    best = float(values.max())
    for k in np.argsort(-values)[:starts]:
        def f(x, q=Q[k].copy()):
            q[space.index] = x
            return -abs(generalized_gravity(model, q[None])[0, dof])
        result = minimize(f, Q[k, space.index], method="L-BFGS-B",
                          bounds=list(zip(space.lower, space.upper)))
        best = max(best, -float(result.fun))
    return best


def random_arm() -> object:
    """A 4-joint random tree (tests/random_trees.py) made an arm: revolute, continuous and
    prismatic joints with limits."""
    description = random_description(np.random.default_rng(3), 4, armature=False)
    kinds = ("revolute", "continuous", "revolute", "prismatic")
    limits = ((-2.0, 1.5), (-np.inf, np.inf), (-1.0, 2.5), (-0.3, 0.4))
    joints = [dataclasses.replace(j, type=kind, lower=lo, upper=hi, effort=50.0)
              for j, kind, (lo, hi) in zip(description.joints, kinds, limits)]
    return build_model(dataclasses.replace(description, joints=joints))


@lru_cache(maxsize=None)
def model_of(name: str):
    return random_arm() if name == "random" else load_model(name)


def check_against(model, result, reference: np.ndarray) -> None:
    """Ours within 1e-6 of (or above) the reference, attained at our q, below the bound."""
    noise = 1e-12 * reference.max()  # rounding: a vertical axis's g is 0 to this
    for d in result.dofs:
        assert d.max_abs >= reference[d.dof] * (1 - REL) - noise, (d.dof, d.max_abs)
        at = abs(generalized_gravity(model, d.q[None])[0, d.dof])
        assert at == pytest.approx(d.max_abs, rel=1e-12, abs=noise)
        assert d.bound >= d.max_abs * (1 - 1e-12) and d.bound >= reference[d.dof] * (1 - 1e-12)


@pytest.mark.parametrize("name", [ARM, "random"], ids=["two_link", "random_arm"])
def test_maximum_agrees_with_brute_force_on_small_arms(name):
    model = model_of(name)
    result = statics(model, samples=512)
    Q = grid(model, 41 if model.nv == 2 else 9)
    reference = np.array([polished(model, Q, i) for i in range(model.nv)])
    check_against(model, result, reference)
    for d in result.dofs:  # and agrees to 1e-6: the brute force's optimum is ours
        assert d.max_abs <= reference[d.dof] * (1 + REL)
    if name == ARM:  # the stretched arm held horizontal: the bound is reached
        assert [d.max_abs for d in result.dofs] == pytest.approx([19.62, 4.905], rel=1e-12)
        assert all(d.certified for d in result.dofs)


@pytest.mark.skipif(not PANDA, reason="example-robot-data is not installed")
def test_maximum_on_panda_is_above_many_random_configurations():
    model = model_of(PANDA[0])
    result = statics(model, samples=1024)
    Q = model.random_configuration(np.random.default_rng(7), 20000)
    check_against(model, result, np.abs(generalized_gravity(model, Q)).max(axis=0))


def test_payload_is_pinocchios_point_mass():
    pin = pytest.importorskip("pinocchio")
    model = model_of(ARM)
    report = statics_report(model, PayloadSpec(3.0, "link2", (0.1, 0.0, -0.7)), samples=256)
    reference = pin.buildModelFromUrdf(ARM)
    frame = reference.frames[reference.getFrameId("link2")]
    point = frame.placement.act(np.array([0.1, 0.0, -0.7]))
    reference.inertias[frame.parentJoint] += pin.Inertia(3.0, point, np.zeros((3, 3)))
    data = reference.createData()
    for row in report.rows:
        q = np.array([row.q.get(name, 0.0) for name in model.joint_names])
        g = pin.computeGeneralizedGravity(reference, data, q)
        assert abs(g[row.joint]) == pytest.approx(row.max_abs, rel=1e-12)
    assert report.payload == {"mass": 3.0, "frame": "link2", "point": [0.1, 0.0, -0.7]}


def test_capacity_against_brute_force_and_reaches_the_limit():
    model = model_of("random")
    payload = Payload(0.0, int(np.argmax(model.depth)), np.array([0.2, -0.1, 0.3]))
    result = statics(model, payload, samples=512)
    Q = grid(model, 9)
    g = generalized_gravity(model, Q)
    s = generalized_gravity(payload_model(model, payload), Q) - g
    checked = 0
    for d in result.dofs:
        if not np.isfinite(d.capacity):
            continue
        checked += 1
        i, limit = d.dof, d.limit
        assert d.capacity <= capacity_of(g[:, i], s[:, i], limit).min() * (1 + REL)
        # with that mass at the point, the joint reaches its limit at capacity_q
        q = d.capacity_q[None]
        robot = generalized_gravity(model, q)[0, i]
        per_kg = generalized_gravity(payload_model(model, payload), q)[0, i] - robot
        assert abs(robot + d.capacity * per_kg) == pytest.approx(limit, rel=1e-9)
    assert checked == 3


def dyn(*args) -> tuple[int, str, str]:
    from treedyn.cli.app import run
    out, err = io.StringIO(), io.StringIO()
    with (contextlib.redirect_stdout(out), contextlib.redirect_stderr(err),
          pytest.raises(SystemExit) as exit_info):
        run([str(a) for a in args])
    return exit_info.value.code or 0, out.getvalue(), err.getvalue()


def test_exit_codes_json_and_annotations():
    code, out, _ = dyn("statics", ARM, "--samples", 64, "-f", "json")
    document = json.loads(out)
    assert code == 0 and document["weakest"] == {"joint": "joint1", "ratio": pytest.approx(0.1962)}
    assert [j["limit"] for j in document["joints"]] == [100.0, 100.0]
    assert document["joints"][1]["payload_capacity"] is None  # the point is on its axis
    assert dyn("statics", ARM, "--samples", 64, "--fail-above", 0.1)[0] == 1
    assert dyn("statics", ARM, "--samples", 64, "--fail-above", 0.5)[0] == 0
    code, out, _ = dyn("statics", ARM, "--samples", 64, "--payload", "30@link2:0,0,-1",
                       "-f", "github")
    lines = Path(ARM).read_text().splitlines()
    annotated = [int(line.split("line=")[1].split(",")[0]) for line in out.splitlines()]
    assert code == 1 and len(annotated) == 2
    assert all("<limit" in lines[n - 1] for n in annotated)
    for bad in ("x@link2", "-1", "2@link2:0,0", "2@nowhere", "1_0@link2", "\uff12@link2"):
        code, _, err = dyn("statics", ARM, "--payload", bad)
        assert code == 2 and err.count("\n") == 1, (bad, err)


def test_mjcf_conversion_has_the_same_statics():
    urdf = statics_report(model_of(ARM), samples=128)
    mjcf = statics_report(load_model(ARM_MJCF), samples=128)
    assert [r.limit for r in mjcf.rows] == [100.0, 100.0]
    assert [r.max_abs for r in mjcf.rows] == pytest.approx([r.max_abs for r in urdf.rows],
                                                          rel=1e-5)


def test_payload_on_the_world_loads_no_joint():
    model = load_model(ARM_MJCF)
    alone = statics_report(model, samples=128)
    held = statics_report(model, PayloadSpec(3.0, "world"), samples=128)
    assert [r.max_abs for r in held.rows] == pytest.approx([r.max_abs for r in alone.rows],
                                                          rel=1e-12)
    assert all(r.capacity == np.inf for r in held.rows)


def test_coupled_mimic_joints_against_sampled_configurations():
    from treedyn.engine.coupling import couple
    model = couple(load_model(str(ROOT / "fixtures" / "urdf" / "gripper_mimic.urdf")))
    result = statics(model, samples=256)
    Q = model.random_configuration(np.random.default_rng(5), 4000)
    check_against(model, result, np.abs(generalized_gravity(model, Q)).max(axis=0))


def test_a_model_too_large_for_the_search_is_refused_in_one_line(tmp_path):
    """The search is quadratic in the joints a torque depends on: a 2 000-link star is
    refused before any of it is allocated (it once ended in an internal MemoryError),
    with one line, at once."""
    import time
    from test_scaling import star_urdf
    path = star_urdf(tmp_path / "star.urdf", 2000)
    start = time.perf_counter()
    code, out, err = dyn("statics", path, "-f", "json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "statics of this model would hold about" in err and "internal error" not in err
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize("offset", ["0,0,nan", "0,0", "a,b,c", "0,0,0,0", "0,0,inf", "0,,1"])
def test_a_bad_payload_offset_is_said_as_such(offset):
    """An offset that is not three finite numbers is refused as an offset (it was once
    read as part of the frame's name: "no link ... named 'link2:0,0,nan'")."""
    payload = f"1@link2:{offset}"
    code, out, err = dyn("statics", ARM, "--payload", payload)
    assert (code, out) == (2, "")
    assert err == (f"dyn: --payload {payload!r}: the offset must be three finite numbers "
                   "x,y,z (metres in the frame's axes)\n")


def test_too_many_samples_name_the_option_and_the_most_that_fit():
    """--samples past the memory a run may hold blames --samples, with the largest count
    that fits (the bytes are linear in the samples), not the model."""
    from treedyn.engine.statics import search_bytes
    from treedyn.pipeline.chunks import MEMORY
    code, out, err = dyn("statics", ARM, "--samples", 10 ** 9)
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith("dyn: --samples 1000000000 would hold about 59.6 GiB at once")
    most = int(err.split("at most ")[1].split()[0])
    model = model_of(ARM)
    assert search_bytes(model, most) <= MEMORY < search_bytes(model, most + 1)


@pytest.mark.parametrize("payload", ["1e308", "1@link2:0,0,1e308", "1e300@link2",
                                     "1e-300@link2:0,0,1e160"])
def test_a_payload_whose_loads_overflow_is_refused(payload):
    """Loads past what the search's finite differences hold were once reported with exit 0:
    max |g| -inf, "weakest" another joint, JSON null with "certified": true."""
    code, out, err = dyn("statics", ARM, "--samples", 64, "--payload", payload, "-f", "json")
    assert (code, out, err.count("\n")) == (2, "", 1), err
    assert err.startswith(f"dyn: {ARM}: --payload {payload!r}: the gravity loads ")
    from treedyn.engine.statics import LARGEST_LOAD, LoadOverflow
    model = model_of(ARM)
    with pytest.raises(LoadOverflow):
        statics(model, Payload(1e308, 1, np.zeros(3)), samples=64)
    # the largest payload below the limit: exact (joint1 horizontal, the point 1 m out)
    mass = LARGEST_LOAD / 9.81 / 2
    result = statics(model, Payload(mass, 1, np.zeros(3)), samples=64)
    assert result.dofs[0].certified
    assert result.dofs[0].max_abs == pytest.approx(9.81 * (mass + 2.0), rel=1e-12)


def test_a_zero_effort_limit_holds_nothing(tmp_path):
    """URDF effort="0" is a limit of zero (Pinocchio's effortLimit 0): a joint that must
    hold a load is over it, ratio inf (JSON null), capacity 0 where the point loads it; it
    once ended in an internal ZeroDivisionError."""
    text = Path(ARM).read_text().splitlines(keepends=True)
    text[28] = text[28].replace('effort="100"', 'effort="0"')  # joint2's <limit>
    path = tmp_path / "zero.urdf"
    path.write_text("".join(text))
    report = statics_report(load_model(str(path)), PayloadSpec(0.0, "link2", (0, 0, -1)),
                            samples=64)
    joint1, joint2 = report.rows
    assert (joint2.limit, joint2.ratio, joint2.capacity) == (0.0, np.inf, 0.0)
    assert joint2.max_abs == pytest.approx(4.905, rel=1e-9) and joint1.ratio < 1
    assert report.weakest is joint2 and report.over(None) == [joint2]
    code, out, err = dyn("statics", path, "--samples", 64, "-f", "json")
    document = json.loads(out)
    assert (code, err) == (1, "") and document["weakest"] == {"joint": "joint2", "ratio": None}
    assert document["joints"][1]["limit"] == 0.0 and document["joints"][1]["ratio"] is None
    assert [f["joint"] for f in document["findings"]] == ["joint2"]
    code, out, err = dyn("statics", path, "--samples", 64)
    row = next(line.split() for line in out.splitlines() if line.startswith("joint2"))
    assert (code, err, row[2:4]) == (1, "", ["0", "inf"])
    assert "weakest: joint2 (ratio inf)" in out and "FAIL: joint2" in out
