"""A corpus of hostile inputs: models, meshes and state files that are broken, lying,
oversized, malicious or absurd -- made here, never committed as files.

``python tests/hostile.py DIR`` writes every case to DIR (one file per case, named
``<kind>-<case><suffix>``) so that a person can run ``dyn`` on them by hand;
``tests/test_hostile.py`` runs each through the commands that read it and holds dyn to
its promise: exit 0, 1 or 2 within seconds, at most one line on stderr, no traceback.

A *model* case is a URDF or MJCF file; a *mesh* case is a mesh file that a small valid
MJCF model (mass from the mesh) and a small valid URDF (a visual mesh, read by
check-inertia) refer to; a *state* case is an ``--input`` file for the two-link arm.
"""
from __future__ import annotations

import io
import math
import struct
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "fixtures" / "two_link_arm.urdf"


@dataclass(frozen=True)
class Case:
    kind: str  # "model", "mesh" or "state"
    name: str
    suffix: str  # the file name's end: what dyn reads it as
    data: bytes

    @property
    def file_name(self) -> str:
        return f"{self.kind}-{self.name}{self.suffix}"


INERTIAL = ('<inertial><mass value="{mass}"/><inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" '
            'iyz="0" izz="{i}"/></inertial>')


def urdf(body: str, name: str = "r") -> bytes:
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}\n</robot>\n'.encode()


def link(name: str, mass="1", inertia="0.1", extra: str = "") -> str:
    return f'<link name="{name}">{INERTIAL.format(mass=mass, i=inertia)}{extra}</link>\n'


def joint(name: str, parent: str, child: str, kind: str = "revolute", extra: str = "") -> str:
    limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>' \
        if kind in ("revolute", "prismatic") else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><axis xyz="0 0 1"/>{limit}{extra}</joint>\n')


def chain(n: int) -> str:
    return link("l0") + "".join(link(f"l{k}") + joint(f"j{k}", f"l{k - 1}", f"l{k}")
                                for k in range(1, n + 1))


def mjcf(body: str, extra: str = "") -> bytes:
    return (f'<mujoco model="m">{extra}<worldbody>{body}</worldbody></mujoco>\n').encode()


