"""``dyn convert`` URDF -> MJCF against the references: MuJoCo on the written MJCF gives
Pinocchio's M, inverse and forward dynamics of the URDF (fixed base and free-flyer), carries
the joints' limits, damping, friction and effort limits as Pinocchio reads them, and
``dyn diff`` finds no change."""
from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from in_process import dyn_here
from reference_models import robot_urdfs
from test_named_frames import URDFS
from treedyn.parsers import ParseError, load_description, load_model
from treedyn.parsers.writers import convert

mujoco = pytest.importorskip("mujoco")
pin = pytest.importorskip("pinocchio")

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"
MIMIC = ROOT / "fixtures" / "urdf" / "gripper_mimic.urdf"
STATES = 5
TOL = 1e-9
CASES = [(path, free) for path in URDFS for free in (False, True)]
IDS = [f"{Path(path).stem}-{'free' if free else 'fixed'}" for path, free in CASES]
OUT = Path(tempfile.mkdtemp(prefix="treedyn-convert-"))
# removed when the process ends, not with the module: the workers steal tests, so a
# module's tests can run on after another file's, while converted() still holds OUT's paths
atexit.register(shutil.rmtree, OUT, ignore_errors=True)


@functools.lru_cache(maxsize=None)
def converted(path: str, free_flyer: bool):
    """(the written MJCF's path, its MjModel, Pinocchio's model of the URDF): each built once."""
    result = convert(load_description(path), ".xml", free_flyer=free_flyer, source=path)
    out = OUT / f"{Path(path).stem}-{free_flyer}.xml"
    out.write_text(result.text)
    mj = mujoco.MjModel.from_xml_path(str(out))
    pinmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer
                else pin.buildModelFromUrdf(path))
    return out, mj, pinmodel


class Coordinates:
    """MuJoCo's q, v of a model against Pinocchio's, joint by joint (by name): a
    continuous joint is (cos, sin) in Pinocchio; a free one is (x, y, z, qx, qy, qz, qw)
    with v local there and (x, y, z, qw, qx, qy, qz) with v = (v_world, w_local) in MuJoCo,
    so that v_mj = P v_pin (P orthogonal: R on the free joint's linear part)."""

    def __init__(self, mj, pinmodel):
        self.mj, self.pin = mj, pinmodel
        self.joints = []  # (pin joint, mj qpos address, mj dof address)
        for index in range(1, pinmodel.njoints):
            joint = mj.joint(pinmodel.names[index])
            self.joints.append((pinmodel.joints[index], int(joint.qposadr[0]),
                                int(joint.dofadr[0])))
        assert len(self.joints) == mj.njnt and mj.nv == pinmodel.nv

    def random(self, rng):
        """(MuJoCo's q, Pinocchio's q, the P of v_mj = P v_pin) of a random configuration."""
        q_mj, q_pin = np.zeros(self.mj.nq), np.zeros(self.pin.nq)
        P = np.eye(self.mj.nv)
        for joint, qadr, dadr in self.joints:
            iq, nq = joint.idx_q, joint.nq
            if nq == 7:
                quat = rng.standard_normal(4)
                quat /= np.linalg.norm(quat)  # (w, x, y, z)
                q_mj[qadr:qadr + 7] = [*rng.uniform(-1, 1, 3), *quat]
                q_pin[iq:iq + 7] = [*q_mj[qadr:qadr + 3], *quat[1:], quat[0]]
                R = np.zeros(9)
                mujoco.mju_quat2Mat(R, quat)
                P[dadr:dadr + 3, dadr:dadr + 3] = R.reshape(3, 3)
            else:
                q_mj[qadr] = rng.uniform(-1.5, 1.5)
                q_pin[iq:iq + nq] = ([np.cos(q_mj[qadr]), np.sin(q_mj[qadr])] if nq == 2
                                     else q_mj[qadr])
        return q_mj, q_pin, P

    def rate(self, v_pin: np.ndarray) -> np.ndarray:
        """Pdot v_pin: on a free joint R (w x v_linear), w and v in the base frame."""
        out = np.zeros(self.mj.nv)
        for joint, _, dadr in self.joints:
            if joint.nq == 7:
                linear, angular = v_pin[joint.idx_v:joint.idx_v + 3], \
                    v_pin[joint.idx_v + 3:joint.idx_v + 6]
                out[dadr:dadr + 3] = np.cross(angular, linear)
        return out


def without_passive(mj) -> mujoco.MjData:
    """MjData of ``mj`` with damping, friction loss, limits and equalities set aside:
    the rigid-body dynamics Pinocchio computes."""
    mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT | \
        mujoco.mjtDisableBit.mjDSBL_DAMPER | mujoco.mjtDisableBit.mjDSBL_SPRING
    return mujoco.MjData(mj)


