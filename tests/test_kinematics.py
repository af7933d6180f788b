"""Body placements and Jacobians (:mod:`treedyn.engine.kinematics`) against Pinocchio's
``forwardKinematics`` (``data.oMi``) and ``computeJointJacobians`` / ``getJointJacobian``
in its three frames, LOCAL, WORLD and LOCAL_WORLD_ALIGNED, on the fixture URDFs and on
example-robot-data's, with and without a free-flyer: to 1e-12 of each model's scale.
Pinocchio's rows are (linear, angular), ours (angular, linear)."""
from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from test_pinocchio import ROOT as ROBOTS, URDFS, Mapping, pinocchio_loadable  # noqa: E402
from treedyn.engine.kinematics import (FRAMES, LOCAL, LOCAL_WORLD_ALIGNED, WORLD,  # noqa: E402
                                       body_jacobians, placements)
from treedyn.parsers import load_model  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE_URDFS = [str(p) for p in sorted(FIXTURES.glob("*.urdf")) + sorted(
    (FIXTURES / "urdf").glob("*.urdf")) if pinocchio_loadable(str(p))]
MODELS = ([(p, os.path.relpath(p, FIXTURES)) for p in FIXTURE_URDFS]
          + [(p, os.path.relpath(p, ROBOTS)) for p in URDFS])
PIN_FRAMES = {LOCAL: pin.LOCAL, WORLD: pin.WORLD, LOCAL_WORLD_ALIGNED: pin.LOCAL_WORLD_ALIGNED}
TOL = 1e-12
STATES = 3


def assert_close(ours: np.ndarray, reference: np.ndarray, what) -> None:
    """max |ours - reference| <= TOL max(1, max |reference|)."""
    scale = max(1.0, float(np.max(np.abs(reference), initial=0.0)))
    error = float(np.max(np.abs(ours - reference), initial=0.0))
    assert error <= TOL * scale, (what, error)


@pytest.mark.parametrize("free_flyer", [False, True], ids=["fixed", "free-flyer"])
@pytest.mark.parametrize("path", [p for p, _ in MODELS], ids=[name for _, name in MODELS])
def test_placements_and_jacobians_equal_pinocchios(path, free_flyer):
    model = load_model(path, free_flyer=free_flyer)
    pinmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer
                else pin.buildModelFromUrdf(path))
    data, mapping = pinmodel.createData(), Mapping(model, pinmodel)
    rng = np.random.default_rng(zlib.crc32(f"{path}:{free_flyer}".encode()))
    q = model.random_configuration(rng, STATES)
    R, p = placements(model, q)
    J = {frame: body_jacobians(model, q, frame) for frame in FRAMES}
    for n in range(STATES):
        pq = mapping.q(q[n])
        pin.forwardKinematics(pinmodel, data, pq)
        pin.computeJointJacobians(pinmodel, data, pq)
        for i, joint in enumerate(mapping.joint):
            assert_close(R[n, i], data.oMi[joint].rotation, (i, "R"))
            assert_close(p[n, i], data.oMi[joint].translation, (i, "p"))
            for frame, pin_frame in PIN_FRAMES.items():
                reference = np.reshape(pin.getJointJacobian(pinmodel, data, joint, pin_frame),
                                       (6, pinmodel.nv))  # (6,) when nv = 0
                reference = reference[:, mapping.v_index]
                assert_close(J[frame][n, i], np.vstack([reference[3:], reference[:3]]),
                             (i, frame))


def test_one_state_is_the_batch_without_its_axis():
    model = load_model(str(FIXTURES / "urdf" / "features.urdf"), free_flyer=True)
    q = model.random_configuration(np.random.default_rng(5), 2)
    R, p = placements(model, q)
    for n in range(2):
        R1, p1 = placements(model, q[n])
        np.testing.assert_array_equal(R1, R[n])
        np.testing.assert_array_equal(p1, p[n])
        for frame in FRAMES:
            np.testing.assert_array_equal(body_jacobians(model, q[n], frame),
                                          body_jacobians(model, q, frame)[n])


def test_an_unknown_frame_is_refused():
    model = load_model(str(FIXTURES / "two_link_arm.urdf"))
    with pytest.raises(ValueError, match="unknown frame 'BODY'; known: LOCAL, WORLD, "
                                         "LOCAL_WORLD_ALIGNED"):
        body_jacobians(model, np.zeros(model.nq), "BODY")