def urdf_cases() -> dict[str, bytes]:
    base = link("base")
    one = base + link("a") + joint("j", "base", "a")
    return {
        "empty": b"",
        "whitespace": b"  \n\t\n",
        "nul-bytes": b"\0" * 100_000,
        "random-binary": np.random.default_rng(1).bytes(4096),
        "utf16": '<robot name="r"><link name="a"/></robot>'.encode("utf-16"),
        "invalid-utf8-name": urdf(link("aX")).replace(b"aX", b"a\xff"),
        "unclosed": b'<robot name="r"><link name="a">',
        "wrong-root": b'<rsobot name="r"/>',
        "no-links": urdf(""),
        "billion-laughs": (b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
                           + b"".join(b'<!ENTITY %s "%s">' % (
                               chr(98 + k).encode(), (b"&" + chr(97 + k).encode() + b";") * 10)
                               for k in range(8))
                           + b']><robot name="&i;"><link name="x"/></robot>'),
        "external-entity": (b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e SYSTEM '
                            b'"file:///etc/passwd">]><robot name="&e;"><link name="a"/></robot>'),
        "external-dtd": (b'<?xml version="1.0"?><!DOCTYPE robot SYSTEM "http://127.0.0.1:9/x.dtd">'
                         b'<robot name="r"><link name="a"/></robot>'),
        "xinclude": (b'<robot name="r" xmlns:xi="http://www.w3.org/2001/XInclude">'
                     b'<xi:include href="/etc/passwd" parse="text"/><link name="a"/></robot>'),
        "deep-nesting": urdf("<a>" * 5000 + "</a>" * 5000 + link("x")),
        "attribute-8mb": urdf(link("a", mass="1" * (8 << 20) + "x")),
        "long-attribute": urdf(link("x" * 5_000_000)),
        "cycle": urdf(link("a") + link("b") + joint("j1", "a", "b") + joint("j2", "b", "a")),
        "missing-child": urdf(base + joint("j", "base", "ghost")),
        "two-parents": urdf(base + link("a") + link("b") + joint("j1", "base", "b")
                            + joint("j2", "a", "b")),
        "duplicate-link": urdf(base + base),
        "duplicate-joint": urdf(base + link("a") + link("b") + joint("j", "base", "a")
                                + joint("j", "a", "b")),
        "negative-mass": urdf(base + link("a", mass="-1") + joint("j", "base", "a")),
        "nan-mass": urdf(base + link("a", mass="nan") + joint("j", "base", "a")),
        "inf-inertia": urdf(base + link("a", inertia="inf") + joint("j", "base", "a")),
        "overflow-mass": urdf(base + link("a", mass="1e400") + joint("j", "base", "a")),
        "huge-mass": urdf(base + link("a", mass="1e308", inertia="1e308")
                          + joint("j", "base", "a")),
        "tiny-mass": urdf(base + link("a", mass="5e-324") + joint("j", "base", "a")),
        "mass-word": urdf(base + link("a", mass="one") + joint("j", "base", "a")),
        "nan-origin": urdf(base + link("a") + joint("j", "base", "a",
                                                    extra='<origin xyz="nan 0 0"/>')),
        "huge-origin": urdf(base + link("a") + joint("j", "base", "a",
                                                     extra='<origin xyz="1e300 0 0" rpy="1e300 0 0"/>')),
        "zero-axis": urdf(one.replace('xyz="0 0 1"', 'xyz="0 0 0"')),
        "short-axis": urdf(one.replace('xyz="0 0 1"', 'xyz="0 1"')),
        "bad-type": urdf(base + link("a") + joint("j", "base", "a", kind="wobbly")),
        "limits-reversed": urdf(one.replace('lower="-1" upper="1"', 'lower="1" upper="-1"')),
        "mimic-itself": urdf(base + link("a") + joint("j", "base", "a",
                                                      extra='<mimic joint="j"/>')),
        "mimic-missing": urdf(base + link("a") + joint("j", "base", "a",
                                                       extra='<mimic joint="nobody"/>')),
        "mimic-cycle": urdf(base + link("a") + link("b") + joint("j1", "base", "a", extra=(
            '<mimic joint="j2"/>')) + joint("j2", "a", "b", extra='<mimic joint="j1"/>')),
        "star-500": urdf(base + "".join(link(f"s{k}") + joint(f"j{k}", "base", f"s{k}")
                                         for k in range(500))),
        "chain-400": urdf(chain(400)),
        "mesh-missing": urdf(base + link("a", extra='<visual><geometry><mesh filename='
                                         '"package://nowhere/m.stl"/></geometry></visual>')
                             + joint("j", "base", "a")),
        "mesh-directory": urdf(base + link("a", extra='<visual><geometry><mesh filename='
                                           '"/"/></geometry></visual>')
                               + joint("j", "base", "a")),
        "mesh-device": urdf(base + link("a", extra='<visual><geometry><mesh filename='
                                        '"/dev/zero"/></geometry></visual>')
                            + joint("j", "base", "a")),
        "nul-after-root": urdf(one) + b"\0\0",
        "text-after-root": urdf(one) + b"trailing words",
        "second-root": urdf(one) + b'<robot name="again"/>',
    }


def mjcf_cases() -> dict[str, bytes]:
    geom = '<geom type="sphere" size="0.1"/>'
    return {
        "empty-mujoco": b"<mujoco/>",
        "body-no-geom": mjcf('<body><joint type="hinge"/></body>'),
        "self-include": b'<mujoco><include file="model-self-include.xml"/></mujoco>',
        "include-missing": b'<mujoco><include file="missing.xml"/></mujoco>',
        "include-directory": b'<mujoco><include file="/"/></mujoco>',
        "include-passwd": b'<mujoco><include file="/etc/passwd"/></mujoco>',
        "mesh-missing": mjcf('<body><joint/><geom type="mesh" mesh="m"/></body>',
                             '<asset><mesh name="m" file="missing.stl"/></asset>'),
        "huge-size": mjcf('<body><joint/><geom type="box" size="1e200 1e200 1e200"/></body>'),
        "overflow-pos": mjcf(f'<body pos="1e400 0 0"><joint/>{geom}</body>'),
        "nan-quat": mjcf(f'<body quat="nan 0 0 0"><joint/>{geom}</body>'),
        "zero-quat": mjcf(f'<body quat="0 0 0 0"><joint/>{geom}</body>'),
        "bad-joint-type": mjcf(f'<body><joint type="wobbly"/>{geom}</body>'),
        "nested-free": mjcf(f'<body><joint/>{geom}<body><freejoint/>{geom}</body></body>'),
        "class-missing": mjcf(f'<body childclass="nope"><joint/>{geom}</body>'),
        "nan-gravity": mjcf(f'<body><joint/>{geom}</body>', '<option gravity="nan 0 0"/>'),
        "diaginertia-negative": mjcf('<body><joint/><inertial pos="0 0 0" mass="1" '
                                     'diaginertia="-1 1 1"/></body>'),
        "deep-bodies": mjcf("".join(f'<body name="b{k}"><joint/>{geom}' for k in range(2000))
                            + "</body>" * 2000),
        "comment-dashes": mjcf(f'<!-- a -- b --><body><joint/>{geom}</body>'),
        "attributes-glued": mjcf('<body><joint/><geom name="g"type="sphere" size="0.1"/></body>'),
        "attach-missing": mjcf('<body><attach model="nowhere" body="b" prefix="p"/></body>'),
        "replicate-1e8": mjcf(f'<replicate count="100000000"><body><joint/>{geom}</body>'
                              '</replicate>'),
        "replicate-nested": mjcf('<replicate count="1000"><replicate count="1000"><body><joint/>'
                                 f'{geom}</body></replicate></replicate>'),
        "replicate-empty-1e11": mjcf('<replicate count="99999999999"/>'),
        "attribute-8mb": mjcf(f'<body><joint/><geom size="{"1" * (8 << 20)}x"/></body>'),
        "texture-missing": mjcf(f'<body><joint/>{geom}</body>',
                                '<asset><texture name="t" type="2d" file="missing.png"/></asset>'),
        "keyframe-too-long": mjcf(f'<body><joint/>{geom}</body>',
                                  '<keyframe><key qpos="0 0"/></keyframe>'),
        "not-closed": b"<mujoco><worldbody><body>",
    }


