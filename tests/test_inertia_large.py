"""check-inertia on models too large for a dense M: the tree-level sweeps and Lanczos
(engine/subtree.py) against the dense path and their references, and a 20 000-link star
checked within 2 GB."""
from __future__ import annotations

import dataclasses
import json
from collections import Counter
import os
import resource
import subprocess
import sys

import numpy as np
import pytest

from random_trees import random_model
from reference_models import robot_urdfs
from treedyn.engine import build_model
from treedyn.engine.analysis.check_inertia import check_inertia
from treedyn.engine.analysis.inertia import CheckOptions
from treedyn.engine.analysis.inertia_body import Samples
from treedyn.engine.crba import crba
from treedyn.engine.reference import articulated_blocks
from treedyn.engine.samples import sample_configurations
from treedyn.engine.spatial import inertia_to_parent
from treedyn.engine.subtree import (BOUND_MARGIN, TreeSweeps, largest_eigenvalue_bounds,
                                    mass_product)
from treedyn.parsers import load_model, parse_urdf_string

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from bench_scaling import large_urdf, robot_urdf  # noqa: E402

ROBOTS = [path for path in robot_urdfs()
          if os.path.basename(path) in ("talos_full_v2.urdf", "solo12.urdf", "anymal.urdf",
                                        "panda.urdf", "ur5_robot.urdf", "romeo.urdf")]


def same_findings(model, samples: int = 4) -> None:
    """The dense path and the large-model path give the same findings."""
    options = CheckOptions(samples=samples)
    dense = check_inertia(model, options=options).findings
    large = check_inertia(model, options=dataclasses.replace(options, dense_dofs=0)).findings
    assert [(f.body, f.check, f.severity, f.status) for f in dense] == \
           [(f.body, f.check, f.severity, f.status) for f in large]
    for a, b in zip(dense, large):
        if isinstance(a.value, float):
            assert b.value == pytest.approx(a.value, rel=1e-6, abs=1e-300), (a.body, a.check)


def parse_model(text: str):
    return build_model(parse_urdf_string(text))


@pytest.mark.parametrize("path", ROBOTS, ids=os.path.basename)
@pytest.mark.parametrize("free_flyer", [False, True])
def test_large_path_same_findings_on_robots(path, free_flyer):
    same_findings(load_model(path, free_flyer=free_flyer))


@pytest.mark.parametrize("shape, bodies", [("chain", 1000), ("tree", 2000)])
def test_large_path_same_findings_on_generated(shape, bodies):
    same_findings(parse_model(robot_urdf(shape, bodies)), samples=2)


def test_large_path_same_findings_on_star():
    same_findings(parse_model(large_urdf("star", 1500)), samples=2)


def test_findings_counted_in_bulk_are_those_made_when_read():
    """Placeholder links and passing bodies are counted without making their findings;
    made when read, they are the ones counted, in the same order, and every failing
    finding (here a negative mass, swapped limits, a link that is no placeholder) is made
    from the start."""
    text = large_urdf("star", 300)
    for old, new in (('<mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" '
                      'izz="0.1"/>', '<mass value="1e5"/><inertia ixx="1e3" ixy="0" ixz="0" '
                      'iyy="1e3" iyz="0" izz="1e3"/>'),  # the links become placeholders
                     ('<link name="l7"><inertial><origin xyz="0.05 0 0" rpy="0 0 0"/><mass '
                      'value="0.5"/>', '<link name="l7"><inertial><origin xyz="0.05 0 0" '
                      'rpy="0 0 0"/><mass value="-0.5"/>'),
                     ('child link="l9"/><origin xyz="0.1 0 0" rpy="0 0 0"/><axis xyz="0 0 1"/>'
                      '<limit lower="-2" upper="2"', 'child link="l9"/><origin xyz="0.1 0 0" '
                      'rpy="0 0 0"/><axis xyz="0 0 1"/><limit lower="2" upper="-2"'),
                     ('<link name="l11"><inertial><origin xyz="0.05 0 0" rpy="0 0 0"/><mass '
                      'value="0.5"/>', '<link name="l11"><inertial><origin xyz="0.05 0 0" '
                      'rpy="0 0 0"/><mass value="500"/>')):
        assert old in text
        text = text.replace(old, new)
    report = check_inertia(parse_model(text), options=CheckOptions(samples=2))
    made = list(report.findings.made())
    every = list(report.findings)
    assert len(made) < len(every) // 2  # most are counted in bulk
    assert list(report.findings.kinds().items()) == \
        list(Counter((f.check, f.status, f.severity) for f in every).items())
    assert len(report.findings) == len(every)
    assert report.failed() == [f for f in every if f.status == "fail"]
    assert {(f.body, f.check) for f in report.failed()} >= {
        ("l7", "mass"), ("l9", "limits")}
    assert [f for f in made if f.body == "l11"]  # judged, not a placeholder


