"""Mimic joints enforced (``--mimic``, :mod:`treedyn.engine.coupling`) against Pinocchio 4.1's
``buildModelFromUrdf(path, mimic=True)``.

* tau (RNEA), M (CRBA) and forward a agree with Pinocchio to 1e-9 relative (max |ours -
  pin| / max |pin|) at random states, fixed base and with a free-flyer, on the
  example-robot-data URDFs with mimic joints that Pinocchio loads with mimic=True and on
  ``fixtures/urdf/gripper_mimic.urdf``. Pinocchio's ABA refuses mimic joints; its forward
  dynamics is taken as ``solve(crba, tau - nonLinearEffects)`` on the mimic model.
* Where Pinocchio refuses a relation that is well defined (a master after its mimic in its
  depth-first order, a continuous joint mimicking a revolute one), the reference is
  Pinocchio's uncoupled model at the expanded state, projected: ``G^T tau``, ``G^T M G``
  -- the identity that holds on every model Pinocchio does load with mimic=True (checked
  here too).
* The batched path agrees with the readable one (reference.py) to 1e-12.
* Refusals (a mimic of itself, of a missing or fixed joint, of a floating joint, of a
  mimic: a chain or a cycle) are exit 2 with one stderr line naming the file, the line of
  the ``<mimic>`` and the joint -- where Pinocchio refuses them too; without --mimic a mimic
  of itself or of a missing joint is one warning line.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from forked import dyn_process
from reference_models import robots_root
from treedyn.engine import aba, crba, rnea
from treedyn.engine.coupling import couple
from treedyn.engine.reference import aba_reference, coupling_reference, crba_reference, rnea_reference
from treedyn.parsers import load_model

pin = pytest.importorskip("pinocchio")

ROOT = Path(__file__).resolve().parents[1]
GRIPPER = str(ROOT / "fixtures" / "urdf" / "gripper_mimic.urdf")
TOL = 1e-9
STATES = 4
ROBOTS = robots_root()
REAL = [os.path.join(ROBOTS, path) for path in (
    "panda_description/urdf/panda.urdf", "pr2_description/urdf/pr2.urdf",
    "tiago_pro_description/robots/tiago_pro.urdf", "baxter_description/urdf/baxter.urdf")
    if ROBOTS and os.path.exists(os.path.join(ROBOTS, path))]


def pinocchio_model(path: str, free_flyer: bool, mimic: bool):
    if free_flyer:
        return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer(), mimic=mimic)
    return pin.buildModelFromUrdf(path, mimic=mimic)


class Mapping:
    """treedyn's coordinates to Pinocchio's, joint by joint by name (continuous: cos, sin)."""

    def __init__(self, model, pinmodel):
        self.model, self.pinmodel = model, pinmodel
        own = [j for j in range(model.njoints) if model.nv_joint[j]]
        self.joints = [(j, pinmodel.getJointId(model.joint_names[j])) for j in own]
        self.v_index = np.array([k for _, p in self.joints
                                 for k in range(pinmodel.idx_vs[p], pinmodel.idx_vs[p]
                                                + pinmodel.nvs[p])], dtype=int)
        assert len(self.v_index) == model.nv == pinmodel.nv

    def q(self, q):
        out = np.array(pin.neutral(self.pinmodel))
        for j, p in self.joints:
            block = q[self.model.idx_q[j]:self.model.idx_q[j] + self.model.nq_joint[j]]
            if self.model.joint_types[j] == "continuous":
                block = [np.cos(block[0]), np.sin(block[0])]
            out[self.pinmodel.idx_qs[p]:self.pinmodel.idx_qs[p] + len(block)] = block
        return out

    def v(self, v):
        out = np.zeros(self.pinmodel.nv)
        out[self.v_index] = v
        return out


def relative(ours, theirs) -> float:
    return float(np.max(np.abs(ours - theirs)) / max(np.max(np.abs(theirs)), 1e-300))


def states(model, seed: int = 3):
    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng, STATES)
    return q, *(rng.normal(size=(STATES, model.nv)) for _ in range(3))


def symmetric(M):
    return np.triu(M) + np.triu(M, 1).T


CASES = [(path, free) for path in [GRIPPER] + REAL for free in (False, True)]


@pytest.mark.parametrize("path,free_flyer", CASES,
                         ids=[f"{Path(p).stem}{'-ff' if f else ''}" for p, f in CASES])
def test_tau_mass_forward_agree_with_pinocchio_mimic(path, free_flyer):
    model = couple(load_model(path, free_flyer=free_flyer))
    assert model.coupling is not None
    pinmodel = pinocchio_model(path, free_flyer, mimic=True)
    data = pinmodel.createData()
    mapping = Mapping(model, pinmodel)
    assert (model.nq, model.nv) == (pinmodel.nq - sum(
        model.joint_types[j] == "continuous" for j, _ in mapping.joints), pinmodel.nv)
    q, v, a, tau = states(model)
    T, M, A = rnea(model, q, v, a), crba(model, q), aba(model, q, v, tau)
    for n in range(STATES):
        qp, vp = mapping.q(q[n]), mapping.v(v[n])
        tau_pin = pin.rnea(pinmodel, data, qp, vp, mapping.v(a[n]))[mapping.v_index]
        M_pin = symmetric(pin.crba(pinmodel, data, qp))
        h_pin = pin.nonLinearEffects(pinmodel, data, qp, vp)
        a_pin = np.linalg.solve(M_pin, mapping.v(tau[n]) - h_pin)[mapping.v_index]
        M_pin = M_pin[np.ix_(mapping.v_index, mapping.v_index)]
        assert relative(T[n], tau_pin) < TOL
        assert relative(M[n], M_pin) < TOL
        assert relative(A[n], a_pin) < TOL


def test_pinocchio_mimic_is_the_projection_of_its_uncoupled_model():
    """The reference of the cases Pinocchio refuses, checked where it does not."""
    model = couple(load_model(GRIPPER))
    coupled, full = (pinocchio_model(GRIPPER, False, mimic) for mimic in (True, False))
    mapping, full_map = Mapping(model, coupled), Mapping(model.coupling.full, full)
    q, v, a, _ = states(model)
    for n in range(STATES):
        q_full, G = coupling_reference(model, q[n])
        tau_full = pin.rnea(full, full.createData(), full_map.q(q_full), full_map.v(G @ v[n]),
                            full_map.v(G @ a[n]))[full_map.v_index]
        tau = pin.rnea(coupled, coupled.createData(), mapping.q(q[n]), mapping.v(v[n]),
                       mapping.v(a[n]))[mapping.v_index]
        assert relative(G.T @ tau_full, tau) < 1e-12


def projected_reference(model, path, q, v, a):
    """Pinocchio's uncoupled model at the expanded state: (G^T tau, G^T M G)."""
    full = pinocchio_model(path, False, mimic=False)
    data, mapping = full.createData(), Mapping(model.coupling.full, full)
    taus, masses = [], []
    for n in range(len(q)):
        q_full, G = coupling_reference(model, q[n])
        qp = mapping.q(q_full)
        taus.append(G.T @ pin.rnea(full, data, qp, mapping.v(G @ v[n]),
                                   mapping.v(G @ a[n]))[mapping.v_index])
        M = symmetric(pin.crba(full, data, qp))[np.ix_(mapping.v_index, mapping.v_index)]
        masses.append(G.T @ M @ G)
    return np.array(taus), np.array(masses)


