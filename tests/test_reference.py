"""The batched RNEA, CRBA and ABA against the readable one-state reference recursions
(:mod:`treedyn.engine.reference`, Featherstone's ID / CRBA / FDab as spatial_v2 writes them).

The two share the joint models only: the batched kernels run in internal frames with spin
coordinates, row rotations and a breadth-first order, the reference with 6x6 matrices in
the link frames, joint by joint. Held to 1e-10 relative on every fixture model (URDF with
and without a free-flyer, MJCF) and on random trees, at random states with external
wrenches; plus the textbook numbers of the two-link arm.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from random_trees import (ONE_DOF_TYPES, random_description, random_inertia, random_model,
                          random_rotation)
from treedyn.engine import JointSpec, LinkSpec, aba, build_model, crba, rnea
from treedyn.engine.batch import rootframe
from treedyn.engine.batch.plan import plan_of
from treedyn.engine.reference import aba_reference, crba_reference, rnea_reference
from treedyn.engine.samples import random_states
from treedyn.parsers import load_model

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
URDFS = sorted((ROOT / "fixtures" / "urdf").glob("*.urdf")) + [ARM]
MJCFS = sorted((ROOT / "fixtures" / "mjcf").glob("*.xml"))
RTOL = 1e-10
STATES = 3


def close(actual: np.ndarray, reference: np.ndarray) -> bool:
    """max |actual - reference| <= RTOL max(1, max |reference|)."""
    scale = max(1.0, float(np.max(np.abs(reference), initial=0.0)))
    return float(np.max(np.abs(actual - reference), initial=0.0)) <= RTOL * scale


def assert_mass_matches_reference(model, seed: int = 0) -> None:
    s = random_states(model, STATES, seed)
    M = crba(model, s.q)
    for n in range(STATES):
        assert close(M[n], crba_reference(model, s.q[n])), (model.name, "crba", n)


def assert_matches_reference(model, seed: int = 0) -> None:
    s = random_states(model, STATES, seed)
    tau = rnea(model, s.q, s.v, s.a, s.fext)
    assert_mass_matches_reference(model, seed)
    for n in range(STATES):
        M_ref = crba_reference(model, s.q[n])
        tau_ref = rnea_reference(model, s.q[n], s.v[n], s.a[n], s.fext[n])
        assert close(tau[n], tau_ref), (model.name, "rnea", n)
        if np.linalg.cond(M_ref) > 1e8:  # ABA's forward error grows with cond(M)
            continue
        qdd_ref = aba_reference(model, s.q[n], s.v[n], s.tau[n], s.fext[n])
        qdd = aba(model, s.q[n], s.v[n], s.tau[n], s.fext[n])
        assert close(qdd, qdd_ref), (model.name, "aba", n)


def _model(path: Path, free_flyer: bool):
    return load_model(str(path), free_flyer)


@pytest.mark.parametrize("free_flyer", [False, True])
@pytest.mark.parametrize("path", URDFS, ids=lambda p: p.name)
def test_urdf_fixtures_match_the_reference(path, free_flyer):
    assert_matches_reference(_model(path, free_flyer))


@pytest.mark.parametrize("path", MJCFS, ids=lambda p: p.name)
def test_mjcf_fixtures_match_the_reference(path):
    model = _model(path, False)
    if model.nv == 0:
        pytest.skip("no degrees of freedom")
    assert_matches_reference(model)


@pytest.mark.parametrize("floating", [None, "free", "free_world"])
@pytest.mark.parametrize("seed", range(6))
def test_random_trees_match_the_reference(seed, floating):
    rng = np.random.default_rng(seed)
    model = random_model(rng, int(rng.integers(1, 12)), floating)
    assert_matches_reference(model, seed)


@pytest.fixture
def root_frame(monkeypatch):
    """The root-frame CRBA on batches of any size (it starts at rootframe.MIN_STATES)."""
    monkeypatch.setattr(rootframe, "MIN_STATES", 1)


@pytest.mark.parametrize("floating", [None, "free", "free_world"])
@pytest.mark.parametrize("seed", range(4))
def test_one_dof_trees_take_the_root_frame_mass_matrix(seed, floating, root_frame):
    """Revolute and prismatic joints below any root (several 1-dof roots on the world, a
    free-flyer, a generic free joint): CRBA in the roots' frames, held to the reference."""
    rng = np.random.default_rng(100 + seed)
    model = random_model(rng, int(rng.integers(2, 14)), floating, types=ONE_DOF_TYPES)
    assert rootframe.takes(plan_of(model), STATES)
    assert_mass_matches_reference(model, seed)


@pytest.mark.parametrize("path", URDFS + MJCFS, ids=lambda p: p.name)
def test_fixtures_root_frame_mass_matrix_matches_the_reference(path, root_frame):
    model = _model(path, path.suffix == ".urdf")
    if not rootframe.takes(plan_of(model), STATES):
        pytest.skip("a joint below the root with more than one dof: the local path")
    assert_mass_matches_reference(model)


def test_the_root_frame_path_starts_at_min_states():
    """Small batches stay on the local path (cheaper there), large ones take the root frame."""
    model = _model(ARM, False)
    plan = plan_of(model)
    assert not rootframe.takes(plan, rootframe.MIN_STATES - 1)
    assert rootframe.takes(plan, rootframe.MIN_STATES)
    q = random_states(model, rootframe.MIN_STATES, 0).q
    M = crba(model, q)
    for n in (0, len(q) - 1):
        assert close(M[n], crba_reference(model, q[n]))


def test_two_free_flyers_take_the_root_frame_mass_matrix(root_frame):
    """Two free-flyers on the world, each with 1-dof joints below: both roots' rows."""
    rng = np.random.default_rng(7)
    description = random_description(rng, 6, "free", types=ONE_DOF_TYPES)
    description.links.extend([LinkSpec("base2", random_inertia(rng)),
                              LinkSpec("arm2", random_inertia(rng))])
    description.joints.extend([
        JointSpec("root2", "free", "world", "base2", rotation=random_rotation(rng),
                  translation=rng.normal(size=3)),
        JointSpec("hinge2", "revolute", "base2", "arm2", translation=rng.normal(size=3),
                  axis=np.array([0.6, 0.0, 0.8]))])
    model = build_model(description)
    assert rootframe.takes(plan_of(model), STATES) and list(model.joint_types).count("free") == 2
    assert_matches_reference(model)


def test_the_reference_gives_the_two_link_arms_textbook_numbers():
    """The seed state of the README: q = (pi/6, pi/3), v = (1, -0.5), a = (0.4, -0.2)."""
    model = load_model(str(ARM))
    q, v, a = [math.pi / 6, math.pi / 3], [1.0, -0.5], [0.4, -0.2]
    tau = rnea_reference(model, q, v, a)
    np.testing.assert_allclose(tau, [13.337760, 5.504846], atol=1e-6)
    np.testing.assert_allclose(aba_reference(model, q, v, tau), a, atol=1e-12)
    M = crba_reference(model, q)
    np.testing.assert_allclose(M @ a + rnea_reference(model, q, v), tau, atol=1e-12)


def test_gravity_and_no_velocity_defaults():
    """v, a, tau and fext default to zero, gravity to the model's: RNEA(q) = g(q)."""
    model = load_model(str(ARM))
    q = [0.3, -0.7]
    np.testing.assert_allclose(rnea_reference(model, q), rnea(model, q), rtol=1e-12)
    np.testing.assert_allclose(rnea_reference(model, q, gravity=np.zeros(3)), 0.0, atol=1e-15)
