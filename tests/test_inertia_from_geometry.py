"""``dyn inertia-from-geometry``: a URDF link's inertia from its shapes, mass kept, held to
MuJoCo's compiler (the same shapes as geoms of an MJCF body, inertiafromgeom="true") and
to trimesh's mass properties; --write read back; the open-mesh warning and refusals."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import mujoco
import numpy as np
import pytest
import trimesh

from in_process import dyn_here
from reference_models import robot_urdfs
from treedyn.engine.geometry import half_sizes
from treedyn.engine.rotations import matrix_quat
from treedyn.parsers import load_description
from treedyn.parsers.geometry_inertia import geometry_inertias
from treedyn.parsers.meshes import read_mesh_file
from treedyn.parsers.packages import PackagePaths, resolve_uri
from treedyn.parsers.shape_inertia import mesh_inertia

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHAPES = FIXTURES / "shapes.urdf"
ROBOTS = [p for p in robot_urdfs() if p.endswith(("panda.urdf", "ur5_robot.urdf",
                                                  "double_pendulum.urdf"))]
TOL = 1e-9


def words(values) -> str:
    return " ".join(repr(float(x)) for x in values)


def reference_mjcf(description, path: str, results, role: str, shell: bool) -> str:
    """The links' ``role`` shapes as geoms of MJCF bodies (density 1000), mesh files with
    MuJoCo's default inertia mode unless the result says their convex hull stood in."""
    assets, bodies = [], []
    for link, result in zip(description.links, results):
        if result.status != "computed":
            continue
        geoms = []
        for k, shape in enumerate(s for s in link.geometry if s.role == role):
            pose = f'pos="{words(shape.translation)}" quat="{words(matrix_quat(shape.rotation))}"'
            if shape.kind == "mesh":
                mode = ("shell" if shell else
                        "convex" if shape.mesh in result.hulls else None)
                attribute = f' inertia="{mode}"' if mode else ""  # else MuJoCo's default
                file = resolve_uri(shape.mesh, path, PackagePaths())
                assets.append(f'<mesh name="{link.name}_{k}" file="{file}" '
                              f'scale="{words(shape.scale)}"{attribute}/>')
                geoms.append(f'<geom type="mesh" mesh="{link.name}_{k}" {pose}/>')
            else:
                geoms.append(f'<geom type="{shape.kind}" size="'
                             f'{words(half_sizes(shape.kind, shape.size))}" {pose} '
                             f'shellinertia="{str(shell).lower()}"/>')
        bodies.append(f'<body name="{link.name}">{"".join(geoms)}</body>')
    return (f'<mujoco><compiler inertiafromgeom="true"/><asset>{"".join(assets)}</asset>'
            f'<worldbody>{"".join(bodies)}</worldbody></mujoco>')


def check_against_mujoco(path: str, role: str = "collision", shell: bool = False) -> int:
    """Every computed link against MuJoCo's body_mass, body_ipos, body_iquat and
    body_inertia (scaled to the link's mass) to TOL relative; the count compared."""
    description = load_description(path)
    results = geometry_inertias(description, path, role=role, shell=shell)
    model = mujoco.MjModel.from_xml_string(reference_mjcf(description, path, results, role,
                                                          shell))
    compared = 0
    for result in results:
        if result.status != "computed":
            continue
        body = model.body(result.link)
        frame = np.zeros(9)
        mujoco.mju_quat2Mat(frame, body.iquat)
        frame = frame.reshape(3, 3)
        mass = result.inertia.mass
        reference = frame @ np.diag(body.inertia) @ frame.T * (mass / body.mass[0])
        assert abs(1000 * result.measure - body.mass[0]) <= TOL * body.mass[0], result.link
        size = max(np.abs(body.ipos).max(), np.sqrt(np.abs(reference).max() / mass))
        assert np.abs(result.inertia.com - body.ipos).max() <= TOL * size, result.link
        np.testing.assert_allclose(result.inertia.inertia, reference, rtol=0,
                                   atol=TOL * np.abs(reference).max(), err_msg=result.link)
        compared += 1
    return compared


@pytest.mark.parametrize("shell", [False, True], ids=["solid", "shell"])
@pytest.mark.parametrize("path", ROBOTS, ids=lambda p: Path(p).stem)
def test_robot_meshes_equal_mujoco(path, shell):
    assert check_against_mujoco(path, shell=shell) >= 3


