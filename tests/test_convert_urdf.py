"""MJCF -> URDF (:func:`treedyn.parsers.writers.urdf.write_urdf`) against the references.

Every MJCF model of ``test_named_frames.MJCFS`` that URDF can hold, and a model made here
with the features the suite's models lack (box, cylinder, mesh and ellipsoid geoms, an
unlimited slide, a ``ref`` on a limited hinge, defaults for damping and frictionloss,
gravity off -z), is written as URDF, loaded by Pinocchio (``buildModelFromXML``, with
``JointModelFreeFlyer`` where the MJCF root floated) and held to MuJoCo on the MJCF at
five random states each, to 1e-9 relative:

* M: MuJoCo's ``mj_fullM`` with armature zeroed (URDF has none);
* tau: ``mj_inverse`` with springs, dampers, constraints and actuation off;
* a: ``mj_forward`` under a random ``qfrc_applied``, against Pinocchio's ABA;
* the bodies' and sites' placements: ``xpos``/``xmat``, ``site_xpos``/``site_xmat``;
* damping, frictionloss and the limits of limited joints: ``dof_damping``,
  ``dof_frictionloss``, ``jnt_range`` against Pinocchio's ``damping``, ``friction``,
  position limits.

MuJoCo's coordinates are mapped to Pinocchio's: a free joint's (x, y, z, qw, qx, qy, qz)
and (v_world, w_local) to (x, y, z, qx, qy, qz, qw) and (v_local, w_local), and an
unlimited hinge (a URDF continuous joint) to (cos, sin). The inertias read back from the
URDF equal the MJCF's to 1e-12. Models URDF cannot hold (a second floating body, a ball
joint, a joint outside the floating body's tree) are refused with their file and line.
A URDF written again (``test_named_frames.URDFS``) is the same model for Pinocchio.
"""
from __future__ import annotations

import functools
import re
import zlib
from pathlib import Path

import numpy as np
import pytest

from test_named_frames import MJCFS, URDFS
from treedyn.engine.rotations import matrix_rpy, quat_matrix, rpy_matrix
from treedyn.parsers import load_description, load_model
from treedyn.parsers.errors import ParseError
from treedyn.parsers.urdf import parse_urdf_string
from treedyn.parsers.writers.urdf import write_urdf

pin = pytest.importorskip("pinocchio")
mujoco = pytest.importorskip("mujoco")

