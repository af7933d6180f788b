"""Mimic joints enforced: a model whose mimic joints follow their masters (Pinocchio 4.1's
``buildModelFromUrdf(..., mimic=True)``).

Conventions
-----------
* A mimic joint ``m`` of master ``k`` (a revolute, continuous or prismatic joint mimicking
  a revolute, continuous or prismatic one) has no coordinate of its own:
  ``q_m = multiplier * q_k + offset``, ``v_m = multiplier * v_k``, ``a_m = multiplier * a_k``.
  A continuous joint's q is one angle (dyn's layout), so the rule applies to it as written;
  Pinocchio, which holds (cos, sin), takes the master's angle in (-pi, pi] first -- the
  same for such angles, or for an integer multiplier.
* The coupled model lists the same joints and bodies in the same tree order, Pinocchio's:
  a mimic joint has ``nq_joint = nv_joint = 0`` and its master's ``idx_q``/``idx_v``; the
  reduced q, v are the coordinates of the other joints in tree order. With the coupling
  matrix ``G`` (nv_full, nv), ``v_full = G v``, the algorithms are those of the coupled
  system: ``tau = G^T tau_full(q_full, G v, G a)`` (a master's force includes its mimics'
  reactions), ``M = G^T M_full G``, and forward dynamics solves ``M a = tau - G^T h_full``.
  Armature: ``G^T diag(armature_full) G``, diagonal since every full dof follows one dof.
* What is refused (:class:`MimicError`): a mimic of itself, of a joint that is not a moving
  joint of the model, of a joint that is not revolute, continuous or prismatic, and of a
  joint that is itself a mimic (a chain, or a cycle), as Pinocchio refuses them. Pinocchio
  also refuses a master that comes later in its depth-first order and a continuous joint
  mimicking a revolute or prismatic one (or the reverse); both are well defined here and
  are built. A ``<mimic>`` on a joint of any other type (planar, floating) is not enforced,
  as in Pinocchio.

The batched path is index arithmetic on flat arrays computed once by :func:`couple`:
gathers in, matrix products out, around the uncoupled kernels. The readable path is
:func:`treedyn.engine.reference.coupling_reference`; ``tests/test_mimic.py`` holds one to
the other (``test_coupling_arrays_are_those_of_the_readable_path``; the coupled algorithms
to ``rnea_reference`` and the others in ``test_batched_path_matches_the_readable_one``)
and both to Pinocchio.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .factor import dense_pattern
from .names import closest

MIMICKING = ("revolute", "continuous", "prismatic")  # joint types whose <mimic> is enforced
MIMICKED = ("revolute", "continuous", "prismatic")  # joint types a mimic may follow


class MimicError(ValueError):
    """A mimic relation that cannot be enforced; ``joint`` names the mimic joint."""

    def __init__(self, joint: str, problem: str):
        self.joint, self.problem = joint, problem
        super().__init__(f"joint {joint!r}: {problem}")


@dataclass(frozen=True)
class Coupling:
    """How a coupled model's coordinates drive its uncoupled model ``full``."""

    full: object  # the uncoupled Model, armature zero (the coupled model carries it)
    mimic: np.ndarray  # (nm,) int: the mimic joints, in tree order
    master: np.ndarray  # (nm,) int: the joint each one follows
    multiplier: np.ndarray  # (nm,)
    offset: np.ndarray  # (nm,)
    q_source: np.ndarray  # (nq_full,) int: the reduced q entry each full q entry follows
    q_scale: np.ndarray  # (nq_full,): 1, or the multiplier of a mimic's coordinate
    q_offset: np.ndarray  # (nq_full,): 0, or the offset of a mimic's coordinate
    v_source: np.ndarray  # (nv_full,) int: the reduced dof each full dof follows
    v_scale: np.ndarray  # (nv_full,)
    G: np.ndarray  # (nv_full, nv): v_full = G v
    tree_sparse: bool  # M keeps the tree pattern of dof_parent (its L^T D L has no fill-in)

    def expand_q(self, q: np.ndarray) -> np.ndarray:
        """q_full (N, nq_full) of q (N, nq)."""
        return q[:, self.q_source] * self.q_scale + self.q_offset

    def expand_v(self, v: np.ndarray | None) -> np.ndarray | None:
        """v_full = G v (N, nv_full) of v (N, nv), also for a; None stays None."""
        return None if v is None else v[:, self.v_source] * self.v_scale

    def project(self, tau_full: np.ndarray) -> np.ndarray:
        """G^T tau_full (N, nv): the generalized forces of the coupled coordinates."""
        return tau_full @ self.G

    def project_matrix(self, M_full: np.ndarray) -> np.ndarray:
        """G^T M_full G (N, nv, nv)."""
        return np.matmul(np.matmul(self.G.T, M_full), self.G)


