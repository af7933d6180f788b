"""The parsers at the boundary: bounded whatever the file holds, and faithful to MuJoCo.

Each hostile file is run through ``dyn`` in a subprocess under a 1.5 GiB address-space
limit and a 60 s timeout (as ``tests/test_bounds.py`` does): exit 2 and one short line on
stderr naming the file, line and element. Where MuJoCo decides (file paths, what it
refuses), the same files are loaded with the ``mujoco`` package and the verdicts compared.
"""
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MEMORY = 3 << 29  # 1.5 GiB
BIG = "1" * (8 << 20)  # an 8 MB attribute value

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="FIFOs, rlimits")


def bounded():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run(path: Path, command: str = "info") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "treedyn.cli", command, str(path)], cwd=ROOT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                          preexec_fn=bounded)


def refused(path: Path) -> str:
    """The one stderr line of ``dyn info path``, which must exit 2."""
    done = run(path)
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, \
        done.stderr[-2000:]
    return lines[0]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


# -- 2. an error line quotes at most ~200 characters of the file -------------------------

@pytest.mark.parametrize("name,text,where", [
    ("mass.urdf", f'<robot name="r">\n<link name="a"><inertial><mass value="{BIG}x"/>'
                  '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
                  '</link>\n</robot>\n', ':2: <link name="a">: mass value="111'),
    ("child.urdf", f'<robot name="r">\n<link name="a"/>\n<joint name="j" type="fixed">'
                   f'<parent link="a"/><child link="{BIG}"/></joint>\n</robot>\n',
     ':3: <joint name="j">: child link "111'),
    ("size.xml", f'<mujoco>\n<worldbody>\n<body><joint/><geom size="{BIG}x"/></body>\n'
                 '</worldbody>\n</mujoco>\n', ':3: <geom>: size="111'),
    ("class.xml", f'<mujoco>\n<worldbody>\n<body childclass="{BIG}"><joint/><geom size="1"/>'
                  '</body>\n</worldbody>\n</mujoco>\n', ':3: <body>: childclass="111'),
    ("tag.xml", f'<mujoco>\n<worldbody>\n<{"a" * 40000}/>\n</worldbody>\n</mujoco>\n',
     ":3: <aaa"),
])
def test_a_long_value_is_quoted_short_with_its_length(tmp_path, name, text, where):
    path = write(tmp_path, name, text)
    line = refused(path)
    assert line.startswith(f"{path}{where}"), line[:300]
    assert len(line) - len(str(path)) < 400 and " characters)" in line, line[:600]


def test_a_mesh_name_too_long_for_the_system_is_a_short_warning(tmp_path):
    """check-inertia used to end in 'internal error' with the 8 MB name (ENAMETOOLONG)."""
    path = write(tmp_path, "r.urdf", '<robot name="r"><link name="a"><inertial><mass value="1"/>'
                                     '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
                                     f'</inertial><visual><geometry><mesh filename="{BIG}.stl"/>'
                                     '</geometry></visual></link></robot>\n')
    done = run(path, "check-inertia")
    assert done.returncode == 0 and done.stderr.startswith(
        f"dyn: warning: {path}: 1 mesh file(s) not found (111"), done.stderr[:300]
    assert len(done.stderr) < 600 and done.stderr.count("\n") == 1, done.stderr[:600]


# -- 1. expansions are capped before they are made -----------------------------------------

def mjcf(folder: Path, worldbody: str, name: str = "model.xml") -> Path:
    return write(folder, name, f"<mujoco>\n<worldbody>\n{worldbody}\n</worldbody>\n</mujoco>\n")


BODY = '<body name="b"><joint name="j"/><geom size="0.1"/></body>'


