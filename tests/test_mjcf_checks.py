"""MJCF geometry for ``dyn check-inertia``, against MuJoCo (the reference, test-only).

* Every body's ``LinkSpec.geometry`` is MuJoCo's geoms of that body (``geom_bodyid``), in
  MuJoCo's order, planes and height fields left out: kind (``geom_type``), size
  (``geom_size``: half sizes, doubled where the Shape wants full lengths), pose in the link
  frame (``geom_pos``, ``geom_quat``) and role (contype = conaffinity = 0 is "visual").
  A mesh geom is its file posed in the link frame, while MuJoCo poses the mesh's centred
  vertices (``mesh_vert``): both put the vertices in the same place, so their link-frame
  bounding boxes agree (to float32 rounding).
* The gymnasium models take their inertia from their geoms at uniform density, so the
  geometry checks (plausibility, orientation, density) pass on every massive body.
* A broken MJCF fixture is caught with the right body, check, file and line.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

mujoco = pytest.importorskip("mujoco")

from test_diagnostics import dyn  # noqa: E402
from reference_models import dm_control_models, gymnasium_models  # noqa: E402
from treedyn.engine.description import Shape  # noqa: E402
from treedyn.engine.analysis.check_inertia import check_inertia  # noqa: E402
from treedyn.engine.analysis.inertia import uniform_inertia  # noqa: E402
from treedyn.engine.geometry import solid_properties  # noqa: E402
from treedyn.parsers import load_model  # noqa: E402
from treedyn.parsers.link_geometry import link_geometry, mesh_bounds  # noqa: E402
from treedyn.parsers.meshes import read_mesh_file  # noqa: E402
from treedyn.parsers.mjcf import parse_mjcf  # noqa: E402
from treedyn.engine.rotations import quat_matrix  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "mjcf"
BROKEN = ROOT / "fixtures" / "broken"
KINDS = {2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}
SKIPPED_TYPES = (0, 1)  # plane, hfield
GEOMETRY_CHECKS = ("plausibility", "orientation", "density")




def fixture_models() -> list[str]:
    """The MJCF fixtures MuJoCo reads (it reads binary STL only, not the _ascii ones)."""
    paths = sorted(str(p) for p in FIXTURES.glob("*.xml") if not p.stem.endswith("_ascii"))
    return paths + [str(FIXTURES / "include" / "main.xml"), str(BROKEN / "huge_inertia_mjcf.xml")]


GYMNASIUM = gymnasium_models()
MODELS = GYMNASIUM + fixture_models() + dm_control_models()


def shape_size(kind: str, size: np.ndarray) -> np.ndarray:
    """The Shape size of a MuJoCo primitive of half sizes ``size``."""
    return {"box": 2 * size, "sphere": size[:1], "capsule": [size[0], 2 * size[1]],
            "cylinder": [size[0], 2 * size[1]], "ellipsoid": size}[kind]


def mujoco_mesh_box(m, g: int) -> np.ndarray:
    """(2, 3) link-frame bounding box of MuJoCo's vertices of mesh geom ``g``."""
    mesh = m.geom_dataid[g]
    start = m.mesh_vertadr[mesh]
    vertices = m.mesh_vert[start:start + m.mesh_vertnum[mesh]].astype(float)
    placed = vertices @ quat_matrix(m.geom_quat[g]).T + m.geom_pos[g]
    return np.array([placed.min(axis=0), placed.max(axis=0)])


def shape_mesh_box(shape: Shape) -> np.ndarray:
    """(2, 3) link-frame bounding box of a mesh Shape's file vertices."""
    vertices = read_mesh_file(shape.mesh).vertices * shape.scale
    placed = vertices @ shape.rotation.T + shape.translation
    return np.array([placed.min(axis=0), placed.max(axis=0)])


def source_line(file: str, line: int) -> str:
    """Line ``line`` (1-based) of ``file`` (of an included file too)."""
    return Path(file).read_text().splitlines()[line - 1] if line > 0 else ""


def element_line(path: Path, xpath: str) -> int:
    """The line of the first element matching ``.//xpath``, read with lxml."""
    return etree.parse(str(path)).find(f".//{xpath}").sourceline


