"""The Python API's boundary: input shapes, broadcasting, concurrent callers, retained memory.

A wrong shape must raise ValueError naming the input, never broadcast into other numbers
(a column vector read as one value for every dof, a Pinocchio (cos, sin) batch read as
angles, a scalar gravity). Inputs without a batch axis are shared by the states of the
others, as numpy broadcasts. Numbers are compared with single-state calls to 1e-12
relative to the largest entry.
"""
from __future__ import annotations

import re
import sys
import threading
import tracemalloc

import numpy as np
import pytest

from random_trees import random_model, random_state
from treedyn.engine import aba, crba, external_forces, generalized_gravity, rnea
from treedyn.engine.batch import threads as batching
from treedyn.engine.batch.memory import clear_workspaces
from treedyn.parsers import load_model

ARM = "fixtures/two_link_arm.urdf"
Q = np.array([np.pi / 6, np.pi / 3])
V = np.array([1.0, -0.5])
A = np.array([0.4, -0.2])
TAU = np.array([13.337759526419163, 5.504846035225552])  # the seed's worked example


def close(actual, expected, tol=1e-12):
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=tol * scale)


@pytest.fixture(scope="module")
def arm():
    return load_model(ARM)


@pytest.mark.parametrize("call, message", [
    (lambda m: rnea(m, Q, V[:, None], A[:, None]), r"v has shape \(2, 1\); expected \(2,\), or \(N, 2\)"),
    (lambda m: rnea(m, Q, V, A[:, None]), r"a has shape \(2, 1\); expected \(2,\), or \(N, 2\)"),
    (lambda m: aba(m, Q, V, TAU[:, None]), r"tau has shape \(2, 1\)"),
    (lambda m: rnea(m, Q[:, None]), r"q has shape \(2, 1\)"),
    (lambda m: crba(m, np.zeros((3, 4))), r"q has shape \(3, 4\)"),  # Pinocchio's (cos, sin) layout
    (lambda m: rnea(m, np.zeros((3, 1))), r"q has shape \(3, 1\)"),
    (lambda m: rnea(m, 0.5), r"q has shape \(\)"),
    (lambda m: rnea(m, np.zeros((2, 3, 2))), r"q has shape \(2, 3, 2\)"),
    (lambda m: rnea(m, Q, np.zeros(3)), r"v has shape \(3,\)"),
    (lambda m: rnea(m, np.zeros((4, 2)), np.zeros((5, 2))),
     "disagree on the number of states: q has 4, v has 5"),
    (lambda m: aba(m, np.zeros((4, 2)), np.zeros((3, 2))), "q has 4, v has 3"),
    (lambda m: rnea(m, Q, fext=np.zeros((6, 2))), r"fext has shape \(6, 2\); expected \(2, 6\)"),
    (lambda m: rnea(m, Q, fext=np.zeros((1, 6, 2))), r"fext has shape \(1, 6, 2\)"),
    (lambda m: generalized_gravity(m, Q, gravity=9.81), r"gravity has shape \(\); expected \(3,\)"),
    (lambda m: generalized_gravity(m, Q, gravity=(0, 0, -9.81, 0)), r"gravity has shape \(4,\)"),
    (lambda m: external_forces(m, {"link2": np.zeros(5)}), "wrench on 'link2' has shape"),
    (lambda m: external_forces(m, {"link2": np.zeros((3, 6)), "link1": np.zeros((4, 6))}),
     "'link2' has 3, 'link1' has 4"),
])
def test_wrong_shapes_raise_value_errors_naming_the_input(arm, call, message):
    with pytest.raises(ValueError, match=message):
        call(arm)


def test_a_mismatch_is_caught_whatever_the_chunk_size(arm):
    """With chunk 2, q (4, nq) and v (3, nv) used to run, state 3 computed with v[2]."""
    with batching.configured(chunk=2), pytest.raises(ValueError, match="q has 4, v has 3"):
        rnea(arm, np.zeros((4, 2)), np.zeros((3, 2)))


def test_inputs_without_a_batch_axis_are_shared_by_the_others_states(arm):
    rng = np.random.default_rng(3)
    Vs = rng.normal(size=(5, 2))
    F = rng.normal(size=(5, arm.njoints, 6))
    close(rnea(arm, Q, V, A), TAU)
    taus = rnea(arm, Q, Vs, A)
    assert taus.shape == (5, 2)
    close(taus, np.array([rnea(arm, Q, v, A) for v in Vs]))
    forced = rnea(arm, Q, V, A, fext=F)
    close(forced, np.array([rnea(arm, Q, V, A, fext=f) for f in F]))
    close(aba(arm, Q[None], Vs, taus), np.broadcast_to(A, (5, 2)))
    assert rnea(arm, Q, V, A, fext=F[:1]).shape == (2,)  # external_forces' (1, nj, 6)
    assert rnea(arm, Q, V[None], A).shape == (1, 2)  # any batch axis keeps it in the output
    assert rnea(arm, np.zeros((0, 2)), V).shape == (0, 2)


def test_external_forces_take_the_number_of_states_from_the_wrenches(arm):
    W = np.random.default_rng(4).normal(size=(3, 6))
    fext = external_forces(arm, {"link2": W, "link1": [0, 0, 1.0, 0, 0, 0]})
    assert fext.shape == (3, arm.njoints, 6)
    for state in range(3):
        one = external_forces(arm, {"link2": W[state], "link1": [0, 0, 1.0, 0, 0, 0]})
        close(rnea(arm, Q, V, A, fext=fext)[state], rnea(arm, Q, V, A, fext=one))