@pytest.mark.parametrize("worldbody,count,product", [
    (f'<replicate count="100000000" offset="0.1 0 0">\n{BODY}\n</replicate>', "100000000",
     "100000000 x 3 = 300000000"),
    (f'<replicate count="1000" offset="0.1 0 0">\n<replicate count="1000" offset="0 0.1 0">\n'
     f'{BODY}\n</replicate>\n</replicate>', "1000", "1000 x 3001 = 3001000"),
    ('<replicate count="99999999999"/>', "99999999999", "99999999999 x 1 = 99999999999"),
    (f'<replicate count="{"9" * 5000}">{BODY}</replicate>', "999", "over 10^18"),
])
def test_a_replicate_past_the_cap_is_refused_before_it_is_expanded(tmp_path, worldbody, count,
                                                                   product):
    """MuJoCo has no cap (10^8 copies ran for minutes, growing 30 MB/s); dyn names the
    replicate whose copies pass 100000 elements, with the count and the product."""
    path = mjcf(tmp_path, worldbody)
    line = refused(path)
    assert line.startswith(f'{path}:3: <replicate>: count="{count}'), line
    assert f"make {product} elements, more than the 100000 dyn compiles" in line, line
    assert len(line) < 600


def test_a_model_attached_past_the_cap_is_refused_at_that_attach(tmp_path):
    sites = "".join(f'<site name="s{k}"/>' for k in range(1000))
    write(tmp_path, "part.xml", f'<mujoco model="part"><worldbody><body name="p"><joint/>'
                                f'<geom size="0.1"/>{sites}</body></worldbody></mujoco>\n')
    attaches = "".join(f'<attach model="part" prefix="a{k}"/>\n' for k in range(200))
    path = write(tmp_path, "scene.xml", '<mujoco>\n<asset><model name="part" file="part.xml"/>'
                                        f'</asset>\n<worldbody>\n{attaches}</worldbody>\n'
                                        '</mujoco>\n')
    assert refused(path) == (f'{path}:103: <attach>: this copy of model "part" (1005 elements) '
                             "takes the model past the 100000 elements dyn compiles")


def test_a_document_past_the_cap_is_refused_as_it_is_read(tmp_path):
    path = mjcf(tmp_path, "\n".join("<site/>" for _ in range(100_001)))
    line = refused(path)  # (the line: libxml2's, past 65535 lines)
    assert line.startswith(f"{path}:1000") and line.endswith(
        ": <site>: more than 100000 elements, includes expanded (the most dyn compiles)"), line


def test_replicates_that_pass_the_cap_together_are_refused_at_the_model(tmp_path):
    """Two replicates of 60000 copies each: neither alone, both together pass the cap."""
    path = mjcf(tmp_path, '<replicate count="60000"><geom size="1"/></replicate>\n'
                          '<replicate count="60000"><geom size="1"/></replicate>')
    assert refused(path) == (f"{path}:1: <mujoco>: the model holds more than 100000 elements "
                             "once its includes, attached models and replicates are expanded "
                             "(the most dyn compiles)")


# -- 3. a path that is there but is no file is called what it is ----------------------------

def special(folder: Path, kind: str, name: str) -> Path:
    """A directory, FIFO or device (a link to /dev/null) at ``folder / name``."""
    path = folder / name
    {"directory": path.mkdir, "FIFO": lambda: os.mkfifo(path),
     "device": lambda: path.symlink_to("/dev/null")}[kind]()
    return path


WHAT = {"directory": "is a directory", "FIFO": "is a FIFO, not a file",
        "device": "is a character device, not a file"}


@pytest.mark.parametrize("kind", ["directory", "FIFO", "device"])
def test_a_mesh_that_is_no_file_is_called_what_it_is(tmp_path, kind):
    mesh = special(tmp_path, kind, "part.stl")
    path = write(tmp_path, "scene.xml", '<mujoco>\n<asset><mesh name="m" file="part.stl"/>'
                                        '</asset>\n<worldbody><body><freejoint/><geom '
                                        'type="mesh" mesh="m"/></body></worldbody>\n</mujoco>\n')
    assert refused(path) == (f'{path}:2: <mesh name="m">: mesh file "part.stl" {WHAT[kind]} '
                             f"(looked for {mesh})")


@pytest.mark.parametrize("kind", ["directory", "FIFO", "device"])
def test_an_include_that_is_no_file_is_called_what_it_is(tmp_path, kind):
    part = special(tmp_path, kind, "part.xml")
    path = write(tmp_path, "scene.xml", '<mujoco>\n<include file="part.xml"/>\n<worldbody/>\n'
                                        '</mujoco>\n')
    assert refused(path) == (f'{path}:2: <include>: included file "part.xml" {WHAT[kind]} '
                             f"({part})")