def reordered_gripper(folder: Path) -> str:
    """The gripper with a master after its mimic in the depth-first order (siblings by
    name: 'a_finger_mirror' < 'finger_joint'), and a continuous joint mimicking a revolute
    one: both refused by Pinocchio's mimic=True, both well defined."""
    text = Path(GRIPPER).read_text().replace('name="finger_mirror"', 'name="a_finger_mirror"')
    path = folder / "reordered.urdf"
    path.write_text(text.replace('<mimic joint="wrist"', '<mimic joint="elbow"'))
    return str(path)


REFUSED_BY_PINOCCHIO = [os.path.join(ROBOTS, path) for path in (
    "romeo_description/urdf/romeo.urdf", "talos_data/robots/talos_full_v2.urdf")
    if ROBOTS and os.path.exists(os.path.join(ROBOTS, path))]


@pytest.mark.parametrize("path", ["reordered"] + REFUSED_BY_PINOCCHIO,
                         ids=lambda p: Path(p).stem)
def test_relations_pinocchio_refuses_but_are_well_defined(path, tmp_path):
    """Against Pinocchio's uncoupled model at the expanded state, projected through G
    (romeo's massless fingers make its M singular: tau and M only)."""
    if path == "reordered":
        path = reordered_gripper(tmp_path)
    with pytest.raises(ValueError, match="not in the kinematic tree|configuration spaces"):
        pinocchio_model(path, False, mimic=True)
    model = couple(load_model(path))
    q, v, a, tau = states(model)
    tau_ref, M_ref = projected_reference(model, path, q, v, a)
    assert relative(rnea(model, q, v, a), tau_ref) < TOL
    assert relative(crba(model, q), M_ref) < TOL
    if "romeo" not in path:
        h_ref = projected_reference(model, path, q, v, np.zeros_like(a))[0]
        a_ref = np.linalg.solve(M_ref, (tau - h_ref)[..., None])[..., 0]
        assert relative(aba(model, q, v, tau), a_ref) < TOL


