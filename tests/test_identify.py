"""Identification from logged motion (treedyn.engine.analysis.identify, .consistent,
.log_cholesky; ``dyn identify``).

Synthetic logs from the oracles: Pinocchio's RNEA on UR5, panda and talos (free-flyer)
with planted inertias (mass +-10 %, com +-1 cm, com-frame moments scaled up to 10 %),
MuJoCo's mj_inverse on an MJCF humanoid with planted masses and moments; Gaussian torque
noise. What must hold: the base parameters within 5 standard deviations of the planted
ones, every fitted body physically consistent, the held-out torque RMS within 10 % of the
noise, and parameters a log does not excite reported as such.
"""
from __future__ import annotations

import json
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from reference_models import gymnasium_models, robots_root  # noqa: E402
from treedyn.cli.app import run  # noqa: E402
from treedyn.engine.analysis.consistent import consistent_fit  # noqa: E402
from treedyn.engine.analysis.identify import (Accumulator, base_parameters,  # noqa: E402
                                              joint_rms, ordinary_least_squares)
from treedyn.engine.analysis.log_cholesky import parameters_and_jacobian, theta_of  # noqa: E402
from treedyn.engine.inertia_forms import pseudo_inertia  # noqa: E402
from treedyn.engine import joint_torque_regressor as regressor  # noqa: E402
from treedyn.engine.regressor import layout_of, model_parameters  # noqa: E402
from treedyn.parsers import load_model  # noqa: E402

ROOT = robots_root()
NOISE = 0.05
ARM = "fixtures/two_link_arm.urdf"


def dyn(*args, capsys):
    with pytest.raises(SystemExit) as ended:
        run(list(args))
    out, err = capsys.readouterr()
    return ended.value.code, out, err


def identify(model, Y, tau, terms=(), validate=0.2, chunk=500, prior_weight=1.0, loss="linear"):
    layout = layout_of(model, terms)
    accumulator = Accumulator(layout.size, model.nv, validate, keep_rows=loss != "linear")
    for s in range(0, len(Y), chunk):
        accumulator.add(Y[s:s + chunk], tau[s:s + chunk])
    problem = accumulator.finish()
    base = base_parameters(problem)
    ols = ordinary_least_squares(problem, base)
    fit = consistent_fit(problem, model_parameters(model, layout), len(layout.bodies),
                         ols.sigma, prior_weight, loss)
    return problem, base, ols, fit


def pinocchio_log(path, free_flyer, count, seed):
    """(model, states, tau, planted pi) from Pinocchio's RNEA with planted inertias."""
    pin = pytest.importorskip("pinocchio")
    model = load_model(path, free_flyer=free_flyer)
    pinmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer
                else pin.buildModelFromUrdf(path))
    rng = np.random.default_rng(seed)
    joints = [pinmodel.getJointId(name) for name in model.joint_names]
    for j in range(1, pinmodel.njoints):
        inertia = pinmodel.inertias[j]
        if inertia.mass <= 0:
            continue
        moments, axes = np.linalg.eigh(inertia.inertia)
        scaled = axes @ np.diag(moments * (1 + 0.1 * rng.uniform())) @ axes.T
        pinmodel.inertias[j] = pin.Inertia(inertia.mass * (1 + 0.1 * rng.normal()),
                                           inertia.lever + 0.01 * rng.normal(size=3), scaled)
    data = pinmodel.createData()
    dofs = np.concatenate([np.arange(pinmodel.idx_vs[j], pinmodel.idx_vs[j] + pinmodel.nvs[j])
                           for j in joints]).astype(int)
    q = model.random_configuration(rng, count)
    v, a = rng.normal(size=(count, model.nv)), 2 * rng.normal(size=(count, model.nv))
    tau = np.empty((count, model.nv))
    for n in range(count):
        pq = np.array(pin.neutral(pinmodel))
        for i, j in enumerate(joints):
            block = q[n, model.idx_q[i]:model.idx_q[i] + model.nq_joint[i]]
            if model.joint_types[i] == "continuous":
                block = np.array([np.cos(block[0]), np.sin(block[0])])
            pq[pinmodel.idx_qs[j]:pinmodel.idx_qs[j] + len(block)] = block
        pv, pa = np.zeros(pinmodel.nv), np.zeros(pinmodel.nv)
        pv[dofs], pa[dofs] = v[n], a[n]
        tau[n] = np.array(pin.rnea(pinmodel, data, pq, pv, pa))[dofs]
    layout = layout_of(model)
    planted = np.concatenate([pinmodel.inertias[joints[j]].toDynamicParameters()
                              for j in layout.body_joint])
    return model, (q, v, a), tau + NOISE * rng.normal(size=tau.shape), planted


