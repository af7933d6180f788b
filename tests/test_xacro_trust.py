"""A xacro model file runs no code, reads no file outside its packages, and its expansion
is bounded.

ROS's xacro evaluates ``${...}`` with Python's ``eval`` (builtins taken away) and
``$(eval ...)`` with the real one: the classic sandbox escapes below run commands, open
files or hang the process there (each payload that would write a file writes a marker in
the test's folder, and does so under the ``xacro`` command). dyn evaluates expressions on
a whitelisted syntax-tree walk: every one of them is one line on stderr, exit 2, naming the
xacro file, the line of the element being expanded and the expression. Each run is a
``dyn info`` subprocess under a 1.5 GiB address-space limit and a timeout.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("xacro")
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="rlimits, symlinks")

ROOT = Path(__file__).resolve().parents[1]
MEMORY = 3 << 29
SECONDS = 60
HEAD = '<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n  <link name="base"/>\n'
SUBCLASSES = "python.vars(python.type)['__subclasses__']"
OBJECT = "python.type.mro(python.int)[-1]"
GLOBALS = "python.vars(python.type(xacro.load_yaml))['__globals__']"

# (id, lines of the model after HEAD, a part of the one stderr line): the last line is the
# one whose element is named. MARKER is replaced by a path in the test's folder.
ESCAPES = [
    ("subclasses-walk-to-FileIO", [
        f'<xacro:property name="sub" value="${{{SUBCLASSES}}}"/>',
        f'<xacro:property name="obj" value="${{{OBJECT}}}"/>',
        "<a b=\"${[f for b in sub(obj) if 'IOBase' in python.repr(b) for r in sub(b) if "
        "'RawIOBase' in python.repr(r) for f in sub(r) if 'FileIO' in python.repr(f)][0]"
        "('MARKER', 'w')}\"/>"], "calls 'python.vars', which model files may not call"),
    ("function-globals-to-os-system", [
        f"<a b=\"${{python.vars(python.type({GLOBALS}))['__get__']({GLOBALS}, xacro.load_yaml)"
        "['os'].system('touch MARKER')}\"/>"], "which model files may not call"),
    ("function-globals-attribute", ['<a b="${xacro.load_yaml.__globals__}"/>'],
     "uses attribute '__globals__', which model files may not use"),
    ("format-field-attribute", ['<xacro:property name="f" value="{0.__class__}"/>',
                                '<a b="${f.format(1)}"/>'],
     "formats the field '{0.__class__}'"),
    ("generator-frame", ['<a b="${(x for x in []).gi_frame.f_back}"/>'],
     "uses attribute 'gi_frame'"),
    ("getattr-computed-name", [
        "<a b=\"${python.vars(python.type)['__getattribute__'](python.int, '__sub' + "
        "'classes__')}\"/>"], "calls 'python.vars'"),
    ("lambda-default-argument", [
        f"<a b=\"${{(lambda f=python.vars: f(python.type)['__subclasses__']({OBJECT}))()}}\"/>"],
     "uses a lambda, which model files may not use"),
    ("fullwidth-identifiers", [
        "<a b=\"${ｐｙｔｈｏｎ.ｖａｒｓ(ｐｙｔｈｏｎ.ｔｙｐｅ)['__subclasses__'](python.int)}\"/>"],
     "uses the identifier 'ｐｙｔｈｏｎ', which is not plain ASCII"),
    ("fullwidth-format", ["<a b=\"${'x'.ｆｏｒｍａｔ(1)}\"/>"],
     "uses the identifier 'ｆｏｒｍａｔ'"),
    ("zero-width-in-name", ['<a b="${1 .\u200b_class__}"/>'],
     "uses the identifier '\\u200b', which is not plain ASCII"),
    ("eval-import", ["<a b=\"$(eval __import__('os').system('touch MARKER'))\"/>"],
     "uses a double underscore, which $(eval ...) may not use"),
    ("eval-open", ["<xacro:property name=\"payload\" value=\"open('MARKER', 'w')\"/>",
                   '<a b="$(eval ${payload})"/>'], "name 'open' is not defined"),
    ("huge-power", ['<a b="${9**9**8}"/>'], "computes an integer of about"),
    ("huge-string", ["<a b=\"${'a'*(4*10**9)}\"/>"],
     "makes a text of 4000000000 characters (more than 10000000)"),
    ("huge-range", ['<a b="${[x for x in python.range(10**12)]}"/>'],
     "makes a sequence of 1000000000000 items"),
    ("nested-comprehension", [
        '<a b="${[x for x in python.range(10**5) for y in python.range(10**5)]}"/>'],
     "takes more than 1000000 steps"),
    ("repeated-long-property", ["<xacro:property name=\"a\" value=\"${'x'*9000000}\"/>",
                                '<a b="${a}${a}${a}"/>'],
     "makes, with the rest of its text, more than 10000000 characters"),
    ("format-repeated-fields", ['<xacro:property name="f" value="{:9999}"/>',
                                '<a b="${(f*5000).format(*([1]*5000))}"/>'],
     "formats a text of more than 10000000 characters"),
    ("format-width", ["<a b=\"${'%999999999d' % 1}\"/>"],
     "formats with a width or precision of 999999999"),
    ("load-yaml-outside", ["<a b=\"${xacro.load_yaml('/etc/hostname')}\"/>"],
     "reads the YAML file /etc/hostname, which is outside the model's package"),
    ("include-glob-outside", ['<xacro:include filename="/etc/*"/>'],
     "includes the files of /etc, which is outside the model's package"),
    ("include-etc-passwd", ['<xacro:include filename="/etc/passwd"/>'],
     "includes /etc/passwd, which is outside the model's package"),
]
# names xacro does not define either (its own refusal is one line already)
UNDEFINED = [
    ("getattr-by-name", ["<a b=\"${getattr(1, '__cl' + 'ass__')}\"/>"],
     "name 'getattr' is not defined"),
    ("operator-attrgetter", ["<a b=\"${operator.attrgetter('__class__')(1)}\"/>"],
     "name 'operator' is not defined"),
]


ENVIRONMENT = {name: value for name, value in os.environ.items()
               if name not in ("ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH")}


def bounded():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def dyn_info(model: Path) -> tuple[subprocess.CompletedProcess, float]:
    """``dyn info model`` in a subprocess, bounded; and how long it took."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", "info", str(model)],
                          cwd=model.parent, capture_output=True, text=True, timeout=SECONDS,
                          preexec_fn=bounded, env=ENVIRONMENT)
    return done, time.monotonic() - start