@pytest.mark.parametrize("shell", [False, True], ids=["solid", "shell"])
@pytest.mark.parametrize("role", ["collision", "visual"])
def test_primitives_and_a_mesh_equal_mujoco(role, shell):
    # box, cylinder (turned), capsule, sphere and a mesh beside a sphere
    assert check_against_mujoco(str(SHAPES), role, shell) == (3 if role == "collision" else 1)


@pytest.fixture(scope="module")
def panda_meshes() -> list[str]:
    path = next(p for p in ROBOTS if p.endswith("panda.urdf"))
    description = load_description(path)
    files = {str(resolve_uri(shape.mesh, path, PackagePaths())) for link in description.links
             for shape in link.geometry if shape.role == "collision" and shape.kind == "mesh"}
    return sorted(files)


def test_mesh_volume_integrals_equal_trimesh(panda_meshes):
    """The shared mesh code (exact and convex modes) against trimesh's mass properties."""
    for file in panda_meshes:
        data = read_mesh_file(file)
        reference = trimesh.Trimesh(data.vertices, data.faces, process=False)
        assert reference.is_watertight and reference.is_winding_consistent, file
        for mode, solid in (("exact", reference), ("convex", reference.convex_hull)):
            ours = mesh_inertia(data.vertices, data.faces, mode, np.ones(3), np.zeros(3),
                                np.array([1.0, 0, 0, 0]))
            scale = np.abs(solid.moment_inertia).max()
            assert abs(ours.measure - solid.volume) <= 1e-8 * solid.volume, (file, mode)
            size = np.abs(solid.bounds).max()
            assert np.abs(ours.com - solid.center_mass).max() <= 1e-8 * size, (file, mode)
            assert np.abs(ours.inertia - solid.moment_inertia).max() <= 1e-8 * scale, file


CORNERS = np.array([[x, y, z] for x in (0, 0.2) for y in (0, 0.1) for z in (0, 0.05)])
QUADS = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]


def box_stl(path: Path, drop: int = -1) -> None:
    """A 0.2 x 0.1 x 0.05 box as a binary STL, outward faces; ``drop`` one face: open."""
    corners = CORNERS
    faces = [tri for a, b, c, d in QUADS for tri in ((a, b, c), (a, c, d))]
    faces = [face for k, face in enumerate(faces) if k != drop]
    data = bytearray(80) + struct.pack("<I", len(faces))
    for face in faces:
        data += struct.pack("<12fH", 0, 0, 0, *corners[list(face)].ravel(), 0)
    path.write_bytes(bytes(data))


def mesh_urdf(folder: Path, mesh: str) -> Path:
    text = (f'<robot name="m"><link name="a"><inertial><mass value="2"/><inertia ixx="1" '
            f'ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial><collision><geometry>'
            f'<mesh filename="{mesh}"/></geometry></collision></link></robot>')
    (folder / "m.urdf").write_text(text)
    return folder / "m.urdf"


