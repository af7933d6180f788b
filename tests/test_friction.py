"""Per-joint terms of drives (treedyn.engine.regressor: coulomb+, coulomb-, offset, stribeck,
smooth) and their identification.

References: the inertial columns are Pinocchio's computeJointTorqueRegressor; each term's
column is its formula (docs/interface.md) evaluated here entry by entry with the math
module; Y pi is RNEA plus the planted friction. Identification recovers planted asymmetric
Coulomb friction and offsets within 2 % from a log that holds still at times, and says
when a log without rests cannot separate them; from a log of currents (tau = k i) the
drive gains k, scaled by one known parameter.
"""
from __future__ import annotations

import math
import os
from functools import lru_cache

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from reference_models import robots_root  # noqa: E402
from test_regressor import pinocchio_state  # noqa: E402
from treedyn.cli.app import run  # noqa: E402
from treedyn.engine import joint_torque_regressor as regressor  # noqa: E402
from treedyn.engine import rnea  # noqa: E402
from treedyn.engine.regressor import (JointTerms, layout_of, model_parameters,  # noqa: E402
                                      regressor_reference, term_columns)
from treedyn.parsers import load_model  # noqa: E402

ROOT = robots_root()
PANDA = os.path.join(ROOT, "panda_description/urdf/panda.urdf") if ROOT else ""
ARM = "fixtures/two_link_arm.urdf"
TERMS = JointTerms(("viscous", "coulomb", "coulomb+", "coulomb-", "offset", "stribeck",
                    "smooth"), stribeck_velocity=0.3, smooth_velocity=0.05)
needs_panda = pytest.mark.skipif(not os.path.exists(PANDA), reason="no example-robot-data")


def formula(term: str, v: float) -> float:
    """A term's column at one dof, written out (docs/interface.md)."""
    sign = 0.0 if v == 0 else math.copysign(1.0, v)
    return {"viscous": v, "coulomb": sign, "coulomb+": max(sign, 0.0),
            "coulomb-": min(sign, 0.0), "offset": 1.0,
            "stribeck": math.exp(-(v / 0.3) ** 2) * sign, "smooth": math.tanh(v / 0.05)}[term]


@lru_cache(maxsize=None)
def panda():
    return load_model(PANDA)


@needs_panda
def test_terms_are_pinocchio_regressor_plus_their_columns():
    pin = pytest.importorskip("pinocchio")
    model = panda()
    pinmodel = pin.buildModelFromUrdf(PANDA)
    data = pinmodel.createData()
    rng = np.random.default_rng(11)
    q = model.random_configuration(rng, 4)
    v = rng.normal(size=(4, model.nv)) * 0.4
    v[0] = 0.0  # at rest: no Coulomb force
    v[1, ::2] = 0.0
    a = rng.normal(size=(4, model.nv))
    Y = regressor(model, q, v, a, terms=TERMS)
    layout = layout_of(model, TERMS)
    joints = [pinmodel.getJointId(name) for name in model.joint_names]
    columns = np.concatenate([np.arange(10 * (joints[j] - 1), 10 * joints[j])
                              for j in layout.body_joint])
    for n in range(len(q)):
        pq = pinocchio_state(pin, model, pinmodel, joints, q[n])
        reference = np.array(pin.computeJointTorqueRegressor(pinmodel, data, pq, v[n], a[n]))
        np.testing.assert_allclose(Y[n, :, :layout.inertial], reference[:, columns],
                                   rtol=0, atol=1e-10 * np.abs(reference).max())
        expected = np.zeros((model.nv, layout.size - layout.inertial))
        for k, term in enumerate(layout.terms):
            for d in range(model.nv):
                expected[d, k * model.nv + d] = formula(term, float(v[n, d]))
        np.testing.assert_allclose(Y[n, :, layout.inertial:], expected, rtol=1e-15, atol=0)
        np.testing.assert_array_equal(
            regressor_reference(model, q[n], v[n], a[n], terms=TERMS)[:, layout.inertial:],
            Y[n, :, layout.inertial:])
    assert layout.names[layout.inertial:layout.inertial + 2] == ("viscous.panda_joint1",
                                                                 "viscous.panda_joint2")


