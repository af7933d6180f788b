"""Geoms and mesh assets, compiled as MuJoCo's compiler compiles them.

MuJoCo processes the mesh assets first, every one of them, before it looks at any geom: a
mesh that no geom uses must still be readable and processable (enough vertices, a volume
or an area for its inertia mode, consistently turned faces where the mode needs them), and
its convex hull is built when the mesh has no faces, when its inertia mode is ``convex``,
or when a geom that takes part in collisions uses it. ``discardvisual`` removes the geoms
that collide with nothing; when none of them counts for a body's inertia, they and the
meshes only they use are skipped altogether. :func:`compile_meshes` does this.

Each geom is then compiled on its own (:class:`GeomCompiler`): its sizes (from ``size``,
``fromto``, its height field, or a primitive fitted to its mesh), its pose, its mass and
principal moments (from ``mass`` or ``density``), each with MuJoCo's checks, and its
geometry for the diagnostics as a :class:`~treedyn.engine.description.Shape`.

Mesh vertices come from the asset's file (:mod:`treedyn.parsers.meshes`) or from the ``<mesh>`` element
itself, and :func:`.geometry.mesh_inertia` gives their mass properties. A mesh is
read once, when the assets are compiled or when a geom first needs it
(:func:`processed_mesh`); its errors point at the ``<mesh>`` element and say when no geom
uses it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from treedyn.engine.description import Shape
from treedyn.engine.geometry import shape_size
from treedyn.engine.rotations import EPS, GeometryError, normalized, quat_matrix, zaxis_quat

from ..errors import ParseError, quoted
from ..meshes import MeshData, MeshFileError, read_mesh_file
from ..shape_inertia import solid_measure, solid_principal
from . import geometry as geo
from .types import Attributes, BodyBuild, Compiler, Inertial, Node, Pose

GEOM_TYPES = tuple(geo.SIZE_COUNT)


# -- mesh assets ------------------------------------------------------------------------


@dataclass
class MeshAsset:
    """A ``<mesh>`` asset; its file is checked at once, read when the meshes are compiled
    (see :func:`compile_meshes`) or on first use, and read once."""

    node: Node
    name: str
    path: str | None
    attrs: Attributes
    data: geo.MeshInertia | None = None
    vertices: np.ndarray | None = None  # as read, once read
    hull_checked: bool = False  # its convex hull was built (MuJoCo's collision hull)


def compile_meshes(meshes: dict[str, MeshAsset],
                   geoms: list[tuple[BodyBuild, Attributes, str]],
                   contact: list[Node], compiler: Compiler) -> tuple[set[int], set[int]]:
    """Compile the mesh assets as MuJoCo does, before any geom.

    MuJoCo compiles every ``<mesh>``, used or not: it is read and processed (inertia
    mode, volume or area, principal moments), and its convex hull is built when it has
    no faces, when its inertia is ``convex``, or when a mesh (or sdf) geom that collides
    (contype or conaffinity non-zero) or is in a contact ``<pair>`` uses it. With
    ``discardvisual``, visual geoms (contype = conaffinity = 0, in no pair) are left out
    of the model; when none of them counts for a body's inertia they are dropped before
    compiling, unchecked, and so are the meshes no remaining geom uses. Builtin and
    plugin meshes, which treedyn cannot build, are refused only where a geom needs their
    inertia (an sdf geom is refused for itself).

    ``meshes`` are the model's mesh assets by name, ``geoms`` all its geoms (body,
    attributes, name) and ``contact`` its ``<contact>`` sections. Returns (dropped,
    discarded): the id() of the geoms discardvisual leaves out of the model, and of those
    it leaves uncompiled.
    """
    paired = {name for section in contact for node in section.children
              if node.tag == "pair" for name in (node.get("geom1"), node.get("geom2"))
              if name}

    def visual(attrs: Attributes, name: str) -> bool:
        return (attrs.integer("contype", 1) == 0 and attrs.integer("conaffinity", 1) == 0
                and name not in paired)

    def infers(body: BodyBuild, attrs: Attributes) -> bool:
        return (body.id > 0
                and (body.inertial is None or compiler.inertiafromgeom == "true")
                and compiler.in_inertia_group(attrs.integer("group", 0)))

    dropped: set[int] = set()
    discarded: set[int] = set()
    early = False
    if compiler.discardvisual:
        dropped = {id(attrs) for _, attrs, name in geoms if visual(attrs, name)}
        early = not any(id(attrs) in dropped and infers(body, attrs)
                        for body, attrs, _ in geoms)
        if early:
            discarded = set(dropped)
    used: set[str] = set()
    hull: set[str] = set()
    for _, attrs, name in geoms:
        mesh = attrs.text("mesh")
        if mesh is None or id(attrs) in discarded:
            continue
        if mesh not in meshes:
            raise attrs.error("mesh", f'unknown mesh {quoted(mesh)}')
        used.add(mesh)
        kind = attrs.text("type", "sphere")
        if kind in ("mesh", "sdf") and not visual(attrs, name):
            hull.add(mesh)
    for name, asset in meshes.items():
        if early and name not in used:
            continue
        if asset.attrs.has("builtin") or any(c.tag == "plugin" for c in asset.node.children):
            continue  # treedyn cannot build these: refused only where a geom needs them
        if asset.data is None:
            asset.data = _load_mesh(asset, unused=name not in used)
        if name in hull and not asset.hull_checked:
            _check_hull(asset)
    return dropped, discarded


def processed_mesh(meshes: dict[str, MeshAsset], name: str,
                   attrs: Attributes) -> geo.MeshInertia:
    """The processed mesh asset ``name`` (loaded on first use)."""
    asset = meshes.get(name)
    if asset is None:
        raise attrs.error("mesh", f'unknown mesh {quoted(name)}')
    if asset.data is None:
        asset.data = _load_mesh(asset)
    return asset.data


# -- geoms ------------------------------------------------------------------------------


class GeomCompiler:
    """One geom's shape, pose and mass as MuJoCo's compiler derives them.

    ``meshes`` and ``hfields`` are the model's mesh and height-field assets by name,
    ``compiler`` its settings, and ``orientation`` gives the unit quaternion of an
    element's orientation attributes (in the compiler's angle unit and Euler sequence).
    """

    def __init__(self, attrs: Attributes, meshes: dict[str, MeshAsset],
                 hfields: dict[str, np.ndarray], compiler: Compiler,
                 orientation: Callable[[Attributes], np.ndarray]):
        self.attrs = attrs
        self.meshes = meshes
        self.hfields = hfields
        self.compiler = compiler
        self.orientation = orientation
        self.kind = attrs.keyword("type", GEOM_TYPES, "sphere")
        self.size = attrs.numbers("size", 3, (0.0, 0.0, 0.0), exact=False)
        if len(self.size) < 3:
            self.size = np.concatenate([self.size, np.zeros(3 - len(self.size))])
        self.shell = attrs.boolean("shellinertia", False)

    def validate(self) -> None:
        """MuJoCo's checks of a geom whose inertia is not needed: shape attributes, pose,
        the fit of a primitive to its mesh, sizes."""
        self._shape_and_pose(load_mesh=self.kind != "mesh")

    def _shape_and_pose(self, load_mesh: bool):
        """(size, pose, mesh or None): fromto, orientation, mesh fit; sizes checked."""
        attrs = self.attrs
        size = self.size.copy()
        pos = attrs.numbers("pos", 3, (0.0, 0.0, 0.0))
        quat = self.orientation(attrs)
        mesh_name = attrs.text("mesh")
        if attrs.integer("condim", 3) not in (1, 3, 4, 6):
            raise attrs.error("condim", "condim must be 1, 3, 4 or 6")
        if self.kind in ("mesh", "sdf") and not mesh_name:
            raise attrs.error("type", "a mesh geom needs a mesh attribute")
        if self.kind == "sdf":
            raise attrs.error("type", "sdf geoms are not supported")
        if (self.kind == "hfield") != attrs.has("hfield"):
            raise attrs.error("hfield" if attrs.has("hfield") else "type",
                              "the hfield attribute goes with (and only with) type hfield")
        if attrs.has("fromto"):
            size, pos, quat = self._fromto(size, pos)
        mesh = None
        if mesh_name is not None:
            if attrs.has("fromto"):
                raise attrs.error("fromto", "fromto cannot be used with a mesh")
            if self.kind == "mesh" and self.shell:
                raise attrs.error("shellinertia", "for mesh geoms, shell inertia is set by the "
                                                  "mesh asset's inertia attribute")
            if not load_mesh:
                return size, (pos, quat), None
            mesh = processed_mesh(self.meshes, mesh_name, attrs)
            size, pos, quat = self._mesh_pose(mesh, size, pos, quat)
        if self.kind == "hfield":
            hfield = self.hfields.get(attrs.text("hfield"))
            if hfield is None:
                raise attrs.error("hfield", "unknown hfield")
            size = np.array([hfield[0], hfield[1], 0.25 * hfield[2] + 0.5 * hfield[3]])
        self._check_size(size)
        return size, (pos, quat), mesh

    def _fromto(self, size: np.ndarray, pos: np.ndarray):
        """(size, pos, quat) from ``fromto``: the segment's midpoint, z along from - to."""
        attrs = self.attrs
        if self.kind not in ("capsule", "cylinder", "ellipsoid", "box"):
            raise attrs.error("fromto", "fromto needs a capsule, cylinder, ellipsoid or box")
        if np.any(pos):
            raise attrs.error("fromto", "pos and fromto cannot both be given")
        ends = attrs.numbers("fromto", 6)
        vector = ends[:3] - ends[3:]
        half = float(np.linalg.norm(vector)) / 2
        if half < EPS:
            raise attrs.error("fromto", "the two points are too close")
        size = size.copy()
        size[1] = half
        if self.kind in ("ellipsoid", "box"):
            size[2], size[1] = size[1], size[0]
        return size, (ends[:3] + ends[3:]) / 2, zaxis_quat(vector / (2 * half))

    def _mesh_pose(self, mesh: geo.MeshInertia, size, pos, quat):
        """Geom pose absorbing the mesh frame; a primitive type is fitted to the mesh."""
        if self.kind == "mesh":
            return size, pos, quat
        fitscale = self.attrs.number("fitscale", 1.0)
        try:
            size, center, mesh_quat = geo.fitted_primitive(mesh, self.kind,
                                                          self.compiler.fitaabb, fitscale)
        except GeometryError as error:
            raise self.attrs.error("type", str(error)) from None
        pos, quat = geo.compose((pos, quat), (center, mesh_quat))
        return size, pos, quat

    def _check_size(self, size: np.ndarray) -> None:
        """MuJoCo's size checks: the sizes a primitive uses must be positive."""
        count = geo.SIZE_COUNT[self.kind]
        if self.kind == "plane":
            if size[2] <= 0:
                raise self._size_error("plane size[2] (grid spacing) must be positive")
            return
        for i in range(count):
            if size[i] <= 0:
                raise self._size_error(f"size[{i}] must be positive for a {self.kind}")

    def _size_error(self, problem: str) -> ParseError:
        key = "fromto" if self.attrs.has("fromto") and not self.attrs.has("size") else "size"
        return self.attrs.error(key, problem)

    def inertial(self) -> Inertial | None:
        """Mass, pose and principal moments (body frame, before enclosing frames), or None."""
        attrs = self.attrs
        size, (pos, quat), mesh = self._shape_and_pose(load_mesh=True)
        if self.kind == "plane":
            return None
        solid = mesh if mesh is not None and self.kind == "mesh" else None
        volume = solid_measure(self.kind, size, self.shell, solid)
        if attrs.has("mass"):
            mass = attrs.number("mass")
            if mass == 0 or volume <= EPS:
                return None
            density = mass / volume
        else:
            density = attrs.number("density", 1000.0)
            if density == 0:
                return None
            mass = density * volume
        if mass < 0 or density < 0:
            raise attrs.error("mass" if attrs.has("mass") else "density",
                              "mass and density cannot be negative")
        pos, quat, moments = solid_principal(self.kind, size, self.shell, solid, (pos, quat),
                                             mass, density)
        return Inertial(mass, pos, quat, moments)

    def shape(self) -> Shape | None:
        """The geom as a Shape in the body frame (before enclosing frames); None for a plane
        or height field.

        MuJoCo's half sizes become the Shape conventions: box full edge lengths, capsule
        and cylinder (radius, full length), sphere (radius,), ellipsoid semi-axes. A mesh
        geom is its mesh file (see :meth:`_mesh_shape`); a primitive fitted to a mesh is
        the fitted primitive (the mesh itself if the mesh cannot be read). The role is
        "visual" when the geom collides with nothing (contype = conaffinity = 0), else
        "collision"; MuJoCo gives geom groups no collision meaning.
        """
        if self.kind in ("plane", "hfield"):
            return None
        attrs = self.attrs
        colliding = attrs.integer("contype", 1) != 0 or attrs.integer("conaffinity", 1) != 0
        role = "collision" if colliding else "visual"
        if self.kind == "mesh":
            return self._mesh_shape(self._shape_and_pose(load_mesh=False)[1], role)
        try:
            size, (pos, quat), _ = self._shape_and_pose(load_mesh=True)
        except ParseError:
            if not attrs.has("mesh"):
                raise
            return self._mesh_shape(self._shape_and_pose(load_mesh=False)[1], role)
        return Shape(self.kind, shape_size(self.kind, size), quat_matrix(quat), pos,
                     role, source=attrs.owner)

    def _mesh_shape(self, pose: Pose, role: str) -> Shape:
        """The geom's mesh asset as a "mesh" Shape: its file, scale and the geom ``pose``.

        MuJoCo places a file vertex v at ``scale * (R(refquat)^T (v - refpos))`` in the geom
        frame and a Shape at ``rotation @ (scale * v) + translation``, so refpos and refquat
        fold into the pose (refquat only with a uniform scale). Without such a file (vertices
        in the XML, or a turned mesh with a non-uniform scale) ``mesh`` names the asset
        instead, which no file matches: the link's geometry is then unknown.
        """
        name = self.attrs.text("mesh")
        asset = self.meshes.get(name)
        if asset is None:
            raise self.attrs.error("mesh", f'unknown mesh {quoted(name)}')
        scale = asset.attrs.numbers("scale", 3, (1.0, 1.0, 1.0))
        refpos = asset.attrs.numbers("refpos", 3, (0.0, 0.0, 0.0))
        try:
            refquat = normalized(asset.attrs.numbers("refquat", 4, (1.0, 0.0, 0.0, 0.0)))
        except GeometryError:
            raise asset.attrs.error("refquat", "zero quaternion") from None
        turned = not np.array_equal(quat_matrix(refquat), np.eye(3))
        file = asset.path
        if file is None:
            file = f"{name} (vertices in the XML)"
        elif turned and not scale[0] == scale[1] == scale[2]:
            file = f"{name} (refquat with a non-uniform scale)"
        inverse = refquat * np.array([1.0, -1.0, -1.0, -1.0])
        inner = (-scale * (quat_matrix(refquat).T @ refpos), inverse)
        pos, quat = geo.compose(pose, inner)
        return Shape("mesh", np.zeros(0), quat_matrix(quat), pos, role, file, scale,
                     self.attrs.owner)