def one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    return lines[0]


def write_model(folder: Path, lines: list[str], marker: Path) -> tuple[Path, int]:
    """The model file holding ``lines``, and the line of the last one."""
    model = folder / "robot.urdf.xacro"
    body = "".join(f"  {line}\n" for line in lines).replace("MARKER", str(marker))
    model.write_text(HEAD + body + "</robot>\n", encoding="utf-8")
    return model, HEAD.count("\n") + len(lines)


@pytest.mark.parametrize("lines, problem", [case[1:] for case in ESCAPES],
                         ids=[case[0] for case in ESCAPES])
def test_each_escape_is_one_line_naming_file_line_and_expression(tmp_path, lines, problem):
    marker = tmp_path / "marker"
    model, line = write_model(tmp_path, lines, marker)
    done, _ = dyn_info(model)
    message = one_line(done)
    assert message.startswith(f"{model}:{line}: <"), message
    assert problem in message, message
    if "$(eval" in lines[-1]:
        assert "expression '" in message or "$(eval " in message, message
    elif "${" in lines[-1]:  # the expression refused: maybe a property's the last one uses
        written = [part.split("}", 1)[0].replace("MARKER", str(marker))[:20]
                   for line in lines for part in line.split("${")[1:]]
        assert any(f"expression '{expression}" in message for expression in written) or \
            "\\u" in message, message
    assert not marker.exists()


def test_no_escape_runs_code_writes_a_file_or_takes_long(tmp_path):
    """Over the whole corpus, plus a macro that calls itself twice per level (30 levels):
    no marker file, no other new file, and each run ends within a few seconds."""
    bomb = ['<xacro:macro name="bomb" params="n">',
            '<xacro:if value="${n > 0}"><xacro:bomb n="${n-1}"/><xacro:bomb n="${n-1}"/>'
            '</xacro:if><link name="x"/>', "</xacro:macro>", '<xacro:bomb n="30"/>']
    for index, (name, lines, problem) in enumerate([*ESCAPES, *UNDEFINED, ("bomb", bomb, "")]):
        folder = tmp_path / str(index)
        folder.mkdir()
        marker = folder / "marker"
        model, _ = write_model(folder, lines, marker)
        done, seconds = dyn_info(model)
        assert problem in one_line(done), name
        assert sorted(os.listdir(folder)) == ["robot.urdf.xacro"], name
        assert seconds < 30, (name, seconds)
    assert "the expansion makes more than" in done.stderr or "runs past the 10 s" in done.stderr