def test_batched_path_matches_the_readable_one():
    for free_flyer in (False, True):
        model = couple(load_model(GRIPPER, free_flyer=free_flyer))
        q, v, a, tau = states(model, seed=5)
        fext = np.random.default_rng(2).normal(size=(STATES, model.njoints, 6))
        T, M = rnea(model, q, v, a, fext), crba(model, q)
        A = aba(model, q, v, tau, fext)
        for n in range(STATES):
            assert relative(T[n], rnea_reference(model, q[n], v[n], a[n], fext[n])) < 1e-12
            assert relative(M[n], crba_reference(model, q[n])) < 1e-12
            assert relative(A[n], aba_reference(model, q[n], v[n], tau[n], fext[n])) < 1e-10


def test_coupling_arrays_are_those_of_the_readable_path():
    model = couple(load_model(GRIPPER, free_flyer=True))
    q = states(model)[0]
    for n in range(STATES):
        q_full, G = coupling_reference(model, q[n])
        np.testing.assert_array_equal(model.coupling.expand_q(q[n:n + 1])[0], q_full)
        np.testing.assert_array_equal(model.coupling.G, G)
    assert model.nq == model.coupling.full.nq - 4 and model.nv == model.coupling.full.nv - 4


def test_a_model_without_mimic_joints_is_left_as_it_is():
    model = load_model(str(ROOT / "fixtures" / "two_link_arm.urdf"))
    assert couple(model) is model


# -- the command line -------------------------------------------------------------------

def dyn(*args: str) -> subprocess.CompletedProcess:
    """``dyn ARGS`` as a whole process (tests/forked.py), stdout and stderr as text."""
    done = dyn_process(args, cwd=ROOT, timeout=120)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(),
                                       done.stderr.decode())


def test_cli_inverse_forward_mass_use_the_coupled_coordinates():
    run = dyn("inverse", GRIPPER, "--mimic", "--q", "finger_joint=0.4,wrist=0.2",
              "--v", "0.1,0.2,0.3,0.4", "--a", "1,-1,0.5,2", "--format", "json")
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    assert document["dofs"] == ["shoulder", "elbow", "wrist", "finger_joint"]
    model = couple(load_model(GRIPPER))
    q = model.q_neutral.copy()
    q[[2, 3]] = 0.2, 0.4
    expected = rnea(model, q, [0.1, 0.2, 0.3, 0.4], [1, -1, 0.5, 2])
    np.testing.assert_allclose(document["tau"], expected, rtol=0, atol=1e-12)
    forward = dyn("forward", GRIPPER, "--mimic", "--tau", ",".join(map(str, expected)),
                  "--q", "finger_joint=0.4,wrist=0.2", "--v", "0.1,0.2,0.3,0.4", "-f", "json")
    np.testing.assert_allclose(json.loads(forward.stdout)["a"], [1, -1, 0.5, 2], atol=1e-9)
    mass = json.loads(dyn("mass", GRIPPER, "--mimic", "--free-flyer", "-f", "json").stdout)
    assert np.array(mass["M"]).shape == (10, 10)


def test_cli_names_a_mimic_joint_given_a_value():
    run = dyn("inverse", GRIPPER, "--mimic", "--q", "finger_mirror=0.3")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "dyn: --q: joint 'finger_mirror' mimics 'finger_joint' (--mimic): it has no "
        "coordinate of its own; give 'finger_joint'"]


