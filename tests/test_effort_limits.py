"""Effort and velocity limits in the model (``Model.effort_limit``, ``velocity_limit``,
``actuated``, ``limit_sources``): URDF ``<limit effort velocity>`` against Pinocchio's
``effortLimit`` and ``velocityLimit``; MJCF against MuJoCo's compiled ``jnt_actfrcrange``,
``actuator_forcerange``, ``actuator_ctrlrange``, ``actuator_gainprm`` and
``actuator_gear`` by the rule of docs/mjcf.md; mimic joints coupled take their master's."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from reference_models import dm_control_models, gymnasium_models, robot_urdfs
from treedyn.engine.coupling import couple
from treedyn.parsers import load_model
from treedyn.parsers.errors import ParseError

ROOT = Path(__file__).resolve().parents[1]
URDFS = [p for p in robot_urdfs() if p.endswith(("panda.urdf", "talos_reduced.urdf",
                                                 "ur5_robot.urdf", "solo12.urdf",
                                                 "xarm7.urdf", "tiago.urdf"))]
URDFS += [str(ROOT / "fixtures" / "two_link_arm.urdf"),
          str(ROOT / "fixtures" / "urdf" / "gripper_mimic.urdf")]
MJCFS = [p for p in gymnasium_models() if p.endswith(("/ant.xml", "/humanoid.xml",
                                                       "/reacher.xml", "/pusher.xml",
                                                       "/inverted_double_pendulum.xml",
                                                       "/point.xml"))]
MJCFS += [p for p in dm_control_models() if p.endswith("suite/manipulator.xml")]
MJCFS += [str(ROOT / "fixtures" / "mjcf" / "two_link_arm.xml")]


def one_dof(model):
    """(joint index, its dof) of every 1-dof joint of a model."""
    return [(j, int(model.idx_v[j])) for j in range(model.njoints) if model.nv_joint[j] == 1]


@pytest.mark.parametrize("path", URDFS, ids=lambda p: Path(p).name)
def test_urdf_limits_are_pinocchios(path):
    pin = pytest.importorskip("pinocchio")
    reference = pin.buildModelFromUrdf(path)
    model = load_model(path)
    assert model.effort_limit.shape == model.velocity_limit.shape == (model.nv,)
    for j, dof in one_dof(model):
        k = reference.joints[reference.getJointId(model.joint_names[j])].idx_v
        assert model.effort_limit[dof] == reference.effortLimit[k], model.joint_names[j]
        assert model.velocity_limit[dof] == reference.velocityLimit[k], model.joint_names[j]
        assert model.actuated[dof]
    # the line of each effort limit is the <limit> element's (the joint's when none)
    lines = Path(path).read_text().splitlines()
    for j, dof in one_dof(model):
        source = model.limit_sources[j]
        written = "<limit" if np.isfinite(model.effort_limit[dof]) else "<joint"
        assert source.file == path and written in lines[source.line - 1], source


URDF_CASES = """\
<robot name="limits">
  <link name="base"/> <link name="a"/> <link name="b"/> <link name="c"/> <link name="d"/>
  <joint name="zero" type="revolute"><parent link="base"/><child link="a"/>
    <limit lower="-1" upper="1" effort="0" velocity="0"/></joint>
  <joint name="missing" type="prismatic"><parent link="a"/><child link="b"/>
    <limit lower="-1" upper="1"/></joint>
  <joint name="spin" type="continuous"><parent link="b"/><child link="c"/>
    <limit effort="-7" velocity="3"/></joint>
  <joint name="free" type="continuous"><parent link="c"/><child link="d"/></joint>
