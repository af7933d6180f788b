"""xacro models: expanded in-process by the xacro package, read as the URDF they expand to.

The reference is Pinocchio on the same file expanded by the ``xacro`` command, on a real
description package from PyPI (cookie_description ships its robot as xacro). ``$(find)``
and ``package://`` go through one lookup: ROS_PACKAGE_PATH, AMENT_PREFIX_PATH and the
folders above the model holding a package.xml of that name; each route is tested through
the command line, which is where the environment is read.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np
import pytest

xacro = pytest.importorskip("xacro")

from reference_models import robots_root  # noqa: E402
from treedyn.engine import aba, crba, rnea  # noqa: E402
from treedyn.parsers import (  # noqa: E402
    PackagePaths,
    ParseError,
    XacroInput,
    load_model,
    parse_xacro,
)
from treedyn.parsers.xacro import expand_xacro  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "xacro" / "arm_description"
ARM_XACRO = ARM / "urdf" / "arm.urdf.xacro"
XACRO_COMMAND = Path(sys.executable).with_name("xacro")


def dyn(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    """``dyn ARGS`` in this interpreter with ``env`` set on top of a clean ROS environment."""
    from treedyn.cli.app import run

    changes = {"ROS_PACKAGE_PATH": None, "AMENT_PREFIX_PATH": None, **(env or {})}
    saved = {name: os.environ.get(name) for name in changes}
    out, err = io.StringIO(), io.StringIO()
    try:
        for name, value in changes.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
        with (contextlib.redirect_stdout(out), contextlib.redirect_stderr(err),
              pytest.raises(SystemExit) as exit_info):
            run([str(a) for a in args])
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
    code = exit_info.value.code
    return subprocess.CompletedProcess(args, 0 if code is None else code, out.getvalue(),
                                       err.getvalue())


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr.strip()


# -- against Pinocchio on the xacro command's output -----------------------------------------


def cookie_xacro() -> Path:
    package = pytest.importorskip("cookie_description")
    return Path(package.__file__).parent / "xacro" / "cookie.xacro"


def test_a_real_description_package_matches_pinocchio_on_the_xacro_commands_expansion(tmp_path):
    pin = pytest.importorskip("pinocchio")
    source = cookie_xacro()
    expanded = tmp_path / "cookie.urdf"
    expanded.write_text(subprocess.run([str(XACRO_COMMAND), str(source)], check=True,
                                       capture_output=True, text=True).stdout)
    model = load_model(str(source))
    pinmodel = pin.buildModelFromUrdf(str(expanded))
    data = pinmodel.createData()
    assert list(model.joint_names) == list(pinmodel.names)[1:]
    assert model.nq == model.nv == pinmodel.nq == pinmodel.nv  # 1-dof joints: same q
    order = np.array([pinmodel.idx_vs[pinmodel.getJointId(name)] for name in model.joint_names])
    rng = np.random.default_rng(zlib.crc32(b"cookie.xacro"))
    q = model.random_configuration(rng, 4)
    v, a, tau = (rng.normal(size=(4, model.nv)) for _ in range(3))
    ours_tau, ours_M, ours_a = rnea(model, q, v, a), crba(model, q), aba(model, q, v, tau)
    for n in range(4):
        pq, pv = np.zeros(pinmodel.nq), np.zeros(pinmodel.nv)
        pq[order], pv[order] = q[n], v[n]
        pa, ptau = np.zeros(pinmodel.nv), np.zeros(pinmodel.nv)
        pa[order], ptau[order] = a[n], tau[n]
        ref_tau = pin.rnea(pinmodel, data, pq, pv, pa)[order]
        M = np.array(pin.crba(pinmodel, data, pq))
        ref_M = (np.triu(M) + np.triu(M, 1).T)[np.ix_(order, order)]
        ref_a = pin.aba(pinmodel, data, pq, pv, ptau)[order]
        for ours, ref in ((ours_tau[n], ref_tau), (ours_M[n], ref_M), (ours_a[n], ref_a)):
            assert np.max(np.abs(ours - ref)) <= 1e-9 * np.max(np.abs(ref))


def test_links_are_named_by_the_xacro_file_and_line_they_were_written_at():
    description = parse_xacro(str(cookie_xacro()))
    inertials = {link.name: link.inertial_source for link in description.links if link.has_inertial}
    for link, source in inertials.items():
        lines = Path(source.file).read_text().splitlines()
        assert source.file.endswith(".xacro") and "<inertial" in lines[source.line - 1], link
    assert {Path(s.file).name for s in inertials.values()} > {"box_inertial.xacro"}
    assert all(file.endswith(".xacro") for file in description.files)


def test_check_inertia_annotations_point_into_the_xacro_file_of_the_inertial(tmp_path):
    package = copy_arm(tmp_path)
    macro = package / "urdf" / "box_link.xacro"
    macro.write_text(macro.read_text().replace('izz="${mass * 2 * 0.05**2 / 12}"', 'izz="5"'))
    result = dyn("check-inertia", package / "urdf" / "arm.urdf.xacro", "--format", "github")
    assert result.returncode == 1
    line = macro.read_text().splitlines().index("      <inertial>") + 1
    errors = [a for a in result.stdout.splitlines() if a.startswith("::error")]
    assert errors and all(f"file={escaped(macro)},line={line}," in a for a in errors)
    assert {"upper_arm", "forearm"} <= {re.search(r"\((\w+)\)::", a).group(1) for a in errors}


def escaped(path: Path) -> str:
    return str(path).replace("%", "%25").replace(":", "%3A").replace(",", "%2C")


# -- the expansion is the xacro command's, to the byte ---------------------------------------


def xacro_command(path: Path, *arguments: str) -> str:
    """What the ``xacro`` command prints for ``path`` (no ROS variables set)."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH", "ARM_PAYLOAD")}
    return subprocess.run([str(XACRO_COMMAND), str(path), *arguments], check=True, env=env,
                          capture_output=True, text=True, timeout=120).stdout


