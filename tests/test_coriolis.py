"""The Coriolis matrix (:mod:`treedyn.engine.coriolis`) and frame Jacobians' time variation
(:mod:`treedyn.engine.jacobian_dot`) against Pinocchio (``computeCoriolisMatrix``,
``computeJointJacobiansTimeVariation`` + ``getFrameJacobianTimeVariation`` in LOCAL, WORLD
and LOCAL_WORLD_ALIGNED) on the URDFs of ``test_named_frames``, fixed and free-flyer; the
batch against the readable one-state sum; and identities on URDF and MJCF models (MuJoCo's
free joints included): ``dM/dt - 2 C`` is skew-symmetric (dM/dt by central differences of
CRBA along the motion), ``C v = h(q, v) - g(q)`` (RNEA), ``J a + Jdot v`` is the rate of
``J v`` along the motion."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from test_named_frames import MJCFS, URDFS, close, configurations
from treedyn.engine import crba, rnea
from treedyn.engine.coriolis import coriolis, coriolis_reference
from treedyn.engine.coupling import couple
from treedyn.engine.jacobian_dot import frame_jacobian_rates
from treedyn.engine.kinematics import FRAMES, LOCAL, LOCAL_WORLD_ALIGNED, WORLD
from treedyn.engine.named import frame_jacobians, frame_set
from treedyn.parsers import load_model


GRIPPER = str(Path(__file__).resolve().parents[1] / "fixtures" / "urdf" / "gripper_mimic.urdf")
# URDFs: fixed base and free-flyer (Pinocchio's joints); MJCFs with hinges, slides, balls and
# MuJoCo's free joint (a subspace that turns with q); mimic joints enforced (Pinocchio 4.1's
# computeCoriolisMatrix with mimic=True does not give C v = h - g there: not a reference)
IDENTITY = ([(p, False) for p in URDFS[:2]] + [(URDFS[-1], True), (GRIPPER, True)]
            + [(p, False) for p in MJCFS if p.endswith(("/ant.xml", "/hopper.xml",
                                                        "suite/humanoid.xml"))])
QUATERNION = {"spherical", "ball", "free", "free_world"}
try:  # every example-robot-data URDF Pinocchio loads
    from test_pinocchio import URDFS as ROBOTS
except pytest.skip.Exception:  # (no Pinocchio)
    ROBOTS = []


def motion(model, q, v, t):
    """q(t) (N, nq), a smooth motion through q with velocity v (N, nv) at t = 0: q + t v,
    but a quaternion turned by exp(t w / 2) (w in the child frame) and a free-flyer's
    origin moved by its velocity in the parent frame."""
    out = q + 0.0
    for i, joint in enumerate(model.joint_models):
        kind = model.joint_types[i]
        qs, vs = model.idx_q[i], model.idx_v[i]
        nq, nv = model.nq_joint[i], model.nv_joint[i]
        if kind not in QUATERNION:
            assert kind != "planar"
            out[:, qs:qs + nq] += t * v[:, vs:vs + nv]
            continue
        w = v[:, vs + nv - 3:vs + nv]  # the angular part, last three
        quat = q[:, qs + nq - 4:qs + nq]
        if kind == "free":  # Pinocchio's: linear velocity in the child frame
            out[:, qs:qs + 3] += t * np.einsum("nij,nj->ni", joint.rotation_of(q[:, qs:qs + 7]),
                                               v[:, vs:vs + 3])
        elif kind == "free_world":  # MuJoCo's: in the parent frame
            out[:, qs:qs + 3] += t * v[:, vs:vs + 3]
        wxyz = np.roll(quat, 1, axis=1) if not joint.scalar_first else quat
        turned = _product(wxyz, _exp(t * w))
        out[:, qs + nq - 4:qs + nq] = turned if joint.scalar_first else np.roll(turned, -1, 1)
    return out


def _exp(r):
    """The unit quaternions (w, x, y, z) (N, 4) of rotation vectors r (N, 3) / 2."""
    angle = np.linalg.norm(r, axis=1, keepdims=True)
    axis = np.divide(r, angle, out=np.zeros_like(r), where=angle > 0)
    return np.hstack([np.cos(angle / 2), np.sin(angle / 2) * axis])


def _product(a, b):
    """Hamilton products a b of quaternions (w, x, y, z) (N, 4)."""
    w1, v1, w2, v2 = a[:, :1], a[:, 1:], b[:, :1], b[:, 1:]
    return np.hstack([w1 * w2 - np.sum(v1 * v2, axis=1, keepdims=True),
                      w1 * v2 + w2 * v1 + np.cross(v1, v2)])


def states(model, key, count=2):
    q = configurations(model, key, count)
    rng = np.random.default_rng(len(key))
    return q, rng.standard_normal((count, model.nv)), rng.standard_normal((count, model.nv))


@pytest.fixture(scope="module", params=[(p, f) for p in URDFS for f in (False, True)],
                ids=lambda c: f"{c[0].rsplit('/', 1)[-1]}-{'free' if c[1] else 'fixed'}")
def pinocchio_pair(request):
    pin = pytest.importorskip("pinocchio")
    from test_pinocchio import Mapping
    path, free_flyer = request.param
    model = load_model(path, free_flyer=free_flyer)
    pinmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer
                else pin.buildModelFromUrdf(path))
    return pin, model, pinmodel, Mapping(model, pinmodel), path


def pinocchio_states(pin, pinmodel, data, mapping, C, q, v):
    """Each state's index, once its C equals Pinocchio's ``computeCoriolisMatrix`` there and
    Pinocchio's data holds the joints' Jacobian rates and the frames' placements."""
    dofs = np.ix_(mapping.v_index, mapping.v_index)
    for n in range(len(q)):
        pq, pv = mapping.q(q[n]), mapping.v(v[n])
        close(C[n], pin.computeCoriolisMatrix(pinmodel, data, pq, pv)[dofs], "C")
        pin.computeJointJacobiansTimeVariation(pinmodel, data, pq, pv)
        pin.updateFramePlacements(pinmodel, data)
        yield n


