"""The tree-ordered L^T D L factor against Pinocchio and MuJoCo, and the textbook's numbers.

* Structure: MuJoCo's compiled M_rownnz/M_rowadr/M_colind (factor) and D_rownnz/D_colind
  (full pattern) on the gymnasium models, parsed by our MJCF parser.
* Numbers: our factor of MuJoCo's own M equals MuJoCo's qLD; our factor of our M equals
  Pinocchio's cholesky (M = U D U^T, U = L^T) on every example-robot-data URDF; solving
  through the factor equals ABA (1e-9) there and on random trees.
* The star tree of the textbook: eliminating the root first creates the fill -0.04.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from hypothesis import given, settings

from random_trees import random_model, random_state, trees
from reference_models import dm_control_id, dm_control_models, gymnasium_models
from treedyn.engine import aba, crba, rnea
from treedyn.engine.factor import (dense_pattern, eliminate, factor_nnz, factor_structure,
                                   fill_in, ltdl, ltdl_solve)

if importlib.util.find_spec("pinocchio"):
    from test_pinocchio import ROOT, URDFS, Mapping
else:
    ROOT, URDFS, Mapping = "", [], None

TOL = 1e-9


def relative_error(ours, reference) -> float:
    return float(np.max(np.abs(ours - reference), initial=0.0) /
                 max(1.0, float(np.max(np.abs(reference), initial=0.0))))




GYM = gymnasium_models()


def mjcf_model(path: str):
    from treedyn.parsers import load_model

    return load_model(path)


# ----------------------------------------------------------------------------- textbook

def test_star_tree_root_first_creates_the_textbook_fill():
    M = np.array([[4.0, 0.4, 0.4], [0.4, 2.0, 0.0], [0.4, 0.0, 3.0]])
    dof_parent = np.array([-1, 0, 0])  # a root with two leaves
    root_first = eliminate(M, [0, 1, 2])
    assert root_first[1, 2] == pytest.approx(0.0 - 0.4 * 0.4 / 4.0) == pytest.approx(-0.04)
    assert fill_in(M != 0, [0, 1, 2]) == 1
    leaves_first = eliminate(M, [2, 1, 0])
    assert leaves_first[1, 2] == 0.0 and fill_in(M != 0, [2, 1, 0]) == 0
    L, D = ltdl(dof_parent, M)
    assert L[2, 1] == 0.0  # no fill in tree order
    np.testing.assert_allclose(L.T @ np.diag(D) @ L, M, atol=1e-15)


def test_textbook_two_by_two_cholesky_example():
    """M = [[4, 1], [1, 2]], b = (1, 3): the chapter's forward solve."""
    M = np.array([[4.0, 1.0], [1.0, 2.0]])
    factor = ltdl(np.array([-1, 0]), M)
    np.testing.assert_allclose(ltdl_solve(np.array([-1, 0]), factor, [1.0, 3.0]),
                               np.linalg.solve(M, [1.0, 3.0]), atol=1e-15)


# ----------------------------------------------------------------------------- random trees

TREES = trees(10)


