"""Body placements and Jacobians (:mod:`treedyn.engine.kinematics`) against Pinocchio's
``forwardKinematics`` (``data.oMi``) and ``computeJointJacobians`` / ``getJointJacobian``,
and those of the link frames against ``updateFramePlacements`` (``data.oMf``) and
``getFrameJacobian`` of its BODY frames, in its three frames, LOCAL, WORLD and LOCAL_WORLD_ALIGNED, on the fixture URDFs and on
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
                                       body_jacobians, frame_jacobians, frame_placements,
                                       placements)
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


def both_models(path: str, free_flyer: bool):
    """(our model, Pinocchio's, its data, the Mapping between them) of one URDF."""
    model = load_model(path, free_flyer=free_flyer)
    pinmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer
                else pin.buildModelFromUrdf(path))
    data, mapping = pinmodel.createData(), Mapping(model, pinmodel)
    return model, pinmodel, data, mapping


@pytest.mark.parametrize("free_flyer", [False, True], ids=["fixed", "free-flyer"])
@pytest.mark.parametrize("path", [p for p, _ in MODELS], ids=[name for _, name in MODELS])
def test_placements_and_jacobians_equal_pinocchios(path, free_flyer):
    model, pinmodel, data, mapping = both_models(path, free_flyer)
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


@pytest.mark.parametrize("free_flyer", [False, True], ids=["fixed", "free-flyer"])
@pytest.mark.parametrize("path", [p for p, _ in MODELS], ids=[name for _, name in MODELS])
def test_link_frames_equal_pinocchios_body_frames(path, free_flyer):
    model, pinmodel, data, mapping = both_models(path, free_flyer)
    ids = [pinmodel.getFrameId(f.name, pin.BODY if pinmodel.existFrame(f.name, pin.BODY)
                               else pin.FIXED_JOINT)  # the free-flyer's world: "universe"
           for f in model.frames]
    assert all(i < len(pinmodel.frames) for i in ids), "a link frame missing in Pinocchio"
    rng = np.random.default_rng(zlib.crc32(f"{path}:{free_flyer}:frames".encode()))
    q = model.random_configuration(rng, STATES)
    R, p = frame_placements(model, q)
    J = {frame: frame_jacobians(model, q, frame) for frame in FRAMES}
    for n in range(STATES):
        pq = mapping.q(q[n])
        pin.computeJointJacobians(pinmodel, data, pq)  # forward kinematics too
        pin.updateFramePlacements(pinmodel, data)
        for f, frame_id in enumerate(ids):
            assert_close(R[n, f], data.oMf[frame_id].rotation, (f, "R"))
            assert_close(p[n, f], data.oMf[frame_id].translation, (f, "p"))
            for frame, pin_frame in PIN_FRAMES.items() if model.nv else ():
                # (getFrameJacobian of a model without dofs crashes Pinocchio 3)
                reference = np.reshape(pin.getFrameJacobian(pinmodel, data, frame_id, pin_frame),
                                       (6, pinmodel.nv))[:, mapping.v_index]
                assert_close(J[frame][n, f], np.vstack([reference[3:], reference[:3]]),
                             (model.frames[f].name, frame))


def test_one_state_is_the_batch_without_its_axis():
    model = load_model(str(FIXTURES / "urdf" / "features.urdf"), free_flyer=True)
    q = model.random_configuration(np.random.default_rng(5), 2)
    R, p = placements(model, q)
    for n in range(2):
        R1, p1 = placements(model, q[n])
        np.testing.assert_array_equal(R1, R[n])
        np.testing.assert_array_equal(p1, p[n])
        Rf, pf = frame_placements(model, q)
        np.testing.assert_array_equal(frame_placements(model, q[n])[0], Rf[n])
        np.testing.assert_array_equal(frame_placements(model, q[n])[1], pf[n])
        for frame in FRAMES:
            np.testing.assert_array_equal(body_jacobians(model, q[n], frame),
                                          body_jacobians(model, q, frame)[n])
            np.testing.assert_array_equal(frame_jacobians(model, q[n], frame),
                                          frame_jacobians(model, q, frame)[n])


def test_an_unknown_frame_is_refused():
    model = load_model(str(FIXTURES / "two_link_arm.urdf"))
    for jacobians in (body_jacobians, frame_jacobians):
        with pytest.raises(ValueError, match="unknown frame 'BODY'; known: LOCAL, WORLD, "
                                             "LOCAL_WORLD_ALIGNED"):
            jacobians(model, np.zeros(model.nq), "BODY")