def friction_log(model, rests: bool, count: int = 1600, seed: int = 3):
    """(q, v, a, tau, planted (P,)) of a smooth motion of every joint, half of it held still
    when ``rests`` (blocks of 40 states at v = a = 0), tau = RNEA + planted drive terms +
    noise 0.005 N m."""
    rng = np.random.default_rng(seed)
    t = np.arange(count) * 0.01
    w = rng.uniform(0.5, 2.0, size=(3, model.nv))
    phase = rng.uniform(0, 2 * np.pi, size=(3, model.nv))
    amplitude = 0.3 / np.arange(1, 4)[:, None]
    arg = w[None] * t[:, None, None] + phase[None]  # (N, 3, nv)
    q = model.q_neutral + np.sum(amplitude * np.sin(arg), axis=1)
    v = np.sum(amplitude * w * np.cos(arg), axis=1)
    a = -np.sum(amplitude * w ** 2 * np.sin(arg), axis=1)
    if rests:
        still = (np.arange(count) // 40) % 2 == 1
        v[still], a[still] = 0.0, 0.0
    terms = ("viscous", "coulomb+", "coulomb-", "offset")
    layout = layout_of(model, terms)
    planted = model_parameters(model, layout)
    planted[term_columns(layout, "viscous")] = rng.uniform(0.2, 1.0, model.nv)
    planted[term_columns(layout, "coulomb+")] = rng.uniform(0.5, 2.0, model.nv)
    planted[term_columns(layout, "coulomb-")] = rng.uniform(0.5, 2.0, model.nv)
    planted[term_columns(layout, "offset")] = (rng.uniform(0.3, 1.0, model.nv)
                                               * rng.choice([-1, 1], model.nv))
    Y = regressor(model, q, v, a, terms=terms)
    tau = np.einsum("nvp,p->nv", Y, planted)
    np.testing.assert_allclose(tau - Y[:, :, layout.inertial:] @ planted[layout.inertial:],
                               rnea(model, q, v, a), atol=1e-9)
    return q, v, a, tau + 0.005 * rng.normal(size=tau.shape), planted


@needs_panda
def test_identify_recovers_asymmetric_coulomb_and_offsets(tmp_path):
    from treedyn.pipeline.regression import identify_stream

    model = panda()
    q, v, a, tau, planted = friction_log(model, rests=True)
    np.savez(tmp_path / "log.npz", q=q, v=v, a=a, tau=tau)
    result = identify_stream(model, tmp_path / "log.npz",
                             terms=("viscous", "coulomb+", "coulomb-", "offset"))
    layout = result.layout
    friction = np.arange(layout.inertial + model.nv, layout.size)  # coulomb+, -, offset
    assert result.base.identifiable[friction].all()
    # OLS within 2 %; the consistent fit (which stops at its evaluation cap on panda, its
    # fingers' bodies pulled toward the file) within 5 %
    for pi, within in ((result.ols.full(result.base), 0.02), (result.fit.pi, 0.05)):
        error = np.abs(pi[friction] / planted[friction] - 1)
        assert error.max() < within, dict(zip(np.array(layout.names)[friction], error))
    assert (result.fit.pi[friction][-model.nv:] < 0).any()  # offsets stay signed


def test_a_log_without_rests_cannot_separate_them(tmp_path, capsys):
    model = load_model(ARM)
    q, v, a, tau, _ = friction_log(model, rests=False, count=600)
    assert np.all(v != 0)
    still = q.copy()  # joint2 never moves: at rest throughout, its terms are no question
    still[:, 1] = 0.3
    np.savez(tmp_path / "still.npz", q=still, v=v * [1, 0], a=a * [1, 0], tau=tau)
    with pytest.raises(SystemExit) as ended:
        run(["identify", ARM, "--input", str(tmp_path / "still.npz"), "--terms",
             "coulomb+,coulomb-,offset", "--format", "json"])
    assert ended.value.code == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not separable at joint1: the log never" in err[0], err
    np.savez(tmp_path / "log.npz", q=q, v=v, a=a, tau=tau)
    with pytest.raises(SystemExit) as ended:
        run(["identify", ARM, "--input", str(tmp_path / "log.npz"), "--terms",
             "coulomb+,coulomb-,offset", "--format", "json"])
    assert ended.value.code == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "coulomb+, coulomb- and offset are not separable at joint1, " \
        "joint2: the log never holds it still" in err[0], err


@pytest.mark.parametrize("args,message", [
    (["regressor", ARM, "--terms", "coulomb+"], "dyn: --terms coulomb+ needs the joint "
     "velocities: give --v"),
    (["regressor", ARM, "--terms", "viscous,stiction", "--v", "1,1"],
     "dyn: --terms: unknown term 'stiction' (known: armature, viscous, coulomb, coulomb+, "
     "coulomb-, offset, stribeck, smooth, gain)"),
    (["regressor", ARM, "--terms", "gain"], "dyn: --terms gain: its column is a logged "
     "current, not a function of q, v, a (dyn identify --current fits it)"),
    (["identify", ARM, "--input", "fixtures/two_link_arm_log.csv", "--terms", "gain"],
     "dyn: --terms gain fits currents: give --current (the log's tau holds the drives' "
     "currents)"),
    (["identify", ARM, "--input", "fixtures/two_link_arm_log.csv", "--current"],
     "dyn: --current needs the gain term (--terms gain,...): the log's tau holds currents, "
     "tau = gain x current"),
    (["identify", ARM, "--input", "fixtures/two_link_arm_log.csv", "--current", "--terms",
      "gain"], "dyn: --current needs a scale: --known NAME=VALUE (a mass, a first moment or "
     "one drive's gain.DOF)"),
    (["identify", ARM, "--input", "fixtures/two_link_arm_log.csv", "--known", "link9.m=1"],
     "dyn: --known link9.m: no such parameter (names as identify's: BODY.m, BODY.mx, ..., "
     "TERM.DOF)"),
    (["identify", ARM, "--input", "fixtures/two_link_arm_log.csv", "--known", "link2.m=1",
      "--known", "link2.m=1"], "dyn: --known 'link2.m=1': link2.m is given twice"),
    (["identify", ARM, "--input", "fixtures/two_link_arm_log.csv", "--known", "link2.m=1_0"],
     "dyn: --known 'link2.m=1_0': expected NAME=VALUE, a finite number"),
    (["regressor", ARM, "--terms", "smooth", "--v", "1,1", "--smooth-velocity", "0"], None),
])
def test_refusals_are_one_line(args, message, capsys):
    with pytest.raises(SystemExit) as ended:
        run(args)
    assert ended.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and (message is None or err == [message]), err


def test_a_log_without_velocities_is_refused_for_friction(tmp_path, capsys):
    np.savez(tmp_path / "log.npz", q=np.zeros((3, 2)), a=np.zeros((3, 2)))
    with pytest.raises(SystemExit) as ended:
        run(["regressor", ARM, "--input", str(tmp_path / "log.npz"), "--output",
             str(tmp_path / "Y.npz"), "--terms", "offset,stribeck", "--quiet"])
    assert ended.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"{tmp_path / 'log.npz'}: the log has no v: the term stribeck needs the "
                   "joint velocities (arrays or columns v)"], err