def stl_binary(triangles: np.ndarray, count: int | None = None) -> bytes:
    """A binary STL of (n, 3, 3) triangles, its header's face count ``count`` if given."""
    rows = b"".join(struct.pack("<3f", 0, 0, 0) + np.asarray(t, "<f4").tobytes() + b"\0\0"
                    for t in triangles)
    return b"\0" * 80 + struct.pack("<I", len(triangles) if count is None else count) + rows


def cube_triangles() -> np.ndarray:
    v = np.array([[x, y, z] for x in (0, .1) for y in (0, .1) for z in (0, .1)], float)
    faces = [(0, 2, 1), (1, 2, 3), (4, 5, 6), (5, 7, 6), (0, 1, 4), (1, 5, 4),
             (2, 6, 3), (3, 6, 7), (0, 4, 2), (2, 4, 6), (1, 3, 5), (3, 7, 5)]
    return v[np.array(faces)]


def mesh_cases() -> list[Case]:
    cube = cube_triangles()
    nan = cube.copy()
    nan[0, 0, 0] = math.nan
    big = cube * 3e39  # past float32: infinite in the file
    obj_cube = ("".join(f"v {x} {y} {z}\n" for x in (0, .1) for y in (0, .1) for z in (0, .1))
                + "f 1 3 2\nf 2 3 4\nf 5 6 7\nf 6 8 7\nf 1 2 5\nf 2 6 5\n"
                  "f 3 7 4\nf 4 7 8\nf 1 5 3\nf 3 5 7\nf 2 4 6\nf 4 8 6\n")
    gon = 150
    ring = "".join(f"v {math.cos(2 * math.pi * k / gon)} {math.sin(2 * math.pi * k / gon)} 0\n"
                   for k in range(gon))
    stl = {
        "empty": b"",
        "header-only": b"\0" * 84,
        "count-lies-high": stl_binary(cube, count=4_000_000_000),
        "count-lies-low": stl_binary(cube, count=1),
        "truncated": stl_binary(cube)[:-30],
        "nan-vertex": stl_binary(nan),
        "huge-vertices": stl_binary(cube * 3e38),
        "infinite-vertices": stl_binary(big),
        "colocated": stl_binary(np.zeros((12, 3, 3))),
        "one-triangle": stl_binary(cube[:1]),
        "ascii": b"solid x\nfacet normal 0 0 0\nouter loop\nvertex 0 0 0\nvertex 1 0 0\n"
                 b"vertex 0 1 0\nendloop\nendfacet\nendsolid x\n",
        "ascii-garbage": b"solid x\n" + b"vertex nan nan\n" * 100,
        "random-binary": np.random.default_rng(2).bytes(5000),
    }
    obj = {
        "empty": b"",
        "index-zero": b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n",
        "index-out-of-range": b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 99\n",
        "negative-index-past-start": b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf -1 -2 -9\n",
        "word-coordinate": b"v 0 0 zero\nv 1 0 0\nv 0 1 0\nf 1 2 3\n",
        "overflow-coordinate": obj_cube.replace("0.1", "1e400", 1).encode(),
        "nan-coordinate": obj_cube.replace("0.1", "nan", 1).encode(),
        "polygon-150": (ring + "f " + " ".join(str(k + 1) for k in range(gon)) + "\n").encode(),
        "faces-only": b"f 1 2 3\n",
        "nul-bytes": b"\0" * 10_000,
        "random-binary": np.random.default_rng(3).bytes(5000),
        "long-line": b"v " + b"1 " * 2_000_000 + b"\n",
    }
    return ([Case("mesh", name, ".stl", data) for name, data in stl.items()]
            + [Case("mesh", name, ".obj", data) for name, data in obj.items()])


