"""treedyn's MJCF parser against MuJoCo (the reference, test-only).

For every MJCF model gymnasium ships, dm_control's models (its suite, locomotion walkers, ant
and Jaco) and every fixture in ``fixtures/mjcf``:

* structure: nq, nv, joint names, joint order and joint types equal MuJoCo's; the neutral
  q equals ``qpos0``; position limits equal ``jnt_range`` of limited hinges and slides;
* inertia: the bodies are MuJoCo's, with its ids and names; every body's mass, centre of
  mass and rotational inertia equal MuJoCo's ``body_mass``, ``body_ipos`` and
  ``body_iquat``/``body_inertia`` (relative 1e-9), and the total mass equals
  ``sum(body_mass)``;
* dynamics, at random states (unit quaternions for free and ball joints, hinges and
  slides within their limits, normal velocities and accelerations): M equals
  ``mj_fullM`` after ``mj_forward``; RNEA equals ``M a + qfrc_bias``; ABA recovers a.
  The error measure is max|ours - ref| / max|ref| and must be <= 1e-9. MuJoCo's
  springs, dampers, constraints and actuation are disabled (they do not enter M or
  qfrc_bias, but nothing else may either).

Invalid models raise ParseError with the file, line and element; MuJoCo rejects them too
(except NaN/inf numbers, which MuJoCo only warns about).
"""
from __future__ import annotations

import glob
import os
import struct

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from reference_models import dm_control_id, dm_control_models, gymnasium_models  # noqa: E402
from treedyn.engine import aba, build_model, crba, rnea  # noqa: E402
from treedyn.pipeline.reports import info_document  # noqa: E402
from treedyn.parsers.errors import ParseError  # noqa: E402
from treedyn.parsers.meshes import MeshFileError, read_mesh_file, read_msh, read_stl  # noqa: E402
from treedyn.parsers.mjcf import parse_mjcf  # noqa: E402
from treedyn.engine.rotations import quat_matrix  # noqa: E402

TOL = 1e-9
STATES = 4
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "fixtures", "mjcf")
ENGINE_TYPES = {0: "free_world", 1: "ball", 2: "prismatic", 3: "revolute"}




def fixture_models() -> list[str]:
    paths = sorted(glob.glob(os.path.join(FIXTURES, "*.xml")))
    paths.append(os.path.join(FIXTURES, "include", "main.xml"))
    return [path for path in paths if not path.endswith("_ascii.xml")]


def reference(path: str):
    """MuJoCo's model with every force outside M and qfrc_bias switched off."""
    m = mujoco.MjModel.from_xml_path(path)
    bits = mujoco.mjtDisableBit
    m.opt.disableflags |= (bits.mjDSBL_SPRING | bits.mjDSBL_DAMPER | bits.mjDSBL_CONSTRAINT
                           | bits.mjDSBL_ACTUATION)
    return m


def relative_error(ours: np.ndarray, ref: np.ndarray) -> float:
    """max|ours - ref| / max|ref|, relative to the reference's own scale (the fruit fly's M
    is 1e-3 at most: a floor of 1 would let it pass anything)."""
    if ref.size == 0:
        return 0.0
    return float(np.max(np.abs(ours - ref)) / max(np.max(np.abs(ref)), np.finfo(float).tiny))


def check_structure(m, model) -> None:
    assert (model.nq, model.nv) == (m.nq, m.nv)
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)]
    expected = [name if name else f"joint{j}" for j, name in enumerate(names)]
    assert list(model.joint_names) == expected
    assert list(model.joint_types) == [ENGINE_TYPES[int(t)] for t in m.jnt_type]
    assert list(model.idx_q) == list(m.jnt_qposadr)
    assert list(model.idx_v) == list(m.jnt_dofadr)
    np.testing.assert_allclose(model.q_neutral, m.qpos0, rtol=0, atol=1e-12)
    bodies = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, int(b)) or f"body{b}"
              for b in m.jnt_bodyid]
    assert list(model.body_names) == bodies
    # the file's moving bodies, one each however many joints it has; info lists those,
    # with their own links only (no joint-anchor frames) and MuJoCo's total mass
    assert [body.name for body in model.bodies] == list(dict.fromkeys(bodies))
    document = info_document(model, None)
    assert [body["name"] for body in document["bodies"]] == list(dict.fromkeys(bodies))
    names = {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or f"body{b}" for b in range(m.nbody)}
    assert {link for body in document["bodies"] for link in body["links"]} <= names
    assert abs(document["total_mass"] - mujoco.mj_getTotalmass(m)) <= 1e-12 * max(
        1.0, mujoco.mj_getTotalmass(m))
    for j in range(m.njnt):
        if m.jnt_type[j] in (2, 3):
            adr = m.jnt_qposadr[j]
            limits = m.jnt_range[j] if m.jnt_limited[j] else (-np.inf, np.inf)
            np.testing.assert_allclose([model.q_lower[adr], model.q_upper[adr]], limits,
                                       rtol=1e-15, atol=0)


def check_inertia(m, description, model) -> None:
    bodies = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i) or f"body{i}"
              for i in range(m.nbody)]
    assert [link.name for link in description.links if not link.body] == bodies
    links = {link.name: link for link in description.links}
    for i in range(1, m.nbody):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i) or f"body{i}"
        inertia = links[name].inertia
        rotation = quat_matrix(m.body_iquat[i])
        expected = rotation @ np.diag(m.body_inertia[i]) @ rotation.T
        scale = max(m.body_mass[i], 1e-300)
        assert abs(inertia.mass - m.body_mass[i]) <= TOL * scale, name
        assert np.max(np.abs(inertia.com - m.body_ipos[i])) <= TOL * max(1.0, np.abs(
            m.body_ipos[i]).max()), name
        assert np.max(np.abs(inertia.inertia - expected)) <= TOL * max(
            np.abs(expected).max(), 1e-300), name
    total = model.total_mass + model.world_mass
    assert abs(total - m.body_mass.sum()) <= 1e-12 * max(1.0, m.body_mass.sum())


def states(m, model, seed: int):
    """Random states (q, v, a) with MuJoCo's M, tau = M a + qfrc_bias and qfrc_bias."""
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    for q in model.random_configuration(rng, STATES):
        v = rng.normal(size=m.nv)
        a = rng.normal(size=m.nv)
        d.qpos[:] = q
        d.qvel[:] = v
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        yield q, v, a, M, M @ a + d.qfrc_bias, d.qfrc_bias.copy()


def check_dynamics(m, model, seed: int) -> None:
    for q, v, a, M, tau, _ in states(m, model, seed):
        assert relative_error(crba(model, q), M) <= TOL
        assert relative_error(rnea(model, q, v, a), tau) <= TOL
        assert relative_error(aba(model, q, v, tau), a) <= TOL


def compare_with_mujoco(path: str, seed: int = 0) -> None:
    m = reference(path)
    description = parse_mjcf(path)
    model = build_model(description)
    check_structure(m, model)
    check_inertia(m, description, model)
    check_dynamics(m, model, seed)


GYMNASIUM = gymnasium_models()


@pytest.mark.skipif(not GYMNASIUM, reason="gymnasium is not installed")
@pytest.mark.parametrize("path", GYMNASIUM, ids=os.path.basename)
def test_gymnasium_model_matches_mujoco(path):
    compare_with_mujoco(path)


DM_CONTROL = dm_control_models()


@pytest.mark.skipif(not DM_CONTROL, reason="dm_control is not installed")
@pytest.mark.parametrize("path", DM_CONTROL, ids=dm_control_id)
def test_dm_control_model_matches_mujoco(path):
    """Mesh inertias (dog, rodent, fruit fly), hundreds of joints, grams and millimetres."""
    compare_with_mujoco(path)


@pytest.mark.parametrize("path", fixture_models(),
                         ids=lambda p: os.path.relpath(p, FIXTURES))
def test_fixture_matches_mujoco(path):
    compare_with_mujoco(path, seed=1)


# -- details ----------------------------------------------------------------------------


def test_description_basics():
    path = os.path.join(FIXTURES, "multijoint.xml")
    description = parse_mjcf(path)
    assert description.format == "mjcf"
    assert description.source == path
    assert description.world_link == "world"
    assert description.name == "multijoint"
    np.testing.assert_array_equal(description.gravity, [0.3, -0.2, -9.7])
    links = {link.name for link in description.links}
    # the last joint of "cart" is a slide, which needs no anchor link
    assert {"cart/slide_x", "cart/hinge_a", "cart/hinge_b", "cart"} <= links
    assert "cart/slide_z" not in links
    fixed = {j.name: j for j in description.joints if j.type == "fixed"}
    assert {"tip/anchor", "welded/weld", "static/weld"} <= set(fixed)
    np.testing.assert_array_equal(fixed["tip/anchor"].translation, [-0.02, 0, 0])


