"""Format-neutral description of a kinematic tree, as produced by the parsers.

A parser (URDF, MJCF) turns its XML into a :class:`TreeDescription`: links with their
inertia, and joints that connect a parent link to a child link, including ``fixed`` joints.
:func:`treedyn.engine.model.build_model` turns a description into the compact-tree
:class:`~treedyn.engine.model.Model` the algorithms run on: fixed joints merged into their
parent body, joints ordered parents-first (depth-first, in document order), and every
derived index array computed once.

Conventions
-----------
* A joint's placement ``(rotation, translation)`` is the pose of the joint frame in the
  parent link's frame at zero joint motion: ``p_parent = rotation @ p_joint + translation``.
  The child link's frame IS the joint frame after the joint motion (URDF semantics; the
  MJCF parser adds intermediate massless links where a body carries several joints).
* ``axis`` is a unit vector in the joint frame (1-dof joints and planar normal).
* ``ref`` is MuJoCo's joint reference: the joint displacement is ``q - ref``.
* Link inertia: mass, centre of mass ``com`` in the link frame, and the rotational
  inertia about the com expressed in the link frame (3x3, symmetric).
* Link geometry (for the diagnostics only, never for the dynamics): collision and visual
  :class:`Shape` s posed in the link frame, as the file gives them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from .names import unique
from .rotations import skew

# the defaults' values, copied for each new object (a copy is several times faster than
# np.eye: 100 000 links make 200 000 of them)
_IDENTITY, _ORIGIN = np.eye(3), np.zeros(3)
GRAVITY = (0.0, 0.0, -9.81)  # m/s^2 along -z: the default of URDF readers and of MuJoCo

JOINT_TYPES = (
    "fixed",
    "revolute",
    "continuous",
    "prismatic",
    "spherical",  # Pinocchio layout: q = (qx, qy, qz, qw)
    "ball",  # MuJoCo layout: q = (qw, qx, qy, qz); reported as type "spherical"
    "free",  # Pinocchio LOCAL: q = (x, y, z, qx, qy, qz, qw), v = (v_local, w_local)
    "free_world",  # MuJoCo: q = (x, y, z, qw, qx, qy, qz), v = (v_world, w_local)
    "planar",  # q = (x, y, theta) in the plane normal to the joint z axis, v local
)


@dataclass(frozen=True)
class SourceRef:
    """Where an element came from: file path and 1-based line (0 when unknown)."""

    file: str = ""
    line: int = 0
    element: str = ""

    def __str__(self) -> str:
        where = self.file or "<model>"
        if self.line:
            where += f":{self.line}"
        if self.element:
            where += f": <{self.element}>"
        return where


@dataclass(frozen=True)
class Inertia:
    """Rigid-body inertia: mass, com (3,) and rotational inertia about the com (3, 3)."""

    mass: float
    com: np.ndarray  # (3,)
    inertia: np.ndarray  # (3, 3), about the com, in the link frame

    @staticmethod
    def zero() -> "Inertia":
        return Inertia(0.0, np.zeros(3), np.zeros((3, 3)))

    def spatial(self) -> np.ndarray:
        """6x6 spatial inertia about the link origin, motion ordered (angular, linear)."""
        h = self.mass * self.com
        hx = skew(h)
        c = skew(self.com)
        spatial = np.empty((6, 6))
        spatial[:3, :3] = self.inertia - self.mass * c @ c
        spatial[:3, 3:] = hx
        spatial[3:, :3] = -hx
        spatial[3:, 3:] = self.mass * np.eye(3)
        return spatial

    def transformed(self, rotation: np.ndarray, translation: np.ndarray) -> "Inertia":
        """This inertia expressed in a frame where the link frame sits at (rotation, translation)."""
        return Inertia(
            self.mass,
            rotation @ self.com + translation,
            rotation @ self.inertia @ rotation.T,
        )

    @staticmethod
    def from_spatial(spatial: np.ndarray) -> "Inertia":
        mass = float(spatial[3, 3])
        if mass <= 0.0:
            return Inertia(mass, np.zeros(3), spatial[:3, :3].copy())
        h = np.array([spatial[2, 4], spatial[0, 5], spatial[1, 3]])
        com = h / mass
        c = skew(com)
        inertia = spatial[:3, :3] + mass * c @ c
        return Inertia(mass, com, 0.5 * (inertia + inertia.T))


@dataclass(frozen=True)
class Mimic:
    """A joint's ``<mimic>``: it follows ``joint`` as ``multiplier * q_joint + offset``."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0
    source: SourceRef = field(default_factory=SourceRef, compare=False)  # the <mimic> element


SHAPE_KINDS = ("box", "cylinder", "sphere", "capsule", "ellipsoid", "mesh")


@dataclass(frozen=True)
class Shape:
    """A collision or visual shape of a link, posed in the link frame.

    ``size`` by ``kind``: "box" (x, y, z full lengths), "cylinder" (radius, length along
    the shape's z), "sphere" (radius,), "capsule" (radius, length of the cylindrical part
    along z), "ellipsoid" (x, y, z semi-axes; MJCF only), "mesh" (empty: ``mesh`` names
    the file as written, or resolved by the MJCF parser, scaled by ``scale``).
    ``p_link = rotation @ p_shape + translation``.
    """

    kind: str  # one of SHAPE_KINDS
    size: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rotation: np.ndarray = field(default_factory=_IDENTITY.copy)  # (3, 3)
    translation: np.ndarray = field(default_factory=_ORIGIN.copy)  # (3,)
    role: str = "collision"  # or "visual"
    mesh: str = ""
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))  # (3,)
    source: SourceRef = field(default_factory=SourceRef)