@settings(max_examples=40, deadline=None)
@given(TREES)
def test_factor_reproduces_m_and_solves_like_aba(tree):
    seed, size, floating = tree
    rng = np.random.default_rng(seed)
    model = random_model(rng, size, floating)
    q, v, _ = random_state(model, rng, 3)
    tau = rng.normal(size=(3, model.nv))
    M = crba(model, q)
    L, D = ltdl(model.dof_parent, M)
    np.testing.assert_allclose(np.swapaxes(L, 1, 2) @ (D[:, :, None] * L), M, atol=1e-12)
    structure = factor_structure(model.dof_parent)
    lower = np.zeros((model.nv, model.nv), dtype=bool)
    for i in range(model.nv):
        cols = structure.colind[structure.rowadr[i]:structure.rowadr[i] + structure.rownnz[i]]
        lower[i, cols] = True
    assert np.all(L[:, ~lower] == 0.0)  # no fill-in outside the ancestors
    pattern = dense_pattern(model.dof_parent)
    assert np.array_equal(lower | lower.T, pattern)
    assert factor_nnz(model.dof_parent) == (pattern.sum() + model.nv) // 2
    assert fill_in(pattern, np.arange(model.nv)[::-1]) == 0
    # any order: the symbolic count equals the new non-zeros of the numeric elimination
    order = np.random.default_rng(model.nv).permutation(model.nv)
    eliminated = eliminate(M[0], order)
    assert fill_in(pattern, order) == int((~pattern & (eliminated != 0)).sum()) // 2
    solved = ltdl_solve(model.dof_parent, (L, D), tau - rnea(model, q, v))
    expected = aba(model, q, v, tau)
    assert relative_error(solved, expected) <= TOL


