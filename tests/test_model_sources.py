"""Where a model comes from: stdin (MODEL ``-``) and mesh files found through
``--mesh-path``; held to the same model read from its file."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from unittest import mock

from in_process import dyn_here

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHAPES = FIXTURES / "shapes.urdf"
MJCF = FIXTURES / "mjcf" / "include" / "main.xml"  # its includes resolve from its folder


def one_error(run) -> str:
    lines = run.stderr.decode().strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1, run.stderr
    return lines[0]


def test_stdin_model_equals_its_file():
    for path in (SHAPES, MJCF):
        args = ["mass", "--format", "json"]
        from_file = dyn_here([args[0], path.name, *args[1:]], cwd=path.parent)
        from_stdin = dyn_here([args[0], "-", *args[1:]], cwd=path.parent,
                              stdin=path.read_bytes())
        assert from_file.returncode == 0, from_file.stderr
        assert from_stdin.returncode == 0, from_stdin.stderr
        assert json.loads(from_stdin.stdout) == json.loads(from_file.stdout)


def test_stdin_model_resolves_meshes_from_the_current_folder(tmp_path):
    text = SHAPES.read_bytes()
    args = ["inertia-from-geometry", "-", "--format", "json"]
    here = dyn_here(args, cwd=FIXTURES, stdin=text)
    away = dyn_here(args, cwd=tmp_path, stdin=text)
    status = {name: {link["link"]: link["status"] for link in json.loads(run.stdout)["links"]}
              for name, run in (("here", here), ("away", away))}
    assert status["here"]["hand"] == "computed" and status["away"]["hand"] == "unreadable"
    assert "<stdin>" in away.stderr.decode() and "wedge.stl" in away.stderr.decode()


def test_stdin_refusals(tmp_path):
    assert "not both" in one_error(dyn_here(["inverse", "-", "--input", "-"], cwd=FIXTURES,
                                            stdin=SHAPES.read_bytes()))
    assert "<stdin>" in one_error(dyn_here(["info", "-"], cwd=tmp_path, stdin=b"<robot"))
    assert "<foo>" in one_error(dyn_here(["info", "-"], cwd=tmp_path, stdin=b"<foo/>"))
    written = dyn_here(["inertia-from-geometry", "-", "--write", "new.urdf"], cwd=tmp_path,
                       stdin=SHAPES.read_bytes())
    assert "not stdin" in one_error(written) and not (tmp_path / "new.urdf").exists()
    with mock.patch("treedyn.session.models.MODEL_BYTES", 100):
        assert "larger than" in one_error(dyn_here(["info", "-"], cwd=tmp_path,
                                                   stdin=SHAPES.read_bytes()))


def test_mesh_path_finds_meshes_that_do_not_resolve(tmp_path):
    """A description whose mesh paths name a package that is nowhere: without --mesh-path
    the mesh is missing (check-inertia warns, the link is left alone), with it found."""
    (tmp_path / "urdf").mkdir()
    (tmp_path / "assets" / "sub").mkdir(parents=True)
    shutil.copy(FIXTURES / "meshes" / "wedge.stl", tmp_path / "assets" / "sub")
    text = SHAPES.read_text().replace("meshes/wedge.stl", "package://nowhere/meshes/wedge.stl")
    (tmp_path / "urdf" / "robot.urdf").write_text(text)
    model = ["urdf/robot.urdf"]
    without = dyn_here(["check-inertia", *model, "--format", "json"], cwd=tmp_path)
    assert "not found" in without.stderr.decode()
    for option in (["--mesh-path", "assets/sub"], ["--mesh-path", "urdf", "--mesh-path",
                                                   str(tmp_path / "assets" / "sub")]):
        found = dyn_here(["check-inertia", *model, "--format", "json", *option], cwd=tmp_path)
        assert found.returncode in (0, 1) and "not found" not in found.stderr.decode()
        geometry = dyn_here(["inertia-from-geometry", *model, "-f", "json", *option],
                            cwd=tmp_path)
        links = {link["link"]: link for link in json.loads(geometry.stdout)["links"]}
        reference = dyn_here(["inertia-from-geometry", SHAPES, "-f", "json"], cwd=FIXTURES)
        expected = {link["link"]: link for link in json.loads(reference.stdout)["links"]}
        assert links["hand"] == expected["hand"] and links["hand"]["status"] == "computed"