@dataclass
class LinkSpec:
    name: str
    inertia: Inertia
    source: SourceRef = field(default_factory=SourceRef)
    has_inertial: bool = True  # False when the file gave no inertia for this link
    # The model body this link belongs to when it is an intermediate link of a joint chain
    # inside one body (MJCF bodies with several joints); empty: the link is its own body.
    body: str = ""
    # Where the inertia was written (URDF: the <inertial> element); empty when unknown.
    inertial_source: SourceRef = field(default_factory=SourceRef)
    # Rotation of the frame the file wrote the tensor in (URDF: <inertial><origin rpy>),
    # so that the tensor as written is rotation.T @ inertia.inertia @ rotation.
    inertial_rotation: np.ndarray = field(default_factory=_IDENTITY.copy)  # (3, 3)
    geometry: tuple[Shape, ...] = ()  # collision and visual shapes, in document order
    # MJCF: the compiler computed the inertia from the body's geoms (no <inertial> used)
    inertia_from_geometry: bool = False
    # Pose in the link frame of the frame the file places <inertial> in (MJCF: the <body>
    # frame, which alignfree moves off the link frame); the link frame itself for URDF.
    file_rotation: np.ndarray = field(default_factory=_IDENTITY.copy)  # (3, 3)
    file_translation: np.ndarray = field(default_factory=_ORIGIN.copy)  # (3,)


@dataclass
class JointSpec:
    name: str
    type: str  # one of JOINT_TYPES
    parent: str  # parent link name ("world" is never a link: roots have no JointSpec)
    child: str
    rotation: np.ndarray = field(default_factory=_IDENTITY.copy)  # (3, 3)
    translation: np.ndarray = field(default_factory=_ORIGIN.copy)  # (3,)
    axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))  # (3,)
    ref: float = 0.0
    armature: float = 0.0
    damping: float = 0.0
    friction: float = 0.0
    lower: float = -np.inf  # position limits for 1-dof joints
    upper: float = np.inf
    neutral: np.ndarray | None = None  # optional q block for the neutral configuration
    mimic: Mimic | None = None
    source: SourceRef = field(default_factory=SourceRef)
    # effort and velocity limits of a 1-dof joint (N or N m; m/s or rad/s), +inf where the
    # file gives none; ``actuated``: whether anything drives the joint (None: a revolute,
    # continuous or prismatic joint is). ``limit_source``: where the effort limit was
    # written (URDF: the <limit> element; MJCF: the joint, or its first actuator)
    effort: float = np.inf
    velocity: float = np.inf
    actuated: bool | None = None
    limit_source: SourceRef = field(default_factory=SourceRef)


@dataclass(frozen=True)
class SiteSpec:
    """A named MJCF ``<site>``: a frame fixed on ``link`` at ``(rotation, translation)``
    (its axes and origin in the link frame), for the kinematics only; ``source``: the
    ``<site>`` element."""

    name: str
    link: str
    rotation: np.ndarray  # (3, 3)
    translation: np.ndarray  # (3,)
    source: SourceRef = field(default_factory=SourceRef, compare=False)


@dataclass
class TreeDescription:
    """Links and joints of one model. ``root`` names the root link(s) attached to the world.

    A root link is welded to the world unless a joint connects it: the parsers express a
    floating base as a ``free``/``free_world`` joint whose parent is ``world_link``.
    """

    name: str
    format: str  # "urdf" or "mjcf"
    links: list[LinkSpec]
    joints: list[JointSpec]
    world_link: str  # name of the link fixed to the world (URDF root, or MJCF "world")
    gravity: np.ndarray = field(default_factory=lambda: np.array(GRAVITY))
    source: str = ""
    ignored: dict[str, int] = field(default_factory=dict)  # element kind -> count ignored
    # one line each (file:line: what): values read as the reference parser reads them
    # although the file meant something else, for the caller to report
    notes: tuple[str, ...] = ()
    # every file the dynamics were read from, absolute: the model, its MJCF includes and
    # the mesh files MJCF inertias may come from (URDF meshes do not change the dynamics)
    files: tuple[str, ...] = ()
    sites: tuple[SiteSpec, ...] = ()  # MJCF's named sites, in document order

    def with_free_flyer(self, name: str = "root_joint") -> "TreeDescription":
        """A copy whose root link floats: a Pinocchio-LOCAL ``free`` joint to a new world link
        (Pinocchio's ``universe``, or ``universe_``... when a link already has that name).

        The joint is ``name`` as in Pinocchio, beside a fixed joint of that name (a frame in
        Pinocchio too) and a link of that name (links and joints are named apart). When a
        moving joint already has that name (Pinocchio then has two joints of one name, and
        its lookup by name finds the free-flyer), the free-flyer is ``name_``, ``name__``...
        so that every moving joint keeps one name; ``notes`` says so.
        """
        world = unique("universe", {link.name for link in self.links})
        chosen = unique(name, {joint.name for joint in self.joints if joint.type != "fixed"})
        notes = self.notes
        if chosen != name:
            holder = next(joint for joint in self.joints if joint.name == name)
            notes += (f"{holder.source}: the floating root joint is "
                      f"named '{chosen}', since this joint is already named '{name}' (Pinocchio "
                      f"names both '{name}')",)
        joint = JointSpec(name=chosen, type="free", parent=world, child=self.world_link)
        return dataclasses.replace(
            self,
            links=[LinkSpec(world, Inertia.zero(), has_inertial=False)] + list(self.links),
            joints=[joint] + list(self.joints),
            notes=notes,
            world_link=world,
        )