@pytest.mark.parametrize("kind", ["directory", "FIFO"])
def test_a_urdf_mesh_that_is_no_file_is_not_called_missing(tmp_path, kind):
    """URDF meshes only feed check-inertia's geometry checks: a warning, saying what the
    path is, where it used to say the mesh was not found."""
    special(tmp_path, kind, "part.stl")
    path = write(tmp_path, "r.urdf", '<robot name="r"><link name="a"><inertial><mass value="1"/>'
                                     '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
                                     '</inertial><visual><geometry><mesh filename="part.stl"/>'
                                     '</geometry></visual></link></robot>\n')
    done = run(path, "check-inertia")
    assert done.returncode == 0 and done.stderr == (
        f"dyn: warning: {path}: link a: mesh part.stl cannot be read (cannot read mesh file "
        f"(a {kind}, not a regular file)): its geometry checks were skipped\n"), done.stderr


# -- 4. MJCF paths are joined as MuJoCo joins them ----------------------------------------

def linked_tree(tmp_path: Path) -> Path:
    """model/ holding m.obj and `link`, a symbolic link to far/inner, where far/ holds
    far.obj: `link/..` is model/ to MuJoCo's text and far/ to the system."""
    model, inner = tmp_path / "model", tmp_path / "far" / "inner"
    model.mkdir()
    inner.mkdir(parents=True)
    tetrahedron = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"
    (model / "m.obj").write_text(tetrahedron)
    (tmp_path / "far" / "far.obj").write_text(tetrahedron)
    (model / "link").symlink_to(inner)
    return model


def verdicts(path: Path) -> tuple[bool, bool]:
    """(dyn loads it, MuJoCo loads it)."""
    mujoco = pytest.importorskip("mujoco")
    done = run(path)
    assert done.returncode in (0, 2) and len(done.stderr.splitlines()) <= 1, done.stderr
    try:
        mujoco.MjModel.from_xml_path(str(path))
        loaded = True
    except ValueError:
        loaded = False
    return done.returncode == 0, loaded


@pytest.mark.parametrize("meshdir,file,loads", [
    ("", "link/../m.obj", True),  # the text's .. : model/m.obj
    ("", "link/../far.obj", False),  # the system's .. would find far/far.obj
    ("link/..", "m.obj", True),
    ("link/..", "far.obj", False),
    ("link/../link/..", "./m.obj", True),
])
def test_mesh_paths_with_dot_dot_after_a_link_load_as_in_mujoco(tmp_path, meshdir, file,
                                                                loads):
    model = linked_tree(tmp_path)
    path = write(model, "scene.xml", f'<mujoco>\n<compiler meshdir="{meshdir}"/>\n<asset><mesh '
                                     f'name="m" file="{file}"/></asset>\n<worldbody><body>'
                                     '<freejoint/><geom type="mesh" mesh="m"/></body>'
                                     '</worldbody>\n</mujoco>\n')
    assert verdicts(path) == (loads, loads)


@pytest.mark.parametrize("file,loads", [("link/../part.xml", True), ("link/../far.xml", False)])
def test_include_paths_with_dot_dot_after_a_link_load_as_in_mujoco(tmp_path, file, loads):
    model = linked_tree(tmp_path)
    part = '<mujoco><worldbody><body><freejoint/><geom size="0.1"/></body></worldbody></mujoco>\n'
    write(model, "part.xml", part)
    write(tmp_path / "far", "far.xml", part)
    path = write(model, "scene.xml", f'<mujoco>\n<include file="{file}"/>\n</mujoco>\n')
    assert verdicts(path) == (loads, loads)


# -- 5. what MuJoCo refuses is refused -----------------------------------------------------

SCENE = ('<mujoco>\n<asset>{asset}</asset>\n<worldbody><body name="a"><joint name="j"/>'
         '<geom size="0.1"/></body><body name="f"><freejoint/><geom size="0.1"/></body>'
         '</worldbody>\n{extra}\n</mujoco>\n')  # nq 8, nv 7