def check_shape(m, g: int, shape: Shape) -> None:
    kind = KINDS[int(m.geom_type[g])]
    assert shape.kind == kind
    visual = m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0
    assert shape.role == ("visual" if visual else "collision")
    if kind != "mesh":
        np.testing.assert_allclose(shape.size, shape_size(kind, m.geom_size[g]), rtol=1e-9,
                                   atol=1e-12)
        np.testing.assert_allclose(shape.translation, m.geom_pos[g], rtol=0, atol=1e-9)
        np.testing.assert_allclose(shape.rotation, quat_matrix(m.geom_quat[g]), atol=1e-9)
        return
    if shape.mesh.endswith("(vertices in the XML)"):
        return  # no file stands for it: the checks treat the link's geometry as unknown
    expected = mujoco_mesh_box(m, g)
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(shape_mesh_box(shape), expected, rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("path", MODELS, ids=lambda p: os.path.relpath(p, ROOT)
                         if p.startswith(str(ROOT)) else os.path.basename(p))
def test_geometry_equals_mujocos_geoms(path):
    m = mujoco.MjModel.from_xml_path(path)
    links = {link.name: link for link in parse_mjcf(path).links}
    for body in range(1, m.nbody):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, body) or f"body{body}"
        geoms = [g for g in range(m.ngeom)
                 if m.geom_bodyid[g] == body and m.geom_type[g] not in SKIPPED_TYPES]
        shapes = links[name].geometry
        assert len(shapes) == len(geoms), name
        for g, shape in zip(geoms, shapes):
            check_shape(m, g, shape)
            assert "<geom" in source_line(shape.source.file, shape.source.line)


def test_intermediate_links_of_a_joint_chain_have_no_geometry():
    description = parse_mjcf(str(FIXTURES / "multijoint.xml"))
    chain = [link for link in description.links if link.body]
    assert chain and not any(link.geometry for link in chain)


def test_mesh_geoms_name_the_resolved_file_and_the_asset_scale():
    path = str(FIXTURES / "meshes.xml")
    links = {link.name: link for link in parse_mjcf(path).links}
    scaled, mirrored = links["b4"].geometry
    assert scaled.mesh == str(FIXTURES / "meshes" / "lblock.stl")
    np.testing.assert_array_equal(scaled.scale, [1.5, 0.8, 2])
    np.testing.assert_array_equal(mirrored.scale, [-1, 1.2, 1])
    assert links["b5"].geometry[1].mesh.endswith("hull.msh")
    low, high = mesh_bounds(links["b5"].geometry[1].mesh)
    vertices = read_mesh_file(links["b5"].geometry[1].mesh).vertices
    np.testing.assert_array_equal([low, high], [vertices.min(axis=0), vertices.max(axis=0)])


TURNED_MESHES = """
<mujoco>
  <compiler meshdir="{meshdir}"/>
  <asset>
    <mesh name="uniform" file="lblock.stl" scale="2 2 2" refpos="0.1 0 0.02"
          refquat="0.9 0.1 0.2 0.3"/>
    <mesh name="stretched" file="lblock.stl" scale="1 2 1" refquat="0.9 0.1 0.2 0.3"/>
  </asset>
  <worldbody>
    <body name="a">
      <joint axis="1 0 0"/>
      <geom type="mesh" mesh="uniform" pos="0.1 0.2 0" euler="10 20 30"/>
      <geom type="mesh" mesh="stretched"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_refquat_folds_into_the_pose_only_with_a_uniform_scale(tmp_path):
    path = tmp_path / "turned.xml"
    path.write_text(TURNED_MESHES.format(meshdir=FIXTURES / "meshes"))
    m = mujoco.MjModel.from_xml_path(str(path))
    uniform, stretched = next(link for link in parse_mjcf(str(path)).links
                              if link.name == "a").geometry
    check_shape(m, 0, uniform)
    assert stretched.mesh == "stretched (refquat with a non-uniform scale)"
    geometry = link_geometry(parse_mjcf(str(path)), str(path))["a"]
    assert not geometry.solids and "stretched" in geometry.note


INERTIAL_MODEL = """
<mujoco>
  <compiler angle="degree" inertiafromgeom="{mode}"/>
  <worldbody>
    <body name="a">
      <joint axis="1 0 0"/>
      <geom type="box" size="0.1 0.2 0.3"/>
      <frame euler="0 0 90">
        <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.2 0.25" euler="30 0 0"/>
      </frame>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("mode", ["auto", "true"])
