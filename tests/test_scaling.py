"""What a model costs grows linearly with its size: M's structure from flat index arrays
(checked against its definition), a large star loaded in bounded memory, and dyn mass's
cap on M, under which --sparsity still answers with the structure."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import numpy as np
import pytest

from random_trees import random_model
from reference_models import robot_urdfs
from treedyn.engine.analysis.sparsity import sparsity_document
from treedyn.engine.factor import (dense_pattern, dof_depth, dof_subtree_end, dofs_couple,
                                   factor_structure, fill_in, pattern_nnz, tree_fill_in)
from treedyn.parsers import ParseError, load_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
URDFS = robot_urdfs()


def defined_pattern(dof_parent) -> np.ndarray:
    """M's structural pattern by its definition: dofs i and j couple when one is the
    other or one of its ancestors (walking dof_parent)."""
    nv = len(dof_parent)
    pattern = np.eye(nv, dtype=bool)
    for i in range(nv):
        j = dof_parent[i]
        while j >= 0:
            pattern[i, j] = pattern[j, i] = True
            j = dof_parent[j]
    return pattern


def assert_structure(model) -> None:
    pattern = defined_pattern(model.dof_parent)
    nv = model.nv
    assert np.array_equal(dense_pattern(model.dof_parent), pattern)
    i, j = np.meshgrid(np.arange(nv), np.arange(nv), indexing="ij")
    assert np.array_equal(dofs_couple(dof_subtree_end(model.dof_parent), i, j), pattern)
    assert pattern_nnz(model.dof_parent) == pattern.sum()
    assert np.array_equal(dof_depth(model.dof_parent) + 1,
                          factor_structure(model.dof_parent).rownnz)
    assert tree_fill_in(model.dof_parent) == {
        "tree_order": fill_in(pattern, np.arange(nv)[::-1]),
        "root_first": fill_in(pattern, np.arange(nv))}
    full, linear = sparsity_document(model), sparsity_document(model, dense=False)
    assert full["pattern"] == pattern.astype(int).tolist()
    assert linear.pop("omitted") == ["pattern", "factor.colind", "confirmed"]
    del full["pattern"], full["confirmed"], full["factor"]["colind"]
    assert full == linear


@pytest.mark.parametrize("seed", range(40))
def test_linear_structure_is_the_defined_pattern_on_random_trees(seed):
    rng = np.random.default_rng(seed)
    floating = (None, "free", "free_world")[seed % 3]
    assert_structure(random_model(rng, int(rng.integers(1, 25)), floating))


@pytest.mark.skipif(not URDFS, reason="example-robot-data is not installed")
@pytest.mark.parametrize("path", URDFS, ids=os.path.basename)
def test_linear_structure_is_the_defined_pattern_on_example_robot_data(path):
    try:
        model = load_model(path, free_flyer=True)
    except ParseError:  # ur3.urdf has no <link> (Pinocchio refuses it too)
        pytest.skip("not a model")
    assert_structure(model)


def star_urdf(path, leaves: int) -> str:
    """A hub on a revolute joint, and ``leaves`` links each on a revolute joint about z
    hanging from it: nv = leaves + 1, every leaf dof's parent the hub's."""
    inertial = ('<inertial><origin xyz="0.05 0 0" rpy="0 0 0"/><mass value="0.5"/><inertia '
                'ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.0025"/></inertial>')

    def joint(name, parent, child):
        return (f'<link name="{child}">{inertial}</link>\n<joint name="{name}" '
                f'type="revolute"><parent link="{parent}"/><child link="{child}"/><origin '
                f'xyz="0.1 0 0" rpy="0 0 0"/><axis xyz="0 0 1"/><limit lower="-2" upper="2" '
                f'effort="10" velocity="5"/></joint>\n')

    parts = ['<robot name="star">\n<link name="base"/>\n', joint("hub", "base", "h")]
    parts += [joint(f"j{k}", "h", f"l{k}") for k in range(leaves)]
    path.write_text("".join(parts) + "</robot>\n")
    return str(path)


def dyn(args, memory: int):
    """dyn in a subprocess under RLIMIT_AS of ``memory`` bytes (one BLAS thread)."""
    def bounded():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run([sys.executable, "-m", "treedyn.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, preexec_fn=bounded,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def big_star(tmp_path_factory):
    return star_urdf(tmp_path_factory.mktemp("star") / "big.urdf", 20_000)


@pytest.mark.skipif(sys.platform != "linux", reason="rlimits")
def test_info_of_a_20000_link_star_holds_no_quadratic_array(big_star):
    """An (nv, nv) pattern alone would be 381 MiB here; the whole run fits in 512 MiB of
    address space."""
    done = dyn(["info", big_star, "--format", "json"], 512 << 20)
    assert done.returncode == 0, done.stderr[-2000:]
    info = json.loads(done.stdout)
    assert info["nv"] == 20_001 and info["tree"][0]["subtree_dofs"] == [0, 20_001]


NV = 5000  # past dyn mass's cap of 2^24 entries (nv 4096)


@pytest.fixture(scope="module")
def star(tmp_path_factory):
    return star_urdf(tmp_path_factory.mktemp("star") / "star.urdf", NV - 1)


@pytest.mark.skipif(sys.platform != "linux", reason="rlimits")
def test_mass_refuses_an_m_past_the_cap_before_computing(star):
    done = dyn(["mass", star, "--format", "json"], 1 << 30)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr
    assert f"{NV} x {NV}" in lines[0] and "--sparsity" in lines[0] and done.stdout == ""


@pytest.mark.skipif(sys.platform != "linux", reason="rlimits")
def test_mass_sparsity_past_the_cap_gives_the_structure_without_m(star):
    done = dyn(["mass", star, "--sparsity", "--format", "json"], 1 << 30)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1 and "structure" in done.stderr
    out = json.loads(done.stdout)
    nv = NV
    assert "M" not in out and len(out["dofs"]) == nv
    sparsity = out["sparsity"]
    assert "pattern" not in sparsity and "confirmed" not in sparsity
    # a star: the root dof couples with every leaf, each leaf with the root only
    assert sparsity["nnz"] == 3 * nv - 2 and sparsity["nnz_factor"] == 2 * nv - 1
    assert sparsity["fill_in"] == {"tree_order": 0,
                                   "root_first": nv * (nv - 1) // 2 - (nv - 1)}
    assert sparsity["factor"]["rownnz"] == [1] + [2] * (nv - 1)
    table = dyn(["mass", star, "--sparsity", "--format", "table"], 1 << 30)
    assert table.returncode == 0 and f"nnz: {3 * nv - 2} of {nv * nv}" in table.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="rlimits")
def test_condition_says_when_not_even_one_sample_fits(big_star):
    """One sample holds M twice (6.4 GB here), past the 4 GiB budget: the line says so
    rather than offering "at most 1"."""
    done = dyn(["condition", big_star, "--samples", "1"], 1 << 30)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert "too large" in lines[0] and "at most" not in lines[0]


@pytest.mark.skipif(sys.platform != "linux", reason="rlimits")
def test_check_inertia_of_the_big_star_never_forms_m(big_star):
    """Past its dense threshold check-inertia holds no M: all 8 samples in 1 GiB, every
    joint's articulated inertia judged against lambda_max(M)."""
    done = dyn(["check-inertia", big_star, "--format", "json"], 1 << 30)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert json.loads(done.stdout)["summary"]["articulated-inertia"]["pass"] == 20_001
