"""The chunked and threaded batch paths give the numbers of the single-state path.

The engine processes states in chunks (``batching.settings.chunk``) on a thread pool
(``batching.settings.threads``); a batch that fits in one chunk runs in the calling thread.
These tests force tiny chunks so a few dozen states span many chunks, with external forces
(per state and shared) and gravity overrides, on random trees with every joint type.
Tolerance: 1e-12 relative to the largest entry (the single-state path runs the same
kernels with one state; only BLAS blocking may differ).
"""
from __future__ import annotations

import numpy as np
import pytest

from random_trees import random_model, random_state
from treedyn.engine import aba, crba, generalized_gravity, nonlinear_effects, rnea
from treedyn.engine.batch import threads as batching
from treedyn.engine.batch.sincos import sincos
from treedyn.engine.batch.plan import plan_of

TOL = 1e-12
COUNT = 37  # with chunk 5: 8 chunks of 4 or 5 states


def close(actual, expected, tol=TOL):
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=tol * scale)


def case(seed: int):
    rng = np.random.default_rng(seed)
    floating = [None, "free", "free_world"][seed % 3]
    model = random_model(rng, int(rng.integers(3, 11)), floating)
    q, v, a = random_state(model, rng, COUNT)
    fext = rng.normal(size=(COUNT, model.njoints, 6))
    gravity = rng.normal(size=3) * 5
    return model, q, v, a, fext, gravity


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("seed", range(12))
def test_chunked_batch_equals_single_states(seed, threads):
    model, q, v, a, fext, gravity = case(seed)
    with batching.configured(threads=threads, chunk=5):
        tau = rnea(model, q, v, a, fext, gravity)
        M = crba(model, q)
        acc = aba(model, q, v, tau, fext, gravity)
        h = nonlinear_effects(model, q, v, fext[0], gravity)  # shared (nj, 6) forces
        g = generalized_gravity(model, q, gravity)
    for n in range(COUNT):
        close(tau[n], rnea(model, q[n], v[n], a[n], fext[n], gravity))
        close(M[n], crba(model, q[n]))
        close(acc[n], aba(model, q[n], v[n], tau[n], fext[n], gravity))
        close(h[n], nonlinear_effects(model, q[n], v[n], fext[0], gravity))
        close(g[n], generalized_gravity(model, q[n], gravity))
    close(acc, a, 1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_threads_and_chunk_sizes_agree_bitwise(seed):
    """Chunk boundaries and the thread pool do not change a single bit."""
    model, q, v, a, fext, gravity = case(seed)
    results = []
    for threads, chunk in ((1, 10_000), (1, 7), (2, 7), (2, 3)):
        with batching.configured(threads=threads, chunk=chunk):
            results.append((rnea(model, q, v, a, fext, gravity), crba(model, q),
                            aba(model, q, v, a, fext, gravity)))
    for other in results[1:]:
        for x, y in zip(results[0], other):
            close(y, x, 1e-13)


def test_large_batch_spans_chunks_on_threads():
    """Several default-size chunks on two threads, against chunk-by-chunk single-thread runs."""
    model, _, _, _, _, gravity = case(4)
    rng = np.random.default_rng(1)
    count = 3 * 1024 + 17
    q, v, a = random_state(model, rng, count)
    with batching.configured(threads=2, chunk=1024):
        tau = rnea(model, q, v, a, None, gravity)
        acc = aba(model, q, v, tau, None, gravity)
        M = crba(model, q)
    with batching.configured(threads=1, chunk=count):
        close(tau, rnea(model, q, v, a, None, gravity))
        close(M, crba(model, q))
    close(acc, a, 1e-9)


def test_single_state_runs_in_the_calling_thread(monkeypatch):
    def no_pool(*args):
        raise AssertionError("a single state must not use the thread pool")
    monkeypatch.setattr(batching, "_executor", no_pool)
    model, q, v, a, fext, gravity = case(2)
    with batching.configured(threads=2):
        rnea(model, q[0], v[0], a[0], fext[0], gravity)
        crba(model, q[0])
        aba(model, q[0], v[0], a[0], fext[0], gravity)


def test_plan_is_cached_per_model_and_models_interleave():
    model_a, qa, va, aa, _, _ = case(0)
    model_b, qb, vb, ab, _, _ = case(1)
    assert plan_of(model_a) is plan_of(model_a)
    expected_a, expected_b = rnea(model_a, qa, va, aa), rnea(model_b, qb, vb, ab)
    with batching.configured(chunk=4):  # work arrays are swapped between plans and sizes
        close(rnea(model_b, qb[:3], vb[:3], ab[:3]), expected_b[:3])
        close(rnea(model_a, qa, va, aa), expected_a)
        close(rnea(model_b, qb, vb, ab), expected_b)


def test_singular_blocks_give_nonfinite_not_errors():
    """A massless subtree makes D singular: ABA answers inf/nan for those states."""
    from treedyn.engine import Inertia, JointSpec, LinkSpec, TreeDescription, build_model

    box = Inertia(1.0, np.array([0.1, 0, 0]), np.diag([0.01, 0.02, 0.03]))
    links = [LinkSpec("base", Inertia.zero()), LinkSpec("arm", box), LinkSpec("tip", Inertia.zero())]
    joints = [JointSpec("shoulder", "revolute", "base", "arm", axis=np.array([0, 0, 1.0])),
              JointSpec("wrist", "revolute", "arm", "tip", axis=np.array([0, 0, 1.0]))]
    model = build_model(TreeDescription("massless", "urdf", links, joints, "base"))
    with batching.configured(chunk=3):
        acc = aba(model, np.zeros((8, 2)), np.ones((8, 2)), np.ones((8, 2)))
    assert not np.any(np.isfinite(acc[:, 1]))


def test_table_sincos_matches_numpy_including_huge_angles():
    rng = np.random.default_rng(3)
    table = 8 * np.pi  # the table's reach: no reduction by 2 pi within it
    theta = np.concatenate([rng.uniform(-4, 4, 1000), rng.uniform(-table, table, 1000),
                            [0.0, np.pi, -np.pi, 1e-12, table - 1e-9, -table + 1e-9]])
    for chunk in (theta,  # all within the table
                  np.concatenate([theta, rng.uniform(-1e5, 1e5, 1000), [table + 1e-9]]),
                  np.concatenate([theta, [4.6e15]])):  # past the reduction: numpy's sin/cos
        s, c, t1, t2 = (np.empty_like(chunk) for _ in range(4))
        sincos(chunk.copy(), s, c, t1, t2, np.empty(chunk.shape, dtype=np.intp))
        np.testing.assert_allclose(s, np.sin(chunk), rtol=0, atol=1e-15)
        np.testing.assert_allclose(c, np.cos(chunk), rtol=0, atol=1e-15)
    chunk = np.array([np.nan, 0.5, np.inf])
    s, c, t1, t2 = (np.empty_like(chunk) for _ in range(4))
    with np.errstate(invalid="ignore"):
        sincos(chunk.copy(), s, c, t1, t2, np.empty(3, dtype=np.intp))
    assert np.isnan(s[[0, 2]]).all() and np.isnan(c[[0, 2]]).all()
    assert abs(s[1] - np.sin(0.5)) <= 1e-15 and abs(c[1] - np.cos(0.5)) <= 1e-15