ROBOTS = [("ur_description/urdf/ur5_robot.urdf", False, 5000),
          ("panda_description/urdf/panda.urdf", False, 5000),
          ("talos_data/robots/talos_reduced.urdf", True, 1500)]
ROBOTS = [r for r in ROBOTS if ROOT and os.path.exists(os.path.join(ROOT, r[0]))]


@pytest.mark.skipif(not ROBOTS, reason="example-robot-data is not installed")
@pytest.mark.parametrize("path,free_flyer,count", ROBOTS,
                         ids=[os.path.basename(r[0]) for r in ROBOTS])
def test_recovers_planted_inertias(path, free_flyer, count):
    model, (q, v, a), tau, planted = pinocchio_log(os.path.join(ROOT, path), free_flyer, count, 5)
    Y = regressor(model, q, v, a)
    problem, base, ols, fit = identify(model, Y, tau)
    assert abs(ols.sigma / NOISE - 1) < 0.05
    z = (ols.base - base.project(planted)) / ols.std
    assert np.abs(z).max() < 5.0, np.abs(z).max()
    assert fit.converged, fit.message
    J = pseudo_inertia(fit.pi[:10 * len(fit.fitted)].reshape(-1, 10)[fit.fitted])
    assert np.linalg.eigvalsh(J)[:, 0].min() > 0  # every fitted body consistent
    consistent = joint_rms(problem.gram_validate, fit.pi, problem.validate_states)
    least = joint_rms(problem.gram_validate, ols.full(base), problem.validate_states)
    pooled = np.sqrt(np.mean(consistent ** 2))
    assert abs(pooled / NOISE - 1) < 0.1 and abs(np.sqrt(np.mean(least ** 2)) / NOISE - 1) < 0.1
    per_joint = 0.1 if problem.validate_states >= 800 else 0.2  # RMS of fewer states scatter
    assert np.all(np.abs(consistent / NOISE - 1) < per_joint), consistent
    zf = (base.project(fit.pi) - base.project(planted)) / ols.std
    assert np.abs(zf).max() < 6.0


def test_streaming_is_chunk_independent():
    model = load_model(ARM)
    rng = np.random.default_rng(0)
    q = model.random_configuration(rng, 700)
    v, a = rng.normal(size=(700, 2)), rng.normal(size=(700, 2))
    Y = regressor(model, q, v, a)
    tau = Y @ model_parameters(model, layout_of(model)) + 0.01 * rng.normal(size=(700, 2))
    one = identify(model, Y, tau, chunk=700)
    many = identify(model, Y, tau, chunk=7)
    assert one[0].states == many[0].states and one[0].validate_states == many[0].validate_states
    assert np.allclose(one[2].base, many[2].base, rtol=1e-10, atol=1e-12)
    assert np.allclose(one[0].gram_validate, many[0].gram_validate, rtol=1e-10, atol=1e-9)