def test_cli_verify_identities_hold_on_the_coupled_model():
    for extra in ([], ["--free-flyer"]):
        paths = [GRIPPER] + REAL[1:2]
        for path in paths:
            run = dyn("verify", path, "--mimic", *extra, "--format", "json")
            assert run.returncode == 0, (path, run.stdout)
            results = json.loads(run.stdout)["identities"]
            assert all(r["status"] in ("pass", "skip") for r in results)
            assert sum(r["status"] == "pass" for r in results) >= 7


def test_cli_info_shows_the_coupling():
    document = json.loads(dyn("info", GRIPPER, "--mimic", "--format", "json").stdout)
    assert (document["nq"], document["nv"]) == (4, 4)
    joints = {j["name"]: j for j in document["joints"]}
    assert joints["finger_tip"]["mimic"] == {"joint": "finger_joint", "multiplier": 0.5,
                                             "offset": 0.1, "enforced": True}
    assert (joints["finger_tip"]["nq"], joints["finger_tip"]["nv"]) == (0, 0)
    assert joints["finger_tip"]["idx_v"] == joints["finger_joint"]["idx_v"]
    assert [e["label"] for e in document["layout"]["q"]] == ["shoulder", "elbow", "wrist",
                                                            "finger_joint"]
    plain = json.loads(dyn("info", GRIPPER, "--format", "json").stdout)
    assert {j["name"]: j.get("mimic") for j in plain["joints"]}["finger_tip"] == {
        "joint": "finger_joint", "multiplier": 0.5, "offset": 0.1}
    assert (plain["nq"], plain["nv"]) == (8, 8)
    table = dyn("info", GRIPPER, "--mimic", "--format", "table").stdout
    assert "finger_tip (revolute) -> tip_left [0.02 kg]  no dofs (mimics finger_joint)" in table
    assert "mimic joints (enforced" in table


LINK = ('<link name="{}"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" '
        'iyy="0.1" iyz="0" izz="0.1"/></inertial></link>')


def robot(joints: list[str]) -> str:
    """A URDF of these joints (one per line) and the links they move."""
    links = [name for name in "ABC" if any(f'child link="{name}"' in j for j in joints)]
    return ('<robot name="r"><link name="base"/>' + "".join(map(LINK.format, links)) + "\n"
            + "".join(joints) + "</robot>\n")


def joint(name, kind, parent, child, mimic=None):
    limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>' \
        if kind in ("revolute", "prismatic") else ""
    tag = f'\n<mimic joint="{mimic}" multiplier="2"/>' if mimic else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child '
            f'link="{child}"/><axis xyz="0 0 1"/>{limit}{tag}</joint>\n')


