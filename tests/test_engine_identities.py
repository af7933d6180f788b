"""Identities the three algorithms must satisfy on random trees (hypothesis-driven).

Tolerances: relative 1e-9 of the largest entry involved (double precision, trees of at most
10 joints with O(1) masses and lengths).
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from random_trees import random_description, random_model, random_state, trees
from treedyn.engine import (Inertia, JointSpec, LinkSpec, TreeDescription, aba, build_model, crba,
                            external_forces, generalized_gravity, nonlinear_effects, rnea)
from treedyn.engine.factor import dense_pattern

TREES = trees(10)
TOL = 1e-9


def tree_and_states(tree, count):
    """(model, q, v, a, rng) for a hypothesis-drawn (seed, size, floating) tree."""
    seed, size, floating = tree
    rng = np.random.default_rng(seed)
    model = random_model(rng, size, floating)
    return (model, *random_state(model, rng, count), rng)


def close(actual, expected, tol=TOL):
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=tol * scale)


@settings(max_examples=60, deadline=None)
@given(TREES)
def test_crba_equals_rnea_columns(tree):
    model, q, v, _, rng = tree_and_states(tree, 1)
    M = crba(model, q[0])
    bias = rnea(model, q[0], v[0], np.zeros(model.nv))
    columns = np.column_stack([rnea(model, q[0], v[0], e) - bias for e in np.eye(model.nv)])
    close(M, columns)


@settings(max_examples=60, deadline=None)
@given(TREES)
def test_mass_matrix_symmetric_positive_definite(tree):
    model, q, _, _, rng = tree_and_states(tree, 4)
    M = crba(model, q)
    close(M, np.swapaxes(M, 1, 2), 1e-12)
    assert np.all(np.linalg.eigvalsh(M) > 0)


@settings(max_examples=60, deadline=None)
@given(TREES)
def test_aba_inverts_rnea(tree):
    model, q, v, a, rng = tree_and_states(tree, 3)
    fext = rng.normal(size=(3, model.njoints, 6))
    tau = rnea(model, q, v, a, fext)
    close(aba(model, q, v, tau, fext), a)


@settings(max_examples=60, deadline=None)
@given(TREES)
def test_aba_inverts_rnea_without_armature(tree):
    # without armature ABA takes its own path after revolute joints (15 spin rows, the
    # parent's inertia folded into the matmul): cover it on random trees, not only on URDFs
    seed, size, floating = tree
    rng = np.random.default_rng(seed)
    model = random_model(rng, size, floating, armature=False)
    q, v, a = random_state(model, rng, 3)
    tau = rnea(model, q, v, a)
    close(aba(model, q, v, tau), a)


@settings(max_examples=40, deadline=None)
@given(TREES)
def test_rnea_is_mass_matrix_plus_bias(tree):
    model, q, v, a, rng = tree_and_states(tree, 2)
    expected = np.einsum("nij,nj->ni", crba(model, q), a) + nonlinear_effects(model, q, v)
    close(rnea(model, q, v, a), expected)


@settings(max_examples=40, deadline=None)
@given(TREES)
def test_batch_equals_single_states(tree):
    model, q, v, a, rng = tree_and_states(tree, 5)
    tau = rnea(model, q, v, a)
    M = crba(model, q)
    acc = aba(model, q, v, tau)
    for n in range(5):
        np.testing.assert_array_almost_equal(tau[n], rnea(model, q[n], v[n], a[n]), 12)
        np.testing.assert_array_almost_equal(M[n], crba(model, q[n]), 12)
        np.testing.assert_array_almost_equal(acc[n], aba(model, q[n], v[n], tau[n]), 12)


@settings(max_examples=40, deadline=None)
@given(TREES)
def test_sparsity_pattern_holds_numerically(tree):
    model, q, _, _, rng = tree_and_states(tree, 3)
    M = crba(model, q)
    assert np.all(M[:, ~dense_pattern(model.dof_parent)] == 0.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 8))
def test_external_force_acts_through_jacobian_transpose(seed, size):
    """tau(f) - tau(0) = -J^T f: only supporting dofs change, and by the virtual power.

    For any joint velocity v, (tau(f) - tau(0)) . v = -f . V_body(v), where V_body is the
    body's spatial velocity (J v) computed from the kinematics alone.
    """
    rng = np.random.default_rng(seed)
    model = random_model(rng, size, "free")
    q, v, a = random_state(model, rng, 1)
    body = int(rng.integers(model.njoints))
    fext = np.zeros((model.njoints, 6))
    fext[body] = rng.normal(size=6)
    delta = rnea(model, q[0], v[0], a[0], fext) - rnea(model, q[0], v[0], a[0])
    support = np.zeros(model.nv, dtype=bool)
    j = body
    while j >= 0:
        support[model.idx_v[j]:model.idx_v[j] + model.nv_joint[j]] = True
        j = model.parent[j]
    assert np.all(delta[~support] == 0.0)
    assert np.any(delta[support] != 0.0)
    # power balance: for any v, delta . v == -f . (body velocity from v without gravity)
    velocity = body_velocity(model, q[0], v[0], body)
    force, torque = fext[body, :3], fext[body, 3:]
    close(delta @ v[0], -(force @ velocity[3:] + torque @ velocity[:3]))


def body_velocity(model, q, v, body):
    """Spatial velocity (angular, linear) of ``body`` in its frame, from the kinematics alone."""
    from treedyn.engine.spatial import motion_to_child
    from treedyn.engine.reference import joint_transforms, joint_velocity

    Xup = joint_transforms(model, q[None])
    vel = {}
    for i in range(model.njoints):
        p = model.parent[i]
        vJ, _ = joint_velocity(model, Xup, i, v[None])
        parent_velocity = vel[p] if p >= 0 else np.zeros((1, 6))
        vel[i] = motion_to_child(Xup.E[i], Xup.r[i], parent_velocity) + vJ
    return vel[body][0]


def test_free_world_matches_free_local():
    """MuJoCo's free joint and Pinocchio's LOCAL free-flyer describe the same motion.

    With R the base rotation: v_world = R v_local, a_world = R (a_local + w x v_local),
    tau_world = (R f_local, t_local). This checks the free_world bias term.
    """
    rng = np.random.default_rng(7)
    description = random_description(rng, 5, "free")
    local = build_model(description)
    description.joints[0].type = "free_world"
    world = build_model(description)
    q_local, v_local, a_local = random_state(local, rng, 4)
    quat_xyzw = q_local[:, 3:7]
    q_world = np.hstack([q_local[:, :3], quat_xyzw[:, [3, 0, 1, 2]], q_local[:, 7:]])
    R = local.joint_models[0].rotation_of(q_local[:, :7])
    w = v_local[:, 3:6]
    v_world = v_local.copy()
    v_world[:, :3] = np.einsum("nij,nj->ni", R, v_local[:, :3])
    a_world = a_local.copy()
    a_world[:, :3] = np.einsum("nij,nj->ni", R, a_local[:, :3] + np.cross(w, v_local[:, :3]))
    tau_local = rnea(local, q_local, v_local, a_local)
    tau_world = rnea(world, q_world, v_world, a_world)
    expected = tau_local.copy()
    expected[:, :3] = np.einsum("nij,nj->ni", R, tau_local[:, :3])
    close(tau_world, expected)
    close(aba(world, q_world, v_world, tau_world), a_world)


def test_ball_matches_spherical():
    rng = np.random.default_rng(11)
    description = random_description(rng, 3)
    description.joints[0].type = "spherical"
    pinocchio_layout = build_model(description)
    description.joints[0].type = "ball"
    mujoco_layout = build_model(description)
    q, v, a = random_state(pinocchio_layout, rng, 3)
    q_wxyz = q.copy()
    q_wxyz[:, :4] = q[:, [3, 0, 1, 2]]
    close(rnea(mujoco_layout, q_wxyz, v, a), rnea(pinocchio_layout, q, v, a))


def two_link_arm():
    box = Inertia(1.0, np.array([0, 0, -0.5]), np.diag([101 / 1200, 101 / 1200, 1 / 600]))
    links = [LinkSpec("base", Inertia.zero()), LinkSpec("link1", box), LinkSpec("link2", box)]
    axis = np.array([0, -1.0, 0])
    joints = [JointSpec("joint1", "revolute", "base", "link1", axis=axis),
              JointSpec("joint2", "revolute", "link1", "link2", axis=axis,
                        translation=np.array([0, 0, -1.0]))]
    return build_model(TreeDescription("two_link_arm", "urdf", links, joints, "base"))


def test_seed_two_link_worked_example():
    """The textbook chapter's numbers: tau ~ (13.337760, 5.504846) N m, and the static case."""
    # The numbers are those of the seed document "树形刚体动力学：RNEA 与 CRBA" (the project's
    # shared seeds/003_e3da1b30bc1276bd.txt, not in this repository): its two-link arm at
    # q = (pi/6, pi/3), v = (1, -0.5), a = (0.4, -0.2) gives tau ~ (13.337760, 5.504846) N m.
    model = two_link_arm()
    q, v, a = np.array([np.pi / 6, np.pi / 3]), np.array([1, -0.5]), np.array([0.4, -0.2])
    np.testing.assert_allclose(rnea(model, q, v, a), [13.337760, 5.504846], atol=5e-7)
    np.testing.assert_allclose(aba(model, q, v, rnea(model, q, v, a)), a, atol=1e-12)
    # horizontal and still, g = 10: joint 2 holds 5 N m, joint 1 holds 5 + 10 * 1 + 5
    horizontal = np.array([np.pi / 2, 0.0])
    np.testing.assert_allclose(generalized_gravity(model, horizontal, [0, 0, -10]), [20, 5],
                               atol=1e-12)