@pytest.mark.parametrize("seed", range(20))
def test_factor_recovers_a_planted_factor_on_any_parents_first_order(seed):
    """Parents before children, but subtrees not contiguous (breadth-first, random): the
    factor is read back from M = L^T D L built from a random L on the ancestor pattern."""
    rng = np.random.default_rng(seed)
    nv = int(rng.integers(2, 40))
    dof_parent = np.array([-1] + [int(rng.integers(-1, i)) for i in range(1, nv)])
    structure = factor_structure(dof_parent)
    L = np.eye(nv)
    for i in range(nv):
        ancestors = structure.colind[structure.rowadr[i]:structure.rowadr[i] + structure.rownnz[i] - 1]
        L[i, ancestors] = rng.normal(size=len(ancestors))
    D = rng.uniform(0.5, 2.0, size=nv)
    M = L.T @ np.diag(D) @ L
    factor = ltdl(dof_parent, np.stack([M, 2.0 * M]))
    np.testing.assert_allclose(factor.L, np.stack([L, L]), atol=1e-9)
    np.testing.assert_allclose(factor.D, np.stack([D, 2.0 * D]), rtol=1e-9)
    b = rng.normal(size=nv)
    np.testing.assert_allclose(ltdl_solve(dof_parent, ltdl(dof_parent, M), b),
                               np.linalg.solve(M, b), rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("seed", range(30))
def test_fill_in_counts_the_new_nonzeros_of_numeric_elimination_on_any_graph(seed):
    """Any symmetric pattern (not only a tree's) and any order: the symbolic count equals
    the structurally-zero entries that eliminating a random SPD matrix makes non-zero."""
    rng = np.random.default_rng(seed)
    nv = int(rng.integers(1, 30))
    links = np.triu(rng.random((nv, nv)) < rng.uniform(0.05, 0.5), 1)
    pattern = links | links.T | np.eye(nv, dtype=bool)
    weights = np.triu(rng.uniform(-1.0, 1.0, (nv, nv)), 1)
    M = np.where(pattern, weights + weights.T, 0.0) + np.diag(np.full(nv, 2.0 * nv))
    order = rng.permutation(nv)
    eliminated = eliminate(M, order)
    assert fill_in(pattern, order) == int((~pattern & (eliminated != 0)).sum()) // 2


# ----------------------------------------------------------------------------- MuJoCo

MJCF_MODELS = GYM + dm_control_models()


@pytest.mark.skipif(not MJCF_MODELS, reason="neither gymnasium nor dm_control is installed")
@pytest.mark.parametrize("path", MJCF_MODELS, ids=lambda p: os.path.basename(p) if p in GYM
                         else dm_control_id(p))
def test_structure_equals_mujoco_on_gymnasium_and_dm_control_models(path):
    """The full pattern is MuJoCo's D_*; the factor layout its M_*, whose rows of "simple"
    dofs MuJoCo reduces to the diagonal (couplings that vanish identically: checked on M)."""
    mujoco = pytest.importorskip("mujoco")
    reference = mujoco.MjModel.from_xml_path(path)
    model = mjcf_model(path)
    assert np.array_equal(model.dof_parent, reference.dof_parentid)
    full = np.zeros((model.nv, model.nv), dtype=bool)
    for i in range(model.nv):
        full[i, reference.D_colind[reference.D_rowadr[i]:
                                   reference.D_rowadr[i] + reference.D_rownnz[i]]] = True
    assert np.array_equal(full, dense_pattern(model.dof_parent))
    assert factor_structure(model.dof_parent).nnz == reference.nM
    simple = reference.dof_simplenum > 0
    structure = factor_structure(model.dof_parent, simple)
    assert np.array_equal(structure.rownnz, reference.M_rownnz)
    assert np.array_equal(structure.rowadr, reference.M_rowadr)
    assert np.array_equal(structure.colind, reference.M_colind)
    q = model.random_configuration(np.random.default_rng(0), 4)
    M = crba(model, q)
    dropped = full & (simple[:, None] | simple[None, :])
    np.fill_diagonal(dropped, False)
    assert np.all(np.abs(M[:, dropped]) <= 1e-12 * np.abs(M).max(initial=0.0))


@pytest.mark.skipif(not GYM, reason="gymnasium is not installed")
@pytest.mark.parametrize("path", GYM, ids=[os.path.basename(p) for p in GYM])
def test_factor_of_mujocos_m_equals_its_qld(path):
    mujoco = pytest.importorskip("mujoco")
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    d.qpos[:] = m.qpos0 + 0.3 * rng.normal(size=m.nq)
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    L, D = ltdl(m.dof_parentid, M)
    expected_L, expected_D = np.eye(m.nv), np.zeros(m.nv)
    for i in range(m.nv):
        start, count = m.M_rowadr[i], m.M_rownnz[i]
        cols = m.M_colind[start:start + count]
        expected_L[i, cols[:-1]] = d.qLD[start:start + count - 1]
        expected_D[i] = d.qLD[start + count - 1]
    np.testing.assert_allclose(D, expected_D, rtol=1e-12)
    np.testing.assert_allclose(L, expected_L, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- Pinocchio

@pytest.mark.skipif(not URDFS, reason="example-robot-data is not installed")
@pytest.mark.parametrize("path", URDFS, ids=[os.path.relpath(p, ROOT) for p in URDFS])
def test_factor_equals_pinocchio_cholesky_and_solves_like_aba(path):
    pin = pytest.importorskip("pinocchio")
    from treedyn.parsers import load_model

    model = load_model(path, free_flyer=True)
    pinmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    data = pinmodel.createData()
    mapping = Mapping(model, pinmodel)
    rng = np.random.default_rng(len(path))
    q = model.random_configuration(rng, 2)
    v, tau = rng.normal(size=(2, model.nv)), rng.normal(size=(2, model.nv))
    M = crba(model, q)
    L, D = ltdl(model.dof_parent, M)
    for n in range(2):
        pin.crba(pinmodel, data, mapping.q(q[n]))
        data.M = np.triu(data.M) + np.triu(data.M, 1).T
        pin.cholesky.decompose(pinmodel, data)
        index = np.ix_(mapping.v_index, mapping.v_index)
        U = np.array(data.U)[index]
        if np.all(np.isfinite(data.D)) and np.all(np.array(data.D) > 0):
            assert relative_error(D[n], np.array(data.D)[mapping.v_index]) <= TOL
            assert relative_error(L[n], U.T) <= TOL
    expected = aba(model, q, v, tau)
    usable = np.all(np.isfinite(expected), axis=1)
    solved = ltdl_solve(model.dof_parent, (L, D), tau - rnea(model, q, v))
    if usable.any():
        assert relative_error(solved[usable], expected[usable]) <= TOL * max(
            1.0, float(np.max(np.linalg.cond(M[usable]))) * 1e-7)