def test_inertial_source_and_rotation(mode, tmp_path):
    path = tmp_path / "inertial.xml"
    path.write_text(INERTIAL_MODEL.format(mode=mode))
    link = next(link for link in parse_mjcf(str(path)).links if link.name == "a")
    if mode == "true":  # the geoms replace the <inertial>: the body is the source
        assert link.inertial_source == link.source
        np.testing.assert_array_equal(link.inertial_rotation, np.eye(3))
        return
    line = element_line(path, "inertial")
    assert (link.inertial_source.line, link.inertial_source.element) == (line, "inertial")
    rotation = link.inertial_rotation
    written = rotation.T @ link.inertia.inertia @ rotation
    np.testing.assert_allclose(written, np.diag([0.1, 0.2, 0.25]), atol=1e-12)
    c, s = np.cos(np.radians(30)), np.sin(np.radians(30))
    expected = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1]]) @ np.array(
        [[1, 0, 0], [0, c, -s], [0, s, c]])
    np.testing.assert_allclose(rotation, expected, atol=1e-12)


def test_uniform_inertia_of_an_ellipsoid_equals_mujocos_geom_inertia():
    model = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><joint/><geom type="ellipsoid" size="0.1 0.2 0.3" '
        'density="1000"/></body></worldbody></mujoco>')
    volume, _, unit = solid_properties(Shape("ellipsoid", np.array([0.1, 0.2, 0.3])))
    assert volume * 1000 == pytest.approx(model.body_mass[1], rel=1e-9)
    np.testing.assert_allclose(np.diag(unit) * model.body_mass[1], model.body_inertia[1],
                               rtol=1e-9)


# -- check-inertia verdicts -------------------------------------------------------------


@pytest.mark.skipif(not GYMNASIUM, reason="gymnasium is not installed")
@pytest.mark.parametrize("path", GYMNASIUM, ids=os.path.basename)
def test_gymnasium_models_pass_and_their_geom_inertias_fit_the_geometry(path):
    """Inertia from the geoms at uniform density: the geometry checks do not second-guess
    MuJoCo's own computation (they are skipped, saying why), and the uniform inertia they
    would use agrees with it (the geoms overlap, so not exactly)."""
    model = load_model(path)
    geometry = link_geometry(model.description, path)
    report = check_inertia(model, geometry)
    assert report.ok
    massive = [link for link in model.description.links
               if link.inertia.mass > 0 and not link.body]
    assert massive
    for link in massive:
        assert link.inertia_from_geometry
        assert geometry[link.name].role in ("collision", "visual") and geometry[link.name].exact
        findings = {f.check: f for f in report.findings if f.body == link.name}
        for check in GEOMETRY_CHECKS:
            assert findings[check].status == "skip", findings[check]
            assert "computed this inertia from the body's geoms" in findings[check].message
        uniform = uniform_inertia(geometry[link.name].solids)
        ratio = np.trace(link.inertia.inertia) / np.trace(link.inertia.mass * uniform.inertia)
        assert 0.5 < ratio < 2.0, (link.name, ratio)


def check_xml(xml: str, tmp_path, *options) -> tuple[dict, int]:
    path = tmp_path / "model.xml"
    path.write_text(xml)
    result = dyn("check-inertia", path, "--format", "json", *options)
    return json.loads(result.stdout), result.returncode