def test_unexcited_parameters_are_reported():
    """A log of static poses (v = a = 0) sees masses and first moments only: every
    rotational inertia entry has no effect, and none is invented."""
    pin = pytest.importorskip("pinocchio")
    del pin
    path = os.path.join(ROOT, "ur_description/urdf/ur5_robot.urdf")
    if not ROOT or not os.path.exists(path):
        pytest.skip("example-robot-data is not installed")
    model, (q, _, _), _, planted = pinocchio_log(path, False, 300, 1)
    Y = regressor(model, q)
    tau = np.einsum("nvp,p->nv", Y, planted) + NOISE * np.random.default_rng(2).normal(size=(300, 6))
    problem, base, ols, fit = identify(model, Y, tau, validate=0.0)
    names = layout_of(model).names
    tensor = [k for k, name in enumerate(names) if name.split(".")[1].startswith("I")]
    assert base.no_effect[tensor].all()
    assert not set(base.independent) & set(tensor)
    full = layout_of(model)
    moving = identify(model, regressor(model, q, np.ones((300, 6)), np.ones((300, 6))),
                      tau, validate=0.0)[1]
    assert moving.rank > base.rank
    assert fit.converged and len(full.bodies) == len(fit.fitted)


def test_log_cholesky_round_trip_and_jacobian():
    theta = np.random.default_rng(0).normal(size=(3, 10))
    pi, jacobian = parameters_and_jacobian(theta)
    assert np.allclose(theta_of(pseudo_inertia(pi)), theta, atol=1e-10)
    assert np.all(np.linalg.eigvalsh(pseudo_inertia(pi)) > 0)
    step = 1e-6
    for k in range(10):
        e = np.zeros(10)
        e[k] = step
        numeric = (parameters_and_jacobian(theta + e)[0] - parameters_and_jacobian(theta - e)[0]) / (2 * step)
        assert np.allclose(numeric, jacobian[:, :, k], atol=1e-7)


def test_robust_loss_resists_outliers():
    model = load_model(ARM)
    layout = layout_of(model)
    rng = np.random.default_rng(4)
    q = model.random_configuration(rng, 3000)
    v, a = rng.normal(size=(3000, 2)), rng.normal(size=(3000, 2))
    truth = model_parameters(model, layout)
    truth[10] *= 1.25
    Y = regressor(model, q, v, a)
    tau = Y @ truth + 0.01 * rng.normal(size=(3000, 2))
    spikes = rng.random(tau.shape) < 0.03
    tau[spikes] += rng.choice([-20.0, 20.0], size=int(spikes.sum()))
    errors = {}
    for loss in ("linear", "huber", "soft_l1"):
        _, base, _, fit = identify(model, Y, tau, validate=0.0, loss=loss)
        errors[loss] = np.abs(base.project(fit.pi) - base.project(truth)).max()
    assert errors["huber"] < errors["linear"] / 10
    assert errors["soft_l1"] < errors["linear"] / 10


MUJOCO_HUMANOID = [p for p in gymnasium_models() if os.path.basename(p) == "humanoid.xml"]


