"""The MJCF builder: the sections of one document, read in MuJoCo's order, compiled into
a :class:`TreeDescription`.

:class:`Builder` joins the parts of the compiler, each a mixin over :class:`.state.BuildState`
in a module of its own; :meth:`Builder.build` is the order in which MuJoCo's compiler runs
them.
"""
from __future__ import annotations

from treedyn.engine.description import TreeDescription

from .armature import Armature
from .assemble import Assembly
from .fusestatic import fuse_static
from .geoms import compile_meshes
from .inertia import Inertias
from .names import Names
from .sections import Sections
from .tree import Tree
from .types import IDENTITY_POSE, WORLD, BodyBuild, Compiler, Node

SECTION_ORDER = ("compiler", "option", "size", "visual", "statistic", "default", "extension",
                 "custom", "asset", "contact", "deformable", "equality", "tendon", "actuator",
                 "sensor", "keyframe", "worldbody")
COUNTED_SECTIONS = ("contact", "deformable", "equality", "tendon", "actuator", "sensor",
                    "keyframe")


class Builder(Sections, Tree, Names, Armature, Inertias, Assembly):
    """Reads the sections of one document and assembles the TreeDescription."""

    def build(self) -> TreeDescription:
        """Read every section in MuJoCo's order and compile the tree."""
        sections: dict[str, list[Node]] = {tag: [] for tag in SECTION_ORDER}
        for node in self.root.children:
            if node.tag not in sections:
                raise node.error(f"unknown element <{node.tag}> in <mujoco>")
            sections[node.tag].append(node)
        for node in sections["compiler"]:
            self.compiler.read(node)
        self._attached_compilers()
        for node in sections["option"]:
            self._option(node)
        for tag in ("size", "visual", "statistic", "extension", "custom"):
            self.ignored[tag] += len(sections[tag])
        for node in sections["default"]:
            self.defaults.read_top(node)
        for node in sections["asset"]:
            self._asset(node)
        self._check_materials()
        for tag in COUNTED_SECTIONS:
            for node in sections[tag]:
                self.ignored[tag] += len(node.children)
        world = BodyBuild(None, 0, None, IDENTITY_POSE, IDENTITY_POSE, name=WORLD)
        self.bodies.append(world)
        for node in sections["worldbody"]:
            if node.element.attrib:
                raise node.error("<worldbody> cannot have attributes")
            self._contents(node, world, None, self.defaults.main)
        self.dropped, self.discarded = compile_meshes(self.meshes, self.all_geoms,
                                                      sections["contact"], self.compiler)
        for attrs, _frame in world.geoms:
            if id(attrs) not in self.discarded:
                self._geom(attrs).validate()
        self.names.check_final(("geom", "site", "camera", "light"))
        self._name_joints()
        self._check_keyframes(sections["keyframe"])
        self._actuator_armature(sections["tendon"], sections["actuator"])
        self._check_references(sections)
        for body in self.bodies[1:]:
            body.inertia = self._body_inertia(body)
        if self.compiler.fusestatic:
            self.bodies = fuse_static(self.bodies, self.root, self.compiler, self.fluid,
                                      self._body_inertia)
        self._name_bodies()
        self._check_moving_bodies()
        self._scale_total_mass()
        return self._description()

    def _attached_compilers(self) -> None:
        """Each attached model's compiler, for the elements of its files. MuJoCo reads an
        attached model's angles, Euler sequence and limits by its own settings (and its
        meshdir, which the document applied); the settings dyn keeps for the whole model
        must be the scene's."""
        for files, nodes, asset in self.attached:
            compiler = Compiler(meshdir=self.compiler.meshdir)
            for node in nodes:
                compiler.read(node)
            for key in ("inertiafromgeom", "inertiagrouprange", "boundmass", "boundinertia",
                        "balanceinertia", "settotalmass", "alignfree", "fusestatic", "fitaabb",
                        "discardvisual"):
                if getattr(compiler, key) != getattr(self.compiler, key):
                    node = next((n for n in nodes if n.get(key) is not None), asset)
                    raise node.error(f"an attached model's {key} that differs from the "
                                     f"scene's is not supported (dyn reads {key} for the "
                                     f"whole model)")
            for file in files:
                self.file_compilers[file] = compiler
