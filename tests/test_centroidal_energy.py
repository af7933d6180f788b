"""Centroidal momentum (:mod:`treedyn.engine.centroidal`) and energy
(:mod:`treedyn.engine.energy`) against Pinocchio (``ccrba``: ``data.Ag``, ``data.hg``,
``data.Ig``; ``computeKineticEnergy``, ``computePotentialEnergy``) on the example-robot-data
URDFs of ``test_named_frames`` (fixed and free-flyer) and every example-robot-data URDF dyn
reads (fixed, two states each), and MuJoCo's ``data.energy`` on
gymnasium MJCF models; g(q) and h(q, v) as ``dyn inverse`` spells them against
``computeGeneralizedGravity`` and ``nonLinearEffects``; identities (hg is the momentum
read off finite differences of the bodies' poses; dT/dt = v^T (tau - g(q)) and
dV/dt = v^T g(q) along a motion with a = ABA(q, v, tau)); the batch against the readable
one-state references; the commands, one state and a log."""
from __future__ import annotations

import numpy as np
import pytest

from reference_models import robot_urdfs
from test_cli import ARM, SEED_Q, SEED_V, dyn, dyn_json, numbers
from test_named_frames import MJCFS, URDFS, close, configurations
from test_mimic import GRIPPER
from treedyn.engine import aba, rnea
from treedyn.engine.centroidal import centroidal_momentum, centroidal_reference
from treedyn.engine.coupling import couple
from treedyn.engine.energy import energy, energy_reference
from treedyn.engine.kinematics import placements
from treedyn.parsers import ParseError, load_model

TOL = 1e-12
STATES = 3


def velocities(model, key: str, count: int = STATES) -> np.ndarray:
    return np.random.default_rng(len(key)).standard_normal((count, model.nv))


@pytest.mark.parametrize("free_flyer", [False, True], ids=["fixed", "free-flyer"])
@pytest.mark.parametrize("path", URDFS, ids=[p.rsplit("/", 1)[-1] for p in URDFS])
def test_centroidal_and_energy_equal_pinocchios(path, free_flyer):
    pin = pytest.importorskip("pinocchio")
    from test_pinocchio import Mapping
    model = load_model(path, free_flyer=free_flyer)
    pinmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer
                else pin.buildModelFromUrdf(path))
    data, mapping = pinmodel.createData(), Mapping(model, pinmodel)
    q = configurations(model, f"{path}:{free_flyer}", STATES)
    v = velocities(model, path)
    Ag, hg, Ig = centroidal_momentum(model, q, v)
    E = energy(model, q, v)
    for n in range(STATES):
        pq, pv = mapping.q(q[n]), mapping.v(v[n])
        pin.ccrba(pinmodel, data, pq, pv)
        close(Ag[n], data.Ag[:, mapping.v_index], "Ag", TOL)
        close(hg[n], data.hg.vector, "hg", TOL)
        close(Ig[n], data.Ig.matrix(), "Ig", TOL)
        kinetic = pin.computeKineticEnergy(pinmodel, data, pq, pv)
        potential = pin.computePotentialEnergy(pinmodel, data, pq)
        close(E[n], [kinetic, potential], "energy", TOL)


@pytest.mark.parametrize("path", robot_urdfs(), ids=lambda p: p.rsplit("/", 1)[-1])
def test_every_robot_urdf_equals_pinocchio_at_two_states(path):
    """Every example-robot-data URDF (fixed base) that both read, two states each."""
    pin = pytest.importorskip("pinocchio")
    from test_pinocchio import Mapping
    try:
        model = load_model(path)
    except ParseError as error:
        pytest.skip(f"dyn refuses it: {error}")
    pinmodel = pin.buildModelFromUrdf(path)
    data, mapping = pinmodel.createData(), Mapping(model, pinmodel)
    q = configurations(model, path)
    v = velocities(model, path, 2)
    Ag, hg, Ig = centroidal_momentum(model, q, v)
    E = energy(model, q, v)
    for n in range(2):
        pq, pv = mapping.q(q[n]), mapping.v(v[n])
        pin.ccrba(pinmodel, data, pq, pv)
        close(np.hstack([Ag[n], hg[n, :, None], Ig[n]]),
              np.hstack([data.Ag[:, mapping.v_index], data.hg.vector[:, None],
                         data.Ig.matrix()]), "ccrba", TOL)
        close(E[n], [pin.computeKineticEnergy(pinmodel, data, pq, pv),
                     pin.computePotentialEnergy(pinmodel, data, pq)], "energy", TOL)


