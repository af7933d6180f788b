"""treedyn's SDFormat parser against Drake's (the reference, test-only).

For the SDFormat models Drake ships (pydrake's share folder; those whose joints dyn reads)
and the hand-made files in ``data/sdf`` (nested models, ``model://`` includes, poses
``relative_to`` other frames, ``<frame>`` s, axes ``expressed_in`` other frames, each joint
type, SDFormat 1.4's model-frame axes, a world's gravity), at random states:

* M equals Drake's ``CalcMassMatrix`` and tau Drake's ``CalcInverseDynamics`` minus its
  ``CalcGravityGeneralizedForces`` (gravity set to the model's), max|ours - ref| /
  max|ref| <= 1e-9.

Drake's coordinates differ, mapped joint by joint (by name): a floating link's
q = (qw, qx, qy, qz, x, y, z), v = (w_world, v_world) against dyn's ``free_world``
q = (x, y, z, qw, qx, qy, qz), v = (v_world, w_link); a ball joint's rpy angles and
angular velocity in the parent frame against dyn's quaternion (qw, qx, qy, qz) and angular
velocity in the child frame. With v_drake = T v_dyn (T rotates the angular velocities),
M_dyn = T^T M_drake T and tau_dyn = T^T tau_drake at a_drake = T a_dyn (T-dot v is zero
for these joints). One plant per model (module fixture), many states per model.
"""
from __future__ import annotations

import functools
import glob
import os
import shutil

import numpy as np
import pytest

from treedyn.engine import crba, rnea
from treedyn.engine.rotations import quat_matrix
from treedyn.parsers import PackagePaths, load_description, load_model
from treedyn.parsers.errors import ParseError
from treedyn.engine.model import build_model

pydrake = pytest.importorskip("pydrake")  # drake has wheels for CPython 3.10-3.13 x86_64
from pydrake.math import RollPitchYaw, RotationMatrix  # noqa: E402
from pydrake.multibody.parsing import PackageMap, Parser  # noqa: E402
from pydrake.multibody.plant import MultibodyPlant  # noqa: E402
from pydrake.multibody.tree import JointIndex, MultibodyForces  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "data", "sdf")
EXAMPLES = os.path.join(os.path.dirname(pydrake.__file__), "share", "drake", "examples")
DRAKE_MODELS = sorted(glob.glob(os.path.join(EXAMPLES, "**", "*.sdf"), recursive=True))
TOL = 1e-9
STATES = 12


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    return float(np.abs(ours - reference).max() / max(np.abs(reference).max(), 1e-300))


