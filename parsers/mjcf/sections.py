"""The sections before the tree: ``<option>`` and the assets (meshes, height fields,
textures, materials)."""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import quoted
from ..files import lexical_path, not_a_file
from .geoms import MeshAsset
from .state import BuildState
from .types import ASSET_FILES, Node, own_attributes

SWITCHES = ("gravity", "spring", "damper", "frictionloss")  # the <flag>s the parser reads


class Sections(BuildState):
    """``<option>`` and ``<asset>``: gravity, the passive-force switches, meshes and the
    names geoms and materials may refer to."""

    def _option(self, node: Node) -> None:
        """``gravity``, and the ``<flag>`` :data:`SWITCHES` (the last one given wins)."""
        attrs = own_attributes(node)
        self.gravity = attrs.numbers("gravity", 3, self.gravity)
        for key in self.fluid:
            self.fluid[key] = attrs.number(key, self.fluid[key])
        self._count_passive("option", attrs, ("density", "viscosity"))
        for child in node.children:
            if child.tag == "flag":
                flags = own_attributes(child)
                for name in SWITCHES:
                    state = "disable" if name in self.disabled else "enable"
                    if flags.keyword(name, ("enable", "disable"), state) == "disable":
                        self.disabled.add(name)
                    else:
                        self.disabled.discard(name)

    def _asset(self, section: Node) -> None:
        """Meshes and height fields are kept; other assets are counted as ignored."""
        for node in section.children:
            if node.tag == "mesh":
                self._mesh_asset(node)
            elif node.tag == "hfield":
                self._asset_files(node)
                attrs = own_attributes(node)
                name = attrs.text("name") or Path(attrs.text("file", "")).stem
                self.hfields[name] = attrs.numbers("size", 4)
            else:
                self.ignored[node.tag] += 1
                self._unique_name(node, self.asset_names)
                if node.tag in ASSET_FILES:
                    self._asset_files(node)
                if node.tag == "texture":
                    self.textures.add(node.get("name") or Path(node.get("file", "")).stem)
                elif node.tag == "material":
                    self.materials[node.get("name", "")] = node

    @staticmethod
    def _unique_name(node: Node, seen: dict[tuple[str, str], Node]) -> None:
        """MuJoCo refuses a name given twice to elements of one kind (a texture, a
        material, a keyframe, ...)."""
        name = node.get("name")
        if not name:
            return
        first = seen.setdefault((node.tag, name), node)
        if first is not node:
            raise node.error(f"repeated {node.tag} name {quoted(name)} (first at line "
                             f"{first.line})")

    def _check_keyframes(self, sections: list[Node]) -> None:
        """MuJoCo 4.0's keyframe rule: ``time`` and each array are numbers, and an array
        longer than the model's (qpos: nq, qvel: nv, mpos and mquat: 3 and 4 per mocap
        body) is refused; a shorter one is completed from the model. ``act`` and ``ctrl``
        are checked as numbers only (dyn does not count activations and actuators)."""
        joints = [joint.kind for body in self.bodies for joint in body.joints]
        mocap = sum(body.mocap for body in self.bodies)
        sizes = {"qpos": sum({"free": 7, "ball": 4}.get(kind, 1) for kind in joints),
                 "qvel": sum({"free": 6, "ball": 3}.get(kind, 1) for kind in joints),
                 "mpos": 3 * mocap, "mquat": 4 * mocap, "act": None, "ctrl": None}
        names: dict[tuple[str, str], Node] = {}
        for node in (key for section in sections for key in section.children):
            self._unique_name(node, names)
            attrs = own_attributes(node)
            attrs.number("time", 0.0)
            for key, size in sizes.items():
                count = len((attrs.text(key) or "").split())
                if count:
                    attrs.numbers(key, count)
                if size is not None and count > size:
                    raise attrs.error(key, f"{count} numbers, more than the model's {size} "
                                           f"(MuJoCo refuses such a keyframe)")

    def _check_materials(self) -> None:
        """Textures that materials name (attribute, defaults or ``<layer>``) exist."""
        for node in self.materials.values():
            names = [self._default_class(node).resolve("material", node).text("texture")]
            names += [layer.get("texture") for layer in node.children if layer.tag == "layer"]
            for name in names:
                if name is not None and name not in self.textures:
                    raise node.error(f'unknown texture {quoted(name)}')

    def _mesh_asset(self, node: Node) -> None:
        """Register a mesh (name defaults to the file's stem); its file must exist."""
        attrs = self._default_class(node).resolve("mesh", node)
        file = attrs.text("file")
        name = node.get("name") or (Path(file).stem if file else "")
        if not name:
            raise node.error("a mesh needs a name or a file")
        if name in self.meshes:
            raise node.error(f'repeated mesh name {quoted(name)} (first at line '
                             f"{self.meshes[name].node.line})")
        path = self._asset_path(node, file, self.compiler.meshdir) if file else None
        hull_vertices = attrs.integer("maxhullvert", -1)
        if hull_vertices != -1 and hull_vertices < 4:
            raise attrs.error("maxhullvert", "maxhullvert must be -1 (no limit) or at least 4")
        self.meshes[name] = MeshAsset(node, name, path, attrs)

    def _asset_files(self, node: Node) -> None:
        """The files of a texture, height field or skin must be there, as MuJoCo opens
        them to compile the model, used or not (their content is not decoded)."""
        keys, folder = ASSET_FILES[node.tag]
        for key in keys:
            file = node.get(key)
            if file:
                self._asset_path(node, file, getattr(self.compiler, folder))

    def _asset_path(self, node: Node, file: str, folder: str) -> str:
        """MuJoCo's lookup: absolute file; absolute ``folder`` (meshdir or texturedir);
        model dir / folder / file, with ".." taken from the text, not from the folders it
        names (as MuJoCo does). The path must name a regular file."""
        if self.compiler.strippath:
            file = os.path.basename(file)
        path = lexical_path(self.model_dir, folder, file)
        problem = not_a_file(path)
        if problem:
            raise node.error(f"{node.tag} file {quoted(file)} {problem} (looked for "
                             f"{quoted(path, mark='')})")
        return path
