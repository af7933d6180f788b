"""treedyn against Pinocchio on every URDF example-robot-data ships that Pinocchio loads.

Fixed base and with a free-flyer, at random states (within joint limits, random unit
quaternions, normal velocities/accelerations/torques and external forces): tau (RNEA), M
(CRBA) and a (ABA) agree to a max relative error of 1e-9, where the relative error is
max|ours - pinocchio| / max|pinocchio|. Joints are mapped by name; Pinocchio's
continuous joints take (cos, sin) and its planar joints (x, y, cos, sin).

Accelerations of an ill-conditioned M (cond > 1e8, e.g. icub's neck, cond ~ 3e12) are
only defined to about eps * cond(M): there ours are held to a backward error of 1e-9
instead, max|M a - (tau - h)| / max|tau - h| with Pinocchio's M and h (fext in h). Singular
M (romeo's massless fingers) gives non-finite accelerations on both sides.
"""
from __future__ import annotations

import glob
import os
import zlib

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from reference_models import robots_root  # noqa: E402
from treedyn.engine import aba, crba, rnea  # noqa: E402
from treedyn.parsers import load_model  # noqa: E402

TOL = 1e-9
STATES = 4




def pinocchio_loadable(path: str) -> bool:
    try:
        pin.buildModelFromUrdf(path)
    except (RuntimeError, ValueError):
        return False
    return True


ROOT = robots_root()
URDFS = [p for p in sorted(glob.glob(os.path.join(ROOT, "**", "*.urdf"), recursive=True))
         if pinocchio_loadable(p)] if ROOT else []


class Mapping:
    """Index maps between treedyn's and Pinocchio's coordinates, built from joint names."""

    def __init__(self, model, pinmodel, joints=None):
        """``joints``: Pinocchio's joint id of each of ours, where names do not say it."""
        self.model, self.pinmodel = model, pinmodel
        self.joint = (list(joints) if joints is not None else
                      [pinmodel.getJointId(name) for name in model.joint_names])
        assert all(j < pinmodel.njoints for j in self.joint), "joint missing in Pinocchio"
        self.v_index = np.concatenate([
            np.arange(pinmodel.idx_vs[j], pinmodel.idx_vs[j] + pinmodel.nvs[j]) for j in self.joint
        ] or [np.zeros(0, dtype=int)]).astype(int)

    def q(self, q: np.ndarray) -> np.ndarray:
        out = np.array(pin.neutral(self.pinmodel))
        for i, j in enumerate(self.joint):
            block = q[self.model.idx_q[i]:self.model.idx_q[i] + self.model.nq_joint[i]]
            start, kind = self.pinmodel.idx_qs[j], self.model.joint_types[i]
            if kind == "continuous":
                block = np.array([np.cos(block[0]), np.sin(block[0])])
            elif kind == "planar":
                block = np.array([block[0], block[1], np.cos(block[2]), np.sin(block[2])])
            out[start:start + len(block)] = block
        return out

    def v(self, v: np.ndarray) -> np.ndarray:
        out = np.zeros(self.pinmodel.nv)
        out[self.v_index] = v
        return out

    def back(self, x: np.ndarray) -> np.ndarray:
        return x[self.v_index]

    def reference(self, data, q, v, a, fext) -> tuple[np.ndarray, np.ndarray, tuple]:
        """Pinocchio's tau and full M for one treedyn state, in treedyn's dof order, and
        Pinocchio's (q, v, forces) of that state for further calls."""
        pq, pv, forces = self.q(q), self.v(v), self.forces(fext)
        tau = self.back(pin.rnea(self.pinmodel, data, pq, pv, self.v(a), forces))
        M = np.array(pin.crba(self.pinmodel, data, pq))
        M = np.triu(M) + np.triu(M, 1).T
        return tau, M[np.ix_(self.v_index, self.v_index)], (pq, pv, forces)

    def forces(self, fext: np.ndarray):
        forces = pin.StdVec_Force()
        for _ in range(self.pinmodel.njoints):
            forces.append(pin.Force.Zero())
        for i, j in enumerate(self.joint):
            forces[j] = pin.Force(fext[i, :3], fext[i, 3:])
        return forces


def relative_error(ours, reference) -> float:
    """max|ours - reference| / max|reference|: relative to the reference's own scale, so a
    model in grams or millimetres is held as tightly as one in kilograms and metres."""
    return float(np.max(np.abs(ours - reference), initial=0.0) /
                 max(float(np.max(np.abs(reference), initial=0.0)), np.finfo(float).tiny))


@pytest.mark.skipif(not URDFS, reason="example-robot-data is not installed")
@pytest.mark.parametrize("free_flyer", [False, True], ids=["fixed", "free-flyer"])
@pytest.mark.parametrize("path", URDFS, ids=[os.path.relpath(p, ROOT) for p in URDFS])
def test_matches_pinocchio(path, free_flyer):
    model = load_model(path, free_flyer=free_flyer)
    pinmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer
                else pin.buildModelFromUrdf(path))
    data = pinmodel.createData()
    assert model.nv == pinmodel.nv
    assert list(model.joint_names) == list(pinmodel.names)[1:]
    mapping = Mapping(model, pinmodel)
    rng = np.random.default_rng(zlib.crc32(f"{os.path.relpath(path, ROOT)}:{free_flyer}".encode()))
    q = model.random_configuration(rng, STATES)
    v, a, tau = (rng.normal(size=(STATES, model.nv)) for _ in range(3))
    fext = rng.normal(size=(STATES, model.njoints, 6))

    ours_tau = rnea(model, q, v, a, fext)
    ours_M = crba(model, q)
    ours_a = aba(model, q, v, tau, fext)
    for n in range(STATES):
        ref_tau, ref_M, (pq, pv, forces) = mapping.reference(data, q[n], v[n], a[n], fext[n])
        ref_a = mapping.back(pin.aba(pinmodel, data, pq, pv, mapping.v(tau[n]), forces))
        assert relative_error(ours_tau[n], ref_tau) <= TOL
        assert relative_error(ours_M[n], ref_M) <= TOL
        if not np.all(np.isfinite(ref_a)):  # M singular (massless subtrees): both must say so
            assert not np.all(np.isfinite(ours_a[n]))
            continue
        if model.nv == 0 or np.linalg.cond(ref_M) <= 1e8:
            assert relative_error(ours_a[n], ref_a) <= TOL
        else:
            bias = mapping.back(pin.rnea(pinmodel, data, pq, pv, np.zeros(pinmodel.nv), forces))
            assert relative_error(ref_M @ ours_a[n], tau[n] - bias) <= TOL


@pytest.mark.skipif(not URDFS, reason="example-robot-data is not installed")
@pytest.mark.parametrize("path", URDFS, ids=[os.path.relpath(p, ROOT) for p in URDFS])
def test_nv_subtree_matches_pinocchio(path):
    model = load_model(path, free_flyer=True)
    pinmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    pindata = pinmodel.createData()
    pin.crba(pinmodel, pindata, pin.neutral(pinmodel))
    expected = [pindata.nvSubtree[pinmodel.getJointId(name)] for name in model.joint_names]
    assert list(model.nv_subtree) == expected
