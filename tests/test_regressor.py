"""The joint torque regressor tau = Y(q, v, a) pi (treedyn.engine.regressor, .batch.regressor).

References: Pinocchio's computeJointTorqueRegressor (columns mapped joint by joint: dyn's
bodies are Pinocchio's joints here, fixed links merged alike) to 1e-10 relative, fixed and
with a free-flyer; Y pi equals dyn's and Pinocchio's RNEA; MuJoCo's mj_inverse with the
armature and viscous columns (its damping); the batched path equals the reference.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from reference_models import gymnasium_models, robots_root  # noqa: E402
from treedyn.cli.app import run  # noqa: E402
from treedyn.engine import rnea  # noqa: E402
from treedyn.engine import joint_torque_regressor as regressor  # noqa: E402
from treedyn.engine.regressor import (dynamic_parameters, layout_of,  # noqa: E402
                                      model_parameters, regressor_reference,
                                      rotated_parameters, spatial_inertia)
from treedyn.parsers import load_model  # noqa: E402

ROOT = robots_root()
ROBOTS = ["ur_description/urdf/ur5_robot.urdf", "panda_description/urdf/panda.urdf",
          "talos_data/robots/talos_reduced.urdf", "solo_description/robots/solo12.urdf",
          "anymal_b_simple_description/robots/anymal.urdf",
          "tiago_description/robots/tiago.urdf"]
ROBOTS = [r for r in ROBOTS if ROOT and os.path.exists(os.path.join(ROOT, r))]
TERMS = ("armature", "viscous", "coulomb")


def relative_error(ours, reference) -> float:
    return float(np.max(np.abs(ours - reference), initial=0.0)
                 / max(float(np.max(np.abs(reference), initial=0.0)), np.finfo(float).tiny))


def random_states(model, count: int, seed: int):
    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng, count)
    return q, rng.normal(size=(count, model.nv)), rng.normal(size=(count, model.nv))


def pinocchio_state(pin, model, pinmodel, joints, q):
    out = np.array(pin.neutral(pinmodel))
    for i, j in enumerate(joints):
        block = q[model.idx_q[i]:model.idx_q[i] + model.nq_joint[i]]
        if model.joint_types[i] == "continuous":
            block = np.array([np.cos(block[0]), np.sin(block[0])])
        out[pinmodel.idx_qs[j]:pinmodel.idx_qs[j] + len(block)] = block
    return out


@pytest.mark.skipif(not ROBOTS, reason="example-robot-data is not installed")
@pytest.mark.parametrize("free_flyer", [False, True], ids=["fixed", "free-flyer"])
@pytest.mark.parametrize("path", ROBOTS)
def test_equals_pinocchio_regressor(path, free_flyer):
    pin = pytest.importorskip("pinocchio")
    full = os.path.join(ROOT, path)
    model = load_model(full, free_flyer=free_flyer)
    pinmodel = (pin.buildModelFromUrdf(full, pin.JointModelFreeFlyer()) if free_flyer
                else pin.buildModelFromUrdf(full))
    data = pinmodel.createData()
    joints = [pinmodel.getJointId(name) for name in model.joint_names]
    dofs = np.concatenate([np.arange(pinmodel.idx_vs[j], pinmodel.idx_vs[j] + pinmodel.nvs[j])
                           for j in joints]).astype(int)
    layout = layout_of(model)
    columns = np.concatenate([np.arange(10 * (joints[j] - 1), 10 * joints[j])
                              for j in layout.body_joint])
    pi = model_parameters(model, layout)
    q, v, a = random_states(model, 3, seed=len(path) + free_flyer)
    Y = regressor(model, q, v, a)
    assert np.allclose(np.einsum("nvp,p->nv", Y, pi), rnea(model, q, v, a), rtol=0, atol=1e-9 * np.abs(Y).max())
    for n in range(len(q)):
        pv, pa = np.zeros(pinmodel.nv), np.zeros(pinmodel.nv)
        pv[dofs], pa[dofs] = v[n], a[n]
        pq = pinocchio_state(pin, model, pinmodel, joints, q[n])
        reference = np.array(pin.computeJointTorqueRegressor(pinmodel, data, pq, pv, pa))
        assert relative_error(Y[n], reference[dofs][:, columns]) <= 1e-10
        tau = np.array(pin.rnea(pinmodel, data, pq, pv, pa))[dofs]
        assert relative_error(Y[n] @ pi, tau) <= 1e-10
        # the parameters in the same order: Pinocchio's own inertias map onto dyn's columns
        pin_pi = np.concatenate([pinmodel.inertias[joints[j]].toDynamicParameters()
                                 for j in layout.body_joint])
        assert relative_error(pi, pin_pi) <= 1e-12


MODELS = [(os.path.join(ROOT, r), ff) for r in ROBOTS[:3] for ff in (False, True)]
MODELS += [(p, False) for p in gymnasium_models()]


@pytest.mark.skipif(not MODELS, reason="no reference models installed")
@pytest.mark.parametrize("path,free_flyer", MODELS,
                         ids=[f"{os.path.basename(p)}{'-ff' if f else ''}" for p, f in MODELS])
def test_batched_equals_reference(path, free_flyer):
    model = load_model(path, free_flyer=free_flyer)
    layout = layout_of(model, TERMS)
    q, v, a = random_states(model, 4, seed=7)
    Y = regressor(model, q, v, a, terms=TERMS)
    for n in range(len(q)):
        assert relative_error(Y[n], regressor_reference(model, q[n], v[n], a[n], terms=TERMS)) <= 1e-12
    pi = model_parameters(model, layout)  # the file's armature, no friction: RNEA
    assert relative_error(np.einsum("nvp,p->nv", Y, pi), rnea(model, q, v, a)) <= 1e-12
    still = regressor(model, q[0])  # no v, a: gravity only, one state
    assert still.shape == (model.nv, layout.inertial)
    assert relative_error(still, regressor_reference(model, q[0])) <= 1e-12


HUMANOIDS = [p for p in gymnasium_models() if os.path.basename(p) in ("humanoid.xml", "ant.xml")]


@pytest.mark.skipif(not HUMANOIDS, reason="gymnasium is not installed")
@pytest.mark.parametrize("path", HUMANOIDS, ids=os.path.basename)
def test_mjcf_equals_mujoco_inverse(path):
    """Y [pi; armature; damping] is MuJoCo's qfrc_inverse with constraints and springs off:
    M a + bias + damping v (armature inside M)."""
    mujoco = pytest.importorskip("mujoco")
    m = mujoco.MjModel.from_xml_path(path)
    bits = mujoco.mjtDisableBit
    m.opt.disableflags |= bits.mjDSBL_SPRING | bits.mjDSBL_CONSTRAINT | bits.mjDSBL_ACTUATION
    d = mujoco.MjData(m)
    model = load_model(path)
    layout = layout_of(model, ("armature", "viscous"))
    pi = model_parameters(model, layout)
    nd = len(layout.term_dofs)
    pi[layout.inertial + nd:] = m.dof_damping[layout.term_dofs]
    q, v, a = random_states(model, 3, seed=3)
    Y = regressor(model, q, v, a, terms=layout.terms)
    for n in range(len(q)):
        d.qpos[:], d.qvel[:], d.qacc[:] = q[n], v[n], a[n]
        mujoco.mj_inverse(m, d)
        assert relative_error(Y[n] @ pi, d.qfrc_inverse) <= 1e-9


def test_parameter_algebra():
    pin = pytest.importorskip("pinocchio")
    for seed in range(5):
        inertia = pin.Inertia.Random()
        p = inertia.toDynamicParameters()
        spatial = spatial_inertia(p)
        assert np.allclose(dynamic_parameters(spatial), p, rtol=0, atol=1e-14)
        M = np.array(inertia.matrix())  # Pinocchio's (linear, angular) order
        ours = np.block([[spatial[3:, 3:], spatial[3:, :3]], [spatial[:3, 3:], spatial[:3, :3]]])
        assert np.allclose(ours, M, rtol=0, atol=1e-14)
    R = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))[0]
    R *= np.sign(np.linalg.det(R))
    P = rotated_parameters(R)
    B = np.zeros((6, 6))
    B[:3, :3] = B[3:, 3:] = R
    assert np.allclose(P @ p, dynamic_parameters(B.T @ spatial_inertia(p) @ B), atol=1e-13)


def test_regressor_command_streams_npz(tmp_path, capsys):
    arm = "fixtures/two_link_arm.urdf"
    model = load_model(arm)
    q, v, a = random_states(model, 50, seed=2)
    np.savez(tmp_path / "log.npz", q=q, v=v, a=a)
    with pytest.raises(SystemExit) as ended:
        run(["regressor", arm, "--input", str(tmp_path / "log.npz"), "--output",
             str(tmp_path / "Y.npz"), "--terms", "viscous,coulomb", "--quiet"])
    assert ended.value.code == 0
    saved = np.load(tmp_path / "Y.npz")
    assert saved["Y"].shape == (50, 2, 24)
    assert np.array_equal(saved["Y"], regressor(model, q, v, a, terms=("viscous", "coulomb")))
    assert list(saved["parameters"][:3]) == ["link1.m", "link1.mx", "link1.my"]
    assert list(saved["parameters"][20:]) == ["viscous.joint1", "viscous.joint2",
                                              "coulomb.joint1", "coulomb.joint2"]
    assert np.allclose(np.einsum("nvp,p->nv", saved["Y"], saved["pi"]), rnea(model, q, v, a))
    assert list(saved["dofs"]) == ["joint1", "joint2"]


def test_regressor_command_bad_terms(capsys):
    with pytest.raises(SystemExit) as ended:
        run(["regressor", "fixtures/two_link_arm.urdf", "--terms", "viscous,stiction"])
    assert ended.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["dyn: --terms: unknown term 'stiction' (known: armature, viscous, coulomb, "
                   "coulomb+, coulomb-, offset, stribeck, smooth, gain)"]


def test_write_regressor_from_python_streams_y_with_y_pi_the_rnea(tmp_path):
    """The library under ``dyn regressor --input``: Y of every state of a file, a chunk at
    a time, with the file's parameters beside it; Y pi is RNEA's tau."""
    from treedyn.pipeline.regression import write_regressor

    model = load_model("fixtures/two_link_arm.urdf")
    q, v, a = random_states(model, 300, seed=5)
    np.savez(tmp_path / "log.npz", q=q, v=v, a=a)
    sink = write_regressor(model, tmp_path / "log.npz", tmp_path / "Y.npz",
                           terms=("viscous",), chunk=64)
    written = np.load(tmp_path / "Y.npz")
    assert sink.count == 300 and written["Y"].shape == (300, model.nv, 22)
    np.testing.assert_allclose(np.einsum("nvp,p->nv", written["Y"], written["pi"]),
                               rnea(model, q, v, a), rtol=0, atol=1e-12)


def test_the_library_refuses_the_gain_term_as_the_command_does(tmp_path):
    """A Python caller asking write_regressor or regressor_document for the gain term (a
    logged current's column, no function of q, v, a) is refused, not given zeros."""
    from treedyn.pipeline.errors import UsageError
    from treedyn.pipeline.layout import Layout
    from treedyn.pipeline.regression import regressor_document, write_regressor

    arm = load_model(os.path.join(os.path.dirname(__file__), "..", "fixtures",
                                  "two_link_arm.urdf"))
    np.savez(tmp_path / "s.npz", q=np.zeros((2, 2)), v=np.zeros((2, 2)), a=np.zeros((2, 2)))
    with pytest.raises(UsageError, match="gain"):
        write_regressor(arm, tmp_path / "s.npz", tmp_path / "Y.npz", terms=("gain",))
    with pytest.raises(UsageError, match="gain"):
        regressor_document(Layout.of(arm), None, ("gain",))
    assert sorted(os.listdir(tmp_path)) == ["s.npz"]
