"""What the MJCF builder knows while it reads one document, and the helpers every part uses.

:class:`BuildState` holds the settings, assets, bodies and names read so far. The parts of
the builder (:mod:`.sections`, :mod:`.tree`, :mod:`.names`, :mod:`.armature`,
:mod:`.inertia`, :mod:`.assemble`) are mixins over it, and :class:`.builder.Builder` joins
them; each part reads and writes this state and calls only the helpers defined here.
"""
from __future__ import annotations

import os
from collections import Counter

import numpy as np

from treedyn.engine.description import GRAVITY
from treedyn.engine.rotations import (
    IDENTITY_QUAT,
    GeometryError,
    axisangle_quat,
    euler_quat,
    normalized,
    xyaxes_quat,
    zaxis_quat,
)

from ..errors import ParseError
from ..numbers import NUMBER
from . import references as refs
from .defaults import DefaultClass, Defaults
from .geoms import GeomCompiler, MeshAsset
from .types import ORIENTATION, Attributes, BodyBuild, Compiler, Node

# passive-force attributes -> the <flag> switches that turn all of their forces off
PASSIVE_FLAGS = {"stiffness": ("spring",), "damping": ("damper",),
                 "springdamper": ("spring", "damper"), "frictionloss": ("frictionloss",),
                 "gravcomp": ("gravity",)}


class BuildState:
    """The sections read so far of one document, and the bodies built from them."""

    def __init__(self, root: Node, path: str, attached: list | None = None):
        if root.tag != "mujoco":
            raise ParseError(f"root element is <{root.tag}>, expected <mujoco>", path,
                             root.line)
        self.root = root
        self.path = path
        self.model_dir = os.path.dirname(os.path.abspath(path))
        self.compiler = Compiler()
        # attached models (<attach>): (their files, their <compiler> nodes), and the compiler
        # each such file's elements are read with (angle, eulerseq, autolimits are per model)
        self.attached = attached or []
        self.file_compilers: dict[str, Compiler] = {}
        self.defaults = Defaults()
        self.gravity = np.array(GRAVITY)
        self.disabled: set[str] = set()  # SWITCHES a <flag ...="disable"> turned off
        self.fluid = {"density": 0.0, "viscosity": 0.0}  # <option>'s (fusestatic keeps
        # static bodies with mass in a fluid)
        self.ignored: Counter[str] = Counter()
        self.meshes: dict[str, MeshAsset] = {}
        self.hfields: dict[str, np.ndarray] = {}
        self.textures: set[str] = set()
        self.materials: dict[str, Node] = {}
        self.asset_names: dict[tuple[str, str], Node] = {}  # (tag, name) of the other assets
        self.bodies: list[BodyBuild] = []
        # every geom: its body, attributes and name (replicate suffix included)
        self.all_geoms: list[tuple[BodyBuild, Attributes, str]] = []
        self.discarded: set[int] = set()  # id() of geoms discardvisual leaves uncompiled
        self.dropped: set[int] = set()  # id() of geoms discardvisual leaves out of the model
        self.suffix = ""  # name suffix inside <replicate> copies
        self.names = refs.NameRegistry()
        self.compiled_names: dict[str, set[str]] = {}  # tendons and actuators

    def _compiler_of(self, file: str) -> Compiler:
        """The compiler settings of the model the file ``file`` belongs to."""
        return self.file_compilers.get(file, self.compiler)

    def _default_class(self, node: Node) -> DefaultClass:
        """The default class an element names with ``class``, else ``main``."""
        if node.get("class") is None:
            return self.defaults.main
        return self.defaults.find(node.get("class"), node)

    def _count_passive(self, tag: str, attrs: Attributes, keys: tuple[str, ...]) -> None:
        """Forces outside M a + h (springs, damping, friction loss, gravity compensation,
        fluid forces) that MuJoCo's passive or constraint forces add: each non-zero one
        is counted as ignored (``"joint damping"``), so that dyn info shows it."""
        for key in keys:
            switches = PASSIVE_FLAGS.get(key, ())
            if switches and all(s in self.disabled for s in switches):
                continue  # MuJoCo leaves these forces out too
            if any(NUMBER.fullmatch(word) and float(word) != 0.0
                   for word in (attrs.text(key) or "").split()):
                self.ignored[f"{tag} {key}"] += 1

    def _orientation(self, attrs: Attributes) -> np.ndarray:
        """Unit quaternion of an element's orientation attributes (identity if none)."""
        given = [key for key in ORIENTATION if attrs.has(key)]
        if len(given) > 1:
            raise attrs.error(given[1], f"only one orientation attribute is allowed "
                                        f"(also given: {given[0]})")
        if not given:
            return IDENTITY_QUAT
        key = given[0]
        compiler = self._compiler_of(attrs.owner.file)
        try:
            if key == "quat":
                quat = attrs.numbers("quat", 4)
                if not np.any(quat):
                    raise attrs.error("quat", "zero quaternion")
                return normalized(quat)
            if key == "axisangle":
                return axisangle_quat(attrs.numbers(key, 4), compiler.degree)
            if key == "euler":
                return euler_quat(attrs.numbers(key, 3), compiler.eulerseq, compiler.degree)
            if key == "xyaxes":
                return xyaxes_quat(attrs.numbers(key, 6))
            return zaxis_quat(attrs.numbers(key, 3))
        except GeometryError as error:
            raise attrs.error(key, str(error)) from None

    def _geom(self, attrs: Attributes) -> GeomCompiler:
        """The compiler of one geom, over this model's assets and settings."""
        return GeomCompiler(attrs, self.meshes, self.hfields, self.compiler, self._orientation)