# -- reading and checking meshes --------------------------------------------------------


def _load_mesh(asset: MeshAsset, unused: bool = False) -> geo.MeshInertia:
    """Read and process a mesh asset (file or XML vertices) into its mass properties;
    ``unused``: no geom uses it (said in errors, which then surprise)."""
    attrs = asset.attrs
    if attrs.has("builtin"):
        raise attrs.error("builtin", "procedural (builtin) meshes are not supported")
    if asset.path is not None:
        if attrs.has("vertex"):
            raise attrs.error("vertex", "a mesh takes vertices from a file or from the XML, "
                                        "not both")
        try:
            data = read_mesh_file(asset.path, attrs.text("content_type"))
        except MeshFileError as error:
            raise asset.node.error(f'mesh file {quoted(asset.path)}: {error}') from None
        if attrs.has("face"):  # MuJoCo takes them for a file that has none
            if len(data.faces):
                raise attrs.error("face", "the mesh file has faces already")
            data = MeshData(data.vertices, _xml_faces(attrs, len(data.vertices)))
    else:
        data = _xml_mesh(attrs)
    if len(data.vertices) < 4:
        raise asset.node.error("a mesh needs at least 4 vertices")
    _check_normals_and_texcoords(attrs, len(data.vertices) if asset.path is None else None)
    mode = attrs.keyword("inertia", geo.MESH_INERTIA_MODES, "legacy")
    scale = attrs.numbers("scale", 3, (1.0, 1.0, 1.0))
    refpos = attrs.numbers("refpos", 3, (0.0, 0.0, 0.0))
    refquat = attrs.numbers("refquat", 4, (1.0, 0.0, 0.0, 0.0))
    asset.vertices = data.vertices
    asset.hull_checked = mode == "convex" or len(data.faces) == 0
    try:
        return geo.mesh_inertia(data.vertices, data.faces, mode, scale, refpos, refquat,
                                attrs.integer("maxhullvert", -1))  # checked when registered
    except GeometryError as error:
        raise _mesh_error(asset, error, unused) from None