def test_open_mesh_warns_and_uses_its_convex_hull(tmp_path):
    box_stl(tmp_path / "closed.stl")
    box_stl(tmp_path / "open.stl", drop=3)
    documents = {}
    for name in ("closed", "open"):
        mesh_urdf(tmp_path, f"{name}.stl")
        run = dyn_here(["inertia-from-geometry", "m.urdf", "--format", "json"], cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        documents[name] = json.loads(run.stdout)["links"][0]
        warned = run.stderr.decode()
        assert ("open.stl" in warned and "convex hull" in warned) == (name == "open"), warned
    assert documents["open"]["hull"] == ["open.stl"] and documents["closed"]["hull"] == []
    # the hull of the open box is the box: a 2 kg box's moments, m (b^2 + c^2) / 12 ...
    expected = 2 * np.array([0.1 ** 2 + 0.05 ** 2, 0.2 ** 2 + 0.05 ** 2,
                             0.2 ** 2 + 0.1 ** 2]) / 12
    for document in documents.values():
        tensor = np.array(document["inertia"])[[0, 3, 5]]
        np.testing.assert_allclose(tensor, expected, rtol=1e-6)
        np.testing.assert_allclose(document["com"], [0.1, 0.05, 0.025], rtol=1e-6)


def test_write_round_trip(tmp_path):
    target = tmp_path / "shapes_geometric.urdf"
    run = dyn_here(["inertia-from-geometry", SHAPES, "--write", target, "--format", "json"],
                   cwd=FIXTURES)
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    assert document["written"]["links"] == ["base", "arm", "hand"]
    before = {link.name: link for link in load_description(str(SHAPES)).links}
    after = {link.name: link for link in load_description(str(target)).links}
    for entry in document["links"]:
        link = after[entry["link"]]
        if entry["status"] != "computed":
            np.testing.assert_array_equal(link.inertia.spatial(),
                                          before[entry["link"]].inertia.spatial())
            continue
        t = link.inertia.inertia
        np.testing.assert_allclose([t[0, 0], t[0, 1], t[0, 2], t[1, 1], t[1, 2], t[2, 2]],
                                   entry["inertia"], rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(link.inertia.com, entry["com"], rtol=1e-10, atol=1e-15)
        assert link.inertia.mass == entry["mass"] == before[entry["link"]].inertia.mass
        assert not np.allclose(link.inertia.inertia, before[entry["link"]].inertia.inertia)


def test_refusals(tmp_path):
    copy = tmp_path / "shapes.urdf"
    copy.write_bytes(SHAPES.read_bytes())
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "wedge.stl").write_bytes((FIXTURES / "meshes/wedge.stl").read_bytes())
    mjcf = tmp_path / "m.xml"
    mjcf.write_text('<mujoco><worldbody><body><geom size="1"/></body></worldbody></mujoco>')
    for args, words_ in ((["shapes.urdf", "--write", "./shapes.urdf"], "is the model file"),
                         (["shapes.urdf", "--write", "new.xml"], ".urdf"),
                         (["m.xml"], "inertiafromgeom"),
                         ([FIXTURES / "two_link_arm.sdf"], "an SDFormat model"),
                         ([FIXTURES / "xacro/arm_description/urdf/arm.urdf.xacro", "--write",
                           "arm.urdf"], "expand a xacro file first")):
        run = dyn_here(["inertia-from-geometry", *args], cwd=tmp_path)
        lines = run.stderr.decode().strip().splitlines()
        assert run.returncode == 2 and len(lines) == 1 and words_ in lines[0], run.stderr
    assert copy.read_bytes() == SHAPES.read_bytes()


def test_collada_triangles_give_the_solid(tmp_path):
    """A COLLADA box (quads in a <polylist>, placed by a node, in half metres) has the
    box's volume, centre and moments (in double precision, as written), as its STL twin
    has in float32."""
    box_stl(tmp_path / "box.stl")
    positions = " ".join(repr(float(x)) for x in (2 * CORNERS).ravel())  # unit meter 0.5
    quads = " ".join(str(i) for quad in QUADS for i in quad)
    (tmp_path / "box.dae").write_text(
        '<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">'
        '<asset><unit meter="0.5"/><up_axis>Z_UP</up_axis></asset><library_geometries>'
        '<geometry id="g"><mesh><source id="p"><float_array id="a" count="24">'
        f'{positions}</float_array><technique_common><accessor source="#a" count="8" '
        'stride="3"/></technique_common></source><vertices id="v"><input semantic='
        '"POSITION" source="#p"/></vertices><polylist count="6"><input semantic="VERTEX" '
        'source="#v" offset="0"/><vcount>4 4 4 4 4 4</vcount>'
        f'<p>{quads}</p></polylist></mesh></geometry></library_geometries>'
        '<library_visual_scenes><visual_scene id="s"><node><translate>0.2 0.4 0.6</translate>'
        '<instance_geometry url="#g"/></node></visual_scene></library_visual_scenes>'
        '<scene><instance_visual_scene url="#s"/></scene></COLLADA>')
    found = {}
    for name in ("box.stl", "box.dae"):
        mesh_urdf(tmp_path, name)
        result = geometry_inertias(load_description(str(tmp_path / "m.urdf")),
                                   str(tmp_path / "m.urdf"))[0]
        assert result.status == "computed" and not result.hulls, result
        found[name] = result
    moments = np.diag(2 * np.array([0.1 ** 2 + 0.05 ** 2, 0.2 ** 2 + 0.05 ** 2,
                                    0.2 ** 2 + 0.1 ** 2]) / 12)
    for name, rtol in (("box.dae", 1e-12), ("box.stl", 1e-6)):
        result = found[name]
        shift = [0.1, 0.2, 0.3] if name == "box.dae" else 0
        assert abs(result.measure - 0.001) <= rtol * 0.001, name
        np.testing.assert_allclose(result.inertia.com, np.array([0.1, 0.05, 0.025]) + shift,
                                   rtol=rtol)
        np.testing.assert_allclose(result.inertia.inertia, moments, rtol=0,
                                   atol=rtol * moments.max())