def test_callers_in_several_threads_with_different_thread_counts():
    """configure/configured are process-wide: a caller that resized the pool used to shut
    down the pool another caller was submitting to ('cannot schedule new futures after
    shutdown'). The switch interval is shortened to make the window likely."""
    model = load_model(ARM)
    q = model.random_configuration(np.random.default_rng(0), 16)
    expected = rnea(model, q)
    errors, wrong = [], []

    def caller(threads: int) -> None:
        for _ in range(150):
            try:
                with batching.configured(threads=threads, chunk=1):
                    result = rnea(model, q)
            except RuntimeError as error:
                errors.append(str(error))
                continue
            if not np.array_equal(result, expected):
                wrong.append(threads)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        callers = [threading.Thread(target=caller, args=(n,)) for n in (2, 3)]
        for thread in callers:
            thread.start()
        for thread in callers:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors and not wrong


def test_work_memory_is_one_budget_per_thread_and_clear_releases_every_thread():
    """Each algorithm (and external forces) kept its own arrays in every pool thread, and
    clear_workspaces() reached only the calling thread."""
    rng = np.random.default_rng(5)
    model = random_model(rng, 30, "free")
    q, v, a = random_state(model, rng, 3000)
    fext = rng.normal(size=(3000, model.njoints, 6))
    budget = 4 << 20
    clear_workspaces()
    with batching.configured(threads=2, chunk=100_000, memory=budget):
        tracemalloc.start()
        try:
            results = [rnea(model, q, v, a, fext), aba(model, q, v, a, fext), crba(model, q[:1000])]
            del results
            kept = tracemalloc.get_traced_memory()[0]
            clear_workspaces()
            cleared = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
    threads_used = 3  # two pool threads and, for single-chunk calls, the caller
    assert kept <= threads_used * budget + (1 << 20), kept
    assert cleared <= 1 << 20, cleared


@pytest.mark.parametrize("path", [ARM, "fixtures/mjcf/multijoint.xml"])
def test_each_fext_row_is_in_the_frame_body_frames_names(path):
    """Row i of fext is a wrench in the link frame ``body_frames[i]``, about its origin: the
    same numbers as ``external_forces`` given on that name. For MJCF that is the joint's
    anchor frame, and the <body> of a joint away from its origin is another frame."""
    model = load_model(path)
    rng = np.random.default_rng(3)
    q = model.random_configuration(rng, 1)[0]
    v = rng.standard_normal(model.nv)
    assert len(model.body_frames) == model.njoints
    for i, name in enumerate(model.body_frames):
        wrench = rng.standard_normal(6)
        rows = np.zeros((model.njoints, 6))
        rows[i] = wrench
        placed = external_forces(model, {name: wrench})
        close(placed[0], rows)
        close(rnea(model, q, v, None, rows), rnea(model, q, v, None, placed))
    if model.format == "mjcf":
        tip = model.frame("tip")  # its last joint, a ball, sits 0.02 away from its origin
        assert model.body_frames[tip.joint] == "tip/tip_ball"
        moved = external_forces(model, {"tip": [0, 1.0, 0, 0, 0, 0]})[0, tip.joint]
        assert np.linalg.norm(moved[3:]) > 0.01  # the force's moment about the anchor


def _description(joints: list[tuple[str, str, str]], links=("world", "a", "b", "c")):
    from treedyn.engine import Inertia, JointSpec, LinkSpec, TreeDescription

    body = Inertia(1.0, np.zeros(3), 0.1 * np.eye(3))
    return TreeDescription("t", "urdf", [LinkSpec(name, body) for name in links],
                           [JointSpec(name, "revolute", parent, child, axis=np.array([0, 0, 1.0]))
                            for name, parent, child in joints], "world")


@pytest.mark.parametrize("joints, message", [
    ([("j1", "world", "a"), ("j2", "a", "b"), ("j3", "b", "a"), ("j4", "b", "c")],
     "link 'a' is the child of two joints: 'j1' and 'j3'"),
    ([("j1", "world", "a"), ("j2", "a", "b"), ("j3", "world", "b"), ("j4", "b", "c")],
     "link 'b' is the child of two joints"),
    ([("j1", "world", "a"), ("j2", "b", "c")], "link 'b' does not hang from the world link"),
    ([("j1", "world", "a"), ("j2", "b", "c"), ("j3", "c", "b")], "does not hang from the world"),
    ([("j1", "world", "a"), ("j2", "nowhere", "b"), ("j3", "b", "c")],
     "joint 'j2': its parent link 'nowhere' is not a link"),
    ([("j1", "a", "world"), ("j2", "a", "b"), ("j3", "b", "c")], "moves the world link"),
    ([("j1", "world", "a"), ("j1", "a", "b"), ("j3", "b", "c")], "two joints are named 'j1'"),
])
def test_build_model_refuses_what_is_not_a_tree(joints, message):
    """A cycle used to loop forever, a link with two parents was counted twice, a link no
    joint chain reaches was dropped: a description built by hand gets a ModelError."""
    from treedyn.engine import ModelError, build_model

    with pytest.raises(ModelError, match=re.escape(message)):
        build_model(_description(joints))


def test_build_model_refuses_two_links_of_one_name():
    """Two links named 'a' (1 and 5 kg) kept only the last: the total mass was 5."""
    from treedyn.engine import ModelError, build_model

    with pytest.raises(ModelError, match="two links are named 'a'"):
        build_model(_description([("j1", "world", "a"), ("j2", "a", "b")],
                                 links=("world", "a", "a", "b")))