class Reference:
    """Drake's plant of one SDFormat file, and dyn's model of it."""

    def __init__(self, path: str, paths: PackagePaths = PackagePaths()):
        self.model = build_model(load_description(path, packages=paths))
        self.plant = MultibodyPlant(0.0)
        parser = Parser(self.plant)
        for folder in paths.models:
            for name in os.listdir(folder):
                parser.package_map().Add(name, os.path.join(folder, name))
        parser.AddModels(path)
        self.plant.Finalize()
        self.plant.mutable_gravity_field().set_gravity_vector(self.model.gravity)
        self.context = self.plant.CreateDefaultContext()
        joints = [self.plant.get_joint(JointIndex(i)) for i in range(self.plant.num_joints())]
        self.joints = {self._scoped(joint.child_body()): joint for joint in joints
                       if joint.num_velocities()}  # by child link: Drake's names are not
        self.child = {joint.name: joint.child for joint in self.model.description.joints}
        assert self.plant.num_velocities() == self.model.nv

    def _scoped(self, body) -> str:
        """A Drake body's name as dyn scopes it (``nested::link``)."""
        instance = self.plant.GetModelInstanceName(body.model_instance())
        top = self.model.description.name
        return body.name() if instance == top else f"{instance[len(top) + 2:]}::{body.name()}"

    def states(self, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        model = self.model
        q = rng.uniform(-1.0, 1.0, (STATES, model.nq))
        for i, kind in enumerate(model.joint_types):
            start = model.idx_q[i]
            if kind in ("ball", "free_world"):
                block = slice(start, start + 4) if kind == "ball" else slice(start + 3, start + 7)
                quaternion = rng.normal(size=(STATES, 4))
                q[:, block] = quaternion / np.linalg.norm(quaternion, axis=1, keepdims=True)
        return q, rng.normal(size=(STATES, model.nv)), rng.normal(size=(STATES, model.nv))

    def drake_state(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Drake's q, T with v_drake = T v_dyn) at dyn's q."""
        model, plant = self.model, self.plant
        qd, T = np.zeros(plant.num_positions()), np.zeros((model.nv, model.nv))
        for i, name in enumerate(model.joint_names):
            kind, iq, iv = model.joint_types[i], model.idx_q[i], model.idx_v[i]
            joint = self.joints[self.child[name]]
            pq, pv = joint.position_start(), joint.velocity_start()
            if kind == "free_world":
                R = quat_matrix(q[iq + 3:iq + 7])
                qd[pq:pq + 7] = np.concatenate([q[iq + 3:iq + 7], q[iq:iq + 3]])
                T[pv:pv + 3, iv + 3:iv + 6] = R
                T[pv + 3:pv + 6, iv:iv + 3] = np.eye(3)
            elif kind == "ball":
                R = quat_matrix(q[iq:iq + 4])
                qd[pq:pq + 3] = RollPitchYaw(RotationMatrix(R)).vector()
                T[pv:pv + 3, iv:iv + 3] = R
            else:
                qd[pq] = q[iq]
                T[pv, iv] = 1.0
        return qd, T

    def compare(self, seed: int = 0) -> None:
        if self.model.nv == 0:  # a static model: every link welded to the world
            return
        q, v, a = self.states(seed)
        M, tau = crba(self.model, q), rnea(self.model, q, v, a)
        plant, context = self.plant, self.context
        M_ref, tau_ref = np.empty_like(M), np.empty_like(tau)
        forces = MultibodyForces(plant)
        for k in range(len(q)):
            qd, T = self.drake_state(q[k])
            plant.SetPositions(context, qd)
            plant.SetVelocities(context, T @ v[k])
            M_ref[k] = T.T @ plant.CalcMassMatrix(context) @ T
            tau_drake = (plant.CalcInverseDynamics(context, T @ a[k], forces)
                         - plant.CalcGravityGeneralizedForces(context))
            tau_ref[k] = T.T @ tau_drake
        assert relative_error(M, M_ref) <= TOL
        assert relative_error(tau, tau_ref) <= TOL


@functools.lru_cache(maxsize=None)
def reference(path: str) -> Reference:
    return Reference(path)


@pytest.mark.parametrize("path", DRAKE_MODELS, ids=os.path.basename)
def test_drake_examples_equal_drake(path):
    reference(path).compare()


@pytest.mark.parametrize("name", ["features.sdf", "legacy_1_4.sdf", "legacy_1_6.sdf"])
def test_features_equal_drake(name):
    reference(os.path.join(DATA, name)).compare(seed=1)


def test_includes_from_the_model_path_equal_drake(tmp_path):
    """model://gadget found through the model paths (a folder outside the model's own),
    included twice under new names and poses: once as a file (which Drake reads), once
    as a model folder whose model.config names the file (which Drake does not)."""
    models = tmp_path / "resources"
    shutil.copytree(os.path.join(DATA, "models"), models)
    model = tmp_path / "station" / "include.sdf"
    model.parent.mkdir()
    shutil.copy(os.path.join(DATA, "include.sdf"), model)
    paths = PackagePaths(models=(str(models),))
    Reference(str(model), paths).compare(seed=2)
    description = load_description(str(model), packages=paths)
    assert {"left::pinch", "right::pinch", "left::body", "right::finger"} <= {
        *(joint.name for joint in description.joints), *(link.name for link in description.links)}
    pinch = next(joint for joint in description.joints if joint.name == "left::pinch")
    assert pinch.source.file == os.path.join(str(models), "gadget", "gadget.sdf")
    files = build_model(description)
    model.write_text(model.read_text().replace("model://gadget/gadget.sdf", "model://gadget"))
    folders = build_model(load_description(str(model), packages=paths))
    q = np.random.default_rng(3).uniform(-1, 1, (4, files.nq))
    np.testing.assert_array_equal(crba(folders, q), crba(files, q))
    with pytest.raises(ParseError, match=r'include\.sdf:14: <include>: <uri> '
                                         r'"model://gadget" names no file'):
        load_description(str(model))


# -- refusals and commands ----------------------------------------------------------------

SMALL = """<?xml version="1.0"?>
<sdf version="1.7">
  <model name="small">
    <link name="a"><inertial><mass>1</mass></inertial></link>
    <link name="b"><pose>0 0 0.5 0 0 0</pose><inertial><mass>2</mass></inertial></link>
    <joint name="j" type="{kind}">
      <parent>a</parent>
      <child>b</child>
    </joint>
  </model>
</sdf>
"""


def dyn(args: list, cwd) -> tuple[int, str, str]:
    from in_process import dyn_here

    done = dyn_here(args, cwd=cwd)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


@pytest.mark.parametrize("kind", ["universal", "screw", "revolute2", "gearbox"])
def test_unsupported_joints_are_refused_at_their_line(tmp_path, kind):
    (tmp_path / "m.sdf").write_text(SMALL.format(kind=kind))
    code, out, err = dyn(["info", "m.sdf"], tmp_path)
    assert (code, out) == (2, "")
    assert err == (f'm.sdf:6: <joint name="j">: a {kind} joint is not supported (dyn '
                   "reads revolute, continuous, prismatic, fixed and ball joints)\n")


@pytest.mark.parametrize("text, line, problem", [
    ('<sdf version="1.7"><world name="w"><model name="a"><link name="l"/></model>\n'
     '<model name="b"><link name="l"/></model></world></sdf>', 2,
     "a second <model>: dyn reads one model per file"),
    ('<sdf version="2.0">\n<model name="a"><link name="l"/></model></sdf>', 1,
     '<sdf>: version="2.0": dyn reads SDFormat 1.4 to 1.11'),
    ('<sdf version="1.7"><model name="a">\n<link name="l"/><joint name="l" type="fixed">'
     '<parent>world</parent><child>l</child></joint></model></sdf>', 2,
     'the name "l" is taken'),
    ('<sdf version="1.8"><model name="a">\n<link name="l"><pose relative_to="nowhere"/>'
     '</link></model></sdf>', 2, '"nowhere" names no link, joint, frame or model'),
    ('<sdf version="1.8"><model name="a"><link name="l"><pose relative_to="f"/></link>\n'
     '<frame name="f"><pose relative_to="l"/></frame></model></sdf>', 1,
     "relative_to form a cycle"),
    ('<sdf version="1.7"><model name="a"><link name="l"/>\n<include><uri>../outside.sdf'
     '</uri></include></model></sdf>', 2, "outside the model's folder"),
    ('<sdf version="1.7"><model name="a"><link name="l"/>\n<include><uri>m.sdf</uri>'
     '</include></model></sdf>', 2, "includes nest deeper than 32"),
])
def test_invalid_files_name_their_line(tmp_path, text, line, problem):
    (tmp_path / "in").mkdir()
    (tmp_path / "outside.sdf").write_text('<sdf version="1.7"><model name="o"><link '
                                          'name="l"/></model></sdf>')
    (tmp_path / "in" / "m.sdf").write_text(text)
    code, out, err = dyn(["info", "m.sdf"], tmp_path / "in")
    assert (code, out) == (2, "")
    assert err.startswith(f"m.sdf:{line}: ") and problem in err and err.count("\n") == 1


def test_world_gravity_and_floating_root():
    description = load_description(os.path.join(DATA, "features.sdf"))
    np.testing.assert_array_equal(description.gravity, [0.5, -0.25, -9.7])
    free = [joint for joint in description.joints if joint.type == "free_world"]
    assert [joint.name for joint in free] == ["base"]
    np.testing.assert_allclose(np.linalg.norm(free[0].neutral[3:]), 1.0)
    assert {site.name: site.link for site in description.sites} == {
        "mount": "base", "mount_tip": "base"}
    kinds = {shape.kind for link in description.links for shape in link.geometry}
    assert kinds == {"box", "cylinder", "capsule", "ellipsoid", "sphere"}
    fixed = load_description(os.path.join(DATA, "legacy_1_4.sdf"))
    np.testing.assert_array_equal(fixed.gravity, [0.0, 0.0, -9.81])
    assert "free_world" not in {joint.type for joint in fixed.joints}


def test_commands_read_sdf():
    model = os.path.join(DATA, "legacy_1_4.sdf")
    code, out, err = dyn(["info", model, "--format", "json"], DATA)
    assert code == 0 and '"format": "sdf"' in out
    code, out, err = dyn(["inverse", model, "--q", "0.3,0.1", "--format", "json"], DATA)
    reference_model = reference(model).model
    import json

    tau = rnea(reference_model, np.array([0.3, 0.1]), np.zeros(2), np.zeros(2))
    np.testing.assert_allclose(json.loads(out)["tau"], tau, rtol=1e-12)
    code, out, err = dyn(["mass", model, "--q", "0.3,0.1", "--format", "json"], DATA)
    np.testing.assert_allclose(json.loads(out)["M"], crba(reference_model, np.array([0.3, 0.1])),
                               rtol=1e-12)
    code, out, err = dyn(["check-inertia", model], DATA)
    assert code in (0, 1) and "legacy" in out + err
    code, out, err = dyn(["frames", "features.sdf", "--frame", "joint:camera_mount", "--frame",
                          "mount", "--format", "json"], DATA)
    assert code == 0 and json.loads(out)["frames"] == ["joint:camera_mount", "mount"]
    code, out, err = dyn(["info", "features.sdf", "--free-flyer"], DATA)
    assert code == 2 and "an SDFormat model floats unless a joint attaches it" in err


BAD_INERTIA = """<sdf version="1.7"><model name="a">
<link name="b"><inertial><mass>1</mass>{b}</inertial></link>
<link name="c"><pose>0 0 1 0 0 0</pose><inertial><pose>0 0 0 0.3 0.2 0</pose><mass>2</mass>
{c}</inertial></link>
<joint name="j" type="revolute"><parent>b</parent><child>c</child></joint>
</model></sdf>
"""


def test_check_inertia_fixes_paste_into_sdf(tmp_path):
    """--fix suggests SDFormat elements: pasted over the <mass> and <inertia>, the links
    pass; identify --write refuses an SDFormat model."""
    tensors = ["<inertia><ixx>1</ixx><iyy>1</iyy><izz>3</izz></inertia>",
               "<inertia><ixx>0.1</ixx><ixy>0.01</ixy><iyy>0.1</iyy><izz>0.3</izz></inertia>"]
    (tmp_path / "m.sdf").write_text(BAD_INERTIA.format(b=tensors[0], c=tensors[1]))
    code, out, err = dyn(["check-inertia", "m.sdf", "--fix", "--format", "json"], tmp_path)
    import json

    fixes = [finding["fix"]["element"] for finding in json.loads(out)["findings"]]
    assert code == 1 and len(fixes) == 2 and all(fix.startswith("<mass>") for fix in fixes)
    fixed = [fix.split(" ", 1)[1] for fix in fixes]  # the <inertia>, same mass
    (tmp_path / "m.sdf").write_text(BAD_INERTIA.format(b=fixed[0], c=fixed[1]))
    code, out, err = dyn(["check-inertia", "m.sdf"], tmp_path)
    assert code == 0, out
    (tmp_path / "log.csv").write_text("q:j,v:j,a:j,tau:j\n0,0,0,0\n")
    code, out, err = dyn(["identify", "m.sdf", "--input", "log.csv", "--write", "n.sdf"],
                         tmp_path)
    assert code == 2 and "SDF model is not supported" in err


def test_a_long_chain_of_frames_is_placed(tmp_path):
    """A link placed relative to the last of 2 000 frames, each 1 mm along x from the one
    before: the link is 2 m out (the chain was followed one call per frame, and Python's
    stack ran out: an internal error)."""
    from treedyn.engine.named import frame_placements, frame_set

    frames = '<frame name="f0"><pose>0.001 0 0 0 0 0</pose></frame>' + "".join(
        f'<frame name="f{k}"><pose relative_to="f{k - 1}">0.001 0 0 0 0 0</pose></frame>'
        for k in range(1, 2000))
    path = tmp_path / "chain.sdf"
    path.write_text(
        '<sdf version="1.8"><model name="m"><link name="a"/>' + frames
        + '<link name="b"><pose relative_to="f1999"/></link>'
        '<joint name="j" type="revolute"><parent>a</parent><child>b</child>'
        '<axis><xyz>0 0 1</xyz><limit><lower>-1</lower><upper>1</upper></limit></axis>'
        '</joint><joint name="fix" type="fixed"><parent>world</parent><child>a</child>'
        '</joint></model></sdf>')
    model = load_model(str(path))
    _, p = frame_placements(model, np.zeros((1, model.nq)), frame_set(model, ["b"]))
    np.testing.assert_allclose(p[0, 0], [2.0, 0.0, 0.0], atol=1e-12)


def test_mesh_beside_a_model_named_from_another_folder(tmp_path, monkeypatch):
    """A mesh written relative to the model's file is found when the model is named from
    another folder (``in/m.sdf``): once, from the including file's folder (it was looked
    for again from the model's folder, as in/in/meshes/wedge.stl, and not found)."""
    from treedyn.parsers.link_geometry import link_geometry

    (tmp_path / "in" / "meshes").mkdir(parents=True)
    shutil.copy("fixtures/meshes/wedge.stl", tmp_path / "in" / "meshes")
    (tmp_path / "in" / "m.sdf").write_text(
        '<sdf version="1.7"><model name="m"><link name="a"><inertial><mass>1</mass>'
        '</inertial><collision name="c"><geometry><mesh><uri>meshes/wedge.stl</uri></mesh>'
        '</geometry></collision></link></model></sdf>')
    monkeypatch.chdir(tmp_path)
    geometry = link_geometry(load_description("in/m.sdf"), "in/m.sdf")["a"]
    assert geometry.solids and not geometry.missing, geometry


def test_a_package_name_too_long_for_the_system_is_a_package_not_found(tmp_path):
    """A mesh's package:// name longer than a file name may be: looking for the package is
    no error of the model file (the system's ENAMETOOLONG is "not there"); the mesh is
    left unresolved as any package not found."""
    name = "x" * 5000
    path = tmp_path / "m.sdf"
    path.write_text('<sdf version="1.9"><model name="m"><link name="a"><inertial><mass>1'
                    '</mass></inertial><visual name="v"><geometry><mesh><uri>package://'
                    f'{name}/a.stl</uri></mesh></geometry></visual></link></model></sdf>')
    model = load_model(str(path), packages=PackagePaths(ros=(str(tmp_path),)))
    assert model.total_mass == pytest.approx(1.0)  # (a free link: SDFormat has no world joint)