@pytest.mark.parametrize("path", [p for p in URDFS if p.endswith(("panda.urdf",
                                                                   "talos_reduced.urdf"))],
                         ids=lambda p: p.rsplit("/", 1)[-1])
def test_inverse_with_zero_v_and_a_is_g_and_with_v_is_h(path):
    """The spelling docs/commands.md gives: ``dyn inverse --q Q`` is g(q) and
    ``dyn inverse --q Q --v V`` is h(q, v) (a defaults to zero), on the free-flyer."""
    pin = pytest.importorskip("pinocchio")
    from test_pinocchio import Mapping
    model = load_model(path, free_flyer=True)
    pinmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    data, mapping = pinmodel.createData(), Mapping(model, pinmodel)
    q = configurations(model, "g and h", 1)[0]
    v = velocities(model, "g and h", 1)[0]
    g = dyn_json("inverse", path, "--free-flyer", "--q", numbers(q), "--format", "json")
    h = dyn_json("inverse", path, "--free-flyer", "--q", numbers(q), "--v", numbers(v),
                 "--format", "json")
    gravity = pin.computeGeneralizedGravity(pinmodel, data, mapping.q(q))
    effects = pin.nonLinearEffects(pinmodel, data, mapping.q(q), mapping.v(v))
    close(g["tau"], mapping.back(gravity), "g(q)", TOL)
    close(h["tau"], mapping.back(effects), "h(q, v)", TOL)


@pytest.mark.parametrize("path", MJCFS[:5], ids=[p.rsplit("/", 1)[-1] for p in MJCFS[:5]])
def test_energy_equals_mujocos(path):
    """MuJoCo's data.energy (potential, kinetic) with mjENBL_ENERGY, its springs removed
    (its potential counts them) and its bodies welded to the world taken out (a constant
    it counts and the dynamics does not)."""
    mujoco = pytest.importorskip("mujoco")
    model = load_model(path)
    mj = mujoco.MjModel.from_xml_path(path)
    mj.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    mj.jnt_stiffness[:] = 0
    mj.tendon_stiffness[:] = 0
    data = mujoco.MjData(mj)
    q = configurations(model, path, STATES)
    v = velocities(model, path)
    E = energy(model, q, v)
    for n in range(STATES):
        data.qpos[:], data.qvel[:] = q[n], v[n]
        mujoco.mj_forward(mj, data)
        welded = -sum(mj.body_mass[b] * mj.opt.gravity @ data.xipos[b]
                      for b in range(1, mj.nbody) if mj.body_weldid[b] == 0)
        close(E[n], [data.energy[1], data.energy[0] - welded], "energy", TOL)


def momentum_from_poses(model, q, v, h=1e-6):
    """(linear, angular about the centre of mass) momentum at one state of a model of
    1-dof joints, from central differences of the bodies' placements along q + t v."""
    (R0, p0), (R1, p1) = (placements(model, q + s * h * v) for s in (-1.0, 1.0))
    R, p = placements(model, q)
    com = model.body_com
    c_i = p + np.einsum("bij,bj->bi", R, com)
    c_dot = (p1 + np.einsum("bij,bj->bi", R1, com) - p0 - np.einsum("bij,bj->bi", R0, com)) / (2 * h)
    W = (R1 - R0) / (2 * h) @ np.swapaxes(R, 1, 2)  # skew(w_i)
    w = np.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]], axis=1)
    m = model.body_mass
    c = m @ c_i / m.sum()
    I_world = R @ model.body_rotational_inertia @ np.swapaxes(R, 1, 2)
    angular = (np.cross(c_i - c, m[:, None] * c_dot) + np.einsum("bij,bj->bi", I_world, w))
    return m @ c_dot, angular.sum(axis=0)


@pytest.mark.parametrize("path", [p for p in URDFS + MJCFS if p.endswith(
    ("panda.urdf", "ur5_robot.urdf", "/hopper.xml", "/reacher.xml"))],
    ids=lambda p: p.rsplit("/", 1)[-1])
