"""Named frames, their Jacobians and the centre of mass (:mod:`treedyn.engine.named`)
against Pinocchio (``framesForwardKinematics``/``data.oMf``, ``getFrameJacobian``,
``centerOfMass``, ``jacobianCenterOfMass``) on a few example-robot-data URDFs, fixed and
free-flyer, and MuJoCo (``xpos``/``xmat``, ``xanchor``, ``mj_jacBody``, ``subtree_com``,
``mj_jacSubtreeCom``) on gymnasium MJCF models; identities (J v is the frame's velocity
from finite differences of its pose; Jcom is the mass-weighted sum of the bodies'
centre-of-mass Jacobians); the batch against one state at a time."""
from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from reference_models import dm_control_models, gymnasium_models, robot_urdfs
from treedyn.engine.kinematics import (FRAMES, LOCAL, LOCAL_WORLD_ALIGNED, WORLD,
                                       attached_jacobians, attached_placements,
                                       weighted_center_of_mass)
from treedyn.engine.named import (center_of_mass, frame_jacobians, frame_placements,
                                  frame_set, subtree_root)
from treedyn.parsers import load_model

URDFS = [p for p in robot_urdfs() if p.endswith(("panda.urdf", "talos_reduced.urdf",
                                                 "ur5_robot.urdf", "solo12.urdf"))]
MJCFS = [p for p in gymnasium_models() if p.endswith(("/ant.xml", "/hopper.xml",
                                                       "/humanoid.xml", "/reacher.xml",
                                                       "/inverted_double_pendulum.xml"))]
MJCFS += [p for p in dm_control_models() if p.endswith(("suite/humanoid.xml",
                                                        "suite/quadruped.xml",
                                                        "suite/manipulator.xml",
                                                        "suite/fish.xml"))]
TOL = 1e-12
ARM = str(Path(__file__).resolve().parents[1] / "fixtures" / "two_link_arm.urdf")


def close(ours, reference, what, tol=TOL) -> None:
    scale = max(1.0, float(np.max(np.abs(reference), initial=0.0)))
    error = float(np.max(np.abs(np.asarray(ours) - reference), initial=0.0))
    assert error <= tol * scale, (what, error)


def configurations(model, key: str, count: int = 2) -> np.ndarray:
    return model.random_configuration(np.random.default_rng(zlib.crc32(key.encode())), count)


@pytest.mark.parametrize("free_flyer", [False, True], ids=["fixed", "free-flyer"])
@pytest.mark.parametrize("path", URDFS, ids=[p.rsplit("/", 1)[-1] for p in URDFS])
def test_urdf_frames_jacobians_and_com_equal_pinocchios(path, free_flyer):
    pin = pytest.importorskip("pinocchio")
    from test_pinocchio import Mapping
    model = load_model(path, free_flyer=free_flyer)
    pinmodel = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer
                else pin.buildModelFromUrdf(path))
    data, mapping = pinmodel.createData(), Mapping(model, pinmodel)
    frames = frame_set(model)
    ids = [pinmodel.getFrameId(name.removeprefix("joint:")) for name in frames.names]
    q = configurations(model, f"{path}:{free_flyer}")
    R, p = frame_placements(model, q, frames)
    J = {reference: frame_jacobians(model, q, frames, reference) for reference in FRAMES}
    mass, c, Jcom = center_of_mass(model, q)
    pin_reference = {LOCAL: pin.LOCAL, WORLD: pin.WORLD,
                     LOCAL_WORLD_ALIGNED: pin.LOCAL_WORLD_ALIGNED}
    for n in range(len(q)):
        pq = mapping.q(q[n])
        pin.framesForwardKinematics(pinmodel, data, pq)
        pin.computeJointJacobians(pinmodel, data, pq)
        for k, frame in enumerate(ids):
            if frame >= pinmodel.nframes:  # (a name Pinocchio does not keep)
                continue
            close(R[n, k], data.oMf[frame].rotation, (frames.names[k], "R"))
            close(p[n, k], data.oMf[frame].translation, (frames.names[k], "p"))
            for reference, pin_frame in pin_reference.items():
                expected = pin.getFrameJacobian(pinmodel, data, frame, pin_frame)
                close(J[reference][n, k], expected[:, mapping.v_index], (frames.names[k],
                                                                         reference))
        expected_com = pin.centerOfMass(pinmodel, data, pq)
        close(c[n], expected_com, "com")
        close(Jcom[n], pin.jacobianCenterOfMass(pinmodel, data, pq)[:, mapping.v_index], "Jcom")
    close(mass, sum(inertia.mass for inertia in pinmodel.inertias[1:]), "mass")
    joint = len(model.joint_names) // 2  # a subtree: Pinocchio's data.com of that joint
    root_mass, root_c, root_J = center_of_mass(model, q[:1], joint)
    pq = mapping.q(q[0])
    pin_joint = mapping.joint[joint]
    expected = pin.jacobianSubtreeCenterOfMass(pinmodel, data, pq, pin_joint)
    close(root_mass, data.mass[pin_joint], "subtree mass")
    if data.mass[pin_joint] > 0:  # (data.com of the subtree is in world axes after this)
        close(root_c[0], data.com[pin_joint], "subtree com")
        close(root_J[0], expected[:, mapping.v_index], "subtree Jcom")