@pytest.mark.parametrize("asset,extra,problem", [
    ('<texture name="t" type="2d" file="nope.png"/>', "",
     ':2: <texture name="t">: texture file "nope.png" not found (looked for {folder}/nope.png)'),
    ('<texture name="t" type="cube" fileright="nope.png"/>', "",
     ':2: <texture name="t">: texture file "nope.png" not found (looked for {folder}/nope.png)'),
    ('<skin file="nope.skn"/>', "",
     ':2: <skin>: skin file "nope.skn" not found (looked for {folder}/nope.skn)'),
    ("", '<keyframe><key qpos="0 0 0 0 1 0 0 0 0"/></keyframe>',
     ':4: <key>: qpos="0 0 0 0 1 0 0 0 0": 9 numbers, more than the model\'s 8 (MuJoCo '
     'refuses such a keyframe)'),
    ("", '<keyframe><key qvel="0 0 0 0 0 0 0 0"/></keyframe>',
     ':4: <key>: qvel="0 0 0 0 0 0 0 0": 8 numbers, more than the model\'s 7 (MuJoCo '
     'refuses such a keyframe)'),
    ("", '<keyframe><key mpos="0 0 0"/></keyframe>',
     ':4: <key>: mpos="0 0 0": 3 numbers, more than the model\'s 0 (MuJoCo refuses such a '
     'keyframe)'),
    ("", '<keyframe><key qpos="0 x"/></keyframe>', ':4: <key>: qpos="0 x": "x" is not a number'),
    ("", '<keyframe><key name="k"/><key name="k"/></keyframe>',
     ':4: <key name="k">: repeated key name "k" (first at line 4)'),
    ('<material name="m"/><material name="m"/>', "",
     ':2: <material name="m">: repeated material name "m" (first at line 2)'),
])
def test_what_mujoco_refuses_is_refused_at_its_element(tmp_path, asset, extra, problem):
    path = write(tmp_path, "scene.xml", SCENE.format(asset=asset, extra=extra))
    assert verdicts(path) == (False, False)
    assert refused(path) == f"{path}{problem.format(folder=tmp_path)}"


def test_a_texture_file_is_looked_for_in_texturedir(tmp_path):
    """t.png lies beside the model, not in texturedir: MuJoCo refuses the model."""
    (tmp_path / "tex").mkdir()
    (tmp_path / "t.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    path = write(tmp_path, "scene.xml", SCENE.format(
        asset='<texture name="t" type="2d" file="t.png"/>', extra="").replace(
        "<asset>", '<compiler texturedir="tex"/><asset>'))
    assert verdicts(path) == (False, False)
    assert refused(path) == (f'{path}:2: <texture name="t">: texture file "t.png" not found '
                             f"(looked for {tmp_path}/tex/t.png)")


def test_a_shorter_keyframe_loads_and_a_longer_one_is_refused(tmp_path):
    """MuJoCo 4.0 completes a shorter keyframe array from the model (the first two keys)
    and refuses a longer one (the third)."""
    path = write(tmp_path, "scene.xml", SCENE.format(asset="", extra=(
        '<keyframe><key qpos="0.5" qvel="1"/>\n<key qpos=""/>\n'
        '<key qvel="0 0 0 0 0 0 0 0"/></keyframe>')))
    assert verdicts(path) == (False, False)
    assert refused(path) == (f'{path}:6: <key>: qvel="0 0 0 0 0 0 0 0": 8 numbers, more '
                             "than the model's 7 (MuJoCo refuses such a keyframe)")



@pytest.mark.parametrize("given,loads", [("link/../scene.xml", True),
                                         ("link/../far_scene.xml", False)])
def test_the_model_path_with_dot_dot_after_a_link_loads_as_in_mujoco(tmp_path, given, loads):
    """The model file's own path is reduced as text too: model/link/../scene.xml is
    model/scene.xml to MuJoCo, whatever folder `link` points into."""
    model = linked_tree(tmp_path)
    scene = '<mujoco>\n<worldbody><body><freejoint/><geom size="0.1"/></body></worldbody>\n</mujoco>\n'
    write(model, "scene.xml", scene)
    write(tmp_path / "far", "far_scene.xml", scene)
    assert verdicts(model / given) == (loads, loads)
