"""The coordinates of a model as inputs and outputs see them: labels (:mod:`..naming`),
units, ``--degrees`` factors, and names looked up with a suggestion when unknown; every
entry of q and v as data (:func:`layout_document`, ``dyn info``'s ``layout``)."""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from treedyn.engine import Model
from treedyn.engine.names import closest
from treedyn.engine.state import cos_sin_continuous

from . import naming
from .errors import UsageError


def suggest(name: str, known: Sequence[str]) -> str:
    """'; did you mean 'x'?' for close matches of ``name``, else a short list of names --
    each as it is typed (:func:`naming.typed`) and no longer than a message line allows."""
    close = closest(name, known, most=3)
    if close:
        return "; did you mean " + " or ".join(
            f"'{naming.shown(naming.typed(c))}'" for c in close) + "?"
    if len(known) <= 8:
        return "; known: " + (naming.listing([naming.typed(k) for k in known], 8)
                              if known else "none")
    return ""


@dataclass(frozen=True)
class Layout:
    """Names, units and ``--degrees`` factors of a model's q and v coordinates."""

    model: Model
    v_labels: tuple[str, ...]  # (nv,) "joint" or "joint:k"
    angular: np.ndarray  # (nv,) bool: the dof is a rotation (rad/s, N m)
    q_scale: np.ndarray  # (nq,) user q times this is radians
    v_scale: np.ndarray  # (nv,) user v, a times this is rad/s, rad/s^2
    tau_scale: np.ndarray  # (nv,) ones: tau is never converted
    degrees: bool = False

    @staticmethod
    def of(model: Model, degrees: bool = False) -> "Layout":
        angle_q = np.zeros(model.nq, dtype=bool)
        angular = np.zeros(model.nv, dtype=bool)
        for j, joint in enumerate(model.joint_models):
            if model.nq_joint[j] == 0:  # a mimic joint (--mimic): no coordinates of its own
                continue
            angle_q[[model.idx_q[j] + k for k in joint.angle_q]] = True
            angular[[model.idx_v[j] + k for k in joint.angular_v]] = True
        factor = DEGREE if degrees else 1.0
        return Layout(model, tuple(naming.v_labels(model)), angular,
                      np.where(angle_q, factor, 1.0), np.where(angular, factor, 1.0),
                      np.ones(model.nv), degrees)

    def width(self, kind: str) -> int:
        """Length of a vector of ``kind``: nq for q, nv for v, a and tau, 1 for the time
        ``t`` (s; only ``identify`` reads it)."""
        return {"q": self.model.nq, TIME: 1}.get(kind, self.model.nv)

    def scale(self, kind: str) -> np.ndarray:
        """Factors from user units to SI: --degrees converts q, v and a, never tau or t."""
        return {"q": self.q_scale, "tau": self.tau_scale, TIME: ONE}.get(kind, self.v_scale)

    def units(self, kind: str) -> list[str]:
        """Each dof's unit of ``kind`` as states are read and written (``--degrees``):
        "q" (a dof's position: m, rad or deg), "v" (per s), "a" (per s^2), "tau" (N, N m)."""
        if kind == "tau":
            return ["N m" if rotation else "N" for rotation in self.angular]
        per, angle = {"q": "", "v": "/s", "a": "/s^2"}[kind], "deg" if self.degrees else "rad"
        return [(angle if rotation else "m") + per for rotation in self.angular]

    def default(self, kind: str) -> np.ndarray:
        """The value of an omitted vector: the neutral configuration, or zeros."""
        return self.model.q_neutral if kind == "q" else np.zeros(self.width(kind))

    def need(self, kind: str, given: int = -1) -> str:
        """'model ur5 needs nq=6' for error messages; with the ``given`` count of q numbers
        that is nq plus one per continuous joint, a hint at Pinocchio's (cos, sin)."""
        text = f"model {self.model.name} needs n{'q' if kind == 'q' else 'v'}={self.width(kind)}"
        continuous = cos_sin_continuous(self.model, given) if kind == "q" else 0
        return text + (f" (Pinocchio's layout, with cos and sin for each of the {continuous} "
                       "continuous joints? dyn takes one angle for each: atan2(sin, cos))"
                       if continuous else "")

    def index(self, name: str, kind: str, where: str) -> int:
        """Position in q (kind 'q') or v of a 1-dof joint ``name``, of ``joint:k``, or of
        ``joint.part`` as ``dyn info`` names the entries (``root_joint.qw``, ``ball.wx``)."""
        model, joint_of = self.model, self.model.joint_ids
        sizes, starts = ((model.nq_joint, model.idx_q) if kind == "q"
                         else (model.nv_joint, model.idx_v))
        said = f"'{naming.shown(naming.typed(name))}'"  # as messages show (and users type) it
        for separator in ".:":  # root_joint.x, root_joint:0 name entries of root_joint
            joint, _, part = name.rpartition(separator)
            if name in joint_of and joint in joint_of and (separator == "." or part.isdigit()):
                joint_said = naming.shown(joint)
                other = f"'{joint_said}:<k>'" if separator == "." else f"'{joint_said}.<entry>'"
                raise UsageError(f"{where}: {said} is both a joint and an entry of joint "
                                 f"'{joint_said}'; write '{naming.shown(name)}.<entry>' or "
                                 + other)
        if name in joint_of:
            j = joint_of[name]
            mimic = model.mimic.get(name)
            if sizes[j] == 0 and mimic is not None:
                master = naming.shown(naming.typed(mimic.joint))
                raise UsageError(f"{where}: joint {said} mimics '{master}' (--mimic): it has "
                                 f"no coordinate of its own; give '{master}'")
            if sizes[j] != 1:
                parts = model.joint_models[j].q_parts if kind == "q" else \
                    model.joint_models[j].v_parts
                raise UsageError(
                    f"{where}: joint {said} has {sizes[j]} entries in {kind}; name them "
                    f"'{naming.typed(f'{name}:0')}'..'{naming.typed(f'{name}:{sizes[j] - 1}')}' "
                    f"or as dyn info does ('{naming.typed(f'{name}.{parts[0]}')}'..)"
                    if len(name) <= naming.SHOWN else
                    f"{where}: joint {said} has {sizes[j]} entries in {kind}; name them "
                    "<joint>:0.. or <joint>.<part> as dyn info does")
            return int(starts[j])
        joint, _, k = name.rpartition(":")
        if joint in joint_of and k.isdigit():
            j = joint_of[joint]
            if int(k) >= sizes[j]:
                raise UsageError(f"{where}: joint '{naming.shown(naming.typed(joint))}' has "
                                 f"only {sizes[j]} entries in {kind} ({naming.shown(joint)}:0.."
                                 f"{naming.shown(joint)}:{sizes[j] - 1})")
            return int(starts[j]) + int(k)
        joint, _, part = name.rpartition(".")  # the names dyn info prints: root_joint.qx
        if joint in joint_of:
            j = joint_of[joint]
            joint_model = model.joint_models[j]
            parts = list(joint_model.q_parts if kind == "q" else naming.v_parts(joint_model))
            if part in parts:
                return int(starts[j]) + parts.index(part)
            raise UsageError(f"{where}: joint '{naming.shown(naming.typed(joint))}' has no "
                             f"{kind} entry '{naming.shown(part)}' (it has {', '.join(parts)})")
        raise UsageError(f"{where}: unknown joint {said} in model {naming.shown(model.name)}"
                         + suggest(name, model.joint_names))


DEGREE = math.pi / 180.0


KINDS = ("q", "v", "a", "tau")  # the vectors of a state
TIME = "t"  # a state's time (s), as dyn excite writes it: identify reads it (a log of
# positions), the commands not using it do not warn
ONE = np.ones(1)


def layout_document(model) -> dict:
    """Every entry of q and v: its index, label (the name every input and output uses),
    joint and component (and, for v, its frame)."""
    q_entries, v_entries = [], []
    q_labels, v_labels = naming.q_labels(model), naming.v_labels(model)
    for j, name in enumerate(model.joint_names):
        joint = model.joint_models[j]
        if model.nq_joint[j] == 0:  # a mimic joint (--mimic) has no entries
            continue
        for k, part in enumerate(joint.q_parts):
            index = int(model.idx_q[j]) + k
            q_entries.append({"index": index, "label": q_labels[index], "joint": name,
                              "part": part})
        for k, part in enumerate(naming.v_parts(joint)):
            index = int(model.idx_v[j]) + k
            v_entries.append({"index": index, "label": v_labels[index], "joint": name,
                              "part": part, "frame": joint.velocity_frame})
    return {"q": q_entries, "v": v_entries}