def test_C_and_Jdot_equal_pinocchios(pinocchio_pair):
    pin, model, pinmodel, mapping, path = pinocchio_pair
    data = pinmodel.createData()
    q, v, _ = states(model, path)
    frames = frame_set(model)
    ids = [pinmodel.getFrameId(name.removeprefix("joint:")) for name in frames.names]
    C = coriolis(model, q, v)
    Jdot = {reference: frame_jacobian_rates(model, q, v, frames, reference)
            for reference in FRAMES}
    pin_reference = {LOCAL: pin.LOCAL, WORLD: pin.WORLD,
                     LOCAL_WORLD_ALIGNED: pin.LOCAL_WORLD_ALIGNED}
    for n in pinocchio_states(pin, pinmodel, data, mapping, C, q, v):
        for k, frame in enumerate(ids):
            if frame >= pinmodel.nframes:  # (a name Pinocchio does not keep)
                continue
            for reference, pin_frame in pin_reference.items():
                expected = pin.getFrameJacobianTimeVariation(pinmodel, data, frame, pin_frame)
                close(Jdot[reference][n, k], expected[:, mapping.v_index],
                      (frames.names[k], reference))


@pytest.mark.parametrize("path, free_flyer", [(URDFS[0], True), (MJCFS[2], False),
                                              (GRIPPER, True)],
                         ids=["panda", MJCFS[2].rsplit("/", 1)[-1], "gripper-mimic"])
def test_the_batch_is_the_readable_sum_one_state_at_a_time(path, free_flyer):
    model = load_model(path, free_flyer=free_flyer)
    model = couple(model) if path == GRIPPER else model
    q, v, _ = states(model, path, 3)
    C = coriolis(model, q, v)
    for n in range(len(q)):
        close(C[n], coriolis_reference(model, q[n], v[n]), ("state", n))
    close(coriolis(model, q[0], v[0]), C[0], "one state")


@pytest.mark.parametrize("path, free_flyer", IDENTITY,
                         ids=[f"{p.rsplit('/', 1)[-1]}-{f}" for p, f in IDENTITY])
def test_identities_along_a_motion(path, free_flyer, h=1e-6):
    """dM/dt - 2C skew; C v = h - g; J a + Jdot v = d(J v)/dt with v(t) = v + t a."""
    model = load_model(path, free_flyer=free_flyer)
    model = couple(model) if path == GRIPPER else model
    q, v, a = states(model, path)
    C = coriolis(model, q, v)
    M_minus, M_plus = (crba(model, motion(model, q, v, s * h)) for s in (-1.0, 1.0))
    Mdot = (M_plus - M_minus) / (2 * h)
    N = Mdot - 2 * C
    close(N, -np.swapaxes(N, 1, 2), "dM/dt - 2C skew", 1e-6)
    close(C + np.swapaxes(C, 1, 2), Mdot, "C + C^T = dM/dt", 1e-6)
    bias = rnea(model, q, v) - rnea(model, q)  # h(q, v) - g(q)
    close(np.einsum("nde,ne->nd", C, v), bias, "C v = h - g")
    frames = frame_set(model)
    for reference in FRAMES:
        J = frame_jacobians(model, q, frames, reference)  # (N, k, 6, nv)
        Jdot = frame_jacobian_rates(model, q, v, frames, reference)
        twist_minus, twist_plus = (
            frame_jacobians(model, motion(model, q, v, s * h), frames, reference)
            @ (v + s * h * a)[:, None, :, None] for s in (-1.0, 1.0))
        rate = (twist_plus - twist_minus)[..., 0] / (2 * h)  # (N, k, 6)
        expected = J @ a[:, None, :, None] + Jdot @ v[:, None, :, None]
        close(expected[..., 0], rate, ("J a + Jdot v", reference), 1e-6)