</robot>
"""


def test_urdf_zero_missing_and_absent_limits(tmp_path):
    path = tmp_path / "limits.urdf"
    path.write_text(URDF_CASES)
    model = load_model(str(path))
    # effort="0" is a zero limit; an attribute not given and no <limit> are none
    assert model.effort_limit.tolist() == [0.0, np.inf, 7.0, np.inf]
    assert model.velocity_limit.tolist() == [0.0, np.inf, 3.0, np.inf]
    assert [s.line for s in model.limit_sources] == [4, 6, 8, 9]


def test_coupled_mimic_joints_take_their_masters_limits():
    path = str(ROOT / "fixtures" / "urdf" / "gripper_mimic.urdf")
    full = load_model(path)
    coupled = couple(full)
    assert coupled.effort_limit.shape == (coupled.nv,)
    for j in range(coupled.njoints):
        if coupled.nv_joint[j] == 1:
            dof = full.idx_v[j]
            assert coupled.effort_limit[coupled.idx_v[j]] == full.effort_limit[dof]
            assert coupled.velocity_limit[coupled.idx_v[j]] == full.velocity_limit[dof]
    assert len(full.mimic) and coupled.nv < full.nv


def mujoco_effort(reference, joint: int) -> tuple[float, bool]:
    """(effort limit, actuated) of MuJoCo joint ``joint`` from its compiled arrays, by the
    rule of docs/mjcf.md."""
    low, high = -np.inf, np.inf
    drives = [a for a in range(reference.nu) if reference.actuator_trntype[a] in (0, 1)
              and reference.actuator_trnid[a, 0] == joint]
    ranges = []
    for a in drives:
        lo, hi = reference.actuator_forcerange[a] if reference.actuator_forcelimited[a] \
            else (-np.inf, np.inf)
        direct = (reference.actuator_gaintype[a], reference.actuator_biastype[a],
                  reference.actuator_dyntype[a]) == (0, 0, 0)
        if direct and reference.actuator_ctrllimited[a]:
            ctrl = np.sort(reference.actuator_gainprm[a, 0] * reference.actuator_ctrlrange[a])
            lo, hi = max(lo, ctrl[0]), min(hi, ctrl[1])
        ranges.append(np.sort(reference.actuator_gear[a, 0] * np.array([lo, hi])))
    if drives and np.all(np.isfinite(ranges)):
        low, high = np.sum(ranges, axis=0)
    if reference.jnt_actfrclimited[joint]:
        low = max(low, reference.jnt_actfrcrange[joint, 0])
        high = min(high, reference.jnt_actfrcrange[joint, 1])
    return max(0.0, min(-low, high)), bool(drives) or bool(reference.jnt_actfrclimited[joint])


def check_mjcf(path: str) -> None:
    mujoco = pytest.importorskip("mujoco")
    reference = mujoco.MjModel.from_xml_path(path)
    model = load_model(path)
    for j, dof in one_dof(model):
        joint = mujoco.mj_name2id(reference, mujoco.mjtObj.mjOBJ_JOINT, model.joint_names[j])
        effort, actuated = mujoco_effort(reference, joint)
        assert np.isclose(model.effort_limit[dof], effort, rtol=1e-15, atol=0) or \
            model.effort_limit[dof] == effort == np.inf, model.joint_names[j]
        assert model.actuated[dof] == actuated, model.joint_names[j]
    assert np.all(model.velocity_limit == np.inf)


@pytest.mark.parametrize("path", MJCFS, ids=lambda p: Path(p).name)
def test_mjcf_limits_are_mujocos(path):
    check_mjcf(path)


MJCF_CASES = """\
<mujoco>
  <compiler autolimits="{autolimits}"/>
  <default><motor ctrlrange="-1 1" ctrllimited="true"/></default>
  <worldbody>
    <body name="a"><joint name="frc" axis="0 1 0" actuatorfrcrange="-30 50"
      actuatorfrclimited="true"/><geom size=".1" mass="1"/>
      <body name="b" pos="0 0 -1"><joint name="two" axis="0 1 0"/><geom size=".1" mass="1"/>
        <body name="c" pos="0 0 -1"><joint name="position" axis="0 1 0"/>
          <geom size=".1" mass="1"/>
          <body name="d" pos="0 0 -1"><joint name="both" axis="1 0 0" actuatorfrcrange="-4 4"
            actuatorfrclimited="true"/><geom size=".1" mass="1"/>
            <body name="e" pos="0 0 -1"><joint name="passive" axis="1 0 0"/>
              <geom size=".1" mass="1"/></body></body></body></body></body>
  </worldbody>
  <actuator>
    <motor joint="frc" gear="-2"/>
    <motor joint="two" gear="3" forcerange="-5 2" forcelimited="true"/>
    <general joint="two" gear="-1" gainprm="4" ctrlrange="0 2" ctrllimited="true"/>
    <position joint="position" kp="10" ctrlrange="-1 1" ctrllimited="true"/>
    <motor joint="both" gear="10"/>
  </actuator>
</mujoco>
"""


def test_mjcf_actuator_rules(tmp_path):
    path = tmp_path / "actuators.xml"
    path.write_text(MJCF_CASES.format(autolimits="false"))
    check_mjcf(str(path))
    model = load_model(str(path))
    # frc: [-30, 50] within the motor's -2 * [-1, 1]; two: 3 * ([-5, 2] within the
    # default ctrlrange [-1, 1]) + -1 * 4 * [0, 2] = [-11, 3]; position: a force that depends on q is not bounded; both: [-4, 4] within
    # 10 * [-1, 1]; passive: nothing drives it
    assert model.effort_limit.tolist() == [2.0, 3.0, np.inf, 4.0, np.inf]
    assert model.actuated.tolist() == [True, True, True, True, False]
    lines = path.read_text().splitlines()
    assert "actuatorfrcrange" in lines[model.limit_sources[0].line - 1]
    assert 'motor joint="two"' in lines[model.limit_sources[1].line - 1]


def test_mjcf_force_range_under_autolimits_false_needs_the_flag(tmp_path):
    path = tmp_path / "actuators.xml"
    path.write_text(MJCF_CASES.format(autolimits="false").replace(
        ' forcelimited="true"', ""))
    with pytest.raises(ParseError, match="forcerange needs forcelimited"):
        load_model(str(path))