def test_real_description_packages_expand_as_the_xacro_command_prints_them(tmp_path):
    package = copy_arm(tmp_path)  # $(find) made relative: the command has no ament index
    arm = package / "urdf" / "arm.urdf.xacro"
    arm.write_text(arm.read_text().replace("$(find arm_description)/urdf/", ""))
    sources = [cookie_xacro(), arm]
    if robots_root():
        sources.append(Path(robots_root()) / "hector_description" / "robots"
                       / "quadrotor_base.urdf.xacro")
    for source in sources:
        assert expand_xacro(str(source)) == xacro_command(source), source
    assert expand_xacro(str(arm), XacroInput((("payload", "0.5"),))) == xacro_command(
        arm, "payload:=0.5")


# expressions of ros/xacro's own tests (test/test_xacro.py) and of its documentation, with
# the functions xacro documents: each must expand to what the xacro command makes of it
EXPRESSIONS = [
    "0.9 / 2 - 0.2", "[1,2,3][-1]", "[abc[i]*abc[i] for i in [0,1,2]]", "1. + sin(pi)",
    "dict(a=0, b=1+1, c=2)", "(0,1+1,2)", "[0, 1+1, 2]", "var == 'useit'", "'use' in var",
    "s.lower()", "s.upper().startswith('TE')", "0*42", "1*2+3", "3*0.1", "True", "not False",
    "1/3", "7//2", "-7 % 3", "2**10", "2**-2", "10 ** 20", "radians(90)", "math.degrees(pi)",
    "math.cos(0)", "xacro.arg('foo')", "xacro.dotify(dict(a=1, b=2)).a", "u'\U0001f354' * 3",
    "xacro.tokenize('a,b;c d')", "python.sorted([3, 1, 2])", "python.list(python.range(3))",
    "list(range(2))", "list(map(float, '1 2.5'.split()))", "'%.3f' % pi",
    "plain.format(1, 'a')", "fields.format(4, name='x')", "'%s and %s' % (1, 'a')",
    "max([1, 5, 3])",
    "min(3, 4)", "python.abs(-2)", "round(2.567, 2)", "len('abc')", "int('7') + 1",
    "str(1.5)", "float('2')", "bool(0)", "1 if var else 2", "[x for x in python.range(5) if x % 2]",
    "python.sum([1, 2, 3])", "python.any([0, 1])", "python.all([])", "'a,b'.split(',')",
    "'-'.join(['a', 'b'])", "'  pad '.strip()", "pi", "math.pi", "abc[1:]", "abc[::-1]",
    "python.tuple(abc)", "python.divmod(7, 2)", "python.ord('A')", "python.repr('x')",
    "python.list(python.zip(abc, abc))", "python.list(python.enumerate('ab'))",
    "python.list(python.reversed(abc))", "python.isinstance(1.5, python.float)",
    "dict(a=1)['a']", "'x' * 0", "abc + [4]", "(1, 2) < (1, 3)", "1 < 2 < 3", "None",
    "len(abc) > 2 and 'yes' or 'no'", "[y for x in [[1, 2], [3]] for y in x]",
    "python.sorted(['b', 'a'], reverse=True)", "max(abc, key=python.abs)",
    "python.list(python.map(str, abc))", "python.list(python.filter(None, [0, 1, 2]))",
    "float('inf')", "settings.a * 2", "settings['b']", "list(settings.keys())",
    "[k for k, v in settings.items() if v > 1]", "settings.get('c', 5)", "s.replace('e', 'E')",
    "s.count('T')", "'a b'.split()[1]", "1.5.is_integer()", "abc.index(2)",
]