def test_unnamed_joint_gets_mujoco_id():
    model = build_model(parse_mjcf(os.path.join(FIXTURES, "multijoint.xml")))
    m = mujoco.MjModel.from_xml_path(os.path.join(FIXTURES, "multijoint.xml"))
    unnamed = [j for j in range(m.njnt) if not mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)]
    assert unnamed and all(model.joint_names[j] == f"joint{j}" for j in unnamed)


def test_passive_forces_mujoco_adds_are_counted_as_ignored(tmp_path):
    """Springs, damping, friction loss, gravity compensation and fluid forces enter
    MuJoCo's qfrc_passive (or its constraints), not M a + h: every model lists the joints,
    bodies and options that have them, as MuJoCo compiles them, under ignored."""
    passive = str(tmp_path / "passive.xml")
    with open(passive, "w") as stream:
        stream.write('<mujoco>\n<option density="1.2" viscosity="0"/>\n<default>\n'
                     '<joint frictionloss="0.1" stiffness="0 0"/>\n</default>\n<worldbody>\n'
                     '<body gravcomp="1">\n<joint damping="2"/><geom size="0.1"/>\n'
                     '<body gravcomp="0">\n<joint type="ball" stiffness="3"/><geom size="0.1"/>'
                     '\n</body>\n</body>\n</worldbody>\n</mujoco>\n')
    assert parse_mjcf(passive).ignored == {"joint frictionloss": 2, "joint damping": 1,
                                           "joint stiffness": 1, "body gravcomp": 1,
                                           "option density": 1}
    switched = str(tmp_path / "switched.xml")  # springdamper; damping that MuJoCo turns off
    with open(switched, "w") as stream:
        stream.write('<mujoco>\n<option><flag damper="disable"/></option>\n<worldbody>\n'
                     '<body>\n<joint damping="2"/><geom size="0.1"/>\n<body>\n'
                     '<joint springdamper="0.1 1"/><geom size="0.1"/>\n</body>\n</body>\n'
                     '</worldbody>\n</mujoco>\n')
    assert parse_mjcf(switched).ignored == {"joint springdamper": 1}
    assert np.count_nonzero(mujoco.MjModel.from_xml_path(switched).jnt_stiffness) == 1
    for path in [passive] + gymnasium_models() + fixture_models():
        ignored = parse_mjcf(path).ignored
        m = mujoco.MjModel.from_xml_path(path)
        first_dof = m.jnt_dofadr
        expected = {"joint stiffness": int(np.count_nonzero(m.jnt_stiffness)),
                    "joint damping": int(np.count_nonzero(m.dof_damping[first_dof])),
                    "joint frictionloss": int(np.count_nonzero(m.dof_frictionloss[first_dof])),
                    "body gravcomp": int(np.count_nonzero(m.body_gravcomp)),
                    "option density": int(m.opt.density != 0),
                    "option viscosity": int(m.opt.viscosity != 0)}
        assert {key: ignored.get(key, 0) for key in expected} == expected, path


def test_ignored_elements_are_counted():
    description = parse_mjcf(os.path.join(FIXTURES, "armature.xml"))
    assert description.ignored == {"actuator": 5, "tendon": 2}
    for path in GYMNASIUM:
        if os.path.basename(path) == "humanoid.xml":
            ignored = parse_mjcf(path).ignored
            assert ignored["actuator"] == 17 and ignored["tendon"] == 2


def test_gravity_flag_disable():
    np.testing.assert_array_equal(parse_mjcf(os.path.join(FIXTURES, "frames.xml")).gravity,
                                  [0.0, 0.0, 0.0])


def test_armature_from_actuators_and_tendons():
    model = build_model(parse_mjcf(os.path.join(FIXTURES, "armature.xml")))
    armature = dict(zip(model.joint_names, model.armature))
    assert armature["ja"] == pytest.approx(0.1 + 0.02 * 3 ** 2)
    # the main class's <motor armature> is the default of every actuator type
    assert armature["jb"] == pytest.approx(0.01 * 5 ** 2 + 0.01 * 2 ** 2 + 0.02)
    assert armature["jc"] == pytest.approx((0.3 + 0.02 * 0.5 ** 2) * 2 ** 2)


def test_replicate_copies_may_share_a_name_for_a_while(tmp_path):
    """As in MuJoCo's sand_castle.xml: inside the outer replicate, "a" copied twice is
    a00..a21 and "a2" copied once is a20, a21; the outer copies make every name unique, so
    the model loads (it crashed when names were kept one element each)."""
    body = '<body name="{}"><freejoint/><geom size="0.01"/></body>'
    path = tmp_path / "shared.xml"
    path.write_text(
        '<mujoco><worldbody><replicate count="2" offset="0 0 1">'
        '<replicate count="2" offset="1 0 0"><replicate count="3" offset="0 1 0">'
        + body.format("a") + '</replicate></replicate>'
        '<replicate count="2" offset="2 0 0"><replicate count="2" offset="0 2 0">'
        + body.format("a2") + '</replicate></replicate>'
        '</replicate></worldbody></mujoco>')
    compare_with_mujoco(str(path))  # body and joint names included


def test_references_to_replicated_elements_are_accepted(tmp_path):
    """A sensor, equality or contact pair naming an element inside <replicate> by its
    template name: MuJoCo copies or drops it (rules that differ by element), so dyn, which
    checks these sections' names only, accepts it as MuJoCo does."""
    path = tmp_path / "replicated.xml"
    path.write_text(
        '<mujoco><worldbody><body name="base"><joint name="k"/><geom size="0.1"/></body>'
        '<replicate count="2" offset="1 0 0"><body name="leg"><joint name="j"/>'
        '<geom name="g" size="0.1"/><site name="s"/></body></replicate></worldbody>'
        '<contact><pair geom1="g" geom2="g"/><exclude body1="leg" body2="base"/></contact>'
        '<equality><connect body1="leg" body2="base" anchor="0 0 0"/>'
        '<joint joint1="j" joint2="k"/></equality>'
        '<sensor><touch site="s"/><framepos objtype="site" objname="s" reftype="body" '
        'refname="base"/><jointpos joint="j"/></sensor></mujoco>')
    compare_with_mujoco(str(path))


def test_ascii_stl_gives_the_binary_result():
    binary = parse_mjcf(os.path.join(FIXTURES, "meshes.xml"))
    ascii_ = parse_mjcf(os.path.join(FIXTURES, "meshes_ascii.xml"))
    for one, other in zip(binary.links, ascii_.links):
        assert one.name == other.name
        assert one.inertia.mass == other.inertia.mass
        np.testing.assert_array_equal(one.inertia.com, other.inertia.com)
        np.testing.assert_array_equal(one.inertia.inertia, other.inertia.inertia)
    with pytest.raises(ValueError, match="ASCII"):
        mujoco.MjModel.from_xml_path(os.path.join(FIXTURES, "meshes_ascii.xml"))


def test_obj_polygons_are_cut_into_mujocos_triangles(tmp_path):
    """Random prisms whose ends are star-shaped n-gons (5 to 11 corners, convex or not, in
    either winding, some not planar): the triangles equal MuJoCo's mesh_face exactly."""
    rng = np.random.default_rng(7)
    for trial in range(40):
        n = int(rng.integers(5, 12))
        angles = np.sort(rng.uniform(0, 2 * np.pi, n))[::1 if trial % 2 else -1]
        radii = rng.uniform(0.3, 1.0, n)
        axes = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        end = np.c_[radii * np.cos(angles), radii * np.sin(angles), np.zeros(n)] @ axes.T
        if trial % 3 == 0:
            end += rng.normal(scale=0.05, size=end.shape)
        vertices = np.r_[end, end + axes[:, 2] * rng.uniform(0.2, 1.0)]
        lines = [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in vertices]
        lines += ["f " + " ".join(str(i + 1) for i in range(n)),
                  "f " + " ".join(str(n + i + 1) for i in reversed(range(n)))]
        lines += [f"f {i + 1} {n + i + 1} {n + (i + 1) % n + 1} {(i + 1) % n + 1}" for i in range(n)]
        path = tmp_path / f"prism{trial}.obj"
        path.write_text("\n".join(lines) + "\n")
        ours = read_mesh_file(str(path)).faces
        m = mujoco.MjModel.from_xml_string(
            f'<mujoco><asset><mesh name="m" file="{path}" inertia="shell"/></asset><worldbody>'
            '<body><freejoint/><geom type="mesh" mesh="m"/></body></worldbody></mujoco>')
        np.testing.assert_array_equal(ours, m.mesh_face[:m.mesh_facenum[0]], err_msg=str(trial))