REFUSED = {  # case -> (joints, the mimic joint, what the line says)
    "self": ([joint("a", "revolute", "base", "A", "a")], "a", "it mimics itself"),
    "missing": ([joint("a", "revolute", "base", "A", "zz")], "a",
                "it mimics 'zz', not a joint of the model"),
    "fixed": ([joint("a", "fixed", "base", "A"), joint("b", "revolute", "A", "B", "a")], "b",
              "it mimics 'a', a fixed joint, which has no coordinate"),
    "floating": ([joint("a", "floating", "base", "A"), joint("b", "revolute", "A", "B", "a")],
                 "b", "it mimics 'a', a free joint: only a revolute, continuous or prismatic "
                 "joint can be mimicked"),
    "chain": ([joint("a", "revolute", "base", "A"), joint("b", "revolute", "A", "B", "a"),
               joint("c", "revolute", "B", "C", "b")], "c",
              "it mimics 'b', which itself mimics 'a' (a chain)"),
    "cycle": ([joint("a", "revolute", "base", "A", "b"), joint("b", "revolute", "A", "B", "a")],
              "a", "it mimics 'b', which mimics 'a' back (a cycle)"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_where_pinocchio_refuses(case, tmp_path):
    joints, name, problem = REFUSED[case]
    path = tmp_path / f"{case}.urdf"
    path.write_text(robot(joints))
    with pytest.raises(ValueError, match="mimic joint|configuration spaces"):
        pin.buildModelFromUrdf(str(path), mimic=True)
    pin.buildModelFromUrdf(str(path))  # it loads without mimic=True
    run = dyn("inverse", str(path), "--mimic")
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1
    text = robot(joints).splitlines()
    line = next(i + 1 for i, row in enumerate(text) if row.startswith("<mimic")
                and text[i - 1].startswith(f'<joint name="{name}"'))
    assert lines[0].startswith(f'{path}:{line}: <joint name="{name}">: {problem}'), lines[0]
    assert dyn("info", str(path), "--format", "json").returncode == 0


@pytest.mark.parametrize("case,what", [("self", "the joint itself"),
                                       ("missing", "a joint the file does not have")])
def test_without_mimic_a_broken_relation_is_one_warning(case, what, tmp_path):
    path = tmp_path / f"{case}.urdf"
    path.write_text(robot(REFUSED[case][0]))
    run = dyn("info", str(path), "--format", "json")
    assert run.returncode == 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dyn: warning: {path}:")
    assert f"names {what}: the relation cannot hold" in lines[0]


def test_an_mjcf_model_has_nothing_to_couple():
    run = dyn("info", str(ROOT / "fixtures" / "mjcf" / "armature.xml"), "--mimic", "-f", "json")
    plain = dyn("info", str(ROOT / "fixtures" / "mjcf" / "armature.xml"), "-f", "json")
    assert run.returncode == 0 and run.stdout == plain.stdout


def test_a_cluster_worker_gets_the_coupled_model():
    """--mimic travels with a Dask run: the workers get the model the client loaded
    (pickled, as ``client.scatter`` sends it), coupling and all."""
    import pickle

    from treedyn.pipeline.layout import Layout
    from treedyn.session.models import load_model

    layout = pickle.loads(pickle.dumps(Layout.of(load_model(GRIPPER, False, mimic=True))))
    model = layout.model
    assert model.coupling is not None and (model.nq, model.nv) == (4, 4)


def branches(folder: Path) -> str:
    """A mimic joint in another branch than its master, with a joint of its own below it:
    M couples the branches (master a and joint c, neither supporting the other)."""
    path = folder / "branches.urdf"
    path.write_text(robot([joint("a", "revolute", "base", "A"),
                           joint("m", "prismatic", "base", "B", "a"),
                           joint("c", "revolute", "B", "C")]).replace(
        '<axis xyz="0 0 1"/>', '<origin xyz="0.1 0.2 0" rpy="0.3 0 0"/><axis xyz="0 1 1"/>'))
    return str(path)


def test_a_mimic_coupling_branches_against_pinocchio(tmp_path):
    path = branches(tmp_path)
    model = couple(load_model(path))
    assert not model.coupling.tree_sparse  # a and c couple (through m)
    pinmodel = pinocchio_model(path, False, mimic=True)
    data, mapping = pinmodel.createData(), Mapping(model, pinmodel)
    q, v, a, tau = states(model)
    for n in range(STATES):
        qp, vp = mapping.q(q[n]), mapping.v(v[n])
        M_pin = symmetric(pin.crba(pinmodel, data, qp))
        a_pin = np.linalg.solve(M_pin, mapping.v(tau[n]) - pin.nonLinearEffects(
            pinmodel, data, qp, vp))[mapping.v_index]
        assert relative(rnea(model, q[n], v[n], a[n]), pin.rnea(
            pinmodel, data, qp, vp, mapping.v(a[n]))[mapping.v_index]) < TOL
        assert relative(crba(model, q[n]), M_pin[np.ix_(mapping.v_index, mapping.v_index)]) < TOL
        assert relative(aba(model, q[n], v[n], tau[n]), a_pin) < TOL
    run = dyn("verify", path, "--mimic", "--format", "json")
    assert run.returncode == 0
    factor = next(r for r in json.loads(run.stdout)["identities"] if r["name"] == "factor-aba")
    assert factor["status"] == "skip"
    refused = dyn("mass", path, "--mimic", "--sparsity", "--format", "json")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert dyn("mass", path, "--sparsity", "--format", "json").returncode == 0


def test_degrees_follow_the_coordinates_that_remain(tmp_path):
    """A revolute joint mimicking a prismatic one leaves the prismatic q in metres."""
    from treedyn.pipeline.layout import Layout

    path = tmp_path / "slide.urdf"
    path.write_text(robot([joint("s", "prismatic", "base", "A"),
                           joint("t", "revolute", "A", "B", "s")]))
    layout = Layout.of(couple(load_model(str(path))), degrees=True)
    assert layout.q_scale.tolist() == [1.0] and not layout.angular.any()