def couple(model):
    """The model with its mimic joints enforced; the model itself when nothing is to be
    enforced. Raises :class:`MimicError` for a relation that cannot be (module doc)."""
    relations = _relations(model)
    if not relations:
        return model
    nj = model.njoints
    follows = np.arange(nj)  # joint -> the joint whose coordinate it follows
    multiplier, offset = np.ones(nj), np.zeros(nj)
    for j, (k, mimic) in relations.items():
        follows[j], multiplier[j], offset[j] = k, mimic.multiplier, mimic.offset
    own = follows == np.arange(nj)  # (nj,) bool: the joint has coordinates of its own
    nq_joint = np.where(own, model.nq_joint, 0)
    nv_joint = np.where(own, model.nv_joint, 0)
    idx_q = np.concatenate([[0], np.cumsum(nq_joint)[:-1]]).astype(int)
    idx_v = np.concatenate([[0], np.cumsum(nv_joint)[:-1]]).astype(int)
    idx_q, idx_v = idx_q[follows], idx_v[follows]  # a mimic: its master's, as in Pinocchio
    q_source, q_scale, q_offset = _sources(model.idx_q, model.nq_joint, idx_q, follows,
                                           multiplier, offset)
    v_source, v_scale, _ = _sources(model.idx_v, model.nv_joint, idx_v, follows, multiplier,
                                    np.zeros(nj))
    nq, nv = int(nq_joint.sum()), int(nv_joint.sum())
    G = np.zeros((model.nv, nv))  # (nv_full, nv)
    G[np.arange(model.nv), v_source] = v_scale
    keep_q = np.concatenate([np.arange(model.idx_q[j], model.idx_q[j] + model.nq_joint[j])
                             for j in range(nj) if own[j]] or [np.zeros(0, dtype=int)])
    pattern = (G != 0).astype(int)
    # (nv, nv): a mimic model is small, and G above is dense already
    sparsity = (pattern.T @ dense_pattern(model.dof_parent).astype(int) @ pattern) > 0
    dof_parent = _dof_parent(model.parent, nv_joint, idx_v)
    armature = (model.armature * v_scale ** 2) @ (G != 0)  # diag(G^T diag(armature) G)
    dofs_before = np.concatenate([[0], np.cumsum(nv_joint)]).astype(int)  # (nj + 1,)
    nv_subtree = (dofs_before[model.subtree_end] - dofs_before[:nj]).astype(int).reshape(nj)
    mimics = np.flatnonzero(~own)
    keep_v = np.flatnonzero(own[model.dof_joint])  # (nv,) the dofs a coupled model keeps
    coupling = Coupling(
        full=dataclasses.replace(model, armature=np.zeros(model.nv)),
        mimic=mimics, master=follows[mimics], multiplier=multiplier[mimics],
        offset=offset[mimics], q_source=q_source, q_scale=q_scale, q_offset=q_offset,
        v_source=v_source, v_scale=v_scale, G=G,
        tree_sparse=_within_tree(sparsity, dof_parent))
    return dataclasses.replace(
        model, nq_joint=nq_joint, nv_joint=nv_joint, idx_q=idx_q, idx_v=idx_v,
        nv_subtree=nv_subtree, dof_joint=np.repeat(np.arange(nj), nv_joint),
        dof_parent=dof_parent, nq=nq, nv=nv, armature=armature,
        q_neutral=model.q_neutral[keep_q], q_lower=model.q_lower[keep_q],
        q_upper=model.q_upper[keep_q], effort_limit=model.effort_limit[keep_v],
        velocity_limit=model.velocity_limit[keep_v], actuated=model.actuated[keep_v],
        coupling=coupling)