def test_mesh_readers():
    meshes = os.path.join(FIXTURES, "meshes")
    stl = read_mesh_file(os.path.join(meshes, "lblock.stl"))
    assert stl.vertices.shape == (12, 3) and stl.faces.shape == (20, 3)
    text = read_mesh_file(os.path.join(meshes, "lblock_ascii.stl"))
    np.testing.assert_array_equal(stl.vertices, text.vertices)
    np.testing.assert_array_equal(stl.faces, text.faces)
    assert read_mesh_file(os.path.join(meshes, "cloud.msh")).faces.shape == (0, 3)
    assert read_mesh_file(os.path.join(meshes, "hull.msh")).faces.shape[1] == 3
    with open(os.path.join(meshes, "lblock.stl"), "rb") as stream:
        data = stream.read()
    with pytest.raises(MeshFileError):
        read_stl(data[:-10])
    with pytest.raises(MeshFileError, match="only triangles"):
        read_stl(b"solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\n"
                 b"endloop\nendfacet\nendsolid x\n")
    with pytest.raises(MeshFileError, match="size"):
        read_msh(struct.pack("<4i", 4, 0, 0, 1) + b"\0" * 12)
    obj = read_mesh_file(os.path.join(meshes, "tent.obj"))
    assert obj.vertices.shape == (12, 3)  # every vertex, also the ignored object's
    assert obj.faces.shape == (3 + 2 + 3 + 2 * 3, 3)  # pentagon, quads, triangles
    with pytest.raises(MeshFileError, match="unsupported mesh file type"):
        read_mesh_file("mesh.ply")


# -- errors -----------------------------------------------------------------------------

BODY = '<mujoco>\n<worldbody>\n<body name="b">\n{}\n</body>\n</worldbody>\n</mujoco>\n'
# a hinge "a", a ball "b" and an unnamed slide (joint2); {} is the sections after worldbody
REFS = ('<mujoco>\n<worldbody>\n<body><joint name="a" axis="0 1 0"/><geom size="0.1"/>\n'
        '<body pos="0 0 -0.3"><joint name="b" type="ball"/><joint type="slide"/><geom size="0.1"/>'
        '</body>\n</body>\n</worldbody>\n{}\n</mujoco>\n')

# assets, then a moving body's other elements
MESHES = ('<mujoco>\n<asset>\n{}\n</asset>\n<worldbody>\n<body name="b">\n<joint/>'
          '<geom size="1"/>\n{}\n</body>\n</worldbody>\n</mujoco>\n')
TETRAHEDRON = '<mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>'
FLAT_FACES = 'vertex="0 0 0 1 0 0 0 1 0 1 1 0" face="0 1 2 1 3 2"'

