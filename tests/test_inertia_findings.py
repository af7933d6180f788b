"""check-inertia's signal: one finding per defect, no false alarms, no silent skips.

Each case is a small model written here: a defect that must be reported once, a
placeholder or sensor idiom that must not fail a fine model (and, beside it, the planted
defect that must still fire), and the mesh files that cannot be read and must be named.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import struct
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BROKEN = ROOT / "fixtures" / "broken"


def dyn(*args) -> subprocess.CompletedProcess:
    """``dyn ARGS`` in this interpreter (stdout, stderr captured, exit code kept)."""
    from treedyn.cli.app import run

    out, err = io.StringIO(), io.StringIO()
    with (contextlib.redirect_stdout(out), contextlib.redirect_stderr(err),
          pytest.raises(SystemExit) as exit_info):
        run([str(a) for a in args])
    code = exit_info.value.code
    return subprocess.CompletedProcess(args, 0 if code is None else code, out.getvalue(),
                                       err.getvalue())


def check(path, *options) -> tuple[dict, subprocess.CompletedProcess]:
    result = dyn("check-inertia", path, "--format", "json", *options)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout), result


def failing(document: dict) -> list[tuple[str, str, str]]:
    return [(f["body"], f["check"], f["severity"]) for f in document["findings"]
            if f["status"] == "fail"]


def box_inertia(mass: float, x: float, y: float, z: float) -> str:
    """The URDF <inertia> of a uniform box."""
    ixx, iyy, izz = (mass * (b * b + c * c) / 12 for b, c in ((y, z), (x, z), (x, y)))
    return f'<inertia ixx="{ixx!r}" ixy="0" ixz="0" iyy="{iyy!r}" iyz="0" izz="{izz!r}"/>'


def link(name: str, mass: float, inertia: str, geometry: str = "") -> str:
    return (f'<link name="{name}"><inertial><mass value="{mass!r}"/>{inertia}</inertial>'
            f'{geometry}</link>')


def joint(name: str, parent: str, child: str, kind: str = "fixed", xyz: str = "0 0 0",
          limits: str = 'lower="-1" upper="1"') -> str:
    limit = (f'<axis xyz="0 1 0"/><limit {limits} effort="1" velocity="1"/>'
             if kind != "fixed" else "")
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child '
            f'link="{child}"/><origin xyz="{xyz}"/>{limit}</joint>')


def box(x, y, z, role="collision", xyz="0 0 0") -> str:
    return (f'<{role}><origin xyz="{xyz}"/><geometry><box size="{x} {y} {z}"/></geometry>'
            f'</{role}>')


PLACEHOLDER = ('<inertia ixx="1e-6" ixy="1e-6" ixz="1e-6" iyy="1e-6" iyz="1e-6" '
               'izz="1e-6"/>')  # as example-robot-data's anymal and hyq write it
TRUNK = link("trunk", 5.0, box_inertia(5.0, 0.4, 0.2, 0.1), box(0.4, 0.2, 0.1))
THIGH = link("thigh", 1.0, box_inertia(1.0, 0.05, 0.05, 0.3), box(0.05, 0.05, 0.3))


def quadruped_leg(tmp_path, foot_mass=1e-6, foot_inertia=PLACEHOLDER) -> Path:
    """A 5 kg trunk under a placeholder base link, and a leg with a placeholder foot."""
    sphere = '<collision><geometry><sphere radius="0.02"/></geometry></collision>'
    path = tmp_path / "leg.urdf"
    path.write_text(
        '<robot name="leg">' + link("base", 1e-6, PLACEHOLDER, box(0.4, 0.2, 0.1)) + TRUNK
        + THIGH + link("foot", foot_mass, foot_inertia, sphere)
        + joint("base_trunk", "base", "trunk") + joint("hip", "trunk", "thigh", "revolute")
        + joint("ankle", "thigh", "foot", xyz="0 0 -0.3") + "</robot>")
    return path


# ----------------------------------------------------------------------------- one defect, once

def test_a_triangle_violation_is_one_finding_not_also_a_pseudo_inertia_error():
    document, result = check(BROKEN / "triangle_violation.urdf")
    assert failing(document) == [("link2", "triangle", "error")]
    assert result.returncode == 1
    table = dyn("check-inertia", BROKEN / "triangle_violation.urdf").stdout
    assert table.splitlines()[0].endswith("1 finding (1 error, 0 warnings) from 24 checks")


def test_a_point_mass_is_one_inertia_pd_warning_not_also_pseudo_inertia(tmp_path):
    path = tmp_path / "point.urdf"
    path.write_text('<robot name="p"><link name="base"/>' + link(
        "arm", 1.0, '<origin xyz="0.3 0 0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" '
        'iyz="0" izz="0"/>') + joint("j", "base", "arm", "revolute") + "</robot>")
    document, _ = check(path)
    assert failing(document) == [("arm", "inertia-pd", "warning")]
    everything, _ = check(path, "--all")
    pseudo = next(f for f in everything["skipped"] if f["check"] == "pseudo-inertia")
    assert "implied by the inertia-pd finding of this link" in pseudo["message"]


def test_a_moving_body_without_mass_is_one_mass_error():
    document, _ = check(BROKEN / "massless_leaf.urdf")
    assert failing(document) == [("gripper", "mass", "error")]


def test_json_findings_hold_only_findings_and_passes_come_with_all():
    clean = ROOT / "fixtures" / "two_link_arm.urdf"
    document, result = check(clean)
    assert result.returncode == 0 and document["findings"] == []
    assert "passes" not in document and "skipped" not in document
    everything, _ = check(clean, "--all")
    assert everything["findings"] == [] and everything["passes"]
    assert {f["status"] for f in everything["passes"]} == {"pass"}
    assert {f["status"] for f in everything["skipped"]} <= {"skip"}
    counts = sum(c["pass"] for c in everything["summary"].values())
    assert counts == len(everything["passes"])
    rows = dyn("check-inertia", clean, "--format", "csv").stdout.splitlines()
    assert len(rows) == 1  # the header alone: no finding
    assert len(dyn("check-inertia", clean, "--format", "csv", "--all").stdout.splitlines()) > 1
    assert "0 findings (0 errors, 0 warnings) from" in dyn("check-inertia", clean).stdout


# ----------------------------------------------------------------------------- placeholders

@pytest.mark.parametrize("floating", [False, True])
def test_placeholder_links_do_not_fail_a_fine_quadruped(tmp_path, floating):
    path = quadruped_leg(tmp_path)
    document, result = check(path, *(["--free-flyer"] if floating else []))
    assert result.returncode == 0 and failing(document) == [], document["findings"]
    everything, _ = check(path, "--all", *(["--free-flyer"] if floating else []))
    skips = [f for f in everything["skipped"] if f["body"] == "foot" and f["check"] == "triangle"]
    assert skips and "placeholder" in skips[0]["message"]
    assert "judged as part of body thigh" in skips[0]["message"]
    if floating:  # the base is merged into the trunk's body and judged with it
        merged = [f for f in everything["passes"] if f["check"] == "merged-pseudo-inertia"
                  and f["body"] == "base"]
        assert merged and merged[0]["links"] == ["base", "trunk"]


def test_the_same_tensor_on_a_real_mass_fails_and_prints_zeros_not_noise(tmp_path):
    path = quadruped_leg(tmp_path, 0.5, PLACEHOLDER.replace("1e-6", "1e-3"))
    document, result = check(path)
    assert result.returncode == 1
    assert failing(document) == [("foot", "triangle", "error")]
    message = document["findings"][0]["message"]
    assert message.startswith("triangle inequality violated: 0 + 0 < 0.003 by 0.003 kg m^2")
    assert "e-2" not in message


# ----------------------------------------------------------------------------- meshes

def binary_stl(path: Path, size=(0.07, 0.07, 0.07), faces: int | None = None,
               nan: bool = False) -> Path:
    """A box as a binary STL (12 triangles); ``faces`` overrides the header's count (a
    truncated file), ``nan`` puts a NaN in the first vertex."""
    half = np.asarray(size) / 2
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * half
    triangles = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
                 (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
    data = bytearray(b"\0" * 80 + struct.pack("<I", 12 if faces is None else faces))
    for n, triangle in enumerate(triangles):
        points = corners[list(triangle)].copy()
        if nan and n == 0:
            points[0, 0] = math.nan
        data += struct.pack("<3f", 0, 0, 0) + struct.pack("<9f", *points.ravel()) + b"\0\0"
    path.write_bytes(bytes(data))
    return path


def mesh_urdf(tmp_path, meshes: dict[str, str], inertia: str | None = None,
              mass: float = 0.1) -> Path:
    """One revolute link per mesh file (link name -> file name)."""
    inertia = inertia or box_inertia(mass, 0.07, 0.07, 0.07)
    parts = ['<robot name="m"><link name="base"/>']
    for name, mesh in meshes.items():
        geometry = f'<collision><geometry><mesh filename="{mesh}"/></geometry></collision>'
        parts += [link(name, mass, inertia, geometry), joint(f"j_{name}", "base", name,
                                                             "revolute")]
    path = tmp_path / "meshes.urdf"
    path.write_text("".join(parts) + "</robot>")
    return path


def test_unreadable_meshes_are_named_one_line_each(tmp_path):
    stl = binary_stl(tmp_path / "truncated.stl")
    stl.write_bytes(stl.read_bytes()[:300])
    binary_stl(tmp_path / "nan.stl", nan=True)
    (tmp_path / "garbage.dae").write_bytes(b"<COLLADA><unclosed")
    path = mesh_urdf(tmp_path, {"a": "truncated.stl", "b": "nan.stl", "c": "garbage.dae"})
    result = dyn("check-inertia", path)
    lines = result.stderr.splitlines()
    assert len(lines) == 3, lines
    for name, mesh, why in (("a", "truncated.stl", "truncated binary STL"),
                            ("b", "nan.stl", "not finite"), ("c", "garbage.dae", "")):
        line = next(text for text in lines if f"link {name}: mesh {mesh} cannot be read" in text)
        assert why in line and "geometry checks were skipped" in line and str(path) in line
    github = dyn("check-inertia", path, "--format", "github").stdout
    assert github.count("::warning") == 3


def test_a_semi_definite_inertia_10_000_times_too_large_is_still_implausible(tmp_path):
    binary_stl(tmp_path / "cube.stl")
    path = mesh_urdf(tmp_path, {"arm": "cube.stl"},
                     '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="0"/>')
    document, result = check(path)
    assert result.returncode == 1
    assert ("arm", "plausibility", "error") in failing(document)
    assert ("arm", "inertia-pd", "warning") in failing(document)


# ----------------------------------------------------------------------------- absurd values

def one_link(tmp_path, mass: str, inertia: str, limits='lower="-1" upper="1"') -> Path:
    path = tmp_path / "one.urdf"
    path.write_text(f'<robot name="o"><link name="base"/><link name="arm"><inertial><mass '
                    f'value="{mass}"/>{inertia}</inertial></link>'
                    + joint("j", "base", "arm", "revolute", limits=limits) + "</robot>")
    return path


def test_absurd_masses_and_reversed_limits_are_findings(tmp_path):
    tensor = '<inertia ixx="0.08" ixy="0" ixz="0" iyy="0.08" iyz="0" izz="0.08"/>'
    document, result = check(one_link(tmp_path, "1e308", tensor))
    assert result.returncode == 1 and failing(document) == [("arm", "mass", "error")]
    assert "absurd mass 1e+308 kg" in document["findings"][0]["message"]
    document, _ = check(one_link(tmp_path, "5e-324", tensor))
    assert failing(document) == [("arm", "mass", "warning")]
    assert "below 1e-15 kg" in document["findings"][0]["message"]
    document, result = check(one_link(tmp_path, "1", tensor, 'lower="1" upper="-1"'))
    assert result.returncode == 1 and failing(document) == [("arm", "limits", "error")]
    assert "lower limit 1 above upper limit -1" in document["findings"][0]["message"]


# ----------------------------------------------------------------------------- false alarms

def contact_foot(tmp_path, mass: float) -> Path:
    """A foot: a visual box, and four 5 mm collision spheres at its corners (contacts)."""
    spheres = "".join(f'<collision><origin xyz="{x} {y} -0.02"/><geometry><sphere '
                      f'radius="0.005"/></geometry></collision>'
                      for x in (-0.09, 0.09) for y in (-0.04, 0.04))
    path = tmp_path / "foot.urdf"
    path.write_text('<robot name="f"><link name="base"/>' + link(
        "foot", mass, box_inertia(mass, 0.2, 0.1, 0.04), box(0.2, 0.1, 0.04, "visual")
        + spheres) + joint("j", "base", "foot", "revolute") + "</robot>")
    return path


def test_contact_spheres_under_a_foot_are_no_density_alarm_but_grams_as_kg_are(tmp_path):
    document, result = check(contact_foot(tmp_path, 0.6))
    assert result.returncode == 0 and failing(document) == []
    everything, _ = check(contact_foot(tmp_path, 0.6), "--all")
    density = next(f for f in everything["passes"] if f["check"] == "density")
    assert "visual volume" in density["message"]
    document, _ = check(contact_foot(tmp_path, 600.0))  # 600 g typed as kg
    assert ("foot", "density", "warning") in failing(document)


def imu_robot(tmp_path, mass: float) -> Path:
    path = tmp_path / "imu.urdf"
    path.write_text('<robot name="i">' + TRUNK + link(
        "imu_link", mass, '<inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/>',
        box(0.001, 0.001, 0.001, "visual")) + joint("imu", "trunk", "imu_link") + "</robot>")
    return path


def test_a_sensor_frame_is_no_density_alarm_but_a_heavy_one_is(tmp_path):
    document, result = check(imu_robot(tmp_path, 0.001), "--free-flyer")
    assert result.returncode == 0 and failing(document) == []
    document, _ = check(imu_robot(tmp_path, 1.0), "--free-flyer")
    assert ("imu_link", "density", "warning") in failing(document)


def test_an_inertia_that_is_exactly_the_visual_box_has_the_right_axes(tmp_path):
    path = tmp_path / "rod.urdf"
    cylinder = ('<collision><geometry><cylinder radius="0.03" length="0.3"/></geometry>'
                '</collision>')
    path.write_text('<robot name="r"><link name="base"/>' + link(
        "rod", 1.0, box_inertia(1.0, 0.3, 0.05, 0.05), box(0.3, 0.05, 0.05, "visual")
        + cylinder) + joint("j", "base", "rod", "revolute") + "</robot>")
    document, _ = check(path)
    assert not [f for f in failing(document) if f[1] == "orientation"], document["findings"]


def slanted_mjcf(tmp_path, geom: str) -> Path:
    """A link long along x whose principal axes are turned 40 deg about z (a curated
    model's diaginertia and quat), with ``geom`` as its only geometry."""
    (tmp_path / "long.stl").write_bytes(binary_stl(tmp_path / "tmp.stl", (0.3, 0.05, 0.05))
                                        .read_bytes())
    half = math.radians(40) / 2
    diagonal = [1.0 * (0.05 ** 2 * 2) / 12, 1.0 * (0.09 + 0.0025) / 12,
                1.0 * (0.09 + 0.0025) / 12]
    path = tmp_path / "slanted.xml"
    path.write_text(
        f'<mujoco><asset><mesh name="long" file="{tmp_path / "long.stl"}"/></asset>'
        '<worldbody><body name="arm"><joint type="hinge" axis="0 1 0"/>'
        f'{geom}<inertial pos="0 0 0" quat="{math.cos(half)} 0 0 {math.sin(half)}" mass="1" '
        f'diaginertia="{diagonal[0]!r} {diagonal[1]!r} {diagonal[2]!r}"/></body></worldbody>'
        '</mujoco>')
    return path


def test_mesh_bounding_boxes_do_not_judge_principal_axes_but_exact_boxes_do(tmp_path):
    mesh = slanted_mjcf(tmp_path, '<geom type="mesh" mesh="long" mass="0"/>')
    document, _ = check(mesh)
    assert not [f for f in failing(document) if f[1] == "orientation"], document["findings"]
    primitive = slanted_mjcf(tmp_path, '<geom type="box" size="0.15 0.025 0.025" mass="0"/>')
    document, _ = check(primitive)
    assert [f for f in failing(document) if f[1] == "orientation"], document["findings"]


@pytest.mark.parametrize("path", sorted(BROKEN.glob("*.urdf")) + sorted(BROKEN.glob("*.xml")),
                         ids=lambda p: p.name)
def test_the_verdicts_do_not_depend_on_the_order_the_checks_run(path, monkeypatch):
    """Each check is a function of its link's or body's data; one pass after all of them
    settles which finding reports a defect. Run in the reverse order, the checks give the
    same findings (the output lists them in the table's order)."""
    from treedyn.engine.analysis import check_inertia as module
    from treedyn.parsers import load_model
    from treedyn.parsers.link_geometry import link_geometry

    model = load_model(str(path))
    geometry = link_geometry(model.description, str(path))

    def verdicts():
        report = module.check_inertia(model, geometry)
        return sorted((f.body, f.scope, f.check, f.status, f.severity, f.message)
                      for f in report.findings)

    forward = verdicts()
    assert any(status == "fail" for _, _, _, status, _, _ in forward)
    monkeypatch.setattr(module, "TABLE", tuple(reversed(module.TABLE)))
    assert verdicts() == forward


@pytest.mark.parametrize("options", [("--select", "limits"),
                                     ("--ignore", "articulated-inertia")])
def test_select_and_ignore_count_what_is_left_of_deferred_findings(options):
    """--select/--ignore leave some deferred parts with no kinds at all; counting the report
    then counts what is left, never iterates a part as findings: the summary's passes and
    failures are the findings listed with --all."""
    model = ROOT / "fixtures" / "urdf" / "gripper_mimic.urdf"
    document, _ = check(model, *options, "--all")
    listed = document["findings"] + document["passes"]
    assert listed and all(f["check"] != "articulated-inertia" for f in listed)
    counted = Counter((f["check"], f["status"]) for f in listed if f["status"] != "skip")
    assert counted == Counter({(check, status): n for check, row in document["summary"].items()
                               for status, n in row.items() if status in ("pass", "fail")
                               and n})  # (skips are counted, not listed)
    if options[0] == "--select":
        assert set(document["summary"]) == {"limits"}