def npz(arrays: dict, allow_pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=allow_pickle)
            archive.writestr(f"{name}.npy", member.getvalue())
    return buffer.getvalue()


def state_cases() -> list[Case]:
    jsonl = {
        "empty": b"",
        "nul-bytes": b"\0" * 100_000,
        "invalid-utf8": b'{"q": [0.1, 0.2]}\n\xff\xfe\n',
        "array-not-object": b"[0.1, 0.2]\n",
        "q-wrong-length": b'{"q": [0.1]}\n',
        "q-string": b'{"q": "0.1,0.2"}\n',
        "q-nested": b'{"q": [[0.1], [0.2]]}\n',
        "q-nan": b'{"q": [NaN, 0.2]}\n',
        "q-overflow": b'{"q": [1e400, 0.2]}\n',
        "q-huge-integer": b'{"q": [' + b"9" * 5000 + b', 0.2]}\n',
        "deep-json": b'{"q": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        "duplicate-key": b'{"q": [0.1, 0.2], "q": [0.3, 0.4]}\n',
        "unknown-key-only": b'{"x": 1}\n',
        "fext-unknown-body": b'{"q": [0, 0], "fext": {"ghost": [1, 0, 0, 0, 0, 0]}}\n',
        "long-line": b'{"q": [' + b"0.1, " * 1_000_000 + b"0.2]}\n",
        "bom": b'\xef\xbb\xbf{"q": [0.1, 0.2]}\n',
    }
    csv = {
        "empty": b"",
        "header-only": b"q:joint1,q:joint2\n",
        "no-header": b"0.1,0.2\n",
        "duplicate-columns": b"q:joint1,q:joint1\n0.1,0.2\n",
        "ragged": b"q:joint1,q:joint2\n0.1\n0.1,0.2,0.3\n",
        "words": b"q:joint1,q:joint2\none,two\n",
        "underscores": b"q:joint1,q:joint2\n1_000,2\n",
        "quoted-numbers": b'q:joint1,q:joint2\n"0.1","0.2"\n',
        "nan": b"q:joint1,q:joint2\nnan,0\n",
        "bom": b"\xef\xbb\xbfq:joint1,q:joint2\n0.1,0.2\n",
        "nul-bytes": b"q:joint1,q:joint2\n" + b"\0" * 10_000 + b"\n",
        "ten-thousand-columns": (",".join(f"c{k}" for k in range(10_000)) + "\n").encode(),
    }
    rng = np.random.default_rng(4)
    npz_cases = {
        "not-a-zip": b"PK\x03\x04 this is not a zip",
        "empty-zip": npz({}),
        "pickled-object": npz({"q": np.array([object(), 1], dtype=object)[1:]},
                              allow_pickle=True),
        "object-dtype": npz({"q": np.array([[0.1, "a"]], dtype=object)}, allow_pickle=True),
        "q-3d": npz({"q": rng.random((2, 2, 2))}),
        "q-complex": npz({"q": rng.random((3, 2)) + 1j}),
        "q-int": npz({"q": np.ones((3, 2), int)}),
        "q-strings": npz({"q": np.array([["a", "b"]])}),
        "q-wrong-width": npz({"q": rng.random((3, 5))}),
        "q-nan": npz({"q": np.array([[np.nan, 0.0]])}),
        "lengths-differ": npz({"q": rng.random((3, 2)), "v": rng.random((4, 2))}),
        "foreign-only": npz({"x": rng.random((3, 2))}),
        "truncated": npz({"q": rng.random((100, 2))})[:-200],
        "member-not-npy": b"",  # filled below
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("q.npy", b"\x93NUMPY garbage header")
    npz_cases["member-not-npy"] = buffer.getvalue()
    return ([Case("state", name, ".jsonl", data) for name, data in jsonl.items()]
            + [Case("state", name, ".csv", data) for name, data in csv.items()]
            + [Case("state", name, ".npz", data) for name, data in npz_cases.items()])


def corpus() -> list[Case]:
    """Every case, in a stable order."""
    return ([Case("model", name, ".urdf", data) for name, data in urdf_cases().items()]
            + [Case("model", name, ".xml", data) for name, data in mjcf_cases().items()]
            + mesh_cases() + state_cases())


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for case in corpus():
        path = folder / case.file_name
        path.write_bytes(case.data)
        paths.append(path)
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/hostile.py DIR")
    print(f"{len(write(Path(sys.argv[1])))} files in {sys.argv[1]}")