@pytest.mark.parametrize("path", MJCFS, ids=["/".join(p.rsplit("/", 2)[-2:]) for p in MJCFS])
def test_mjcf_bodies_joints_jacobians_and_subtree_coms_equal_mujocos(path):
    mujoco = pytest.importorskip("mujoco")
    model = load_model(path)
    mj = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(mj)
    assert mj.nq == model.nq and mj.nv == model.nv
    q = configurations(model, path, 1)
    data.qpos[:] = q[0]
    mujoco.mj_forward(mj, data)
    bodies = [b for b in range(mj.nbody) if mj.body(b).name]
    names = [mj.body(b).name for b in bodies]
    frames = frame_set(model, names)
    R, p = frame_placements(model, q, frames)
    J = frame_jacobians(model, q, frames, LOCAL_WORLD_ALIGNED)
    jacp, jacr = np.zeros((3, mj.nv)), np.zeros((3, mj.nv))
    for k, (b, name) in enumerate(zip(bodies, names)):
        close(p[0, k], data.xpos[b], (name, "p"))
        close(R[0, k], data.xmat[b].reshape(3, 3), (name, "R"))
        mujoco.mj_jacBody(mj, data, jacp, jacr, b)
        close(J[0, k], np.vstack([jacp, jacr]), (name, "J"))
        if b and name not in model.body_names:  # welded to its parent: no subtree of its own
            continue
        if not b and model.world_mass:  # MuJoCo's world subtree holds the static bodies
            continue
        mass, c, Jcom = center_of_mass(model, q, subtree_root(model, name))
        close(mass, mj.body_subtreemass[b], (name, "mass"))
        if mass > 0:
            close(c[0], data.subtree_com[b], (name, "com"))
            mujoco.mj_jacSubtreeCom(mj, data, jacp, b)
            close(Jcom[0], jacp, (name, "Jcom"))
    sites = [s for s in range(mj.nsite) if mj.site(s).name]
    frames = frame_set(model, [f"site:{mj.site(s).name}" for s in sites])
    R, p = frame_placements(model, q, frames)
    J = frame_jacobians(model, q, frames, LOCAL_WORLD_ALIGNED)
    for k, s in enumerate(sites):
        close(p[0, k], data.site_xpos[s], (frames.names[k], "p"))
        close(R[0, k], data.site_xmat[s].reshape(3, 3), (frames.names[k], "R"))
        mujoco.mj_jacSite(mj, data, jacp, jacr, s)
        close(J[0, k], np.vstack([jacp, jacr]), (frames.names[k], "J"))
    last = [j for j in range(mj.njnt)  # a body's last named hinge or ball: after it, the
            if (j + 1 == mj.njnt or mj.jnt_bodyid[j + 1] != mj.jnt_bodyid[j])  # body is
            and mj.joint(j).name and mj.jnt_type[j] in (1, 3)]  # placed (a slide's anchor:
    # MuJoCo's is before its displacement)
    joints = [mj.joint(j).name for j in last]
    R, p = frame_placements(model, q, frame_set(model, [f"joint:{n}" for n in joints]))
    for k, (j, name) in enumerate(zip(last, joints)):
        close(p[0, k], data.xanchor[j], (name, "anchor"))
        close(R[0, k], data.xmat[mj.jnt_bodyid[j]].reshape(3, 3), (name, "axes"))


def pose_rate(model, frames, q, v, h=1e-6):
    """(w, u): the frames' angular velocity and origin velocity in the world, from central
    differences of their placements along q(t) = q + t v (a model of 1-dof joints)."""
    assert model.nq == model.nv == model.njoints
    (R0, p0), (R1, p1) = (frame_placements(model, q + s * h * v, frames)
                          for s in (-1.0, 1.0))
    R, _ = frame_placements(model, q, frames)
    Rdot = (R1 - R0) / (2 * h)
    W = Rdot @ np.swapaxes(R, -1, -2)  # skew(w)
    w = np.stack([W[..., 2, 1], W[..., 0, 2], W[..., 1, 0]], axis=-1)
    return w, (p1 - p0) / (2 * h)


