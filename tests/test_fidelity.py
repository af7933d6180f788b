"""Files the reference readers load that dyn once refused (docs/fidelity.md): each fixture
is read as Pinocchio (URDF, with urdfdom and tinyxml2) or MuJoCo (MJCF, tinyxml2) reads it,
with the same dynamics, and what those readers refuse stays refused at its line.

Fixtures: ``tests/data/fidelity/*.urdf`` and ``fixtures/mjcf/lenient_xml.xml`` (which
``test_mjcf.test_fixture_matches_mujoco`` also compares); variants with a NUL byte, text
after the root, and documents too large or too deep for libxml2's defaults are written
here from them.
"""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")
mujoco = pytest.importorskip("mujoco")

from test_mjcf import compare_with_mujoco  # noqa: E402
from test_urdf_fuzz import compare_models  # noqa: E402
from treedyn.engine import build_model  # noqa: E402
from treedyn.parsers import ParseError, load_description, load_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "fidelity"
LENIENT_URDF = DATA / "lenient_xml.urdf"
LENIENT_MJCF = ROOT / "fixtures" / "mjcf" / "lenient_xml.xml"


def pinocchio(path: Path, free_flyer: bool, root: str | None = None):
    """Pinocchio's model of the file, in a subprocess (urdfdom logs to stderr), or None if
    it refuses the file; ``root`` names its free-flyer (its root_joint_name)."""
    flyer = ", pin.JointModelFreeFlyer()" if free_flyer else ""
    flyer += f", {root!r}" if root else ""
    code = ("import pickle, sys, pinocchio as pin\n"
            f"m = pin.buildModelFromUrdf({str(path)!r}{flyer})\n"
            "sys.stdout.buffer.write(pickle.dumps(m))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    if done.returncode != 0:
        return None
    return pickle.loads(done.stdout)


def mujoco_loads(path: Path) -> bool:
    try:
        mujoco.MjModel.from_xml_path(str(path))
    except ValueError:
        return False
    return True


def line_of(path: Path, text: str) -> int:
    lines = [n for n, line in enumerate(path.read_bytes().split(b"\n"), 1) if text.encode() in line]
    assert len(lines) == 1, text
    return lines[0]


# -- 1. <inertial> without <inertia> or <mass> ------------------------------------------


@pytest.mark.parametrize("free_flyer", [False, True], ids=["fixed", "free-flyer"])
def test_incomplete_inertials_are_read_as_pinocchio_reads_them(free_flyer):
    path = DATA / "incomplete_inertial.urdf"
    description = load_description(str(path))
    assert len(description.notes) == 3  # link2, link3, tool: one line each, at <inertial>
    for link, problem in (("link2", "has <mass> but no <inertia>"), ("link3", "has no <mass>"),
                          ("tool", "has no <mass>")):
        line = line_of(path, f'<link name="{link}">') + 1
        assert any(note.startswith(f'{path}:{line}: <link name="{link}">: <inertial> {problem}')
                   for note in description.notes), description.notes
    links = {link.name: link.inertia for link in description.links}
    assert links["link2"].mass == 0.8 and np.array_equal(links["link2"].com, [0.12, 0.02, -0.01])
    assert not np.any(links["link2"].inertia) and not np.any(links["link3"].inertia)
    model = load_model(str(path), free_flyer=free_flyer)
    compare_models(model, pinocchio(path, free_flyer), seed=3)


IDYNTREE = """import json, sys
import idyntree.bindings as idt
loader = idt.ModelLoader()
assert loader.loadModelFromFile(sys.argv[1])
model = loader.model()
out = {}
for name in ("link2", "link3"):
    inertia = model.getLink(model.getLinkIndex(name)).getInertia()
    out[name] = [inertia.getMass(), inertia.getCenterOfMass().toNumPy().tolist(),
                 inertia.getRotationalInertiaWrtCenterOfMass().toNumPy().tolist()]
print(json.dumps(out))
"""


def test_idyntree_agrees_on_the_point_mass_and_not_on_the_massless_tensor():
    """iDynTree reads link2 (no <inertia>) with Pinocchio's mass and centre of mass; its
    tensor is left unset (a tensor of an earlier reading, or memory such as -2e232 in a
    fresh process), so it is not compared. On link3 (no <mass>) it keeps the rotated
    tensor on a massless body, which dyn does not follow (docs/fidelity.md)."""
    pytest.importorskip("idyntree.bindings")
    path = DATA / "incomplete_inertial.urdf"
    done = subprocess.run([sys.executable, "-c", IDYNTREE, str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout.splitlines()[-1])
    ours = {link.name: link.inertia for link in load_description(str(path)).links}
    mass, com, _ = theirs["link2"]
    assert mass == ours["link2"].mass
    np.testing.assert_allclose(com, ours["link2"].com, atol=1e-15)
    assert not np.any(ours["link2"].inertia)  # Pinocchio's point mass (test above)
    mass, _, tensor = theirs["link3"]
    assert mass == ours["link3"].mass == 0.0
    assert np.abs(tensor).max() > 0.01 and not np.any(ours["link3"].inertia)


# -- 2. --free-flyer beside a joint named root_joint -------------------------------------


def test_free_flyer_beside_a_fixed_root_joint_is_pinocchios():
    path = DATA / "root_joint_fixed.urdf"
    model = load_model(str(path), free_flyer=True)
    assert model.joint_names == ("root_joint", "elbow") and model.joint_types[0] == "free"
    assert not model.description.notes
    compare_models(model, pinocchio(path, True), seed=4)


def test_free_flyer_beside_moving_root_joints_is_renamed():
    """Pinocchio names its free-flyer root_joint beside the file's moving root_joint: two
    joints of one name, and its tree then hangs root_joint_ (and link root_joint) from the
    free-flyer, so the file's root_joint moves nothing. dyn names the free-flyer
    root_joint__ (root_joint_ is taken too) and says so; its dynamics are Pinocchio's with
    that root_joint_name, the tree the file describes."""
    path = DATA / "root_joint_moving.urdf"
    model = load_model(str(path), free_flyer=True)
    assert model.joint_names == ("root_joint__", "root_joint", "root_joint_")
    assert list(model.parent) == [-1, 0, 1]
    reference = pinocchio(path, True, root="root_joint__")
    assert list(reference.parents) == [0, 0, 1, 2]
    compare_models(model, reference, seed=5)
    clashing = pinocchio(path, True)
    assert list(clashing.names) == ["universe", "root_joint", "root_joint", "root_joint_"]
    line = line_of(path, '<joint name="root_joint"')
    assert model.description.notes == (
        f"{path}:{line}: <joint name=\"root_joint\">: the floating root joint is named "
        "'root_joint__', since this joint is already named 'root_joint' (Pinocchio names "
        "both 'root_joint')",)


def test_root_joint_names_address_the_files_joint_on_the_command_line(tmp_path):
    """--q root_joint=... is the file's revolute joint; root_joint__.z its free-flyer's z;
    a joint named like an entry (root_joint:0) is refused as ambiguous, not guessed."""
    path = DATA / "root_joint_moving.urdf"

    def run(*args):
        return subprocess.run([sys.executable, "-m", "treedyn.cli", "inverse", str(path),
                               "--free-flyer", "-f", "json", *args],
                              capture_output=True, text=True, timeout=120)

    done = run("--q", "root_joint=0.5,root_joint__.z=2,root_joint__.qw=1")
    assert done.returncode == 0, done.stderr
    by_index = run("--q", "root_joint:0=0.5,root_joint__:2=2,root_joint__:6=1")
    assert by_index.returncode == 0, by_index.stderr
    assert json.loads(done.stdout)["tau"] == json.loads(by_index.stdout)["tau"]
    by_position = run("--q", "0,0,2,0,0,0,1,0.5,0")
    assert json.loads(done.stdout)["tau"] == json.loads(by_position.stdout)["tau"]
    odd = tmp_path / "odd.urdf"
    odd.write_text(path.read_text().replace('name="root_joint_"', 'name="root_joint_:2"'))
    refused = subprocess.run([sys.executable, "-m", "treedyn.cli", "inverse", str(odd),
                              "--free-flyer", "--q", "root_joint_:2=1"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2
    assert "'root_joint_:2' is both a joint and an entry of joint 'root_joint_'" in \
        refused.stderr


# -- 3 and 4. XML tinyxml2 reads ---------------------------------------------------------


URDF_TAILS = {  # after </robot>: what tinyxml2 reads
    "nul": b"\0<not xml at all & <<", "nul_only": b"\0", "element": b"<a/>\n<b></b>\n",
    "stray_end_tag": b"</x>\ntext & < after it\n", "cdata": b"<![CDATA[x]]>\n",
}


@pytest.mark.parametrize("tail", sorted(URDF_TAILS))
@pytest.mark.parametrize("free_flyer", [False, True], ids=["fixed", "free-flyer"])
def test_lenient_urdf_matches_pinocchio(tmp_path, tail, free_flyer):
    path = tmp_path / "lenient.urdf"
    text = LENIENT_URDF.read_bytes()
    path.write_bytes(text[:text.index(b"</robot>") + 8] + b"\n" + URDF_TAILS[tail])
    reference = pinocchio(path, free_flyer)
    assert reference is not None
    model = load_model(str(path), free_flyer=free_flyer)
    assert "upper&arm" in [frame.name for frame in model.frames]
    assert "elbow<1>" in model.joint_names
    compare_models(model, reference, seed=6)


def test_lenient_urdf_fixture_matches_pinocchio():
    compare_models(load_model(str(LENIENT_URDF)), pinocchio(LENIENT_URDF, False), seed=7)


# what tinyxml2 refuses: (where, what is written there) -> problem dyn names
URDF_REFUSED = {
    "text_after_root": (b"</robot>\n", b"</robot>\nsome text\n", "text after the root element"),
    "instruction_after_root": (b"</robot>\n", b"</robot>\n<?pi x?>\n",
                               "a processing instruction after the root element"),
    "broken_element_after_root": (b"</robot>\n", b"</robot>\n<a></b>\n",
                                  "Opening and ending tag mismatch"),
    "unquoted_value": (b'<link name="forearm">', b'<link name=forearm>', "AttValue"),
    "less_than_in_text": (b'<link name="forearm">', b'<link name="forearm">a<b ', "attribute"),
    "nul_inside_root": (b'<link name="forearm">', b'<link name="forearm">\0', "end"),
}


@pytest.mark.parametrize("case", sorted(URDF_REFUSED))
def test_what_tinyxml2_refuses_stays_refused_at_its_line(tmp_path, case):
    old, new, problem = URDF_REFUSED[case]
    text = LENIENT_URDF.read_bytes()
    at = text.index(old)  # the first </robot> ends the root
    data = text[:at] + new + (text[at + len(old):] if old != b"</robot>\n" else b"")
    path = tmp_path / "refused.urdf"
    path.write_bytes(data)
    assert pinocchio(path, False) is None
    with pytest.raises(ParseError) as caught:
        load_description(str(path))
    written = data.index(new) + new.index(new.strip().split(b"\n")[-1][:3])
    if case == "nul_inside_root":  # the document ends at the NUL: an unclosed element
        written = len(data.split(b"\0")[0])
    assert caught.value.line == data.count(b"\n", 0, written) + 1 and problem in str(caught.value)


MJCF_TAILS = {"nul": b"\0 <<& garbage", "element": b"<b x='1'/>\n", "stray_end_tag": b"</b> & <"}


@pytest.mark.parametrize("tail", sorted(MJCF_TAILS))
def test_lenient_mjcf_matches_mujoco(tmp_path, tail):
    path = tmp_path / "lenient.xml"
    text = LENIENT_MJCF.read_bytes()
    path.write_bytes(text[:text.index(b"</mujoco>") + 9] + b"\n" + MJCF_TAILS[tail])
    compare_with_mujoco(str(path), seed=2)


@pytest.mark.parametrize("tail, problem", [(b"text\n", "text after the root element"),
                                           (b"<a>\n", "<a> after the root element is not closed"),
                                           (b"<?pi?>", "a processing instruction")])
def test_mjcf_refused_after_the_root_as_mujoco_refuses(tmp_path, tail, problem):
    path = tmp_path / "refused.xml"
    text = LENIENT_MJCF.read_bytes()
    data = text[:text.index(b"</mujoco>") + 9] + b"\n\n" + tail
    path.write_bytes(data)
    assert not mujoco_loads(path)
    with pytest.raises(ParseError) as caught:
        load_description(str(path))
    assert problem in str(caught.value)
    assert caught.value.line == data.count(b"\n", 0, data.rindex(tail.strip()[:2])) + 1


def test_large_and_deep_documents_libxml2_limits_are_read(tmp_path):
    """A text node over 10 MB and elements nested 300 deep: libxml2 refuses both without
    XML_PARSE_HUGE, tinyxml2 reads them; 501 levels are refused (MuJoCo's limit)."""
    text = LENIENT_URDF.read_text()
    big = "x" * (11 << 20)
    deep = "<g>" * 300 + "</g>" * 300
    path = tmp_path / "big.urdf"
    path.write_text(text.replace("</robot>", f"<gazebo>{big}</gazebo><gazebo>{deep}</gazebo>"
                                             "</robot>", 1))
    compare_models(load_model(str(path)), pinocchio(path, False), seed=8)
    mjcf = tmp_path / "big.xml"
    mjcf.write_text(LENIENT_MJCF.read_text().replace(
        "<worldbody>", f'<custom><text name="t" data="{big}"/></custom>\n<worldbody>', 1))
    compare_with_mujoco(str(mjcf), seed=3)
    too_deep = tmp_path / "deep.urdf"
    too_deep.write_text(text.replace("</robot>", "<gazebo>\n" + "<g>" * 498 + "\n<g/>"
                                     + "</g>" * 498 + "</gazebo></robot>", 1))
    assert pinocchio(too_deep, False) is None
    with pytest.raises(ParseError, match="nested more than 500 deep") as caught:
        build_model(load_description(str(too_deep)))
    assert caught.value.line == too_deep.read_text().count("\n", 0, too_deep.read_text()
                                                           .index("<g/>")) + 1


# -- 6. <attach> with <asset><model> -------------------------------------------------------

ATTACH = DATA / "attach"


@pytest.mark.parametrize("name", ["scene.xml", "robot/arm.xml", "floating.xml",
                                  "robot/tool.xml"])
def test_attached_robot_matches_mujoco(name):
    """scene.xml attaches the robot twice (a body subtree, the whole worldbody inside a
    frame): MuJoCo's names, defaults, compiler settings, mesh, include and armature.
    floating.xml attaches a free body at the world and a frame under a body with a
    childclass, in radians over a tool in degrees. Each attached file alone too."""
    compare_with_mujoco(str(ATTACH / name), seed=4)


def test_attached_names_and_files():
    description = load_description(str(ATTACH / "scene.xml"))
    model = build_model(description)
    assert model.joint_names == ("slide", "left_elbow", "left_wrist", "left_slide_finger",
                                 "turn", "right_shoulder", "right_elbow", "right_wrist",
                                 "right_slide_finger")
    files = {Path(f).name for f in description.files}
    assert {"scene.xml", "arm.xml", "gripper.xml", "wedge.obj"} <= files


ROBOT = (ATTACH / "robot" / "arm.xml").read_text()
SCENE = ('<mujoco>\n<asset><model name="arm" file="{file}"/></asset>\n<worldbody>\n'
         '<body name="b">\n<joint/><geom size="0.1"/>\n{attach}\n</body>\n</worldbody>\n'
         '</mujoco>\n')
# name -> (scene's attach, robot file text or None for the fixture, problem, MuJoCo refuses)
ATTACH_REFUSED = {
    "unknown model": ('<attach model="hand" prefix="a_"/>', None, 'could not find model "hand"',
                      True),
    "unknown body": ('<attach model="arm" body="leg" prefix="a_"/>', None,
                     'could not find body "leg" in model "arm"', True),
    "no prefix": ('<attach model="arm" body="link"/>', None, "prefix", True),
    "repeated prefix": ('<attach model="arm" body="link" prefix="a_"/><attach model="arm" '
                        'body="link" prefix="a_"/>', None, 'repeated body name "a_link"', True),
    "missing model file": ('<attach model="arm" prefix="a_"/>', "", "not found", True),
    "attach cycle": ('<attach model="arm" prefix="a_"/>',
                     '<mujoco><asset><model name="s" file="../scene.xml"/></asset></mujoco>',
                     "attach cycle (scene.xml -> arm.xml -> scene.xml)", None),
    "other inertia settings": ('<attach model="arm" prefix="a_"/>',
                               ROBOT.replace('meshdir="assets"',
                                             'meshdir="assets" boundmass="0.5"'),
                               "boundmass that differs from the scene's is not supported", False),
}


@pytest.mark.parametrize("name", sorted(ATTACH_REFUSED))
def test_attach_errors_name_their_line(tmp_path, name):
    attach, robot, problem, mujoco_refuses = ATTACH_REFUSED[name]
    file = str(ATTACH / "robot" / "arm.xml")
    if robot:
        (tmp_path / "robot").mkdir()
        (tmp_path / "robot" / "assets").mkdir()
        (tmp_path / "robot" / "assets" / "wedge.obj").write_text(
            (ATTACH / "robot" / "assets" / "wedge.obj").read_text())
        (tmp_path / "robot" / "gripper.xml").write_text((ATTACH / "robot" / "gripper.xml")
                                                        .read_text())
        file = str(tmp_path / "robot" / "arm.xml")
        Path(file).write_text(robot)
    if robot == "":
        file = str(tmp_path / "nowhere.xml")
    path = tmp_path / "scene.xml"
    path.write_text(SCENE.format(file=file, attach=attach))
    if mujoco_refuses is not None:  # (MuJoCo loops forever on a cycle)
        assert mujoco_loads(path) is not mujoco_refuses
    with pytest.raises(ParseError) as caught:
        build_model(load_description(str(path)))
    assert problem in str(caught.value) and caught.value.line > 0, str(caught.value)
    assert "\n" not in str(caught.value)