@pytest.mark.skipif(not MUJOCO_HUMANOID, reason="gymnasium is not installed")
def test_mjcf_humanoid_against_mujoco():
    """MuJoCo's inverse dynamics of the humanoid with planted masses and moments (free
    base, contacts and springs off, its damping as the viscous term): the noise-free log
    is fitted exactly, the noisy one within its standard deviations."""
    mujoco = pytest.importorskip("mujoco")
    path = MUJOCO_HUMANOID[0]
    m = mujoco.MjModel.from_xml_path(path)
    bits = mujoco.mjtDisableBit
    m.opt.disableflags |= bits.mjDSBL_SPRING | bits.mjDSBL_CONSTRAINT | bits.mjDSBL_ACTUATION
    rng = np.random.default_rng(8)
    m.body_mass[1:] *= 1 + 0.1 * rng.normal(size=m.nbody - 1)
    m.body_inertia[1:] *= 1 + 0.05 * rng.uniform(size=(m.nbody - 1, 1))
    m.body_ipos[1:] += 0.005 * rng.normal(size=(m.nbody - 1, 3))
    d = mujoco.MjData(m)
    model = load_model(path)
    count = 1500
    q = model.random_configuration(rng, count)
    v, a = rng.normal(size=(count, model.nv)), 2 * rng.normal(size=(count, model.nv))
    tau = np.empty((count, model.nv))
    for n in range(count):
        d.qpos[:], d.qvel[:], d.qacc[:] = q[n], v[n], a[n]
        mujoco.mj_inverse(m, d)
        tau[n] = d.qfrc_inverse
    terms = ("armature", "viscous")
    Y = regressor(model, q, v, a, terms=terms)
    exact = identify(model, Y, tau, terms, validate=0.0)
    assert exact[2].sigma < 1e-9 * np.abs(tau).max()  # the regressor is MuJoCo's dynamics
    noisy = identify(model, Y, tau + NOISE * rng.normal(size=tau.shape), terms)
    problem, base, ols, fit = noisy
    # the planted base parameters: a full vector that fits the noise-free log exactly
    truth = base.project(exact[2].full(exact[1]))
    assert base.rank == exact[1].rank
    assert np.abs((ols.base - truth) / ols.std).max() < 5.0
    pooled = np.sqrt(np.mean(joint_rms(problem.gram_validate, fit.pi, problem.validate_states) ** 2))
    assert abs(pooled / NOISE - 1) < 0.1
    J = pseudo_inertia(fit.pi[:10 * len(fit.fitted)].reshape(-1, 10)[fit.fitted])
    # a body the log leaves free may end on the boundary of the consistent set (J singular):
    # its smallest eigenvalue is then zero to rounding, either sign (-2.5e-18 against 1e-2
    # in one run of the whole suite; positive when this test runs alone)
    eigenvalues = np.linalg.eigvalsh(J)
    assert (eigenvalues[:, 0] >= -1e-12 * eigenvalues[:, -1]).all()


# ----------------------------------------------------------------------------- command
def test_identify_writes_only_inertials(tmp_path, capsys):
    target = tmp_path / "fit.urdf"
    code, out, _ = dyn("identify", ARM, "--input", "fixtures/two_link_arm_log.csv",
                       "--validate", "0.2", "--write", str(target), "--format", "json",
                       capsys=capsys)
    assert code == 0
    document = json.loads(out)
    assert document["rank"] == 6 and document["written"]["links"] == ["link1", "link2"]
    assert "link2.Izz" in document["unidentifiable"]["no_effect"]
    original = open(ARM, encoding="utf-8").read()
    written = target.read_text(encoding="utf-8")
    outside = lambda text: [part.split("</inertial>")[-1] for part in text.split("<inertial>")]
    assert outside(original) == outside(written)  # every byte outside <inertial> kept
    new = load_model(str(target))
    layout = layout_of(new)
    bodies = {b["body"]: b["identified"] for b in document["bodies"]}
    for b, name in enumerate(layout.bodies):
        assert abs(new.body_mass[layout.body_joint[b]] - bodies[name]["mass"]) < 1e-10
    # the planted payload: 0.25 kg at link2's tip (fixtures/make_two_link_arm_log.py)
    base = {row["name"]: row for row in document["base"]}
    assert abs(base["link2.mz"]["ols"] + 0.75) < 5 * base["link2.mz"]["std"]
    rms = document["residuals"]["validate"]["consistent"]
    assert all(abs(r / 0.02 - 1) < 0.2 for r in rms)
    code, out, _ = dyn("check-inertia", str(target), "--format", "json", capsys=capsys)
    assert code == 0 and json.loads(out)["ok"]