TOL = 1e-9
STATES = 5
MESHES = Path(__file__).resolve().parents[1] / "fixtures" / "mjcf" / "meshes"
REFUSED = [p for p in MJCFS if p.endswith("suite/quadruped.xml")]  # two floating bodies
WRITTEN = [p for p in MJCFS if p not in REFUSED]
FEATURES = f"""<mujoco model="features">
  <compiler angle="radian" meshdir="{MESHES}"/>
  <option gravity="0.5 -0.3 -9.7"/>
  <default>
    <joint damping="0.7" frictionloss="0.2"/>
    <default class="stiff"><joint damping="3 1"/></default>
  </default>
  <asset><mesh name="block" file="lblock.stl" scale="1 2 1"/></asset>
  <worldbody>
    <geom type="box" size="1 1 0.1" pos="0 0 -1"/>
    <site name="origin" pos="0.1 0 0"/>
    <body name="base" pos="0.1 0.2 0.3" euler="0.3 -0.2 0.1">
      <joint name="rail" type="slide" axis="1 0.2 0" ref="0.4"/>
      <geom type="cylinder" size="0.05 0.2" euler="1.5707963267948966 0 0"/>
      <body name="arm" pos="0 0 0.2">
        <joint name="shoulder" axis="0 1 0" pos="0 0 -0.05" range="-1 2" ref="0.6"
               class="stiff"/>
        <joint name="twist" axis="1 0 0" frictionloss="0.5"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0.1" size="0.03"/>
        <geom type="ellipsoid" size="0.05 0.04 0.03" pos="0.3 0 0.1" contype="0"
              conaffinity="0"/>
        <site name="tool" pos="0.3 0 0.1" euler="0 0.5 0"/>
        <body name="head" pos="0.3 0 0.1">
          <geom type="mesh" mesh="block" mass="0.2"/>
          <geom type="sphere" size="0.04" pos="0 0 0.1"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@functools.lru_cache(maxsize=None)
def converted(path: str):
    """(description, the URDF's Converted) of one MJCF file, written once per module."""
    description = load_description(path)
    return description, write_urdf(description, source=path)


def features_path(tmp_path_factory) -> str:
    path = tmp_path_factory.getbasetemp() / "features.xml"
    if not path.exists():
        path.write_text(FEATURES, encoding="utf-8")
    return str(path)


def relative_error(ours, reference) -> float:
    return float(np.max(np.abs(np.asarray(ours) - reference), initial=0.0)
                 / max(float(np.max(np.abs(reference), initial=0.0)), 1e-300))


class Coordinates:
    """MuJoCo's q, v, a and forces to Pinocchio's and back, joint by joint (by name)."""

    def __init__(self, m, pinmodel, names: list[str]):
        self.m, self.pinmodel = m, pinmodel
        self.joints = []  # (MuJoCo joint, Pinocchio joint id)
        for k, name in enumerate(names):
            free = m.jnt_type[k] == mujoco.mjtJoint.mjJNT_FREE
            self.joints.append((k, pinmodel.getJointId("root_joint" if free else name)))
        assert all(j < pinmodel.njoints for _, j in self.joints)
        assert pinmodel.nv == m.nv
        self.dofs = np.concatenate([np.arange(pinmodel.idx_vs[j], pinmodel.idx_vs[j]
                                              + pinmodel.nvs[j]) for _, j in self.joints]
                                   or [np.zeros(0, int)])
        self.free = [(m.jnt_qposadr[k], m.jnt_dofadr[k], pinmodel.idx_qs[j])
                     for k, j in self.joints if m.jnt_type[k] == mujoco.mjtJoint.mjJNT_FREE]

    def rotation(self, q) -> np.ndarray:
        """The floating root's rotation (3, 3) at MuJoCo's q, or None."""
        return quat_matrix(q[self.free[0][0] + 3:self.free[0][0] + 7]) if self.free else None

    def q(self, q) -> np.ndarray:
        out = np.array(pin.neutral(self.pinmodel))
        for k, j in self.joints:
            start, at = self.m.jnt_qposadr[k], self.pinmodel.idx_qs[j]
            if self.m.jnt_type[k] == mujoco.mjtJoint.mjJNT_FREE:
                quat = q[start + 3:start + 7] / np.linalg.norm(q[start + 3:start + 7])
                out[at:at + 7] = np.concatenate([q[start:start + 3], quat[1:], quat[:1]])
            elif self.pinmodel.nqs[j] == 2:  # continuous: (cos, sin)
                out[at:at + 2] = np.cos(q[start]), np.sin(q[start])
            else:
                out[at] = q[start]
        return out

    def v(self, q, v, a=None) -> np.ndarray:
        """Pinocchio's v (or its a, given MuJoCo's a too): at a free joint R^T v_world,
        and a_local = R^T a_world - w x v_local."""
        out = np.zeros(self.pinmodel.nv)
        out[self.dofs] = v if a is None else a
        for _, dof, _ in self.free:
            linear = self.rotation(q).T @ v[dof:dof + 3]
            if a is None:
                out[self.dofs[dof]:self.dofs[dof] + 3] = linear
            else:
                out[self.dofs[dof]:self.dofs[dof] + 3] = (self.rotation(q).T @ a[dof:dof + 3]
                                                          - np.cross(v[dof + 3:dof + 6],
                                                                     linear))
        return out

    def transform(self, q) -> np.ndarray:
        """T (nv, nv) with MuJoCo's v = T (Pinocchio's v in MuJoCo's dof order)."""
        T = np.eye(self.m.nv)
        for _, dof, _ in self.free:
            T[dof:dof + 3, dof:dof + 3] = self.rotation(q)
        return T

    def back(self, q, tau, M) -> tuple[np.ndarray, np.ndarray]:
        """Pinocchio's tau and M in MuJoCo's coordinates (T tau, T M T^T)."""
        T = self.transform(q)
        return T @ tau[self.dofs], T @ M[np.ix_(self.dofs, self.dofs)] @ T.T

    def acceleration(self, q, v, a_pin) -> np.ndarray:
        """MuJoCo's a of Pinocchio's: a_world = R (a_local + w x v_local) at a free joint."""
        out = a_pin[self.dofs].copy()
        for _, dof, _ in self.free:
            R = self.rotation(q)
            out[dof:dof + 3] = R @ (out[dof:dof + 3] + np.cross(v[dof + 3:dof + 6],
                                                                R.T @ v[dof:dof + 3]))
        return out


def pinocchio_model(description, result):
    floating = any(joint.type == "free_world" for joint in description.joints)
    model = (pin.buildModelFromXML(result.text, pin.JointModelFreeFlyer()) if floating
             else pin.buildModelFromXML(result.text))
    model.gravity = pin.Motion(np.asarray(description.gravity, float), np.zeros(3))
    return model


def mujoco_reference(path: str):
    """MuJoCo's model with only M and the bias forces left, armature zeroed (the joints',
    and the actuators' and tendons' that MuJoCo adds to the joints')."""
    m = mujoco.MjModel.from_xml_path(path)
    bits = mujoco.mjtDisableBit
    m.opt.disableflags |= (bits.mjDSBL_SPRING | bits.mjDSBL_DAMPER | bits.mjDSBL_CONSTRAINT
                           | bits.mjDSBL_ACTUATION)
    m.dof_armature[:] = m.actuator_armature[:] = m.tendon_armature[:] = 0.0
    mujoco.mj_setConst(m, mujoco.MjData(m))  # a simple body's M is constant, set here
    return m


def compare_with_mujoco(path: str) -> None:
    description, result = converted(path)
    m, pinmodel = mujoco_reference(path), pinocchio_model(description, result)
    d, data = mujoco.MjData(m), pinmodel.createData()
    names = [joint.name for joint in description.joints if joint.type != "fixed"]
    coordinates = Coordinates(m, pinmodel, names)
    rng = np.random.default_rng(zlib.crc32(path.encode()))
    for q in load_model(path).random_configuration(rng, STATES):
        v, a, force = (rng.normal(size=m.nv) for _ in range(3))
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q, v, force
        mujoco.mj_forward(m, d)
        M, acceleration = np.zeros((m.nv, m.nv)), d.qacc.copy()
        mujoco.mj_fullM(m, d, M)
        d.qacc[:], d.qfrc_applied[:] = a, 0.0
        mujoco.mj_inverse(m, d)
        pq, pv = coordinates.q(q), coordinates.v(q, v)
        pin_M = np.triu(pin.crba(pinmodel, data, pq))
        pin_tau = pin.rnea(pinmodel, data, pq, pv, coordinates.v(q, v, a))
        tau, full = coordinates.back(q, pin_tau, pin_M + np.triu(pin_M, 1).T)
        assert relative_error(full, M) <= TOL, (path, "M")
        assert relative_error(tau, d.qfrc_inverse) <= TOL, (path, "tau")
        pin_force = np.zeros(m.nv)
        pin_force[coordinates.dofs] = coordinates.transform(q).T @ force
        pin_a = pin.aba(pinmodel, data, pq, pv, pin_force)
        assert relative_error(coordinates.acceleration(q, v, pin_a), acceleration) <= TOL
    compare_frames(m, d, pinmodel, data, pq, description)
    compare_joint_data(m, pinmodel, coordinates)


def compare_frames(m, d, pinmodel, data, pq, description) -> None:
    """Bodies (links) and sites (their fixed joints' frames) where MuJoCo places them."""
    pin.framesForwardKinematics(pinmodel, data, pq)
    bodies = [link.name for link in description.links if not link.body]  # MuJoCo's order
    compared = 0
    for kind, count, xpos, xmat, name_of in (
            (pin.BODY, m.nbody, d.xpos, d.xmat, bodies.__getitem__),
            (pin.FIXED_JOINT, m.nsite, d.site_xpos, d.site_xmat,
             lambda s: f"{m.site(s).name}/site")):
        for index in range(count):
            name = name_of(index)
            if not pinmodel.existFrame(name, kind):
                continue
            placement = data.oMf[pinmodel.getFrameId(name, kind)]
            assert np.abs(placement.translation - xpos[index]).max() <= TOL, name
            assert np.abs(placement.rotation - xmat[index].reshape(3, 3)).max() <= TOL, name
            compared += 1
    on_bodies = [site for site in description.sites if site.link != description.world_link]
    assert compared >= len(bodies) - 1 + len(on_bodies)


def compare_joint_data(m, pinmodel, coordinates) -> None:
    """Damping, friction loss and the position limits of limited joints."""
    damping, friction = (np.array(values)[coordinates.dofs]
                         for values in (pinmodel.damping, pinmodel.friction))
    assert np.array_equal(damping, m.dof_damping)
    assert np.array_equal(friction, m.dof_frictionloss)
    for k, j in coordinates.joints:
        if m.jnt_limited[k] and pinmodel.nqs[j] == 1:
            at = pinmodel.idx_qs[j]
            assert pinmodel.lowerPositionLimit[at] == m.jnt_range[k][0]
            assert pinmodel.upperPositionLimit[at] == m.jnt_range[k][1]


@pytest.mark.parametrize("path", WRITTEN, ids=["/".join(p.rsplit("/", 2)[-2:]) for p in WRITTEN])
def test_written_urdf_equals_mujoco_on_the_mjcf(path):
    compare_with_mujoco(path)


def test_features_written_as_urdf_equal_mujoco(tmp_path_factory):
    path = features_path(tmp_path_factory)
    compare_with_mujoco(path)
    description, result = converted(path)
    notes = "\n".join(result.notes)
    assert f"{path}:" in notes and "gravity is (0.5, -0.3, -9.7)" in notes
    assert re.search(rf"{re.escape(path)}:\d+: <geom>: an ellipsoid has no URDF form", notes)
    read = parse_urdf_string(result.text)
    assert read.notes == ()  # nothing urdfdom refuses
    joints = {joint.name: joint for joint in read.joints}
    rail, shoulder = joints["rail"], joints["shoulder"]  # no limit is the largest double,
    assert (rail.lower, rail.upper, rail.effort, rail.velocity) == (  # read back as none
        -np.inf, np.inf, np.inf, np.inf)
    assert (shoulder.type, shoulder.lower, shoulder.upper) == ("revolute", -1.0, 2.0)
    assert joints["twist"].type == "continuous"
    shapes = {link.name: [(s.kind, s.role) for s in link.geometry] for link in read.links}
    capsule = [("cylinder", "visual"), ("sphere", "visual"), ("sphere", "visual")]
    assert shapes["arm"] == capsule + [(kind, "collision") for kind, _ in capsule]
    assert shapes["base"] == [("cylinder", "visual"), ("cylinder", "collision")]
    head = {link.name: link for link in read.links}["head"].geometry
    assert [s.kind for s in head] == ["mesh", "mesh", "sphere", "sphere"]
    assert head[0].mesh == str(MESHES / "lblock.stl") and list(head[0].scale) == [1, 2, 1]
    assert shapes["origin"] == shapes["tool"] == []  # the sites, as massless links


@pytest.mark.parametrize("path", WRITTEN[:3] + WRITTEN[-2:],
                         ids=lambda p: "/".join(p.rsplit("/", 2)[-2:]))
def test_inertias_read_back_equal_the_mjcfs(path):
    description, result = converted(path)
    read = {link.name: link.inertia for link in parse_urdf_string(result.text).links}
    for link in description.links:
        if link.name not in read or not link.inertia.mass:
            continue
        ours, back = link.inertia, read[link.name]
        assert abs(back.mass - ours.mass) <= 1e-12 * ours.mass
        assert np.abs(back.com - ours.com).max() <= 1e-12 * max(1.0, np.abs(ours.com).max())
        assert relative_error(back.inertia, ours.inertia) <= 1e-12


def test_each_element_names_its_source_line():
    path = next(p for p in WRITTEN if p.endswith("hopper.xml"))
    _, result = converted(path)
    lines = result.text.splitlines()
    source = Path(path).read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        opened = re.match(r"\s*<(link|joint|inertial|visual|collision)\b", line)
        if not opened or opened.group(1) in ("visual", "collision") and \
                re.match(r"\s*</|\s*<(visual|collision)>", lines[index - 1]):
            continue  # a capsule's further pieces follow the comment of its first
        comment = re.search(rf"{re.escape(path)}:(\d+)", lines[index - 1]) or \
            re.search(rf"{re.escape(path)}:(\d+)", lines[index - 2])
        if '<link name="world"' in line:
            assert f"{path}: <worldbody>" in lines[index - 1]
            continue
        assert comment, line
        assert re.search(r"<(body|joint|geom|inertial|site|motor)\b",
                         source[int(comment.group(1)) - 1]), (line, comment.group(0))


@pytest.mark.parametrize("path", URDFS, ids=lambda p: p.rsplit("/", 1)[-1])
def test_a_urdf_written_again_is_the_same_model_for_pinocchio(path):
    """A URDF (a xacro's expansion, say) written by write_urdf: Pinocchio's model of it
    has the joints of the file, in its order, and the same M and tau."""
    original = pin.buildModelFromUrdf(path)
    written = pin.buildModelFromXML(write_urdf(load_description(path), source=path).text)
    assert list(written.names) == list(original.names)
    data, written_data = original.createData(), written.createData()
    rng = np.random.default_rng(zlib.crc32(path.encode()))
    for _ in range(3):
        q = pin.randomConfiguration(original)
        v, a = rng.normal(size=original.nv), rng.normal(size=original.nv)
        assert relative_error(pin.crba(written, written_data, q),
                              pin.crba(original, data, q)) <= TOL
        assert relative_error(pin.rnea(written, written_data, q, v, a),
                              pin.rnea(original, data, q, v, a)) <= TOL


def line_of(path: str, pattern: str) -> int:
    text = Path(path).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(text, start=1) if re.search(pattern, line))