def test_hg_is_the_momentum_and_the_energy_changes_by_the_work_done(path):
    model = load_model(path)
    assert model.nq == model.nv == model.njoints  # q(t) = q + t v: 1-dof joints only
    q = configurations(model, path, 1)[0]
    v = velocities(model, path, 1)[0]
    Ag, hg, _ = centroidal_momentum(model, q, v)
    linear, angular = momentum_from_poses(model, q, v)
    close(Ag[0] @ v, hg[0], "Ag v = hg", TOL)
    close(hg[0, :3], linear, "linear momentum", 1e-6)
    close(hg[0, 3:], angular, "angular momentum", 1e-6)
    tau = np.random.default_rng(5).standard_normal(model.nv)
    a = aba(model, q, v, tau)
    g = rnea(model, q)
    h = 1e-5
    steps = np.array([-h, h])[:, None]
    E = energy(model, q + steps * v + 0.5 * steps**2 * a, v + steps * a)  # (2, 2)
    rate = (E[1] - E[0]) / (2 * h)
    close(rate[0], v @ (tau - g), "dT/dt", 1e-6)
    close(rate[1], v @ g, "dV/dt", 1e-6)


@pytest.mark.parametrize("path,free_flyer,mimic", [
    (ARM, False, False), (URDFS[0], True, False), (MJCFS[-1], False, False),
    (GRIPPER, False, True)], ids=["arm", "free-flyer", "mjcf", "mimic"])
def test_the_batch_is_the_readable_reference_one_state_at_a_time(path, free_flyer, mimic):
    model = load_model(path, free_flyer=free_flyer)
    if mimic:
        model = couple(model)
        assert model.coupling is not None
    q = configurations(model, "reference", 4)
    v = velocities(model, "reference", 4)
    Ag, hg, Ig = centroidal_momentum(model, q, v)
    E = energy(model, q, v, gravity=[0.5, -1.0, -9.0])
    for n in range(len(q)):
        ref_Ag, ref_hg, ref_Ig = centroidal_reference(model, q[n], v[n])
        close(Ag[n], ref_Ag, "Ag", TOL)
        close(hg[n], ref_hg, "hg", TOL)
        close(Ig[n], ref_Ig, "Ig", TOL)
        close(E[n], energy_reference(model, q[n], v[n], [0.5, -1.0, -9.0]), "energy", TOL)


def test_the_commands_one_state_and_a_log(tmp_path):
    model = load_model(str(ARM))
    q, v = np.array(SEED_Q), np.array(SEED_V)
    Ag, hg, Ig = (x[0] for x in centroidal_momentum(model, q[None], v[None]))
    one = dyn_json("centroidal", ARM, "--q", numbers(q), "--v", numbers(v), "--format", "json")
    assert set(one) == {"schema", "Ag", "hg", "Ig"}
    close(one["Ag"], Ag, "Ag", 1e-15)
    close(one["hg"], hg, "hg", 1e-15)
    close(one["Ig"], Ig, "Ig", 1e-15)
    kinetic, potential = energy(model, q, v)[0]
    one = dyn_json("energy", ARM, "--q", numbers(q), "--v", numbers(v), "--format", "json")
    assert one == {"schema": "treedyn.energy/1", "kinetic": kinetic, "potential": potential}
    states = configurations(model, "log", 5)
    speeds = velocities(model, "log", 5)
    log = tmp_path / "states.npz"
    np.savez(log, q=states, v=speeds)
    dyn("centroidal", ARM, "--input", log, "--output", tmp_path / "c.npz")
    dyn("energy", ARM, "--input", log, "--output", tmp_path / "e.npz")
    Ag, hg, Ig = centroidal_momentum(model, states, speeds)
    close(np.load(tmp_path / "c.npz")["centroidal"],
          np.concatenate([Ag, hg[..., None], Ig], axis=2), "log centroidal", 1e-15)
    close(np.load(tmp_path / "e.npz")["energy"], energy(model, states, speeds), "log energy",
          1e-15)
    massless = tmp_path / "massless.urdf"
    massless.write_text('<robot name="m"><link name="a"/><link name="b"/><joint name="j" '
                        'type="continuous"><parent link="a"/><child link="b"/></joint></robot>')
    refused = dyn("centroidal", massless, check=False)
    assert refused.returncode == 2
    assert refused.stderr.decode().count("\n") == 1 and "no moving mass" in refused.stderr.decode()
    assert dyn_json("energy", massless, "--v", "1") == {"schema": "treedyn.energy/1",
                                                        "kinetic": 0.0, "potential": 0.0}
    both = dyn("energy", ARM, "--input", log, "--v", "1,2", check=False)
    assert both.returncode == 2
    assert both.stderr.decode().strip() == ("dyn: --v cannot be combined with --input (put v "
                                            "in the input file)")