def test_the_commands_print_the_engine_one_state_and_many(tmp_path):
    """dyn coriolis and dyn jacobian --dot: one state (--degrees too) is the engine's C
    and Jdot; every state of --input (q and v read) is that state alone, in each format."""
    from test_cli import ARM, assert_usage_error, dyn, dyn_json, numbers
    model = load_model(str(ARM))
    frames = frame_set(model, ["link2"])
    q, v, _ = states(model, "cli", 3)
    one = dyn_json("coriolis", ARM, "--q", numbers(q[0]), "--v", numbers(v[0]))
    np.testing.assert_allclose(one["C"], coriolis(model, q[0], v[0]), atol=0)
    assert one["dofs"] == ["joint1", "joint2"]
    degrees = dyn_json("coriolis", ARM, "--degrees", "--q", numbers(np.degrees(q[0])),
                       "--v", numbers(np.degrees(v[0])))
    np.testing.assert_allclose(degrees["C"], one["C"], atol=1e-14)
    dot = dyn_json("jacobian", ARM, "--frame", "link2", "--reference", "world", "--dot",
                   "--q", numbers(q[0]), "--v", numbers(v[0]))
    np.testing.assert_allclose(dot["Jdot"], frame_jacobian_rates(model, q[:1], v[:1], frames,
                                                                 WORLD)[0, 0], atol=0)
    np.testing.assert_allclose(dot["J"], frame_jacobians(model, q[:1], frames, WORLD)[0, 0],
                               atol=0)
    log = tmp_path / "states.csv"
    log.write_text("q:joint1,q:joint2,v:joint1,v:joint2\n"
                   + "".join(numbers([*q[n], *v[n]]) + "\n" for n in range(len(q))))
    for suffix in (".npz", ".jsonl", ".csv"):
        C_out, J_out = tmp_path / f"C{suffix}", tmp_path / f"J{suffix}"
        dyn("coriolis", ARM, "--input", log, "--output", C_out)
        dyn("jacobian", ARM, "--frame", "link2", "--reference", "world", "--dot", "--input",
            log, "--output", J_out)
        C_rows, J_rows = (_rows(path, key, len(q)) for path, key in ((C_out, "C"),
                                                                     (J_out, "J_Jdot")))
        for n in range(len(q)):
            alone = dyn_json("jacobian", ARM, "--frame", "link2", "--reference", "world",
                             "--dot", "--q", numbers(q[n]), "--v", numbers(v[n]))
            np.testing.assert_allclose(C_rows[n].reshape(2, 2), coriolis(model, q[n], v[n]),
                                       atol=1e-15)
            np.testing.assert_allclose(J_rows[n].reshape(2, 6, 2), [alone["J"], alone["Jdot"]],
                                       atol=1e-15)
    assert_usage_error(dyn("jacobian", ARM, "--frame", "link2", "--v", "1,0", check=False),
                       "--v", "--dot")
    assert_usage_error(dyn("coriolis", ARM, "--v", "1,0", "--input", log, check=False),
                       "--v", "--input")


def _rows(path, key, count):
    if path.suffix == ".npz":
        return np.load(path)[key].reshape(count, -1)
    if path.suffix == ".csv":
        return np.loadtxt(path, delimiter=",", skiprows=1).reshape(count, -1)
    return np.array([np.ravel(json.loads(line)[key]) for line in path.read_text().splitlines()])


@pytest.mark.parametrize("path", ROBOTS, ids=lambda p: p.rsplit("/", 1)[-1])
def test_C_equals_pinocchios_on_every_robot(path):
    """C and one frame's Jdot (the last link, LOCAL) on every example-robot-data URDF with
    a free-flyer, two states in one batched call."""
    pin = pytest.importorskip("pinocchio")
    from test_pinocchio import Mapping
    model = load_model(path, free_flyer=True)
    pinmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    data, mapping = pinmodel.createData(), Mapping(model, pinmodel)
    q, v, _ = states(model, path)
    name = model.frames[-1].name
    C = coriolis(model, q, v)
    Jdot = frame_jacobian_rates(model, q, v, frame_set(model, [name]), LOCAL)[:, 0]
    for n in pinocchio_states(pin, pinmodel, data, mapping, C, q, v):
        expected = pin.getFrameJacobianTimeVariation(pinmodel, data,
                                                     pinmodel.getFrameId(name), pin.LOCAL)
        close(Jdot[n], expected[:, mapping.v_index], (name, "Jdot"))


def test_a_coriolis_matrix_past_the_mass_cap_is_refused_in_one_line(tmp_path):
    """C is nv x nv, as M: past dyn mass's cap (4096 dofs) it is refused before anything is
    computed (a 10 000-link star once took 55 s and 5.8 GB for one state)."""
    import contextlib
    import io
    import time
    from test_scaling import star_urdf
    from treedyn.cli.app import run
    path = star_urdf(tmp_path / "star.urdf", 4200)
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with (contextlib.redirect_stdout(out), contextlib.redirect_stderr(err),
          pytest.raises(SystemExit) as exit_info):
        run(["coriolis", path, "-f", "json"])
    assert exit_info.value.code == 2 and out.getvalue() == ""
    assert err.getvalue().count("\n") == 1 and "past the 16,777,216" in err.getvalue()
    assert time.perf_counter() - start < 20