ONE_DOF = [p for p in URDFS + MJCFS if p.endswith(("panda.urdf", "ur5_robot.urdf",
                                                   "/hopper.xml", "/reacher.xml"))]


@pytest.mark.parametrize("path", ONE_DOF, ids=[p.rsplit("/", 1)[-1] for p in ONE_DOF])
def test_J_v_is_the_frames_velocity_and_Jcom_the_weighted_body_jacobians(path):
    model = load_model(path)
    rng = np.random.default_rng(3)
    q = configurations(model, path, 1)
    v = rng.standard_normal((1, model.nv))
    frames = frame_set(model)
    w, u = pose_rate(model, frames, q, v)
    R, p = frame_placements(model, q, frames)
    aligned = frame_jacobians(model, q, frames, LOCAL_WORLD_ALIGNED) @ v[0]  # (1, k, 6)
    close(aligned[..., :3], u, "linear", 1e-6)
    close(aligned[..., 3:], w, "angular", 1e-6)
    local = frame_jacobians(model, q, frames, LOCAL) @ v[0]
    close(np.einsum("nkji,nkj->nki", R, u), local[..., :3], "local linear", 1e-6)
    world = frame_jacobians(model, q, frames, WORLD) @ v[0]  # the point at the origin
    close(world[..., :3], u - np.cross(w, p), "world linear", 1e-6)
    mass, c, Jcom = center_of_mass(model, q)
    weighted_c, weighted_J = weighted_center_of_mass(model, q[0], np.arange(model.njoints))
    close(Jcom[0], weighted_J, "Jcom")
    close(c[0], weighted_c, "com")


@pytest.mark.parametrize("path", [ARM] + URDFS[:1] + MJCFS[-1:] + [
    "random:free", "random:free_world", "random:free:coordinate"])
def test_the_batch_is_the_readable_path_one_state_at_a_time(path):
    """The batched functions (states last, the joints a frame needs) against
    :func:`~treedyn.engine.kinematics.attached_placements` and ``attached_jacobians``
    (joint by joint, (angular, linear) rows), a frame asked alone (its own path) against
    it among all, and the centre of mass of the whole tree and of a subtree against the
    bodies' weighted sum, each state alone; the random trees hold
    every joint type (planar, ball, prismatic, ... under a free root), and joints about
    +-x, +-y, +-z (the revolute joints' fast path)."""
    if path.startswith("random:"):
        from random_trees import random_model
        _, floating, *axes = path.split(":")
        model = random_model(np.random.default_rng(7), 24, floating=floating,
                             coordinate_axes=bool(axes))
    else:
        model = load_model(path, free_flyer=path.endswith(".urdf"))
    q = configurations(model, "batch", 4)
    frames = frame_set(model)
    R, p = frame_placements(model, q, frames)
    J = {reference: frame_jacobians(model, q, frames, reference) for reference in FRAMES}
    for k in (len(frames.names) // 2, len(frames.names) - 1):  # a frame asked alone
        alone = frame_set(model, [frames.names[k]])
        for reference in FRAMES:
            close(frame_jacobians(model, q, alone, reference)[:, 0], J[reference][:, k],
                  ("alone", frames.names[k], reference))
    arrays = (frames.on_body, frames.rotation, frames.translation)
    root = model.njoints // 3  # and a subtree's centre of mass
    subtrees = {-1: np.arange(model.njoints), root: np.arange(root, model.subtree_end[root])}
    coms = {k: center_of_mass(model, q, k) for k in subtrees}
    for n in range(len(q)):
        for k, bodies in subtrees.items():
            if model.body_mass[bodies].sum() > 0:
                c_one, J_one = weighted_center_of_mass(model, q[n], bodies)
                close(coms[k][1][n], c_one, ("com", k))
                close(coms[k][2][n], J_one, ("Jcom", k))
        R_one, p_one = attached_placements(model, q[n], *arrays)
        close(R[n], R_one, "R")
        close(p[n], p_one, "p")
        for reference in FRAMES:
            one = attached_jacobians(model, q[n], *arrays, reference)  # (k, 6, nv)
            close(J[reference][n], one[:, [3, 4, 5, 0, 1, 2]], reference)


def test_names_prefixes_and_unknown_names():
    path = (URDFS + MJCFS)[0]
    model = load_model(path)
    joint = model.joint_names[0]
    link = model.body_frames[0]
    frames = frame_set(model, [f"joint:{joint}", f"link:{link}", link])
    assert frames.names == (f"joint:{joint}", f"link:{link}", link)
    with pytest.raises(KeyError):
        frame_set(model, ["no such frame"])
