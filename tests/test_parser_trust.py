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