def _relations(model) -> dict:
    """{mimic joint index: (master index, Mimic)} of the relations to enforce, in tree
    order; MimicError for the first that cannot be."""
    ids = model.joint_ids
    enforced = {name: mimic for name, mimic in model.mimic.items()
                if model.joint_types[ids[name]] in MIMICKING}
    fixed = {joint.name for joint in model.description.joints if joint.type == "fixed"}
    relations = {}
    for name, mimic in enforced.items():
        master = mimic.joint
        if master == name:
            raise MimicError(name, "it mimics itself")
        if master not in ids:
            kind = "a fixed joint, which has no coordinate" if master in fixed else \
                "not a joint of the model" + _did_you_mean(master, model.joint_names)
            raise MimicError(name, f"it mimics {master!r}, {kind}")
        k = ids[master]
        if model.joint_types[k] not in MIMICKED:
            raise MimicError(name, f"it mimics {master!r}, a {model.public_type(k)} joint: "
                             "only a revolute, continuous or prismatic joint can be mimicked")
        if master in enforced:
            back = enforced[master].joint
            what = (f"which mimics {name!r} back (a cycle)" if back == name
                    else f"which itself mimics {back!r} (a chain)")
            raise MimicError(name, f"it mimics {master!r}, {what}: Pinocchio refuses a mimic "
                             "of a mimic; make every joint of the group mimic the one that "
                             "is driven, with the multipliers and offsets combined")
        relations[ids[name]] = (k, mimic)
    return relations


def _did_you_mean(name: str, known) -> str:
    """' (did you mean 'x'?)' for the closest of ``known``, else ""."""
    close = closest(name, known)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _sources(starts, sizes, reduced_starts, follows, multiplier, offset):
    """(source (n,) int, scale (n,), offset (n,)) of every full entry of q or v: the reduced
    entry it follows, and how."""
    n = int(np.sum(sizes))
    source, scale, shift = np.zeros(n, dtype=int), np.ones(n), np.zeros(n)
    for j in range(len(sizes)):
        block = slice(int(starts[j]), int(starts[j] + sizes[j]))
        source[block] = reduced_starts[j] + np.arange(sizes[j])
        scale[block], shift[block] = multiplier[j], offset[j]
    return source, scale, shift


def _dof_parent(parent, nv_joint, idx_v) -> np.ndarray:
    """(nv,) the previous dof on the path to the root, skipping joints without dofs."""
    nj = len(parent)
    last = np.full(nj, -1)  # joint -> the last dof on its path to the root (itself included)
    dof_parent = np.empty(int(np.sum(nv_joint)), dtype=int)
    for j in range(nj):
        above = last[parent[j]] if parent[j] >= 0 else -1
        if nv_joint[j] == 0:
            last[j] = above
            continue
        first = int(idx_v[j])
        dof_parent[first] = above
        dof_parent[first + 1:first + nv_joint[j]] = np.arange(first, first + nv_joint[j] - 1)
        last[j] = first + nv_joint[j] - 1
    return dof_parent


def _within_tree(sparsity: np.ndarray, dof_parent: np.ndarray) -> bool:
    """Whether every non-zero of the pattern pairs a dof with one of its ancestors (or
    itself): then the tree-ordered L^T D L of :mod:`treedyn.engine.factor` holds for M."""
    nv = len(dof_parent)
    related = np.eye(nv, dtype=bool)
    for i in range(nv):
        if dof_parent[i] >= 0:
            related[i] |= related[dof_parent[i]]
    return bool(np.all(~sparsity | related | related.T))