# -- confinement: the model's package and the ROS package paths ------------------------------


MACRO = ('<robot xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
         '  <xacro:macro name="part"><link name="part"/></xacro:macro>\n</robot>\n')


def package(folder: Path, include: str) -> Path:
    """A package (package.xml) in ``folder`` whose model includes ``include``."""
    (folder / "urdf").mkdir(parents=True)
    (folder / "package.xml").write_text("<package><name>robot_description</name></package>")
    model = folder / "urdf" / "robot.urdf.xacro"
    model.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                     f'  <xacro:include filename="{include}"/>\n  <xacro:part/>\n</robot>\n')
    return model


def test_an_include_outside_the_package_is_refused(tmp_path):
    (tmp_path / "outside.xacro").write_text(MACRO)
    model = package(tmp_path / "robot_description", "../../outside.xacro")
    message = one_line(dyn_info(model)[0])
    assert message.startswith(f"{model}:2: <xacro:include>: includes "), message
    assert "outside.xacro, which is outside the model's package" in message, message


def test_a_link_in_the_package_to_a_file_outside_is_refused_one_inside_is_read(tmp_path):
    (tmp_path / "outside.xacro").write_text(MACRO)
    model = package(tmp_path / "robot_description", "part.xacro")
    (model.parent / "part.xacro").symlink_to(tmp_path / "outside.xacro")
    message = one_line(dyn_info(model)[0])
    assert message.startswith(f"{model}:2: <xacro:include>: includes "), message
    assert f"(a link to {tmp_path / 'outside.xacro'}), which is outside" in message, message
    (model.parent.parent / "parts").mkdir()  # inside the package: read, by link or by ../
    (model.parent.parent / "parts" / "part.xacro").write_text(MACRO)
    (model.parent / "inside.xacro").symlink_to(model.parent.parent / "parts" / "part.xacro")
    for include in ("inside.xacro", "../parts/part.xacro"):
        model.write_text(model.read_text().replace('"part.xacro"', f'"{include}"'))
        assert dyn_info(model)[0].returncode == 0, include
        model.write_text(model.read_text().replace(f'"{include}"', '"part.xacro"'))


def test_a_found_package_outside_the_paths_is_refused_one_in_them_is_read(tmp_path):
    """``$(find)`` falls back to a folder named like the package above the model: one that
    is not below the model's package or a ROS path is not read."""
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "part.xacro").write_text(MACRO)
    model = package(tmp_path / "robot_description", "$(find parts)/part.xacro")
    message = one_line(dyn_info(model)[0])
    assert message.startswith(f"{model}:2: <xacro:include>: $(find parts) is "
                              f"{tmp_path / 'parts'}, which is outside"), message
    done = subprocess.run([sys.executable, "-m", "treedyn.cli", "info", str(model)],
                          capture_output=True, text=True, timeout=SECONDS, preexec_fn=bounded,
                          env={**ENVIRONMENT, "ROS_PACKAGE_PATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr


def test_load_yaml_errors_do_not_show_the_files_text(tmp_path):
    model = package(tmp_path / "robot_description", "part.xacro")
    (model.parent / "part.xacro").write_text(MACRO)
    (model.parent / "secret.yaml").write_text("key: [SECRET-TEXT\n")
    model.write_text(model.read_text().replace(
        "<xacro:part/>", "<xacro:part/>\n  <a b=\"${xacro.load_yaml('secret.yaml')}\"/>"))
    message = one_line(dyn_info(model)[0])
    assert message.startswith(f"{model}:4: <a>: "), message
    assert "secret.yaml is not valid YAML (line 2, column 1)" in message, message
    assert "SECRET" not in message, message
    with open(model.parent / "secret.yaml", "wb") as stream:
        stream.truncate(5 << 20)  # PyYAML reads about 1 MB/s: 4 MiB at most
    message = one_line(dyn_info(model)[0])
    assert message.startswith(f"{model}:4: <a>: "), message
    assert "secret.yaml (5 MiB, larger than the 4 MiB dyn reads)" in message, message