def test_expressions_expand_as_the_xacro_command_expands_them(tmp_path):
    (tmp_path / "settings.yaml").write_text("a: 1\nb: !degrees 180\n")
    model = tmp_path / "expressions.urdf.xacro"
    elements = "".join(f'  <e v="${{{escape(expression)}}}"/>\n' for expression in EXPRESSIONS)
    model.write_text(
        '<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
        "  <!-- a comment stays -->\n"
        '  <xacro:arg name="foo" default="bar"/>\n'
        '  <xacro:property name="abc" value="${[1,2,3]}"/>\n'
        '  <xacro:property name="s" value="TeXt"/>\n'
        '  <xacro:property name="var" value="useit"/>\n'
        '  <xacro:property name="plain" value="{} and {}"/>\n'
        '  <xacro:property name="fields" value="{0:.2f}-{name!r}"/>\n'
        "  <xacro:property name=\"settings\" value=\"${xacro.load_yaml('settings.yaml')}\"/>\n"
        f"{elements}"
        '  <f a="$(eval 2 * pi)" b="$(eval foo == \'bar\')" c="$(eval true and not false)"'
        ' d="${1}$(arg foo)" e="$(eval foo + \'x\' * 2)"/>\n</robot>\n', encoding="utf-8")
    assert expand_xacro(str(model)) == xacro_command(model)


# -- arguments, $(optenv), includes ---------------------------------------------------------


def arm_masses(*args, env=None) -> dict:
    result = dyn("info", ARM_XACRO, *args, "--format", "json", env=env)
    assert result.returncode == 0, result.stderr
    return {body["name"]: body["mass"] for body in json.loads(result.stdout)["bodies"]}


def test_arguments_after_the_model_and_xacro_arg_set_xacro_args():
    assert arm_masses() == {"upper_arm": 1.5, "forearm": 1.0}
    assert arm_masses("payload:=0.25") == {"upper_arm": 1.5, "forearm": 1.25}
    assert arm_masses("--xacro-arg", "payload:=0.5")["forearm"] == 1.5
    # a later mapping of a name wins, as in xacro; --xacro-arg values come after the words
    assert arm_masses("payload:=0.5", "--xacro-arg", "payload:=2")["forearm"] == 3.0
    elbow = {j.name: j for j in load_model(str(ARM_XACRO), xacro=XacroInput(
        (("length", "0.7"),))).description.joints}["elbow"]
    np.testing.assert_allclose(elbow.translation, [0, 0, 0.7])


def test_optenv_reads_the_environment_the_command_line_passes():
    assert arm_masses(env={"ARM_PAYLOAD": "0.75"})["forearm"] == 1.75
    assert arm_masses("payload:=0", env={"ARM_PAYLOAD": "0.75"})["forearm"] == 1.0
    description = parse_xacro(str(ARM_XACRO), XacroInput(environment=(("ARM_PAYLOAD", "3"),)))
    assert {link.name: link.inertia.mass for link in description.links}["forearm"] == 4.0


def test_an_undeclared_argument_is_a_warning_and_stray_words_are_errors():
    result = dyn("info", ARM_XACRO, "lenght:=0.7")
    assert result.returncode == 0 and "never name the argument lenght:" in result.stderr
    assert one_line_error(dyn("info", ARM_XACRO, "0.7")) == (
        "unexpected argument '0.7': after the model only xacro arguments NAME:=VALUE are taken")
    urdf = ROOT / "fixtures" / "two_link_arm.urdf"
    assert one_line_error(dyn("info", urdf, "length:=1")) == (
        f"{urdf}: xacro arguments (length:=1) apply to .xacro models only")