def test_identify_needs_tau(tmp_path, capsys):
    log = tmp_path / "log.npz"
    np.savez(log, q=np.zeros((5, 2)), v=np.zeros((5, 2)))
    code, _, err = dyn("identify", ARM, "--input", str(log), capsys=capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"{log}: the log has no tau: identification needs the measured joint forces "
        "(arrays or columns tau)"]


def test_identify_refuses_to_overwrite(capsys):
    code, _, err = dyn("identify", ARM, "--input", "fixtures/two_link_arm_log.csv",
                       "--write", ARM, capsys=capsys)
    assert code == 2 and "is the model file" in err and len(err.strip().splitlines()) == 1


MJCF_ARM = """<mujoco model="arm">
  <!-- a two-hinge arm; this comment and the layout below must survive -->
  <worldbody>
    <body name="upper" pos="0 0 1" euler="0 0 0.3">
      <joint name="shoulder" axis="0 1 0" damping="0.1"/>
      <inertial pos="0 0 -0.25" quat="0.9 0.1 0 0.2" mass="2" diaginertia="0.05 0.04 0.01"/>
      <geom type="capsule" size="0.05 0.25" pos="0 0 -0.25"/>
      <body name="fore" pos="0 0 -0.5">
        <joint name="elbow" axis="1 0 0" pos="0 0 0.02"/>
        <inertial pos="0.01 0 -0.2" mass="1" fullinertia="0.02 0.02 0.004 0.001 0 0"/>
        <body name="hand" pos="0 0 -0.4">
          <joint name="wrist" axis="0 0 1"/>
          <frame pos="0 0.05 0" euler="0 0 1.5">
            <inertial pos="0 0 -0.05" mass="0.3" diaginertia="0.001 0.001 0.0005"/>
          </frame>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_mjcf_write_keeps_the_text(tmp_path, capsys):
    from treedyn.engine.analysis.identify_report import link_inertias
    from treedyn.parsers.inertial_writer import Change, WriteError, rewrite_inertials

    path = tmp_path / "arm.xml"
    path.write_text(MJCF_ARM, encoding="utf-8")
    model = load_model(str(path))
    layout = layout_of(model)
    pi = model_parameters(model, layout)
    pi[:20] *= 1.1  # two bodies heavier and larger by 10 %: still consistent
    fitted = np.array([True, True, False])
    links = {link.name: link for link in model.description.links}
    changes = [Change(links[name], inertia)
               for name, inertia in link_inertias(model, layout, pi, fitted)]
    text = rewrite_inertials(MJCF_ARM, str(path), "mjcf", changes)
    outside = lambda t: [line for line in t.splitlines() if "<inertial" not in line]
    assert outside(text) == outside(MJCF_ARM)
    (tmp_path / "new.xml").write_text(text, encoding="utf-8")
    again = load_model(str(tmp_path / "new.xml"))
    got = model_parameters(again, layout_of(again))
    assert np.allclose(got[:20], pi[:20], rtol=0, atol=1e-11)
    assert np.array_equal(got[20:], model_parameters(model, layout)[20:])
    hand = Change(links["hand"], links["hand"].inertia)
    with pytest.raises(WriteError, match="sits in a <frame>"):
        rewrite_inertials(MJCF_ARM, str(path), "mjcf", [hand])


@pytest.mark.parametrize("path,free_flyer", [(ARM, False), ("tests/data/arm_with_tool.urdf", True)])
def test_external_torques_are_minus_j_transpose_f(path, free_flyer):
    """What a log's external forces add to tau, subtracted before the fit: -sum J_i^T f_i,
    with the readable path's body Jacobians."""
    from treedyn.engine.analysis.identify import external_torques
    from treedyn.engine.kinematics import body_jacobians, generalized_forces

    model = load_model(path, free_flyer=free_flyer)
    rng = np.random.default_rng(3)
    q = model.random_configuration(rng, 20)
    fext = 10 * rng.normal(size=(20, model.njoints, 6))
    np.testing.assert_allclose(external_torques(model, q, fext),
                               -generalized_forces(body_jacobians(model, q), fext),
                               rtol=0, atol=1e-12)