@pytest.mark.parametrize("path", REFUSED, ids=lambda p: p.rsplit("/", 1)[-1])
def test_a_second_floating_body_is_refused_at_its_line(path):
    with pytest.raises(ParseError) as refused:
        converted(path)
    assert refused.value.file == path
    assert refused.value.line == line_of(path, r'<freejoint name="ball_root"')
    assert "floating" in refused.value.problem


@pytest.mark.parametrize("body,pattern", [
    ('<body><joint name="b" type="ball"/><geom size="0.1"/></body>', r'name="b"'),
    ('<body><freejoint/><geom size="0.1"/></body><body pos="1 0 0"><joint name="h"/>'
     '<geom size="0.1"/></body>', r'name="h"'),
], ids=["ball", "outside-the-floating-tree"])
def test_what_urdf_cannot_hold_is_refused_at_its_line(tmp_path, body, pattern):
    path = tmp_path / "refused.xml"
    lines = body.replace("><", ">\n<")
    path.write_text(f"<mujoco>\n<worldbody>\n{lines}\n</worldbody>\n</mujoco>\n",
                    encoding="utf-8")
    with pytest.raises(ParseError) as refused:
        write_urdf(load_description(str(path)), source=str(path))
    assert (refused.value.file, refused.value.line) == (str(path), line_of(str(path), pattern))
    assert "\n" not in str(refused.value)


def test_matrix_rpy_gives_the_rotation_back():
    rng = np.random.default_rng(5)
    angles = rng.uniform(-4, 4, size=(400, 3))
    angles[::4, 1] = np.pi / 2
    angles[1::4, 1] = -np.pi / 2
    angles[2::4, 1] = np.pi / 2 - 1e-9
    for roll, pitch, yaw in angles:
        R = rpy_matrix(roll, pitch, yaw)
        assert np.abs(rpy_matrix(*matrix_rpy(R)) - R).max() <= 1e-15