def test_fixed_link_force_equals_body_force():
    """A wrench on a link merged by a fixed joint equals the moved wrench on its body."""
    box = Inertia(1.0, np.array([0.1, 0, 0]), np.diag([0.01, 0.02, 0.03]))
    links = [LinkSpec("base", Inertia.zero()), LinkSpec("arm", box), LinkSpec("tool", box)]
    R = np.array([[0, -1.0, 0], [1, 0, 0], [0, 0, 1]])
    joints = [JointSpec("shoulder", "revolute", "base", "arm", axis=np.array([0, 0, 1.0])),
              JointSpec("mount", "fixed", "arm", "tool", rotation=R, translation=np.array([1.0, 0, 0]))]
    model = build_model(TreeDescription("tool", "urdf", links, joints, "base"))
    assert model.njoints == 1 and model.body_mass[0] == 2.0
    fext = external_forces(model, {"tool": [0, 1.0, 0, 0, 0, 0]})
    # force +y in the tool frame is -x in the arm frame: no torque about z at (1, 0, 0)
    np.testing.assert_allclose(fext[0, 0], [-1, 0, 0, 0, 0, 0], atol=1e-15)
    fext = external_forces(model, {"tool": [1.0, 0, 0, 0, 0, 0]})
    # +x in tool frame = +y in arm frame at (1, 0, 0): torque +1 about z
    np.testing.assert_allclose(fext[0, 0], [0, 1, 0, 0, 0, 1], atol=1e-15)
    tau0 = rnea(model, np.zeros(1), None, None)
    tau = rnea(model, np.zeros(1), None, None, fext[0])
    np.testing.assert_allclose(tau - tau0, [-1.0], atol=1e-12)


def test_deep_chain_builds_and_matches_its_mass_matrix_columns():
    """A 1500-joint chain (deeper than Python's recursion limit) builds; CRBA = RNEA columns."""
    count = 1500
    body = Inertia(1.0, np.array([0, 0, -0.1]), np.eye(3) * 0.01)
    links = [LinkSpec("l0", Inertia.zero())] + [LinkSpec(f"l{k + 1}", body) for k in range(count)]
    joints = [JointSpec(f"j{k}", "revolute" if k % 3 else "fixed", f"l{k}", f"l{k + 1}",
                        translation=np.array([0, 0, -0.2]), axis=np.array([0, 1.0, 0]))
              for k in range(count)]
    model = build_model(TreeDescription("chain", "urdf", links, joints, "l0"))
    assert model.njoints == model.nv == 1000
    assert list(model.parent[:3]) == [-1, 0, 1] and model.nv_subtree[0] == 1000
    q = np.random.default_rng(0).uniform(-1, 1, model.nq)
    M = crba(model, q)
    bias = rnea(model, q)
    for k in (0, 499, 999):
        e = np.zeros(model.nv)
        e[k] = 1.0
        close(M[:, k], rnea(model, q, None, e) - bias)