def test_optional_includes_are_skipped_and_missing_ones_name_the_include(tmp_path):
    package = copy_arm(tmp_path)
    model = package / "urdf" / "arm.urdf.xacro"
    text = model.read_text()
    model.write_text(text.replace('<xacro:include filename="$(find arm_description)/urdf/box_link'
                                  '.xacro"/>', '<xacro:include filename="box_link.xacro"/>\n'
                                  '  <xacro:include filename="extra.xacro" optional="true"/>'))
    assert arm_masses_of(model) == {"upper_arm": 1.5, "forearm": 1.0}
    model.write_text(text.replace("box_link.xacro", "box_links.xacro"))
    line = text.splitlines().index(next(l for l in text.splitlines() if "box_link.xacro" in l)) + 1
    assert one_line_error(dyn("info", model)) == (
        f"{model}:{line}: <xacro:include>: cannot read file {package / 'urdf' / 'box_links.xacro'}"
        " (No such file or directory)")


def arm_masses_of(model: Path, env=None) -> dict:
    result = dyn("info", model, "--format", "json", env=env)
    assert result.returncode == 0, result.stderr
    return {body["name"]: body["mass"] for body in json.loads(result.stdout)["bodies"]}


# -- errors name the xacro source and line --------------------------------------------------


def copy_arm(tmp_path: Path) -> Path:
    shutil.copytree(ARM, tmp_path / "arm_description")
    return tmp_path / "arm_description"


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("where, old, new, problem", [
    ("arm", "${0.8 * length}", "${0.8 * lenght}",
     "<xacro:box_link name=\"forearm\">: xacro: name 'lenght' is not defined when evaluating "
     "expression '0.8 * lenght'"),
    ("arm", '<xacro:box_link name="upper_arm" mass="1.5"',
     '<xacro:box_link name="upper_arm" m="1.5"',
     '<xacro:box_link name="upper_arm">: xacro: Invalid parameter "m"'),
    ("arm", "$(optenv ARM_PAYLOAD 0.0)", "$(env ARM_PAYLOAD)",
     '<xacro:arg name="payload">: environment variable ARM_PAYLOAD is not set '
     '($(env ARM_PAYLOAD))'),
    ("arm", '<child link="forearm"/>', '<child link="forarm"/>',
     '<joint name="elbow">: child link "forarm" is not defined'),
    ("box_link", '<mass value="${mass}"/>', '<mass value="${mass}kg"/>',
     '<link name="upper_arm">: mass value="1.5kg": "1.5kg" is not a number'),
])
def test_errors_name_the_xacro_file_and_line(tmp_path, where, old, new, problem):
    package = copy_arm(tmp_path)
    source = package / "urdf" / ("arm.urdf.xacro" if where == "arm" else "box_link.xacro")
    source.write_text(source.read_text().replace(old, new, 1))
    message = one_line_error(dyn("info", package / "urdf" / "arm.urdf.xacro"))
    assert message == f"{source}:{line_of(source, new)}: {problem}"


def test_an_element_xacro_makes_itself_is_named_by_its_expanded_line(tmp_path):
    model = tmp_path / "robot.urdf.xacro"
    model.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                     '  <link name="base"/>\n  <link name="tool"/>\n'
                     '  <xacro:element xacro:name="joint" name="j">\n'
                     '    <parent link="base"/><child link="tool"/>\n'
                     '  </xacro:element>\n</robot>\n')
    with pytest.raises(ParseError) as caught:
        parse_xacro(str(model))
    expanded = re.fullmatch(re.escape(f"{model} (expanded):") + r"(\d+): " + re.escape(
        '<joint name="j">: type attribute is missing'), str(caught.value))
    assert expanded, str(caught.value)
    text = subprocess.run([str(XACRO_COMMAND), str(model)], check=True, capture_output=True,
                          text=True).stdout  # the line in the xacro command's output
    assert text.splitlines()[int(expanded.group(1)) - 1].strip() == '<joint name="j">'


def test_a_missing_package_names_it_and_where_it_was_looked_for(tmp_path):
    package = copy_arm(tmp_path)
    model = package / "urdf" / "arm.urdf.xacro"
    model.write_text(model.read_text().replace("$(find arm_description)",
                                               "$(find gripper_description)"))
    message = one_line_error(dyn("info", model, env={"ROS_PACKAGE_PATH": str(tmp_path / "ws")}))
    assert message == (
        f"{model}:{line_of(model, 'gripper_description')}: <xacro:include>: package "
        f"'gripper_description' not found (looked above {model.parent} for a package.xml naming "
        f"it or a folder 'gripper_description', in ROS_PACKAGE_PATH ({tmp_path / 'ws'}) and in "
        "AMENT_PREFIX_PATH/share (unset))")


def test_without_the_extra_one_line_says_how_to_install_it():
    code = ("import sys; sys.modules['xacro'] = None; from treedyn.cli.app import run; "
            f"run(['info', {str(ARM_XACRO)!r}])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"{ARM_XACRO}: reading xacro files needs the optional extra: "
                             "pip install 'treedyn[ros]'\n")