@pytest.mark.parametrize("path, free_flyer", CASES, ids=IDS)
def test_mujoco_on_the_mjcf_equals_pinocchio_on_the_urdf(path, free_flyer):
    _, mj, pinmodel = converted(path, free_flyer)
    data, pdata = without_passive(mj), pinmodel.createData()
    coordinates = Coordinates(mj, pinmodel)
    rng = np.random.default_rng(7)
    for _ in range(STATES):
        q_mj, q_pin, P = coordinates.random(rng)
        v_pin, a_pin = rng.standard_normal((2, pinmodel.nv))
        v_mj = P @ v_pin
        a_mj = P @ (a_pin + coordinates.rate(v_pin))
        M = pin.crba(pinmodel, pdata, q_pin)
        M = np.triu(M) + np.triu(M, 1).T
        tau = pin.rnea(pinmodel, pdata, q_pin, v_pin, a_pin)
        data.qpos[:], data.qvel[:], data.qacc[:] = q_mj, v_mj, a_mj
        mujoco.mj_inverse(mj, data)
        M_mj = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, data, M_mj)
        close(M_mj, P @ M @ P.T, "M")
        close(data.qfrc_inverse, P @ tau, "tau")
        data.qfrc_applied[:] = P @ tau
        mujoco.mj_forward(mj, data)
        close(data.qacc, a_mj, "a")
    # the links' frames, those welded by fixed joints too, are bodies named as the links
    pin.framesForwardKinematics(pinmodel, pdata, q_pin)
    for body in range(1, mj.nbody):
        name = mj.body(body).name
        if name.rstrip("_") == "world":  # a floating root named world (see docs/mjcf.md)
            continue
        placement = pdata.oMf[pinmodel.getFrameId(name, pin.BODY)]
        close(data.xpos[body], placement.translation, name)
        close(data.xmat[body].reshape(3, 3), placement.rotation, name)


def test_every_example_robot_urdf_converts_or_is_refused_for_what_mujoco_refuses():
    """The sweep: each example-robot-data URDF either converts, and MuJoCo loads it with
    Pinocchio's M at a random state, or is refused for what MuJoCo refuses (inertias it
    rejects, moving bodies without mass) or what dyn cannot read."""
    rng, written = np.random.default_rng(11), 0
    for path in sorted(set(robot_urdfs()) - set(URDFS)):  # (URDFS: tested above)
        try:
            result = convert(load_description(path), ".xml", free_flyer=False, source=path)
        except ParseError as error:
            assert "MuJoCo refuses" in str(error) or "no <link>" in str(error), str(error)
            continue
        out = OUT / "sweep.xml"
        out.write_text(result.text)
        mj, pinmodel = mujoco.MjModel.from_xml_path(str(out)), pin.buildModelFromUrdf(path)
        data, pdata = mujoco.MjData(mj), pinmodel.createData()
        q_mj, q_pin, _ = Coordinates(mj, pinmodel).random(rng)
        data.qpos[:] = q_mj
        mujoco.mj_forward(mj, data)
        M_mj = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, data, M_mj)
        M = pin.crba(pinmodel, pdata, q_pin)
        close(M_mj, np.triu(M) + np.triu(M, 1).T, path)
        written += 1
    assert written >= 40  # of 69 (MuJoCo 4.0.1)


def close(ours, reference, what) -> None:
    scale = max(1.0, float(np.max(np.abs(reference), initial=0.0)))
    error = float(np.max(np.abs(np.asarray(ours) - reference), initial=0.0))
    assert error <= TOL * scale, (what, error)


@pytest.mark.parametrize("path", URDFS, ids=[Path(path).stem for path in URDFS])
def test_limits_damping_friction_and_effort_are_pinocchios(path):
    """Each joint's range, damping, frictionloss and actuatorfrcrange are Pinocchio's
    lower/upper limits, damping, friction and effortLimit; dyn reads the MJCF's effort
    limits back as the URDF's."""
    out, mj, pinmodel = converted(path, False)
    for index in range(1, pinmodel.njoints):
        joint, name = pinmodel.joints[index], pinmodel.names[index]
        mjoint = mj.joint(name)
        iq, iv = joint.idx_q, joint.idx_v
        assert mj.dof_damping[mjoint.dofadr[0]] == pinmodel.damping[iv], name
        assert mj.dof_frictionloss[mjoint.dofadr[0]] == pinmodel.friction[iv], name
        effort = pinmodel.effortLimit[iv]
        assert list(mj.jnt_actfrcrange[mjoint.id]) == ([-effort, effort]
                                                      if np.isfinite(effort) else [0, 0])
        if joint.nq == 1:  # revolute, prismatic: limited; continuous (nq 2) is not
            assert mj.jnt_limited[mjoint.id]
            assert list(mj.jnt_range[mjoint.id]) == [pinmodel.lowerPositionLimit[iq],
                                                     pinmodel.upperPositionLimit[iq]]
        else:
            assert not mj.jnt_limited[mjoint.id]
    ours, written = load_model(path), load_model(str(out))
    assert [written.effort_limit[written.joint_names.index(name)]
            for name in ours.joint_names] == list(ours.effort_limit)