def _check_normals_and_texcoords(attrs: Attributes, vertices: int | None) -> None:
    """MuJoCo's checks of a mesh's ``normal`` and ``texcoord`` (not used here otherwise):
    3 and 2 numbers each and, without ``facetexcoord``, one texcoord per XML vertex."""
    for key, width in (("normal", 3), ("texcoord", 2)):
        count = len((attrs.text(key) or "").split())
        if count % width:
            raise attrs.error(key, f"the number of values must be a multiple of {width}")
    count = len((attrs.text("texcoord") or "").split())
    if count and vertices is not None and not attrs.has("facetexcoord") and count != 2 * vertices:
        raise attrs.error("texcoord", f"{count // 2} texture coordinates for {vertices} vertices"
                                      " (without facetexcoord, one per vertex)")


def _check_hull(asset: MeshAsset) -> None:
    """Build the convex hull MuJoCo makes for collisions of a mesh that has faces."""
    try:
        geo.check_hull(asset.vertices, asset.attrs.integer("maxhullvert", -1))
    except GeometryError as error:
        raise asset.node.error(f'mesh {quoted(asset.name)}: {error} (a colliding mesh geom uses '
                               "it, and MuJoCo builds its convex hull)") from None
    asset.hull_checked = True


def _mesh_error(asset: MeshAsset, error: Exception, unused: bool) -> ParseError:
    """A ParseError at the ``<mesh>`` element for a mesh MuJoCo cannot compile."""
    note = " (no geom uses this mesh, but MuJoCo compiles every mesh)" if unused else ""
    return asset.node.error(f'mesh {quoted(asset.name)}: {error}{note}')