def test_a_misapplied_inertial_orientation_is_named_in_mjcf_terms(tmp_path):
    """A box long in z whose <inertial> quat turns its long axis onto y: the orientation
    check says the <inertial> orientation was applied wrongly (not URDF's <origin rpy>)."""
    xml = ('<mujoco><worldbody><body name="arm"><joint type="hinge" axis="1 0 0"/>'
           '<geom type="box" size="0.05 0.05 0.3" mass="0"/>'
           '<inertial pos="0 0 0" quat="0.7071068 0.7071068 0 0" mass="2" '
           'diaginertia="0.0613 0.0613 0.00333"/></body></worldbody></mujoco>')
    document, code = check_xml(xml, tmp_path)
    finding = next(f for f in document["findings"] if f["check"] == "orientation")
    assert code == 1 and finding["severity"] == "error", finding
    assert "agree without the <inertial> orientation" in finding["message"], finding


def test_visual_geoms_that_carry_mass_are_not_an_implausible_inertia(tmp_path):
    """A 2 cm collision sphere and a 1 m visual box (contype 0) with mass: MuJoCo's inertia
    counts both; check-inertia must not call it 356x the collision geometry's."""
    xml = ('<mujoco><worldbody><body name="b"><joint type="hinge"/>'
           '<geom type="sphere" size="0.02"/>'
           '<geom type="box" size="0.5 0.05 0.05" contype="0" conaffinity="0"/>'
           '</body></worldbody></mujoco>')
    document, code = check_xml(xml, tmp_path)
    assert code == 0 and document["ok"]
    assert not [f for f in document["findings"] if f["status"] == "fail"]


def test_broken_mjcf_fixture_is_caught_at_its_inertial():
    path = BROKEN / "huge_inertia_mjcf.xml"
    result = dyn("check-inertia", path, "--format", "json")
    document = json.loads(result.stdout)
    assert result.returncode == 1 and not document["ok"]
    errors = [f for f in document["findings"] if f["severity"] == "error"]
    assert [(f["body"], f["check"], f["status"]) for f in errors] == [
        ("finger", "plausibility", "fail")]
    line = element_line(path, "body[@name='finger']/inertial")
    assert (errors[0]["file"], errors[0]["line"]) == (str(path), line)
    assert errors[0]["value"] == pytest.approx(100, rel=0.01)


@pytest.mark.parametrize("compiler, inertial, com_world", [
    ('<compiler angle="radian"/>',  # a rod along x, its axes given by quat: 90 deg about z
     '<inertial pos="0.25 0 0" quat="0.7071067811865476 0 0 0.7071067811865476" mass="2" '
     'diaginertia="4.2 0.08 4.2"/>', [0.25, 0.0, 1.0]),
    ('<compiler alignfree="true"/>',  # the link frame moves to the inertial frame
     '<inertial pos="0.25 0 0" mass="2" diaginertia="0.08 4.2 4.2"/>', [0.25, 0.0, 1.0]),
])
def test_an_mjcf_fix_pasted_over_the_inertial_gives_mujoco_that_inertia(tmp_path, compiler,
                                                                        inertial, com_world):
    """The rod's inertia is 100x its geometry's: the suggested <inertial> is written in the
    <body> frame, without quat (MuJoCo forbids it beside fullinertia), so MuJoCo compiles
    exactly the suggested tensor, and the com stays where it was."""
    joint = '<freejoint/>' if "alignfree" in compiler else '<joint type="hinge"/>'
    xml = (f'<mujoco>{compiler}<worldbody><body name="arm" pos="0 0 1">{joint}'
           '<geom type="box" size="0.25 0.02 0.02" pos="0.25 0 0"/>'
           f'{inertial}</body></worldbody></mujoco>')
    document, code = check_xml(xml, tmp_path, "--fix")
    assert code == 1
    fix = next(f["fix"] for f in document["findings"] if f["check"] == "plausibility")
    fixed = mujoco.MjModel.from_xml_string(xml.replace(inertial, fix["element"]))
    data = mujoco.MjData(fixed)
    mujoco.mj_forward(fixed, data)
    rotation = data.ximat[1].reshape(3, 3)  # inertial frame in the world
    tensor = rotation @ np.diag(fixed.body_inertia[1]) @ rotation.T
    uniform = 2.0 * np.diag([0.04 ** 2 + 0.04 ** 2, 0.5 ** 2 + 0.04 ** 2, 0.5 ** 2 + 0.04 ** 2]) / 12
    np.testing.assert_allclose(tensor, uniform, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(data.xipos[1], com_world, atol=1e-9)
