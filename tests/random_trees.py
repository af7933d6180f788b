"""Random kinematic trees (as TreeDescription) for identity tests, driven by a numpy Generator."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from treedyn.engine import Inertia, JointSpec, LinkSpec, TreeDescription, build_model

MOVING_TYPES = ("revolute", "continuous", "prismatic", "spherical", "ball", "planar", "fixed")
ONE_DOF_TYPES = ("revolute", "continuous", "prismatic", "fixed")
ROOT_TYPES = ("free", "free_world")


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def random_inertia(rng: np.random.Generator) -> Inertia:
    """A physically consistent inertia: principal moments from a random mass distribution."""
    mass = rng.uniform(0.1, 5.0)
    second_moments = rng.uniform(0.005, 0.3, size=3) * mass  # integral of x^2 etc.
    principal = second_moments.sum() - second_moments  # satisfies the triangle inequality
    R = random_rotation(rng)
    return Inertia(mass, rng.uniform(-0.3, 0.3, size=3), R @ np.diag(principal) @ R.T)


def random_description(rng: np.random.Generator, size: int, floating: str | None = None,
                       armature: bool = True, coordinate_axes: bool = False,
                       types: tuple = MOVING_TYPES) -> TreeDescription:
    """A tree of ``size`` joints with random types, placements, axes and inertias.

    ``floating`` adds a root joint of that type ("free" or "free_world") first.
    ``types``: the joint types drawn from (below the root joint).
    ``coordinate_axes``: each axis is +-x, +-y or +-z, and every other joint frame keeps its
    parent's axes (as most URDFs have them).
    """
    links = [LinkSpec("world", Inertia.zero())]
    joints = []
    if floating:
        links.append(LinkSpec("base", random_inertia(rng)))
        joints.append(JointSpec("root", floating, "world", "base",
                                rotation=random_rotation(rng), translation=rng.normal(size=3)))
    for k in range(size):
        parent = links[rng.integers(0 if not floating else 1, len(links))].name
        child = f"link{k}"
        kind = types[rng.integers(len(types))]
        if k == 0 and kind == "fixed":
            kind = "revolute"
        axis = rng.normal(size=3)
        rotation = random_rotation(rng)
        if coordinate_axes:
            axis = np.eye(3)[rng.integers(3)] * rng.choice([-1.0, 1.0])
            rotation = np.eye(3) if k % 2 else rotation
        links.append(LinkSpec(child, random_inertia(rng)))
        joints.append(JointSpec(
            f"joint{k}", kind, parent, child,
            rotation=rotation, translation=rng.uniform(-0.5, 0.5, size=3),
            axis=axis / np.linalg.norm(axis),
            ref=rng.uniform(-1, 1) if kind in ("revolute", "prismatic") else 0.0,
            armature=rng.uniform(0, 0.2) if armature and kind != "fixed" else 0.0))
    return TreeDescription("random", "urdf", links, joints, "world",
                           gravity=np.array([0.0, 0.0, -9.81]))


def random_model(rng: np.random.Generator, size: int, floating: str | None = None, armature=True,
                 coordinate_axes: bool = False, types: tuple = MOVING_TYPES):
    return build_model(random_description(rng, size, floating, armature, coordinate_axes, types))


def random_state(model, rng: np.random.Generator, count: int):
    q = model.random_configuration(rng, count)
    v = rng.normal(size=(count, model.nv))
    a = rng.normal(size=(count, model.nv))
    return q, v, a


def trees(max_size: int = 10):
    """Hypothesis strategy for (seed, size, floating) of :func:`random_model`."""
    return st.tuples(st.integers(0, 2**32 - 1), st.integers(1, max_size),
                     st.sampled_from([None, "free", "free_world"]))