def _xml_mesh(attrs: Attributes) -> MeshData:
    """Vertices (float32, like MuJoCo) and faces given in the ``<mesh>`` element itself."""
    if not attrs.has("vertex"):
        raise ParseError("a mesh needs a file or a vertex attribute", attrs.owner.file,
                         attrs.owner.line, attrs.owner.element)
    words = attrs.text("vertex").split()
    if len(words) % 3:
        raise attrs.error("vertex", "the number of values must be a multiple of 3")
    vertices = attrs.numbers("vertex", len(words)).astype(np.float32).astype(np.float64)
    return MeshData(vertices.reshape(-1, 3), _xml_faces(attrs, len(vertices) // 3))


def _xml_faces(attrs: Attributes, vertices: int) -> np.ndarray:
    """The ``face`` attribute's triangles (m, 3) over ``vertices`` vertices (m may be 0)."""
    if not attrs.has("face"):
        return np.zeros((0, 3), dtype=np.int64)
    face_words = attrs.text("face").split()
    if len(face_words) % 3:
        raise attrs.error("face", "the number of values must be a multiple of 3")
    faces = np.array(attrs.integers("face", len(face_words), ()), dtype=np.int64)
    faces = faces.reshape(-1, 3)
    if len(faces) and (faces.min() < 0 or faces.max() >= vertices):
        raise attrs.error("face", "a face refers to a vertex that does not exist")
    return faces