def test_quiet_links_context_made_only_when_read(monkeypatch):
    """A placeholder link counted in bulk has no context made (nor its messages formatted)
    until its findings are read; then every link has one, and the findings are those of
    the dense path."""
    import treedyn.engine.analysis.check_inertia as checks

    made = []
    real = checks._placeholder
    monkeypatch.setattr(checks, "_placeholder", lambda *args: made.append(1) or real(*args))
    model = parse_model(large_urdf("star", 300).replace(  # the links become placeholders
        '<mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>',
        '<mass value="1e5"/><inertia ixx="1e3" ixy="0" ixz="0" iyy="1e3" iyz="0" izz="1e3"/>'))
    report = check_inertia(model, options=CheckOptions(samples=2, dense_dofs=0))
    assert report.findings.kinds()[("inertia-pd", "skip", "info")] == 300
    assert len(made) == 1  # the base link alone: the others are quiet placeholders
    every = list(report.findings)
    assert len(made) == 301
    dense = check_inertia(model, options=CheckOptions(samples=2)).findings
    assert [(f.body, f.check, f.status, f.message) for f in every] == \
        [(f.body, f.check, f.status, f.message) for f in dense]


@pytest.mark.parametrize("seed", range(6))
def test_tree_sweeps_match_references(seed):
    """Composite blocks = M's diagonal blocks (armature excluded), D-blocks = the reference
    articulated sweep, lambda_max = eigvalsh of the dense M, on random trees with every
    joint type and a floating base."""
    rng = np.random.default_rng(seed)
    model = random_model(rng, 12, floating="free" if seed % 2 else None)
    q = sample_configurations(model, 3, seed)
    M = crba(model, q)
    sweeps = TreeSweeps(model, q)
    composite, articulated = sweeps.blocks()
    for j, D in enumerate(articulated_blocks(model, q)):
        dofs = slice(model.idx_v[j], model.idx_v[j] + model.nv_joint[j])
        np.testing.assert_allclose(composite[j], M[:, dofs, dofs] - np.diag(model.armature[dofs]),
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(articulated[j], D, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sweeps.largest_eigenvalues(), np.linalg.eigvalsh(M)[:, -1],
                               rtol=1e-8)


@pytest.mark.parametrize("seed", range(6))
def test_largest_eigenvalue_bounds_hold(seed):
    """The bound from the traces of M's diagonal blocks is at least eigvalsh's lambda_max of
    the dense M, on random trees with every joint type, armature and a floating base, and
    on a star of revolute joints on a fixed base (M diagonal) it is lambda_max itself, to
    the bound's margin."""
    rng = np.random.default_rng(seed)
    model = random_model(rng, 12, floating="free" if seed % 2 else None)
    q = sample_configurations(model, 3, seed)
    sweeps = TreeSweeps(model, q)
    largest = np.linalg.eigvalsh(crba(model, q))[:, -1]
    bound = largest_eigenvalue_bounds(model, sweeps.diagonal_traces())
    assert np.all(bound >= largest) and np.all(bound <= np.trace(crba(model, q), axis1=1,
                                                                 axis2=2) * 1.01)
    star = parse_model(large_urdf("star", 40 + seed))
    q = sample_configurations(star, 3, seed)
    largest = np.linalg.eigvalsh(crba(star, q))[:, -1]
    bound = largest_eigenvalue_bounds(star, TreeSweeps(star, q).diagonal_traces())
    assert np.all(largest <= bound) and np.all(bound <= largest * (1 + 2 * BOUND_MARGIN))


@pytest.mark.parametrize("dense_dofs", [0, 2000])
def test_passing_star_needs_no_lambda_max(monkeypatch, dense_dofs):
    """A star whose D-blocks all pass against the bound is counted without lambda_max (no
    Lanczos run past dense_dofs, no eigvalsh of M below); a threshold the bound cannot
    decide computes it, and the findings read are those of the exact lambda_max."""
    model = parse_model(large_urdf("star", 300))
    options = CheckOptions(samples=2, dense_dofs=dense_dofs)
    exact = Samples.largest.fget
    calls = []
    monkeypatch.setattr(Samples, "largest", property(lambda self: calls.append(1) or exact(self)))
    report = check_inertia(model, options=options)
    assert report.findings.kinds()[("articulated-inertia", "pass", "info")] == 300
    assert not calls
    assert [f.status for f in report.findings if f.check == "articulated-inertia"] == \
        ["pass"] * 300 and calls  # made when read: with the exact lambda_max
    calls.clear()  # every D-block is lambda_max here (equal links): ratio 1, the bound's 0.999
    strict = dataclasses.replace(options, min_block_ratio=0.9995)
    kinds = check_inertia(model, options=strict).findings.kinds()
    assert calls and kinds[("articulated-inertia", "pass", "info")] == 300
    assert kinds == check_inertia(model, options=dataclasses.replace(
        strict, dense_dofs=2000 - dense_dofs)).findings.kinds()


def test_mass_product_is_M_times_x():
    """M x by prefix sums in world coordinates against the dense CRBA M, on a floating
    random tree with multi-dof joints."""
    rng = np.random.default_rng(7)
    model = random_model(rng, 30, floating="free")
    q = sample_configurations(model, 1, 3)
    sweeps = TreeSweeps(model, q)
    R, p = sweeps.placements()
    S = sweeps.world_subspaces(R, p)[0]
    product = mass_product(model, S, inertia_to_parent(np.swapaxes(R[0], -1, -2), p[0],
                                                       model.body_inertia))
    x = rng.normal(size=model.nv)
    np.testing.assert_allclose(product(x), crba(model, q)[0] @ x, rtol=1e-9, atol=1e-9)


def bounded():
    limit = 2 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_check_inertia_on_a_20000_link_star_within_2_gb(tmp_path):
    path = tmp_path / "star.urdf"
    path.write_text(large_urdf("star", 20000))
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", "check-inertia", str(path),
                           "--format", "json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, preexec_fn=bounded)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    document = json.loads(done.stdout)
    assert document["summary"]["articulated-inertia"]["pass"] == 20000


def test_sample_budget_past_the_threshold_is_linear(tmp_path):
    """On 2 500 dofs a dense sample would hold M twice (100 MB: at most 42 samples); the
    large path's is about 1.5 MB, so the refusal offers thousands."""
    path = tmp_path / "star.urdf"
    path.write_text(large_urdf("star", 2500))
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", "check-inertia", str(path),
                           "--samples", "100000"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, preexec_fn=bounded)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    most = int(lines[0].split("at most ")[1].split()[0])
    assert 1000 < most < 100000


def test_tree_sweeps_transforms_are_the_references_bit_for_bit():
    """TreeSweeps turns every revolute joint in one call (RevoluteJoint.transforms): each
    joint's E and r equal reference.joint_transforms' exactly, whatever the joint types."""
    from treedyn.engine.reference import joint_transforms as reference
    from treedyn.engine.subtree import joint_transforms

    model = random_model(np.random.default_rng(3), 40, floating="free")
    q = sample_configurations(model, 6, 1)
    ours, theirs = joint_transforms(model, q), reference(model, q)
    for j in range(model.njoints):
        assert np.array_equal(ours.E[j], theirs.E[j]) and np.array_equal(ours.r[j], theirs.r[j])
        assert np.array_equal(ours.q[j], theirs.q[j])