# name -> (model text, line, element, problem fragment, does MuJoCo reject it too)
INVALID = {
    "unknown joint type": (BODY.format('<joint type="spin"/><geom size="1"/>'), 4, "joint",
                           'type="spin"', True),
    "non-numeric": (BODY.format('<joint pos="0 0 x"/><geom size="1"/>'), 4, "joint",
                    '"x" is not a number', True),
    "wrong count": (BODY.format('<joint axis="0 1"/><geom size="1"/>'), 4, "joint",
                    "expected 3 numbers, got 2", True),
    "nan": (BODY.format('<joint axis="0 nan 1"/><geom size="1"/>'), 4, "joint",
            '"nan" is not finite', False),
    "zero axis": (BODY.format('<joint axis="0 0 0"/><geom size="1"/>'), 4, "joint",
                  "axis has zero length", True),
    "missing mesh file": ('<mujoco>\n<asset>\n<mesh file="nope.stl"/>\n</asset>\n'
                          '<worldbody/>\n</mujoco>\n', 3, "mesh", 'mesh file "nope.stl" not found',
                          True),
    "unknown mesh": (BODY.format('<joint/><geom type="mesh" mesh="nope"/>'), 4, "geom",
                     'unknown mesh "nope"', True),
    "unknown class": (BODY.format('<joint class="nope"/><geom size="1"/>'), 4, "joint",
                      'class="nope": unknown default class', True),
    "unknown childclass": ('<mujoco>\n<worldbody>\n<body childclass="nope">\n<joint/>'
                           '<geom size="1"/>\n</body>\n</worldbody>\n</mujoco>\n', 3, "body",
                           'childclass="nope": unknown default class', True),
    "nested free joint": (BODY.format('<geom size="1"/>\n<body>\n<freejoint/><geom size="1"/>'
                                      '</body>'), 6, "freejoint", "top-level body", True),
    "free joint with another": (BODY.format('<freejoint/><joint/><geom size="1"/>'), 4,
                                "freejoint", "only joint of its body", True),
    "ball then hinge": (BODY.format('<joint type="ball"/><joint/><geom size="1"/>'), 4, "joint",
                        "cannot be followed", True),
    "joint in world": ('<mujoco>\n<worldbody>\n<joint/>\n</worldbody>\n</mujoco>\n', 3, "joint",
                       "world body cannot have joints", True),
    "zero quaternion": ('<mujoco>\n<worldbody>\n<body quat="0 0 0 0">\n<joint/><geom size="1"/>'
                        '</body>\n</worldbody>\n</mujoco>\n', 3, "body", "zero quaternion", True),
    "two orientations": ('<mujoco>\n<worldbody>\n<body quat="1 0 0 0" euler="0 0 1">\n<joint/>'
                         '<geom size="1"/></body>\n</worldbody>\n</mujoco>\n', 3, "body",
                         "only one orientation", True),
    "fromto with pos": (BODY.format('<joint/><geom type="capsule" size="1" pos="1 0 0" '
                                    'fromto="0 0 0 1 0 0"/>'), 4, "geom", "pos and fromto", True),
    "plane in a moving body": (BODY.format('<joint/><geom size="1"/><geom type="plane" '
                                           'size="1 1 1"/>'), 4, "geom", "static bodies", True),
    "limited without range": (BODY.format('<joint limited="true"/><geom size="1"/>'), 4, "joint",
                              "needs a range", True),
    "range without limited": ('<mujoco>\n<compiler autolimits="false"/>\n<worldbody>\n<body>\n'
                              '<joint range="0 1"/><geom size="1"/></body>\n</worldbody>\n'
                              '</mujoco>\n', 5, "joint", "autolimits", True),
    "massless moving body": (BODY.format('<joint/>'), 3, 'body name="b"',
                             "needs positive mass", True),
    "inertia violates A + B >= C": (BODY.format('<joint/><inertial pos="0 0 0" mass="1" '
                                                'diaginertia="1 1 3"/>'), 3, 'body name="b"',
                                    "A + B >= C", True),
    "inertia violates A + B >= C by 1e-13": (BODY.format('<joint/><inertial pos="0 0 0" mass="1" '
                                                        'diaginertia="0.5 0.5 1.0000000000001"/>'),
                                            3, 'body name="b"', "0.5, 0.5, 1.0000000000001 violate",
                                            True),
    "maxhullvert below 4": ('<mujoco>\n<asset>\n<mesh name="m" maxhullvert="3" vertex="0 0 0 1 0 0 '
                            '0 1 0 0 0 1"/>\n</asset>\n<worldbody/>\n</mujoco>\n', 3, 'mesh name="m"',
                            "maxhullvert must be -1 (no limit) or at least 4", True),
    # MuJoCo compiles every mesh, used or not, and every geom, in the world too
    "unused flat mesh": (MESHES.format('<mesh name="m" vertex="0 0 0 1 0 0 0 1 0 1 1 0"/>', ''),
                         3, 'mesh name="m"', "coplanar (the mesh is flat); no convex hull (no "
                         "geom uses this mesh, but MuJoCo compiles every mesh)", True),
    "unused mesh of zero volume": (MESHES.format(f'<mesh name="m" {FLAT_FACES}/>', ''), 3,
                                   'mesh name="m"', "mesh volume is too small", True),
    "unused exact mesh with faces turned": (
        MESHES.format('<mesh name="m" inertia="exact" vertex="0 0 0 1 0 0 0 1 0 0 0 1" '
                      'face="0 2 1 0 1 3 0 3 2 1 2 3 0 1 2"/>', ''), 3, 'mesh name="m"',
        "inconsistent orientation", True),
    "unused mesh of 3 vertices": (MESHES.format('<mesh name="m" vertex="0 0 0 1 0 0 0 1 0"/>',
                                                ''), 3, 'mesh name="m"', "at least 4 vertices",
                                  True),
    "unused mesh with a texcoord per face corner": (
        MESHES.format('<mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1" texcoord="0 0 1 1"/>',
                      ''), 3, 'mesh name="m"', "2 texture coordinates for 4 vertices", True),
    "unused mesh with 4 normal numbers": (
        MESHES.format('<mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1" normal="0 0 1 0"/>', ''),
        3, 'mesh name="m"', "multiple of 3", True),
    "condim 2 on a world geom": ('<mujoco>\n<worldbody>\n<geom size="1" condim="2"/>\n'
                                 '</worldbody>\n</mujoco>\n', 3, "geom",
                                 "condim must be 1, 3, 4 or 6", True),
    "capsule fitted to a mesh in the world": (
        f'<mujoco>\n<compiler fitaabb="true"/>\n<asset>\n{TETRAHEDRON}\n</asset>\n<worldbody>\n'
        '<geom type="capsule" mesh="m"/>\n</worldbody>\n</mujoco>\n', 7, "geom",
        "size[1] must be positive for a capsule", True),
    "fitted cylinder of fitscale 0 in a body with an inertial": (
        MESHES.format(TETRAHEDRON, '<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>\n'
                      '<geom type="cylinder" mesh="m" fitscale="0"/>'), 9, "geom",
        "size[0] must be positive for a cylinder", True),
    "flat shell mesh of a colliding mesh geom": (
        MESHES.format(f'<mesh name="m" inertia="shell" {FLAT_FACES}/>',
                      '<geom type="mesh" mesh="m"/>'), 3, 'mesh name="m"',
        "coplanar (the mesh is flat); no convex hull (a colliding mesh geom uses it", True),
    "flat shell mesh of a visual mesh geom in a contact pair": (
        MESHES.format(f'<mesh name="m" inertia="shell" {FLAT_FACES}/>',
                      '<geom name="g" type="mesh" mesh="m" contype="0" conaffinity="0"/>'
                      '<geom name="h" size="1"/>')[:-10]
        + '<contact>\n<pair geom1="g" geom2="h"/>\n</contact>\n</mujoco>\n', 3,
        'mesh name="m"', "coplanar", True),
    "discardvisual with inertiafromgeom true and a visual geom with mass": (
        '<mujoco>\n<compiler discardvisual="true" inertiafromgeom="true"/>\n<worldbody>\n'
        '<body name="b">\n<joint/><geom size="1"/>\n<geom size="0.5" contype="0" '
        'conaffinity="0"/>\n</body>\n</worldbody>\n</mujoco>\n', 4, 'body name="b"',
        "discardvisual drops the visual geom at line 6", True),
    "visual geom of a body's inertia under discardvisual": (
        '<mujoco>\n<compiler discardvisual="true"/>\n<worldbody>\n<geom type="box" '
        'size="0 1 1" contype="0" conaffinity="0"/>\n<body>\n<joint/><geom size="1" '
        'contype="0" conaffinity="0"/>\n</body>\n</worldbody>\n</mujoco>\n', 4, "geom",
        "size[0] must be positive for a box", True),
    # fusestatic adds a point mass (boundmass) to a massless parent: a singular inertia
    "fused point masses": ('<mujoco>\n<compiler fusestatic="true" boundmass="0.2"/>\n'
                           '<worldbody>\n<body>\n<joint type="slide"/>\n<body pos="0.3 0 0"/>'
                           '\n</body>\n</worldbody>\n</mujoco>\n', 6, "body",
                           "MuJoCo refuses it", True),
    "fused point masses, inertiafromgeom true": (
        '<mujoco>\n<compiler fusestatic="true" inertiafromgeom="true"/>\n<worldbody>\n'
        '<body>\n<joint/><inertial pos="0 0 0" mass="0.5" diaginertia="0 0 0"/>\n'
        '<body name="p"><inertial pos="0 0 0" mass="1" diaginertia="0 0 0"/></body>\n</body>'
        '\n</worldbody>\n</mujoco>\n', 6, 'body name="p"', "MuJoCo refuses it", True),
    "repeated joint name": (BODY.format('<joint name="j"/><joint name="j"/><geom size="1"/>'), 4,
                            'joint name="j"', 'repeated joint name "j"', True),
    "unknown element": (BODY.format('<joint/><geom size="1"/><sprocket/>'), 4, "sprocket",
                        "unknown element <sprocket>", True),
    "non-positive size": (BODY.format('<joint/><geom type="box" size="1 0 1"/>'), 4, "geom",
                          "size[1] must be positive", True),
    "too many dofs": (BODY.format('<joint/>' * 7 + '<geom size="1"/>'), 3, 'body name="b"',
                      "at most 6", True),
    "bad keyword": (BODY.format('<joint limited="yes"/><geom size="1"/>'), 4, "joint",
                    'limited="yes"', True),
    "global coordinates": ('<mujoco>\n<compiler coordinate="global"/>\n<worldbody/>\n'
                           '</mujoco>\n', 2, "compiler", "global", True),
    "missing include": ('<mujoco>\n<include file="missing.xml"/>\n</mujoco>\n', 2, "include",
                        'included file "missing.xml" not found', True),
    "not well-formed": ('<mujoco>\n<worldbody>\n<body>\n</worldbody>\n</mujoco>\n', 4, "",
                        "not well-formed XML", True),
    "joint directly in replicate": (BODY.format('<geom size="1"/><replicate count="2">'
                                                '<joint/></replicate>'), 4, "joint",
                                    "direct children of <replicate>", True),
    "attach of an unknown model": (BODY.format('<joint/><geom size="1"/><attach model="m" '
                                               'prefix="p"/>'), 4, "attach",
                                   'could not find model "m"', True),
    # MuJoCo's schema (parsers/mjcf/schema.py)
    "unknown attribute": (BODY.format('<joint/><geom size="1" mas="5"/>'), 4, "geom",
                          'unrecognized attribute "mas" (MuJoCo\'s schema has no such attribute '
                          'on <geom>; did you mean "mass"?)', True),
    "free joint's attribute on a joint": (BODY.format('<joint type="free" align="true"/>'
                                                      '<geom size="1"/>'), 4, "joint",
                                          'unrecognized attribute "align"', True),
    "compiler typo": ('<mujoco>\n<compiler angel="radian"/>\n<worldbody/>\n</mujoco>\n', 2,
                      "compiler", 'did you mean "angle"', True),
    "attribute of the root": ('<mujoco modle="m">\n<worldbody/>\n</mujoco>\n', 1, "mujoco",
                              'unrecognized attribute "modle"', True),
    "class inside a default": ('<mujoco>\n<default>\n<joint class="c"/>\n</default>\n'
                               '<worldbody/>\n</mujoco>\n', 3, "joint",
                               'unrecognized attribute "class"', True),
    "attribute in an ignored section": (BODY.format('<joint name="j"/><geom size="1"/>')[:-10]
                                        + '<actuator>\n<motor joint="j" gearr="2"/>\n</actuator>'
                                        '\n</mujoco>\n', 8, "motor", 'did you mean "gear"', True),
    "element in an ignored section": (BODY.format('<joint/><geom size="1"/>')[:-10]
                                      + '<sensor>\n<touchh site="s"/>\n</sensor>\n</mujoco>\n', 8,
                                      "touchh", "unknown element <touchh> in <sensor>", True),
    # MuJoCo's schema takes <body> for <worldbody> here, and its compiler then skips it
    "body outside worldbody": ('<mujoco>\n<body/>\n</mujoco>\n', 2, "body",
                               "a <body> belongs in <worldbody>", False),
    "prefixed attribute below the root": ('<mujoco xmlns:x="urn:x">\n<worldbody>\n'
                                          '<body x:note="1">\n<joint/><geom size="1"/>\n'
                                          '</body>\n</worldbody>\n</mujoco>\n', 3, "body",
                                          'unrecognized attribute "x:note"', True),
    "second inertial": (BODY.format('<joint/><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>'
                                    '\n<inertial pos="0 0 0" mass="2" diaginertia="1 1 1"/>'), 5,
                        "inertial", 'a second <inertial> in this <body>; MuJoCo allows one',
                        True),
    # tendons and actuators (read for armature) are checked as MuJoCo compiles them
    "tendon on an unknown joint": (REFS.format('<tendon>\n<fixed name="t"><joint joint="nope" '
                                               'coef="1"/></fixed>\n</tendon>\n<actuator>'
                                               '<motor tendon="t" armature="1"/></actuator>'), 8,
                                   "joint", 'unknown joint "nope"', True),
    "tendon naming a joint twice": (REFS.format('<tendon>\n<fixed>\n<joint joint="a" coef="1"/>'
                                                '\n<joint joint="a" coef="2"/></fixed>\n'
                                                '</tendon>'), 10, "joint",
                                    'joint "a" is repeated in this tendon', True),
    "tendon on a ball joint": (REFS.format('<tendon>\n<fixed><joint joint="b" coef="1"/>'
                                           '</fixed>\n</tendon>'), 8, "joint",
                               "hinge and slide joints only", True),
    "empty tendon": (REFS.format('<tendon>\n<fixed name="t"/>\n</tendon>'), 8,
                     'fixed name="t"', "path cannot be empty", True),
    "negative tendon armature": (REFS.format('<tendon>\n<fixed armature="-1"><joint joint="a" '
                                             'coef="1"/></fixed>\n</tendon>'), 8, "fixed",
                                 'armature="-1": tendon armature cannot be negative', True),
    "repeated tendon name": (REFS.format('<tendon>\n<fixed name="t"><joint joint="a"/></fixed>'
                                         '\n<fixed name="t"><joint joint="a"/></fixed>\n'
                                         '</tendon>'), 9, 'fixed name="t"',
                             'repeated tendon name "t" (first at line 8)', True),
    "actuator without a target": (REFS.format('<actuator>\n<motor/>\n</actuator>'), 8, "motor",
                                  "needs a transmission target", True),
    "actuator on an unknown joint": (REFS.format('<actuator>\n<motor joint="nope"/>\n'
                                                 '</actuator>'), 8, "motor",
                                     'unknown joint "nope"', True),
    "actuator on an unnamed joint's default name": (REFS.format('<actuator>\n<motor joint='
                                                                '"joint2"/>\n</actuator>'), 8,
                                                    "motor", 'unknown joint "joint2"', True),
    "actuator on an unknown tendon": (REFS.format('<actuator>\n<motor tendon="nope"/>\n'
                                                  '</actuator>'), 8, "motor",
                                      'unknown tendon "nope"', True),
    "actuator on an unknown site": (REFS.format('<actuator>\n<motor site="nope"/>\n'
                                                '</actuator>'), 8, "motor",
                                    'unknown site "nope"', True),
    "repeated actuator name": (REFS.format('<actuator>\n<motor name="m" joint="a"/>\n<motor '
                                           'name="m" joint="a"/>\n</actuator>'), 9,
                               'motor name="m"', 'repeated actuator name "m" (first at line 8)',
                               True),
    "repeated geom name": (BODY.format('<joint/><geom name="g" size="1"/>\n<geom name="g" '
                                       'size="1"/>'), 5, 'geom name="g"',
                           'repeated geom name "g" (first at line 4)', True),
    # names in the sections the tree does not use, and assets, must exist as in MuJoCo
    "sensor on an unknown site": (REFS.format('<sensor>\n<touch site="nope"/>\n</sensor>'), 8,
                                  "touch", 'unknown site "nope"', True),
    "frame sensor on an unknown object": (REFS.format('<sensor>\n<framepos objtype="xbody" '
                                                      'objname="nope"/>\n</sensor>'), 8,
                                          "framepos", 'unknown body "nope"', True),
    "sensor on an unknown actuator": (REFS.format('<sensor>\n<actuatorfrc actuator="nope"/>\n'
                                                  '</sensor>'), 8, "actuatorfrc",
                                      'unknown actuator "nope"', True),
    "equality on an unknown joint": (REFS.format('<equality>\n<joint joint1="a" joint2="nope"/>'
                                                 '\n</equality>'), 8, "joint",
                                     'unknown joint "nope"', True),
    "contact pair on an unknown geom": (REFS.format('<contact>\n<pair geom1="nope" geom2="nope"/>'
                                                    '\n</contact>'), 8, "pair",
                                        'unknown geom "nope"', True),
    "geom with an unknown material": (BODY.format('<joint/><geom size="1" material="nope"/>'), 4,
                                      "geom", 'material="nope": unknown material "nope"', True),
    "site with an unknown material by default": ('<mujoco>\n<default>\n<site material="nope"/>'
                                                 '\n</default>\n<worldbody>\n<site/>\n'
                                                 '</worldbody>\n</mujoco>\n', 3, "site",
                                                 'unknown material "nope"', True),
    "material with an unknown texture": ('<mujoco>\n<asset>\n<material name="m">\n<layer '
                                         'role="rgb" texture="nope"/>\n</material>\n</asset>\n'
                                         '<worldbody/>\n</mujoco>\n', 3, 'material name="m"',
                                         'unknown texture "nope"', True),
    "sleep policy on a static body": ('<mujoco>\n<worldbody>\n<body sleep="never">\n'
                                      '<geom size="1"/>\n</body>\n</worldbody>\n</mujoco>\n',
                                      3, "body", 'sleep="never": a sleep policy is allowed only '
                                      "on a moving top-level body", True),
    "sleep policy below the top level": (BODY.format('<joint/><geom size="1"/>\n<body '
                                                     'sleep="init"><joint/><geom size="1"/>'
                                                     '</body>'), 5, "body",
                                         "allowed only on a moving top-level body", True),
    "unknown sleep policy": (BODY.format('<joint/><geom size="1"/>').replace(
        '<body name="b">', '<body name="b" sleep="soon">'), 3, 'body name="b"',
        'sleep="soon"', True),
    # MuJoCo checks a name when it reads it, before <replicate> adds suffixes
    "replicate template named like an earlier copy": (
        '<mujoco>\n<worldbody>\n<replicate count="2" offset="1 0 0">\n<body name="a"><joint/>'
        '<geom size="1"/></body>\n</replicate>\n<replicate count="2" offset="0 1 0">\n'
        '<body name="a0"><joint/><geom size="1"/></body>\n</replicate>\n</worldbody>\n'
        '</mujoco>\n', 7, 'body name="a0"', 'repeated body name "a0" (first at line 4)', True),
    "replicate template named like an earlier body": (
        '<mujoco>\n<worldbody>\n<body name="a"><joint/><geom size="1"/></body>\n'
        '<replicate count="2" offset="1 0 0">\n<body name="a"><joint/><geom size="1"/>'
        '</body>\n</replicate>\n</worldbody>\n</mujoco>\n', 5, 'body name="a"',
        'repeated body name "a" (first at line 3)', True),
    "replicate copy named like an earlier joint": (
        '<mujoco>\n<worldbody>\n<body><joint name="j1"/><geom size="1"/></body>\n'
        '<replicate count="2" offset="1 0 0">\n<body><joint name="j"/><geom size="1"/>'
        '</body>\n</replicate>\n</worldbody>\n</mujoco>\n', 5, 'joint name="j"',
        'repeated joint name "j1" (first at line 3)', True),
    "second joint default": ('<mujoco>\n<default>\n<joint damping="1"/>\n<joint armature="1"/>'
                             '\n</default>\n<worldbody/>\n</mujoco>\n', 4, "joint",
                             "a second <joint> in this <default>", True),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_model(name, tmp_path):
    text, line, element, problem, mujoco_rejects = INVALID[name]
    path = str(tmp_path / "model.xml")
    with open(path, "w") as stream:
        stream.write(text)
    with pytest.raises(ParseError) as caught:
        parse_mjcf(path)
    error = caught.value
    assert (error.file, error.line, error.element) == (path, line, element)
    assert problem in error.problem
    assert "\n" not in str(error) and str(error).startswith(f"{path}:{line}: ")
    if mujoco_rejects:
        with pytest.raises(ValueError):
            mujoco.MjModel.from_xml_path(path)


# name -> model MuJoCo compiles: meshes and geoms it never compiles are not checked
UNCOMPILED = {
    "unused flat shell mesh with faces": MESHES.format(
        f'<mesh name="m" inertia="shell" {FLAT_FACES}/>', ''),
    "flat shell mesh of a visual mesh geom (no convex hull)": MESHES.format(
        f'<mesh name="m" inertia="shell" {FLAT_FACES}/>',
        '<geom type="mesh" mesh="m" contype="0" conaffinity="0"/>'),
    "unused builtin mesh": MESHES.format('<mesh name="m" builtin="sphere" params="2"/>', ''),
    # treedyn cannot build a builtin mesh: a geom that uses one without needing its inertia
    # loads (as MuJoCo's rfcamera.xml and makemesh.xml did before every mesh was compiled)
    "builtin mesh of a geom whose inertia is not needed": MESHES.format(
        '<mesh name="m" builtin="sphere" params="2"/>',
        '<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>\n<geom type="mesh" mesh="m"/>'),
    "discardvisual: unused flat mesh, visual world geoms": (
        '<mujoco>\n<compiler discardvisual="true"/>\n<asset>\n<mesh name="m" vertex="0 0 0 '
        '1 0 0 0 1 0 1 1 0"/>\n</asset>\n<worldbody>\n<geom type="mesh" mesh="m" contype="0"'
        ' conaffinity="0"/>\n<geom type="box" size="0 1 1" contype="0" conaffinity="0"/>\n'
        '<body>\n<joint/><geom size="1"/>\n<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>'
        '\n<geom type="sphere" fromto="0 0 0 0 0 1" size="1" contype="0" conaffinity="0"/>\n'
        '</body>\n</worldbody>\n</mujoco>\n'),
}


@pytest.mark.parametrize("name", list(UNCOMPILED))
def test_meshes_and_geoms_mujoco_does_not_compile_are_not_checked(name, tmp_path):
    """MuJoCo compiles every mesh and geom, except: the convex hull only of meshes that
    collide, and with discardvisual, when no visual geom counts for an inertia, neither
    visual geoms (left out of the model) nor the meshes only they use."""
    path = write(tmp_path / "model.xml", UNCOMPILED[name])
    m = mujoco.MjModel.from_xml_path(path)
    description = parse_mjcf(path)
    shapes = sum(len(link.geometry) for link in description.links)
    assert shapes == m.ngeom


def test_a_face_attribute_on_a_mesh_file_with_faces_is_refused(tmp_path):
    """MuJoCo refuses it (repeated face specification), also for an unused mesh. The file
    is a fresh copy: MuJoCo skips the check for a file in its mesh cache."""
    stl = tmp_path / "block.stl"
    stl.write_bytes(open(os.path.join(FIXTURES, "meshes", "lblock.stl"), "rb").read())
    path = write(tmp_path / "model.xml",
                 MESHES.format(f'<mesh name="m" file="{stl}" face="0 1 2"/>', ''))
    with pytest.raises(ParseError) as caught:
        parse_mjcf(path)
    assert (caught.value.line, caught.value.element) == (3, 'mesh name="m"')
    assert "the mesh file has faces already" in caught.value.problem
    with pytest.raises(ValueError, match="repeated face"):
        mujoco.MjModel.from_xml_path(path)


# -- fusestatic ---------------------------------------------------------------------------

HINGE = '<joint axis="0 1 0"/>'
BALL = '<geom size="0.1" mass="1"/>'

# name -> (compiler attributes besides fusestatic, worldbody, sections after it); MuJoCo's
# compiled bodies (ids, names, inertias, total mass) must be treedyn's
FUSED = {
    # a static child of the world is dropped with its mass; unnamed bodies take the ids left
    "world and sibling": ("", '<body pos="0 0 1"><geom size="0.1"/></body><body>' + HINGE
                          + '<geom size="0.1"/><body pos="0.3 0 0"><geom size="0.1"/></body>'
                          '<body pos="0 0 -0.3"><joint axis="1 0 0"/><geom size="0.1"/></body>'
                          '</body>', ""),
    # settotalmass scales after fusing: the mass fused into the world does not count
    "settotalmass": ('settotalmass="2"', '<body>' + BALL + '</body><body>' + HINGE
                     + '<geom size="0.1" mass="1" pos="0 0 -0.5"/></body>', ""),
    # a massless static body adds nothing, not even its inertia or its boundinertia
    "zero mass": ("", '<body>' + HINGE + BALL + '<body pos="0 0 -0.5"><inertial pos="0 0 0" '
                  'mass="0" diaginertia="0.01 0.01 0.01"/></body></body>', ""),
    "boundinertia": ('boundinertia="0.01"', '<body>' + HINGE + BALL
                     + '<body pos="0 0 -0.5"/></body>', ""),
    # the parent's inertia comes from all the geoms: the fused body's <inertial> is dropped
    "inertiafromgeom true": ('inertiafromgeom="true"', '<body>' + HINGE + BALL
                             + '<body><inertial pos="0 0 -0.5" mass="2"/></body></body>', ""),
    # ... unless the bounds changed an inertia: then the body is kept
    "inertiafromgeom true, bounded": ('inertiafromgeom="true" boundinertia="0.01"', '<body>'
                                      + HINGE + BALL + '<body pos="0.3 0 0"><inertial pos="0 0 0" '
                                      'mass="1" diaginertia="1 1 1"/></body></body>', ""),
    # ... also a body with geoms but no mass (bounded), not one without either
    "inertiafromgeom true, massless": ('inertiafromgeom="true" boundinertia="0.01"', '<body>'
                                       + HINGE + '<geom size="0.2" mass="1"/><body '
                                       'pos="0.3 0 0"><geom size="0.1" mass="0"/></body><body '
                                       'pos="0 0.3 0"><inertial pos="0 0 0" mass="0" '
                                       'diaginertia="0 0 0"/></body></body>', ""),
    # ... and the fused bodies' inertias are summed only to refuse a sum without inertia
    "inertiafromgeom true, point mass": ('inertiafromgeom="true"', '<body>' + HINGE
                                         + '<inertial pos="0 0 0" mass="0.5" diaginertia="0.1 '
                                         '0.1 0.1"/><body pos="0.3 0 0"><inertial pos="0 0 0" '
                                         'mass="1"/></body></body>', ""),
    # compiled inertias are added: boundmass, and the placeholder frame of a body without
    # inertia (its own pos, seen from its frame)
    "boundmass placeholder": ('boundmass="0.5" boundinertia="0.01"', '<body>' + HINGE + BALL
                              + '<frame pos="0 0 1"><body pos="0.3 0 0"/></frame></body>', ""),
    # bodies are added to the parent one by one, parents first
    "point masses": ("", '<body>' + HINGE + BALL + '<body pos="0.3 0 0"><inertial pos="0 0 0" '
                     'mass="1"/><body pos="0 0.3 0"><inertial pos="0 0 0" mass="1"/></body>'
                     '</body></body>', ""),
    "explicit parent": ("", '<body euler="10 20 30">' + HINGE + '<inertial pos="0.1 0 0" '
                        'mass="2" diaginertia="0.1 0.2 0.25"/><geom size="0.1"/><body '
                        'pos="0.2 0.1 0" euler="0 90 0"><geom type="box" size="0.1 0.2 0.3" '
                        'pos="0 0.1 0"/><body pos="0 0 0.2"><geom type="capsule" '
                        'size="0.05 0.2"/></body></body></body>', ""),
    # kept: referenced, force sensor site, fuse="false", another gravcomp, a fluid, mocap
    "kept bodies": ("", '<body mocap="true"><geom size="0.1"/><body pos="1 0 0"><geom '
                    'size="0.1"/></body></body><body name="p">' + HINGE + BALL
                    + '<camera mode="targetbody" target="c"/>'
                    '<body name="a" pos="1 0 0">' + BALL + '</body><body name="b" pos="0 1 0">'
                    + BALL + '</body><body name="c" pos="0 0 1">' + BALL + '</body>'
                    '<body name="d" pos="1 1 0">' + BALL + '<site name="s"/></body>'
                    '<body fuse="false" pos="1 0 1">' + BALL + '</body>'
                    '<body gravcomp="1" pos="0 1 1">' + BALL + '</body>'
                    '<body gravcomp="1" pos="0 1 1"/><body name="e" pos="2 0 0">' + BALL
                    + '</body></body>',
                    '<contact><exclude body1="p" body2="a"/></contact><sensor><subtreecom '
                    'body="b"/><force site="s"/></sensor>'),
    "fluid": ("", '<body>' + HINGE + BALL + '<body pos="1 0 0">' + BALL + '</body><body '
              'pos="0 1 0"/></body>', ""),
    # a free body under a static child of the world is a top-level body once that is fused
    "free joint under a static body": ("", '<body pos="0 0 1"><geom size="0.1"/><body '
                                       'pos="1 0 0"><freejoint/><geom size="0.1"/><body '
                                       'pos="0 0 0.2"><geom size="0.1" pos="0 0.1 0"/></body>'
                                       '</body></body>', ""),
    # alignfree aligns a free body on its fused inertia
    "alignfree": ('alignfree="true"', '<body name="f"><freejoint/><geom size="1" pos="1 0 0"/>'
                  '<body><geom size="0.5" pos="0 1 0"/></body></body>', ""),
    # the name of a fused body is free again for an unnamed body's body<id>
    "names": ("", '<body name="body2">' + BALL + '</body><body>' + HINGE + BALL + '<body '
              'name="body1" pos="1 0 0">' + BALL + '</body><body pos="0 1 0">' + HINGE + BALL
              + '</body></body>', ""),
}


@pytest.mark.parametrize("name", list(FUSED))
def test_fusestatic_matches_mujoco(name, tmp_path):
    compiler, worldbody, sections = FUSED[name]
    option = '<option density="1.2"/>' if name == "fluid" else ""
    path = write(tmp_path / "model.xml", f'<mujoco><compiler fusestatic="true" {compiler}/>'
                 f'{option}<worldbody>{worldbody}</worldbody>{sections}</mujoco>')
    compare_with_mujoco(path)


def mujoco_schema() -> dict[str, tuple[frozenset, bool]]:
    """The installed MuJoCo's schema (mj_printSchema's text) as path -> (attributes, at
    most once): element names in a 30-column field, marked (!) once, (?) at most once,
    (*) any number, (R) recursive; attributes after it, wrapped onto further lines."""
    entries: dict[str, tuple[set, bool]] = {}
    names: list[str] = []
    for line in mujoco.mj_printSchema(False, False).splitlines():
        head, words = line[:30], line[30:].split()
        if head.strip():
            level = (len(head) - len(head.lstrip())) // 3
            name, mark = head.split()
            names[level:] = [name.replace("(world)", "")]
            path = "/".join(names[1:]) or "mujoco"
            entries[path] = (set(), mark == "(?)")
        entries[path][0].update(words)
    return {path: (frozenset(words), once) for path, (words, once) in entries.items()}


def test_schema_table_is_mujocos():
    """parsers/mjcf/schema_4_0.txt is the installed MuJoCo's schema: a MuJoCo release
    that adds or drops an attribute shows up here."""
    from treedyn.parsers.mjcf.schema import schema

    ours, theirs = schema(), mujoco_schema()
    assert ours.keys() == theirs.keys(), (sorted(ours.keys() - theirs.keys()),
                                          sorted(theirs.keys() - ours.keys()))
    differ = {path: (sorted(ours[path][0] ^ theirs[path][0]), ours[path][1], theirs[path][1])
              for path in ours if ours[path] != theirs[path]}
    assert not differ


def test_schema_is_checked_where_mujoco_checks_it(tmp_path):
    """MuJoCo checks included files but not what <frame> and <replicate> contain (it
    expands them after the check, and ignores an unknown attribute there): the same
    models load, with the same masses, and the same are refused."""
    unchecked = write(tmp_path / "unchecked.xml", BODY.format(
        '<joint/><geom size="1"/><frame pos="1 0 0"><geom size="0.5" mas="7"/></frame>'
        '<replicate count="2" offset="0 1 0"><body><joint bogus="1"/><geom size="0.2"/></body>'
        '</replicate>'))
    model = build_model(parse_mjcf(unchecked))
    reference_model = mujoco.MjModel.from_xml_path(unchecked)
    assert np.isclose(model.total_mass, reference_model.body_mass.sum(), rtol=1e-12)
    prefixed = write(tmp_path / "prefixed.xml", '<mujoco xmlns:xsi="http://www.w3.org/2001/'
                     'XMLSchema-instance" xsi:noNamespaceSchemaLocation="mujoco.xsd" '
                     'xml:lang="en">\n' + BODY.format('<joint/><geom size="1"/>')[9:])
    mujoco.MjModel.from_xml_path(prefixed)  # MuJoCo ignores prefixed attributes of the root
    assert build_model(parse_mjcf(prefixed)).nv == 1
    main = write(tmp_path / "main.xml", '<mujoco>\n<worldbody>\n<include file="part.xml"/>\n'
                                        '</worldbody>\n</mujoco>\n')
    part = write(tmp_path / "part.xml", '<mujoco>\n<body>\n<joint axs="1 0 0"/>\n'
                                        '<geom size="1"/></body>\n</mujoco>\n')
    with pytest.raises(ParseError) as caught:
        parse_mjcf(main)
    assert (caught.value.file, caught.value.line) == (part, 3)
    assert 'unrecognized attribute "axs"' in caught.value.problem
    with pytest.raises(ValueError, match="unrecognized attribute"):
        mujoco.MjModel.from_xml_path(main)


def test_deep_chains_load_as_far_as_mujoco_reads_them(tmp_path):
    """A chain of bodies nests one element per body: 496 bodies deep (MuJoCo reads it;
    libxml2 and Python's recursion would stop near 256 and 500 on their own) gives
    MuJoCo's model; 498 bodies deep, which MuJoCo refuses, is a ParseError naming the
    first element too deep (the joint of the 498th body)."""
    def chain(count: int) -> str:
        opening = '<body pos="0 0 0.1">\n<joint axis="0 1 0"/><geom size="0.02" mass="1"/>\n'
        return ("<mujoco>\n<worldbody>\n" + opening * count + "</body>" * count
                + "\n</worldbody>\n</mujoco>\n")

    deep = write(tmp_path / "deep.xml", chain(496))
    model = build_model(parse_mjcf(deep))
    reference_model = mujoco.MjModel.from_xml_path(deep)
    assert (model.nq, model.nv) == (reference_model.nq, reference_model.nv) == (496, 496)
    too_deep = write(tmp_path / "too_deep.xml", chain(498))
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_path(too_deep)
    with pytest.raises(ParseError) as caught:
        parse_mjcf(too_deep)
    assert caught.value.line == 4 + 2 * 497 and "nested more than 500 deep" in str(caught.value)
    # MuJoCo's limit is per file: chains continued in included files go deeper
    opening = '<body pos="0 0 0.1">\n<joint axis="0 1 0"/><geom size="0.02" mass="1"/>\n'
    write(tmp_path / "inner.xml", "<mujoco>\n" + opening * 300 + "</body>" * 300
          + "\n</mujoco>\n")
    outer = write(tmp_path / "outer.xml", "<mujoco>\n<worldbody>\n" + opening * 300
                  + '<include file="inner.xml"/>\n' + "</body>" * 300
                  + "\n</worldbody>\n</mujoco>\n")
    model = build_model(parse_mjcf(outer))
    assert model.nv == mujoco.MjModel.from_xml_path(outer).nv == 600


def test_a_zero_quaternion_is_the_identity_as_in_mujoco(tmp_path):
    """MuJoCo normalises quaternions in qpos and takes one shorter than 1e-15 (zero) as
    the identity: logged states with such a quaternion give MuJoCo's numbers, not NaN."""
    path = write(tmp_path / "floating.xml", '<mujoco>\n<worldbody>\n<body pos="0 0 1">\n'
                 '<freejoint/><geom type="box" size="0.3 0.2 0.1"/>\n<body pos="0.3 0 0">\n'
                 '<joint type="ball"/><geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.05"/>'
                 '\n</body>\n</body>\n</worldbody>\n</mujoco>\n')
    model = build_model(parse_mjcf(path))
    m = reference(path)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(7)
    for free, ball in (([0, 0, 0, 0], [1e-200, 0, 0, 0]), ([1e-16, 0, 0, 0], [0, 0, 0, 0]),
                       ([0.3, 0.1, 0.2, 0], [2, 0, 1, 0])):
        q = np.concatenate([[0.1, 0.2, 0.3], free, ball])
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        d.qpos[:], d.qvel[:], d.qacc[:] = q, v, a
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        expected = M @ a + d.qfrc_bias
        tau = rnea(model, q, v, a)
        assert np.abs(tau - expected).max() <= TOL * max(1.0, np.abs(expected).max())
        np.testing.assert_allclose(crba(model, q), M, rtol=0, atol=TOL * np.abs(M).max())
        np.testing.assert_allclose(aba(model, q, v, tau), a, rtol=0, atol=1e-9)


def quaternion_slots(model) -> list[slice]:
    """The q entries of every quaternion (free and ball joints, a free flyer's)."""
    slots = []
    for j, joint in enumerate(model.joint_models):
        parts = [k for k, part in enumerate(joint.q_parts) if part in ("qw", "qx", "qy", "qz")]
        if len(parts) == 4:
            slots.append(slice(model.idx_q[j] + parts[0], model.idx_q[j] + parts[0] + 4))
    return slots


@pytest.mark.parametrize("scale", [1e155, 1e200, 5e306])
def test_a_quaternion_is_its_direction_at_any_size(scale):
    """q's quaternions are normalised, so a quaternion times any positive number is the
    same rotation: one past 1.3e154, whose squares overflow, was the identity (MuJoCo's
    own mju_normalize4 overflows the same way); batched and reference paths, free flyer,
    free and ball joints."""
    from treedyn.engine.named import frame_placements, frame_set
    from treedyn.engine.reference import rnea_reference
    from treedyn.parsers import load_model

    arm = os.path.join(os.path.dirname(HERE), "fixtures", "two_link_arm.urdf")
    # (the arm's massless base turns freely about joint1's axis: M is singular, no aba)
    for model, forward in ((build_model(parse_mjcf(os.path.join(FIXTURES, "multijoint.xml"))),
                            True), (load_model(arm, free_flyer=True), False)):
        rng = np.random.default_rng(11)
        q = model.random_configuration(rng, 1)[0]
        v, a = rng.normal(size=(2, model.nv))
        scaled = q.copy()
        slots = quaternion_slots(model)
        for k, slot in enumerate(slots):
            scaled[slot] *= scale * (k + 1)  # (a different size for each)
        assert slots and not np.array_equal(scaled, q)
        tau = rnea(model, q, v, a)
        np.testing.assert_allclose(rnea(model, scaled, v, a), tau, rtol=0, atol=1e-12)
        np.testing.assert_allclose(rnea_reference(model, scaled, v, a), tau, rtol=0, atol=1e-12)
        np.testing.assert_allclose(crba(model, scaled), crba(model, q), rtol=0, atol=1e-12)
        if forward:
            np.testing.assert_allclose(aba(model, scaled, v, tau), a, rtol=0, atol=1e-9)
        frames = frame_set(model, list(model.body_names))
        for ours, unit in zip(frame_placements(model, scaled[None], frames),
                              frame_placements(model, q[None], frames)):
            np.testing.assert_allclose(ours, unit, rtol=0, atol=1e-12)


def write(path, text: str) -> str:
    """Write ``text`` to ``path`` (a pathlib.Path), creating folders; the path as str."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("prologue", ['<?xml version="0.0"?>\n', '\n<?xml version="1.0"?>\n',
                                      '<?xml version="1.0" encoding="UTF-16"?>\n'])
def test_a_declaration_mujoco_skips_is_skipped(tmp_path, prologue):
    """MuJoCo's tinyxml2 skips the XML declaration, which libxml2 refuses in these forms;
    an error past it keeps its line."""
    body = ('<mujoco>\n<worldbody>\n<body>\n<joint axis="0 1 0"/><geom size="0.1" pos="0 0 -1"/>'
            '\n</body>\n</worldbody>\n</mujoco>\n')
    path = write(tmp_path / "declared.xml", prologue + body)
    compare_with_mujoco(path)
    broken = write(tmp_path / "broken.xml", prologue + body.replace("</body>", "</bdy>"))
    with pytest.raises(ParseError) as caught:
        parse_mjcf(broken)
    assert caught.value.line == prologue.count("\n") + 5 and "mismatch" in caught.value.problem



def test_an_element_written_over_several_lines_is_named_at_its_line_as_in_mujoco(tmp_path):
    """MuJoCo (tinyxml2) names the line where an element opens; libxml2 the line where its
    start tag ends (here 7)."""
    path = write(tmp_path / "lines.xml", '<mujoco>\n<worldbody>\n<body>\n<joint axis="0 1 0"/>\n'
                 '<geom\n  size="x"\n  pos="0 0 -1"/>\n</body>\n</worldbody>\n</mujoco>\n')
    with pytest.raises(ValueError, match="Element 'geom', line 5"):
        mujoco.MjModel.from_xml_path(path)
    with pytest.raises(ParseError) as caught:
        parse_mjcf(path)
    assert caught.value.line == 5, caught.value

def test_include_cycle(tmp_path):
    main = write(tmp_path / "main.xml", '<mujoco>\n<include file="a.xml"/>\n</mujoco>\n')
    write(tmp_path / "a.xml", '<x>\n<include file="b.xml"/>\n</x>\n')
    write(tmp_path / "b.xml", '<x>\n\n<include file="a.xml"/>\n</x>\n')
    with pytest.raises(ParseError) as caught:
        parse_mjcf(main)
    error = caught.value
    assert (error.file, error.line, error.element) == (str(tmp_path / "b.xml"), 3, "include")
    assert "include cycle (a.xml -> b.xml -> a.xml)" in error.problem
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_path(main)


def test_repeated_include(tmp_path):
    main = write(tmp_path / "main.xml", '<mujoco>\n<worldbody>\n<include file="a.xml"/>\n'
                                        '<include file="a.xml"/>\n</worldbody>\n</mujoco>\n')
    write(tmp_path / "a.xml", '<x><body><joint/><geom size="1"/></body></x>\n')
    with pytest.raises(ParseError) as caught:
        parse_mjcf(main)
    assert caught.value.line == 4 and "already included" in caught.value.problem
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_path(main)


def test_error_in_included_file_names_that_file(tmp_path):
    main = write(tmp_path / "main.xml", '<mujoco>\n<worldbody>\n<include file="sub/a.xml"/>\n'
                                        '</worldbody>\n</mujoco>\n')
    part = write(tmp_path / "sub" / "a.xml", '<x>\n<body>\n<joint axis="1 2"/>\n'
                                             '<geom size="1"/></body>\n</x>\n')
    with pytest.raises(ParseError) as caught:
        parse_mjcf(main)
    assert (caught.value.file, caught.value.line) == (part, 3)


def test_error_in_default_class_points_at_the_default(tmp_path):
    path = write(tmp_path / "model.xml", '<mujoco>\n<default>\n<joint axis="1 x 0"/>\n'
                                         '</default>\n' + BODY.format('<joint/><geom size="1"/>')
                 [len('<mujoco>\n'):])
    with pytest.raises(ParseError) as caught:
        parse_mjcf(path)
    assert caught.value.line == 3 and '"x" is not a number' in caught.value.problem


def test_unreadable_file(tmp_path):
    with pytest.raises(ParseError) as caught:
        parse_mjcf(str(tmp_path / "absent.xml"))
    assert caught.value.line == 0 and "cannot read file" in caught.value.problem


@pytest.mark.skipif(not GYMNASIUM, reason="gymnasium is not installed")
def test_cli_takes_mujoco_qpos_and_qvel_unchanged():
    """dyn inverse/forward on ant.xml (free joint) with MuJoCo's own qpos/qvel/qacc."""
    import json
    import subprocess
    import sys

    path = next(p for p in GYMNASIUM if os.path.basename(p) == "ant.xml")
    m = mujoco.MjModel.from_xml_path(path)
    for bit in (mujoco.mjtDisableBit.mjDSBL_SPRING, mujoco.mjtDisableBit.mjDSBL_DAMPER,
                mujoco.mjtDisableBit.mjDSBL_CONSTRAINT, mujoco.mjtDisableBit.mjDSBL_ACTUATION):
        m.opt.disableflags |= bit
    d = mujoco.MjData(m)
    rng = np.random.default_rng(5)
    quat = rng.normal(size=4)
    d.qpos[:] = np.concatenate([[0.1, -0.2, 0.6], quat / np.linalg.norm(quat),
                                rng.uniform(-0.5, 0.5, m.nq - 7)])
    d.qvel[:] = rng.normal(size=m.nv)
    qacc = rng.normal(size=m.nv)
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    expected = M @ qacc + d.qfrc_bias

    def dyn(*args):
        result = subprocess.run([sys.executable, "-m", "treedyn.cli", *args, "--format", "json"],
                                capture_output=True, text=True, check=True)
        return json.loads(result.stdout)

    def numbers(x):
        return ",".join(repr(float(value)) for value in x)

    tau = np.array(dyn("inverse", path, "--q", numbers(d.qpos), "--v", numbers(d.qvel),
                       "--a", numbers(qacc))["tau"])
    assert relative_error(tau, expected) <= 1e-9
    acc = np.array(dyn("forward", path, "--q", numbers(d.qpos), "--v", numbers(d.qvel),
                       "--tau", numbers(expected))["a"])
    assert relative_error(acc, qacc) <= 1e-9
