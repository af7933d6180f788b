"""One of each: primitive inertia and rotations (engine/geometry.py, engine/rotations.py), and
the mesh reader (parsers/meshes.py).

Each was written twice before (the inertia check's full-size solids and the MJCF
compiler's half-size geoms with shells; the engine's batched quaternion matrix and the
MJCF compiler's single one, the two skew matrices, COLLADA's inline Rodrigues; the
MuJoCo-exact mesh reader and the bounding boxes' regex reader). These tests hold the
merged functions to the numbers of both former call sites.
"""
from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pytest

from treedyn.engine.description import Shape
from treedyn.engine.geometry import (
    half_sizes, primitive_inertia, primitive_volume, shape_size, solid_corners,
    solid_properties,
)
from treedyn.engine.rotations import (
    axis_angle_matrix, quat_matrix, quaternion_matrix, rpy_matrix, skew,
)
from treedyn.parsers.link_geometry import mesh_bounds
from treedyn.parsers.meshes import POINT_READERS, MeshFileError, read_mesh_file, read_stl

KINDS = {"box": 3, "sphere": 1, "cylinder": 2, "capsule": 2, "ellipsoid": 3}


def former_check_solid(kind: str, size: np.ndarray) -> tuple[float, np.ndarray]:
    """(volume, unit-mass moments) as the inertia checks computed them from full sizes."""
    if kind == "box":
        a, b, c = size
        return a * b * c, np.array([b * b + c * c, a * a + c * c, a * a + b * b]) / 12
    if kind == "sphere":
        r = size[0]
        return 4.0 / 3.0 * np.pi * r ** 3, np.full(3, 0.4 * r * r)
    if kind == "cylinder":
        r, length = size
        side = (3 * r * r + length * length) / 12
        return np.pi * r * r * length, np.array([side, side, 0.5 * r * r])
    if kind == "capsule":
        r, length = size
        v_cyl, v_caps = np.pi * r * r * length, 4.0 / 3.0 * np.pi * r ** 3
        caps_side = 83 / 320 * r * r + (length / 2 + 3 * r / 8) ** 2
        volume = v_cyl + v_caps
        side = (v_cyl * (3 * r * r + length * length) / 12 + v_caps * caps_side) / volume
        axial = (v_cyl * 0.5 * r * r + v_caps * 0.4 * r * r) / volume
        return volume, np.array([side, side, axial])
    a, b, c = size ** 2
    return 4.0 / 3.0 * np.pi * float(np.prod(size)), np.array([b + c, a + c, a + b]) / 5