def test_identify_stream_from_python_recovers_viscous_friction(tmp_path):
    """The library under ``dyn identify``: a log of the arm with viscous friction 0.3 and
    small noise, read from a file a chunk at a time, gives 0.3 back."""
    from treedyn.engine import rnea
    from treedyn.pipeline.regression import identify_stream

    model = load_model(ARM)
    rng = np.random.default_rng(7)
    q, v, a = (rng.normal(size=(2000, model.nv)) for _ in range(3))
    tau = rnea(model, q, v, a) + 0.3 * v + 0.01 * rng.normal(size=v.shape)
    np.savez(tmp_path / "log.npz", q=q, v=v, a=a, tau=tau)
    result = identify_stream(model, tmp_path / "log.npz", terms=("viscous",), chunk=300)
    viscous = [k for k, name in enumerate(result.layout.names) if name.startswith("viscous.")]
    np.testing.assert_allclose(result.fit.pi[viscous], 0.3, atol=0.01)
    assert result.problem.states == 2000


def test_file_base_parameters_are_their_named_combinations(capsys):
    """A base parameter's file value is the combination its name states, of the file's
    numbers: the arm's first moments mx are 0 in the file, and stay exactly 0 (not the
    1e-17 a combination coefficient left by the triangular solve would add)."""
    code, out, _ = dyn("identify", ARM, "--input", "fixtures/two_link_arm_log.csv",
                       "--format", "json", capsys=capsys)
    assert code == 0
    base = {row["name"]: row["file"] for row in json.loads(out)["base"]}
    assert base["link1.mx"] == 0.0 and base["link2.mx"] == 0.0
    assert base["link2.mz"] == -0.5 and base["link2.Iyy"] == pytest.approx(0.334167, abs=1e-6)


LOG = "fixtures/two_link_arm_log.csv"
POSITIONS = "fixtures/two_link_arm_positions.csv"