def test_damping_and_friction_read_as_pinocchio_reads_them():
    """solo12 and talos give <dynamics>: the URDF parser keeps Pinocchio's numbers."""
    for path in URDFS:
        pinmodel = pin.buildModelFromUrdf(path)
        joints = {joint.name: joint for joint in load_description(path).joints}
        for index in range(1, pinmodel.njoints):
            joint = joints[pinmodel.names[index]]
            iv = pinmodel.joints[index].idx_v
            assert (joint.damping, joint.friction) == (pinmodel.damping[iv],
                                                       pinmodel.friction[iv])
    assert any(np.any(pin.buildModelFromUrdf(path).damping) for path in URDFS)


@pytest.mark.parametrize("path, free_flyer", CASES, ids=IDS)
def test_dyn_diff_finds_no_change(path, free_flyer):
    out, _, _ = converted(path, free_flyer)
    args = ["diff", path, out, "--format", "json"] + (["--free-flyer"] if free_flyer else [])
    result = dyn_here(args, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    changes = json.loads(result.stdout)["changes"]
    if free_flyer and load_description(path).world_link == "world":
        # a floating root link named world is the body world_ (MJCF's world has the name)
        assert changes and all("world" in json.dumps(change) for change in changes)
    else:
        assert changes == []


def test_mimic_joints_become_joint_equalities():
    result = convert(load_description(str(MIMIC)), ".xml", free_flyer=False,
                     source=str(MIMIC))
    out = OUT / "mimic.xml"
    out.write_text(result.text)
    mj = mujoco.MjModel.from_xml_path(str(out))
    pinmodel = pin.buildModelFromUrdf(str(MIMIC))
    expected = set()
    for joint in load_description(str(MIMIC)).joints:
        if joint.mimic is not None:
            expected.add((joint.name, joint.mimic.joint, joint.mimic.offset,
                          joint.mimic.multiplier))
    found = {(mj.joint(mj.eq_obj1id[k]).name, mj.joint(mj.eq_obj2id[k]).name,
              mj.eq_data[k][0], mj.eq_data[k][1]) for k in range(mj.neq)
             if mj.eq_type[k] == mujoco.mjtEq.mjEQ_JOINT}
    assert found == expected and len(expected) == 4
    # MuJoCo's equality residuals vanish where the mimics hold, and measure a departure
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(1)
    data.qpos[:] = rng.uniform(-0.5, 0.5, mj.nq)
    for follower, leader, offset, multiplier in sorted(expected):  # leaders lead no mimic
        data.qpos[mj.joint(follower).qposadr[0]] = \
            offset + multiplier * data.qpos[mj.joint(leader).qposadr[0]]
    mujoco.mj_forward(mj, data)
    rows = data.efc_type[:data.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    assert rows.sum() == 4 and np.max(np.abs(data.efc_pos[:data.nefc][rows])) < 1e-12
    data.qpos[mj.joint("pad_slider").qposadr[0]] += 0.01
    mujoco.mj_forward(mj, data)
    rows = data.efc_type[:data.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    assert sorted(np.round(np.abs(data.efc_pos[:data.nefc][rows]), 12)) == [0, 0, 0, 0.01]
    assert pinmodel.nv == mj.nv


def test_dyn_convert_writes_the_file_and_refuses_to_overwrite_its_input(tmp_path):
    model = tmp_path / "arm.urdf"
    model.write_bytes(ARM.read_bytes())
    result = dyn_here(["convert", model, "-o", "arm.xml"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    mj = mujoco.MjModel.from_xml_path(str(tmp_path / "arm.xml"))
    assert mj.nv == 2 and [mj.joint(k).name for k in range(2)] == ["joint1", "joint2"]
    assert b"velocity limit" in result.stderr  # a note per line
    before = model.read_bytes()
    os.symlink(model, tmp_path / "link.urdf")
    for target in (model, tmp_path / "link.urdf"):
        refused = dyn_here(["convert", model, "-o", target], cwd=tmp_path)
        assert refused.returncode == 2 and refused.stderr.count(b"\n") == 1
        assert b"is the model file" in refused.stderr
    assert model.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["arm.urdf", "arm.xml", "link.urdf"]


@pytest.mark.parametrize("text, line, words", [
    ('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/><inertia '
     'ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>\n<joint name="j" '
     'type="floating"><parent link="a"/><child link="b"/></joint></robot>', 2, b"floating"),
    ('<robot name="r"><link name="a"/>\n<link name="b"/><joint name="j" type="continuous">'
     '<parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint></robot>', 2,
     b"no mass"),
    ('<robot name="r"><link name="a"/><link name="b">\n<inertial><mass value="1"/><inertia '
     'ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="3"/></inertial></link><joint name="j" '
     'type="continuous"><parent link="a"/><child link="b"/></joint></robot>', 2, b"A + B >= C"),
    ('<robot name="r"><link name="a"/>\n<link name="b"', 2, b"XML"),
])
def test_a_model_mjcf_cannot_express_or_bad_input_is_one_line_exit_2(tmp_path, text, line,
                                                                      words):
    (tmp_path / "bad.urdf").write_text(text)
    result = dyn_here(["convert", "bad.urdf", "-o", "bad.xml"], cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.count(b"\n") == 1, result.stderr
    assert result.stderr.startswith(f"bad.urdf:{line}".encode()) or \
        f"bad.urdf:{line}".encode() in result.stderr
    assert words in result.stderr
    assert not (tmp_path / "bad.xml").exists()


def test_an_output_suffix_of_no_format_is_refused(tmp_path):
    result = dyn_here(["convert", ARM, "-o", tmp_path / "arm.sdf"], cwd=tmp_path)
    assert result.returncode == 2 and b".xml" in result.stderr


def test_an_mjcf_model_is_not_written_as_mjcf_again_nor_floated(tmp_path):
    model = ROOT / "fixtures" / "mjcf" / "two_link_arm.xml"
    for extra, words in (([], b"MJCF already"), (["--free-flyer"], b"applies to URDF")):
        result = dyn_here(["convert", model, "-o", tmp_path / "arm.xml", *extra], cwd=ROOT)
        assert result.returncode == 2 and result.stderr.count(b"\n") == 1, result.stderr
        assert words in result.stderr
    assert os.listdir(tmp_path) == []


def test_a_revolute_joint_without_limit_is_an_unlimited_hinge(tmp_path):
    """urdfdom refuses the joint; dyn reads it unlimited (a note), and so does the MJCF."""
    (tmp_path / "r.urdf").write_text(
        '<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/><inertia '
        'ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link><joint name="j" '
        'type="revolute"><parent link="a"/><child link="b"/></joint></robot>')
    result = dyn_here(["convert", "r.urdf", "-o", "r.xml"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    mj = mujoco.MjModel.from_xml_path(str(tmp_path / "r.xml"))
    assert list(mj.jnt_limited) == [0]


def test_meshes_by_reference_relative_below_the_output_else_absolute(tmp_path):
    from lxml import etree

    (tmp_path / "meshes").mkdir()
    shutil.copy(ROOT / "fixtures" / "mjcf" / "meshes" / "lblock.stl", tmp_path / "meshes")
    (tmp_path / "sub").mkdir()
    (tmp_path / "r.urdf").write_text(
        '<robot name="r"><link name="a"><collision><geometry><mesh filename="meshes/'
        'lblock.stl" scale="2 2 2"/></geometry></collision></link></robot>')
    expected = {"r.xml": "meshes/lblock.stl",
                "sub/r.xml": str((tmp_path / "meshes" / "lblock.stl").resolve())}
    for out, file in expected.items():
        result = dyn_here(["convert", "r.urdf", "-o", out], cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        mesh = etree.parse(str(tmp_path / out)).find("asset/mesh")
        assert (mesh.get("file"), mesh.get("scale")) == (file, "2 2 2")
        mj = mujoco.MjModel.from_xml_path(str(tmp_path / out))
        assert mj.nmesh == 1 and mj.ngeom == 1


def test_names_with_a_line_end_or_a_tab_are_written_as_they_are(tmp_path):
    """A URDF name may hold a line end or a tab (as &#10; and &#9;): the MJCF carries it as
    a character reference, so MuJoCo and dyn read the same name back (a raw one would be
    read as a space). The writers share one quoting of attributes (writers/text.py)."""
    text = ARM.read_text().replace('name="link2"', 'name="link&#10;two&#9;x"').replace(
        '<child link="link2"/>', '<child link="link&#10;two&#9;x"/>')
    source = tmp_path / "arm.urdf"
    source.write_text(text)
    out = tmp_path / "arm.xml"
    out.write_text(convert(load_description(str(source)), ".xml", free_flyer=False,
                           source=str(source)).text)
    assert "link\ntwo\tx" in [link.name for link in load_description(str(out)).links]
    mj = mujoco.MjModel.from_xml_path(str(out))
    assert mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, "link\ntwo\tx") >= 0