@pytest.mark.parametrize("known", [("link2.mz", -0.55), ("gain.joint1", 0.8)],
                         ids=["first-moment", "one-gain"])
def test_a_log_of_currents_gives_the_drive_gains(known, tmp_path):
    """The heavier arm (link2 1.1 kg) logged as currents i = tau / k (+ noise); the file's
    arm fitted with the gain term and one known parameter gives k and link2's m z back."""
    from treedyn.pipeline.drives import Drives
    from treedyn.pipeline.regression import identify_stream

    true = load_model("fixtures/two_link_arm_heavier.urdf")
    rng = np.random.default_rng(2)
    q, v, a = (rng.normal(size=(1500, 2)) for _ in range(3))
    k = np.array([0.8, 1.3])
    current = rnea(true, q, v, a) / k + 0.005 * rng.normal(size=(1500, 2))
    np.savez(tmp_path / "log.npz", q=q, v=v, a=a, tau=current)
    result = identify_stream(load_model(ARM), tmp_path / "log.npz", terms=("gain",),
                             drives=Drives(True, (known,)))
    names = result.layout.names
    gains = [names.index("gain.joint1"), names.index("gain.joint2")]
    mz = names.index("link2.mz")
    for pi in (result.ols.full(result.base), result.fit.pi):
        if known[0] == "gain.joint1":
            pi = pi.copy()
            pi[gains[0]] = 0.8  # known, not fitted
        np.testing.assert_allclose(pi[gains], k, rtol=0.01)
    ols = result.ols.full(result.base)
    if known[0] == "gain.joint1":
        np.testing.assert_allclose(ols[mz], -0.55, rtol=0.01)
    assert result.settings["known"] == {known[0]: known[1]}