@pytest.mark.parametrize("kind", list(KINDS))
def test_solid_properties_give_the_former_check_numbers(kind):
    """Full-size solids through the half-size primitives: boxes (the stand-ins of every
    mesh) to the bit, the other kinds to rounding (the formulas' order of operations)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        size = rng.uniform(0.001, 3.0, KINDS[kind])
        rotation = rpy_matrix(*rng.uniform(-3, 3, 3))
        shape = Shape(kind, size, rotation, rng.normal(size=3))
        volume, centroid, inertia = solid_properties(shape)
        old_volume, old_moments = former_check_solid(kind, size)
        old_inertia = rotation @ np.diag(old_moments) @ rotation.T
        np.testing.assert_array_equal(centroid, shape.translation)
        if kind == "box":
            assert volume == old_volume
            np.testing.assert_array_equal(inertia, old_inertia)
        else:
            assert volume == pytest.approx(old_volume, rel=4e-16)
            np.testing.assert_allclose(inertia, old_inertia, rtol=1e-14,
                                       atol=1e-15 * np.abs(old_inertia).max())


@pytest.mark.parametrize("kind", list(KINDS))
def test_primitive_inertia_gives_the_former_mjcf_numbers(kind):
    """The MJCF compiler's half sizes and shells are the primitives themselves: spot values
    worked out by hand (solid and shell) for a unit mass."""
    half = {"box": [0.1, 0.2, 0.3], "sphere": [0.5], "cylinder": [0.1, 0.4],
            "capsule": [0.1, 0.4], "ellipsoid": [0.1, 0.2, 0.3]}[kind]
    half = np.array(half)
    volume = primitive_volume(kind, half, False)
    expected = {"box": 8 * 0.1 * 0.2 * 0.3, "sphere": 4 * math.pi * 0.125 / 3,
                "cylinder": math.pi * 0.01 * 0.8,
                "capsule": math.pi * (0.01 * 0.8 + 4 * 0.001 / 3),
                "ellipsoid": 4 * math.pi * 0.1 * 0.2 * 0.3 / 3}[kind]
    assert volume == pytest.approx(expected, rel=1e-15)
    moments = primitive_inertia(kind, half, 2.0, False)
    assert moments == pytest.approx(2.0 * primitive_inertia(kind, half, 1.0, False), rel=1e-15)
    if kind == "sphere":
        shell = primitive_inertia(kind, half, 1.0, True)
        assert shell == pytest.approx(np.full(3, 0.5 ** 2 * 2 / 3))
        assert primitive_volume(kind, half, True) == pytest.approx(4 * math.pi * 0.25)


@pytest.mark.parametrize("kind", list(KINDS))
def test_half_sizes_and_shape_sizes_are_inverse(kind):
    size = np.array([0.3, 0.7, 1.1][:KINDS[kind]])
    np.testing.assert_array_equal(shape_size(kind, half_sizes(kind, size))[:len(size)], size)


def test_solid_corners_bound_the_solid():
    shape = Shape("capsule", np.array([0.1, 0.4]))
    corners = solid_corners(shape)
    np.testing.assert_allclose(corners.max(axis=0), [0.1, 0.1, 0.3])


def test_the_single_and_batched_quaternion_matrices_agree():
    """The batched one normalises (the engine's q), the single one takes a unit quaternion
    as given (MuJoCo's compiler): one formula, so exact quaternions give the same bits."""
    rng = np.random.default_rng(3)
    quats = rng.normal(size=(50, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    batched = quaternion_matrix(*quats.T)
    for quat, R in zip(quats, batched):
        np.testing.assert_allclose(quat_matrix(quat), R, rtol=0, atol=2e-15)
        np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-14)
    exact = np.array([0.5, 0.5, -0.5, 0.5])
    np.testing.assert_array_equal(quaternion_matrix(*exact[:, None])[0], quat_matrix(exact))
    np.testing.assert_array_equal(quaternion_matrix(*np.zeros((4, 1)))[0], np.eye(3))


def test_skew_is_the_cross_product_for_one_vector_and_a_batch():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(2, 7, 3))
    np.testing.assert_allclose(skew(a) @ b[..., None], np.cross(a, b)[..., None], atol=1e-15)
    np.testing.assert_array_equal(skew(a[0]), skew(a)[0])


def test_axis_angle_matrix_is_the_quaternion_rotation():
    axis = np.array([1.0, 2.0, 2.0]) / 3
    angle = 0.7
    quat = np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])
    np.testing.assert_allclose(axis_angle_matrix(axis, angle), quat_matrix(quat), atol=1e-15)


# -- one mesh reader: MuJoCo-exact for the MJCF compiler, lenient for bounding boxes -------

MESHES = Path(__file__).resolve().parent.parent / "fixtures" / "mjcf" / "meshes"


@pytest.mark.parametrize("path", sorted(p for p in MESHES.iterdir()
                                        if p.suffix.lower() in (".stl", ".obj", ".msh")),
                         ids=lambda p: p.name)
def test_lenient_vertices_bound_the_exact_mesh(path):
    """Both modes read one file to the same vertices' box: to the bit where the file holds
    float32 (binary STL, .msh), to float32 rounding where it holds text (ASCII STL, OBJ:
    MuJoCo rounds, the bounding boxes keep the written decimals)."""
    exact = read_mesh_file(str(path)).vertices
    lenient = POINT_READERS[path.suffix.lower()](path.read_bytes())
    low, high = mesh_bounds(str(path))
    np.testing.assert_array_equal([low, high], [lenient.min(axis=0), lenient.max(axis=0)])
    text = path.suffix.lower() == ".obj" or path.read_bytes().lstrip().startswith(b"solid")
    binary = not text
    tolerance = 0 if binary else 1e-7 * np.abs(exact).max()
    np.testing.assert_allclose(low, exact.min(axis=0), rtol=0, atol=tolerance)
    np.testing.assert_allclose(high, exact.max(axis=0), rtol=0, atol=tolerance)


def test_lenient_stl_has_none_of_mujocos_limits(tmp_path):
    """A binary STL MuJoCo refuses (no faces) or an ASCII one without 'solid' still has a
    bounding box when it has vertices."""
    ascii_stl = b"facet normal 0 0 1\n outer loop\n vertex 0 0 0\n vertex 1 0 0\n" \
                b" vertex 0 2 0\n endloop\nendfacet\n"
    with pytest.raises(MeshFileError):
        read_stl(ascii_stl)
    np.testing.assert_array_equal(POINT_READERS[".stl"](ascii_stl).max(axis=0), [1, 2, 0])
    empty = bytes(80) + struct.pack("<I", 0)
    with pytest.raises(MeshFileError):
        read_stl(empty)
    assert len(POINT_READERS[".stl"](empty)) == 0