@pytest.mark.parametrize("args,message", [
    (["--loss", "huber", "--loss-scale", "0"], "dyn identify: Invalid value for "
     "'--loss-scale': 0.0 is not a positive number (see 'dyn identify --help')"),
    (["--loss", "huber", "--loss-scale", "inf"], "dyn identify: Invalid value for "
     "'--loss-scale': inf is not a finite number (see 'dyn identify --help')"),
    (["--loss", "huber", "--loss-scale", "1e-300"], "dyn: --loss-scale 1e-300: far below "
     "the residuals' robust spread (0.0203 N m): the log would weigh fewer equations than "
     "its 6 base parameters and the fit keep the file's; give at least ..."),
    (["--loss", "cauchy", "--loss-scale", "1e-300"], "dyn: --loss-scale 1e-300: far below "
     "the residuals' robust spread (0.0203 N m): ..."),
    (["--prior-weight", "inf"], "dyn identify: Invalid value for '--prior-weight': inf is "
     "not a finite number (see 'dyn identify --help')"),
    (["--known", "link2.m=-1"], "dyn: --known link2.m=-1: a mass cannot be negative"),
    (["--known", "link1.Izz=-0.5"], "dyn: --known link1.Izz=-0.5: a moment of inertia about "
     "an axis cannot be negative"),
    (["--terms", "viscous", "--known", "viscous.joint2=-1"], "dyn: --known "
     "viscous.joint2=-1: the fit keeps viscous coefficients non-negative (of the per-joint "
     "terms, only offset may be negative)"),
    (["--known", "link2.m=1e308"], "dyn: --known link2.m=1e+308: its torques overflow (the "
     "sums of their squares pass 1e308): not a value the log can be fitted with"),
    (["--input", POSITIONS, "--cutoff", "0"], "dyn identify: Invalid value for '--cutoff': "
     "0.0 is not a positive number (see 'dyn identify --help')"),
    (["--input", POSITIONS, "--cutoff", "1e-300"], f"{POSITIONS}: too short for the filter: "
     "2000 states; estimating v and a from q at this cut-off needs at least ..."),
])
def test_identify_refusals_are_one_line(args, message, tmp_path, capsys):
    """Bad settings end with exit 2 and one line naming the option, before any file is
    written (``...``: the line starts so)."""
    inputs = [] if "--input" in args else ["--input", LOG]
    code, out, err = dyn("identify", ARM, *inputs, *args, "--write",
                         str(tmp_path / "fit.urdf"), "--format", "json", capsys=capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (code, err)
    line = err.strip()
    assert line.startswith(message[:-3]) if message.endswith("...") else line == message
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("loss", ["huber", "cauchy", "arctan"])
def test_loss_scale_bound_gives_the_log_its_base_parameters_weight(loss):
    """The smallest loss scale accepted is where the rows' weights (rho' of each residual
    over the scale, 1 at full weight) sum to the base parameters' count: refused just
    below it, fitted just above; the bound is in N m whatever the joints' weighting (the
    two joints' noise is alike, so both give about one bound)."""
    from treedyn.engine.analysis.consistent import ScaleTooSmall, data_weight
    from treedyn.pipeline.regression import identify_stream

    model = load_model(ARM)
    least = {}
    for weights in ("none", "auto"):
        with pytest.raises(Exception) as refused:
            identify_stream(model, LOG, loss=loss, loss_scale=1e-300, weights=weights)
        cause = refused.value.__context__ or refused.value
        assert isinstance(cause, ScaleTooSmall), refused.value
        least[weights] = cause.least
        assert abs(cause.spread / 0.02 - 1) < 0.1  # the log's noise: 0.02 N m
        fit = identify_stream(model, LOG, loss=loss, loss_scale=cause.least * 1.01,
                              weights=weights)
        assert fit.fit.converged
        with pytest.raises(Exception):
            identify_stream(model, LOG, loss=loss, loss_scale=cause.least * 0.99,
                            weights=weights)
    assert 0.5 < least["auto"] / least["none"] < 2.0, least
    rng = np.random.default_rng(0)
    r = rng.normal(size=1000)
    assert data_weight(loss, r, 1e12) == pytest.approx(1000)
    assert data_weight(loss, r, 1e-300) < 1e-100


@pytest.mark.parametrize("known", ["link2.mz=-0.75", "link2.m=0.9", "link1.Izz=0.05"])
def test_a_known_parameter_is_held_in_the_fit_and_the_written_model(tmp_path, capsys, known):
    """--known is not fitted: the consistent parameters hold its value exactly, so the
    model --write writes predicts the log's torques with the RMS the report gives (the
    body's prior used to pull it away: link2.mz=-0.75 wrote -0.898, an RMS of 4.6 N m
    against a reported 0.02)."""
    written = tmp_path / "fit.urdf"
    with pytest.raises(SystemExit) as ended:
        run(["identify", ARM, "--input", LOG, "--known", known, "--write", str(written),
             "--format", "json", "-q"])
    assert ended.value.code == 0
    document = json.loads(capsys.readouterr().out)
    model = load_model(str(written))
    name, value = known.split("=")
    columns = layout_of(model, ())
    assert model_parameters(model, columns)[columns.names.index(name)] == pytest.approx(
        float(value), rel=1e-9)  # (written as mass and com: their product rounds)
    log = np.loadtxt(LOG, delimiter=",", skiprows=1)
    q, v, a, tau = log[:, 0:2], log[:, 2:4], log[:, 4:6], log[:, 6:8]
    from treedyn.engine import rnea
    rms = np.sqrt(((rnea(model, q, v, a) - tau) ** 2).mean(axis=0))
    np.testing.assert_allclose(rms, document["residuals"]["train"]["consistent"], rtol=1e-6)
