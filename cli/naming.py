"""One naming scheme for the coordinates of a model, used by every input and output.

A coordinate of q or v is named by its joint: a 1-number joint by the joint's name
(``elbow``), entry ``k`` of a joint of several numbers by ``<joint>:<k>`` (``root_joint:3``).
These *labels* are what every output writes -- JSON (``"dofs"``), CSV headers
(``tau:<label>``), ``.npz`` (``dofs``), tables, ``condition`` -- and what ``--q
name=value`` and CSV headers read. ``dyn info`` shows what each entry is: its *part*, a
name from the joint model (:attr:`JointModel.q_parts`, :attr:`JointModel.v_parts`, such
as ``qw`` or ``wx``; ``rate`` for a 1-dof joint's velocity). Inputs also accept an entry
as ``<joint>.<part>`` (``root_joint.wx``).
"""
from __future__ import annotations

from collections.abc import Sequence


def labels(name: str, size: int) -> list[str]:
    """The labels of a joint's ``size`` entries: ``[name]``, or ``name:0``..``name:k``."""
    return [name] if size == 1 else [f"{name}:{k}" for k in range(size)]


def q_labels(model) -> list[str]:
    """(nq,) labels of q."""
    return [label for j, name in enumerate(model.joint_names)
            for label in labels(name, int(model.nq_joint[j]))]


def v_labels(model) -> list[str]:
    """(nv,) labels of v, a and tau (the dofs)."""
    return [label for j, name in enumerate(model.joint_names)
            for label in labels(name, int(model.nv_joint[j]))]


def v_parts(joint_model) -> tuple[str, ...]:
    """The part names of a joint's v entries: ``("rate",)`` for a 1-dof joint."""
    return tuple(joint_model.v_parts) or ("rate",)


def listing(items: Sequence[str], most: int) -> str:
    """'a, b, c' -- the first ``most`` items, then ', ...' when there are more."""
    return ", ".join(items[:most]) + (", ..." if len(items) > most else "")
