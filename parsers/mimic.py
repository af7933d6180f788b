"""URDF ``<mimic>`` relations that cannot hold, as notes: urdfdom and Pinocchio's default
load a mimic of the joint itself or of a joint the file does not have without a word
(Pinocchio's ``mimic=True`` refuses both; :mod:`treedyn.engine.coupling` enforces the
others)."""
from __future__ import annotations

from treedyn.engine.description import JointSpec
from treedyn.engine.names import closest


def mimic_notes(joints: dict[str, JointSpec], notes: list[str]) -> None:
    """A line in ``notes`` for each ``<mimic>`` of the joint itself or of a joint that is
    not in the file: a broken relation that ROS and Pinocchio load without a word."""
    for joint in joints.values():
        mimic = joint.mimic
        if mimic is None or (mimic.joint != joint.name and mimic.joint in joints):
            continue
        what = "the joint itself" if mimic.joint == joint.name else \
            "a joint the file does not have" + _did_you_mean(mimic.joint, joints)
        notes.append(f'{mimic.source}: <mimic joint="{mimic.joint}"> names {what}: the '
                     "relation cannot hold (urdfdom and Pinocchio load the file anyway; "
                     "dyn keeps the joint independent)")


def _did_you_mean(name: str, known) -> str:
    """' (did you mean "x"?)' for the closest of ``known``, else ""."""
    close = closest(name, known)
    return f' (did you mean "{close[0]}"?)' if close else ""