def test_xacro_is_given_back_as_it_was():
    from xacro import substitution_args

    def state():
        return (xacro.parse, xacro.eval_all, xacro.eval_text, xacro.safe_eval, xacro.glob,
                substitution_args._eval, substitution_args._eval_find,
                dict(substitution_args._eval_dict))

    before = state()
    parse_xacro(str(ARM_XACRO))
    for payload in ("${nope}", "${python.vars(1)}"):
        with pytest.raises(ParseError):
            parse_xacro(str(ARM_XACRO), packages=PackagePaths(), options=XacroInput(
                (("payload", payload),)))
    assert state() == before


# -- the three routes of $(find) and package:// ----------------------------------------------


GRIPPER_MACRO = """<?xml version="1.0"?>
<robot xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:macro name="gripper" params="parent">
    <link name="gripper">
      <inertial>
        <mass value="0.4"/>
        <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/>
      </inertial>
      <collision>
        <geometry><mesh filename="package://gripper_description/meshes/gripper.stl"/></geometry>
      </collision>
    </link>
    <joint name="wrist" type="revolute">
      <parent link="${parent}"/><child link="gripper"/>
      <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
    </joint>
  </xacro:macro>
</robot>
"""


def gripper_package(folder: Path) -> Path:
    """A package gripper_description in ``folder`` (its own name may differ)."""
    (folder / "urdf").mkdir(parents=True)
    (folder / "meshes").mkdir()
    (folder / "package.xml").write_text("<package format=\"3\"><name>gripper_description</name>"
                                        "</package>")
    (folder / "urdf" / "gripper.xacro").write_text(GRIPPER_MACRO)
    shutil.copy(ARM / "meshes" / "base.stl", folder / "meshes" / "gripper.stl")
    return folder


def robot_with_gripper(model: Path, include: str) -> Path:
    model.parent.mkdir(parents=True, exist_ok=True)
    model.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                     f'  <xacro:include filename="{include}"/>\n'
                     '  <link name="base"/>\n  <xacro:gripper parent="base"/>\n</robot>\n')
    return model


@pytest.mark.parametrize("include", ["$(find gripper_description)/urdf/gripper.xacro",
                                     "package://gripper_description/urdf/gripper.xacro"])
@pytest.mark.parametrize("route", ["ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH", "package.xml"])
def test_find_and_package_uris_resolve_through_each_route(tmp_path, route, include):
    if route == "ROS_PACKAGE_PATH":  # crawled for package.xml: the folder is named otherwise
        gripper_package(tmp_path / "ws" / "src" / "grippers" / "two_finger")
        model, env = robot_with_gripper(tmp_path / "robot" / "robot.urdf.xacro", include), {
            "ROS_PACKAGE_PATH": f"{tmp_path / 'nowhere'}{os.pathsep}{tmp_path / 'ws' / 'src'}"}
    elif route == "AMENT_PREFIX_PATH":
        gripper_package(tmp_path / "install" / "share" / "gripper_description")
        model, env = robot_with_gripper(tmp_path / "robot" / "robot.urdf.xacro", include), {
            "AMENT_PREFIX_PATH": str(tmp_path / "install")}
    else:  # the model lives in the package it finds
        package = gripper_package(tmp_path / "src" / "gripper")
        model = robot_with_gripper(package / "urdf" / "test" / "robot.urdf.xacro", include)
        env = {}
    assert arm_masses_of(model, env=env) == {"gripper": 0.4}
    result = dyn("check-inertia", model, env=env)
    assert result.returncode == 0 and "not found" not in result.stderr, result.stderr
    # without the route, both the include and the mesh are not found
    if env:
        assert "package 'gripper_description' " in one_line_error(dyn("info", model))


def test_cluster_workers_get_the_model_expanded_with_the_clients_arguments():
    """Dask workers get the model the client expanded (pickled, as ``client.scatter``
    sends it), not the file to expand again without the xacro arguments."""
    import pickle

    arguments = (("payload", "0.5"),)
    client = load_model(str(ARM_XACRO), xacro=XacroInput(arguments))
    worker = pickle.loads(pickle.dumps(client))
    plain = load_model(str(ARM_XACRO))
    forearm = [model.description.links[-1] for model in (plain, worker)]
    assert [link.name for link in forearm] == ["forearm"] * 2
    assert [link.inertia.mass for link in forearm] == [1.0, 1.5]
