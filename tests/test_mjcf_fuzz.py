"""Differential fuzz test of the MJCF parser: random MJCF documents, treedyn against MuJoCo.

hypothesis writes random models with the compiler features the parser claims: nested
bodies; hinge, slide, ball and free joints (``<joint type="free">`` and ``<freejoint>``,
align) with pos, non-unit axis, ref, range/limited/autolimits and armature, several in one
body; body, geom, inertial and frame poses in every orientation form (quat, axisangle,
euler, xyaxes, zaxis) under ``<compiler angle eulerseq>``; ``<frame>`` (nested, with
childclass) around joints, geoms, inertials and bodies; ``<replicate>``; nested
``<default>`` classes used by ``class`` and ``childclass`` (partial geom sizes, orientation
replaced as a whole); sphere, capsule, cylinder, box and ellipsoid geoms with size or
fromto, mass and/or density, shellinertia, group, contype/conaffinity; meshes given by
vertices (and faces) in the four inertia modes with scale/refpos/refquat/maxhullvert, as
mesh geoms and fitted primitives (fitscale, fitaabb); ``<inertial>`` with diaginertia and
an orientation or fullinertia; inertiafromgeom, inertiagrouprange, boundmass, boundinertia,
balanceinertia, settotalmass, alignfree, fusestatic, discardvisual; welded bodies, bodies
welded to the world, mocap bodies, body fuse and gravcomp, world geoms and planes; joint,
actuator (gear) and single-joint tendon armature, with tendons and actuators on joints
inside ``<replicate>`` (MuJoCo copies them), unnamed and repeated names, unknown or missing
targets; ``<option gravity density viscosity>`` and ``<flag gravity>``. Now and then it
writes an invalid model on purpose (zero axes, a hinge after a ball, negative masses, ...),
and XML that tinyxml2 reads and libxml2 refuses (``xml_leniency``: ``--`` in a comment,
attributes with no space between them, "&" and "<" in a name, a NUL byte, elements or an
end tag after the root; text after the root, which MuJoCo refuses too).

* MuJoCo refuses a model: treedyn must raise ParseError too.
* MuJoCo compiles it: treedyn must give MuJoCo's model, as test_mjcf.compare_with_mujoco
  checks it (structure, qpos0, limits, every body's inertia, M, RNEA and ABA at 1e-9).

Left out, as documented differences or rounding: bodies whose inertial frame is within
MuJoCo's 1e-6 of the body frame without being on it ("simple" bodies); ABA where rounding
alone could move the accelerations by 2e-13 (then the rest is compared: see
aba_sensitivity); a fullinertia on the A + B >= C boundary; an aligned free body whose
principal frame rounding decides (see ambiguous_alignment).

The committed run is deterministic (``derandomize``) and takes about 30 s. To hunt for
bugs, run it long and random: ``FUZZ_EXAMPLES=5000 FUZZ_SEED=1 python -m pytest
tests/test_mjcf_fuzz.py`` (``FUZZ_SEED`` switches to random generation with that seed).
"""
from __future__ import annotations

import os
import re
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, note, seed, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from scipy.spatial import ConvexHull, QhullError

mujoco = pytest.importorskip("mujoco")

from test_mjcf import (  # noqa: E402
    TOL, check_inertia, check_structure, compare_with_mujoco, reference, states,
    relative_error,
)
from treedyn.engine import build_model, crba, rnea  # noqa: E402
from treedyn.parsers.errors import ParseError  # noqa: E402
from treedyn.parsers.mjcf import parse_mjcf  # noqa: E402
from treedyn.engine.rotations import quat_matrix  # noqa: E402
from treedyn.parsers.mjcf.geometry import BODY_TOLERANCE, principal_axes  # noqa: E402

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "450"))
FUZZ_SEED = os.environ.get("FUZZ_SEED")
SEED = 3  # of compare_with_mujoco's random states
# ABA is compared at 1e-9 only where rounding tau and the bias cannot move a by more than
# 2e-13 (relative): see aba_sensitivity (treedyn's ABA loses up to ~5e3 x that bound, a
# dense solve of M far less)
MAX_SENSITIVITY = 2e-13
ORIENTATIONS = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
GEOM_TYPES = ("sphere", "capsule", "cylinder", "box", "ellipsoid")
SIZE_COUNT = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}


# -- XML ------------------------------------------------------------------------------------


class El:
    """An XML element to write: tag, attributes in order, children."""

    def __init__(self, tag: str, attrs: dict | None = None, children: list | None = None):
        self.tag = tag
        self.attrs = dict(attrs or {})
        self.children = list(children or [])

    def render(self, indent: int = 0) -> str:
        pad = "  " * indent
        attrs = "".join(f' {key}="{value}"' for key, value in self.attrs.items())
        if not self.children:
            return f"{pad}<{self.tag}{attrs}/>\n"
        inner = "".join(child.render(indent + 1) for child in self.children)
        return f"{pad}<{self.tag}{attrs}>\n{inner}{pad}</{self.tag}>\n"


def fmt(*values: float) -> str:
    return " ".join(f"{float(v):.12g}" for v in values)


# -- strategies ------------------------------------------------------------------------------


def grid(draw, low: int, high: int, scale: float) -> float:
    """A number ``i / scale`` with integer i in [low, high] (short, exact in the text)."""
    return draw(st.integers(low, high)) / scale


def vector(draw, low: int, high: int, scale: float = 1.0, count: int = 3) -> list[float]:
    return [grid(draw, low, high, scale) for _ in range(count)]


class Generator:
    """Draws one MJCF document. It keeps what the default classes resolve to, so that most
    models are valid and well conditioned; some invalid ones are drawn on purpose (MuJoCo
    and treedyn must then both refuse them)."""

    def __init__(self, draw):
        self.draw = draw
        self.degree = True
        self.autolimits = True
        self.classes: dict[str, dict] = {"main": {"joint": {}, "geom": {}}}
        self.bodies = 0
        self.budget = draw(st.integers(1, 7))  # bodies in the model
        self.joint_names = 0
        self.body_names = 0
        self.meshes: list[str] = []
        self.scalar_joints: list[str] = []  # named hinges and slides
        self.ball_joints: list[str] = []  # named balls
        self.copies = 0  # depth of <replicate> being written
        # Names end in a digit in half the documents, so that a name can be another one
        # with a replicate suffix appended (j1, j10): MuJoCo checks names as it reads them,
        # before a replicate's suffixes, and references take a suffix when that name exists.
        self.name_end = draw(st.sampled_from(("", "a")))

    def rarely(self, one_in: int) -> bool:
        """True once in ``one_in`` draws (hypothesis favours 0 and the bounds, and shrinks
        towards 0, which must mean "not")."""
        return self.draw(st.integers(0, one_in - 1)) == (one_in + 1) // 2

    # -- numbers and orientations --

    def angle(self) -> float:
        if self.degree:
            return float(self.draw(st.integers(-180, 180)))
        return grid(self.draw, -31, 31, 10)

    def direction(self) -> list[float]:
        """A non-unit direction with small integer components; zero only now and then."""
        v = vector(self.draw, -2, 2)
        if not any(v) and not self.rarely(10):
            v = [1.0, 2.0, -1.0]
        return v

    def orientation(self) -> dict:
        draw = self.draw
        form = draw(st.sampled_from((None,) + ORIENTATIONS))
        if form is None:
            return {}
        if form == "quat":
            q = vector(draw, -3, 3, 1, 4)
            if not any(q) and not self.rarely(10):
                q = [1.0, 0.0, 0.0, 0.0]
            return {"quat": fmt(*q)}
        if form == "axisangle":
            return {"axisangle": fmt(*self.direction(), self.angle())}
        if form == "euler":
            return {"euler": fmt(self.angle(), self.angle(), self.angle())}
        if form == "xyaxes":
            x, y = self.direction(), self.direction()
            if np.linalg.norm(np.cross(x, y)) < 1e-9 and not self.rarely(10):
                y = list(np.cross(x, [0.0, 1.0, 0.5])) if any(x) else [0.0, 1.0, 0.0]
                if not any(y):
                    y = [0.0, 0.0, 1.0]
            return {"xyaxes": fmt(*x, *y)}
        return {"zaxis": fmt(*self.direction())}

    def pose(self, pos_range: int) -> dict:
        attrs = {}
        if self.draw(st.booleans()):
            attrs["pos"] = fmt(*vector(self.draw, -pos_range, pos_range, 10))
        attrs.update(self.orientation())
        return attrs

    # -- compiler, option --

    def compiler(self) -> El | None:
        draw = self.draw
        attrs: dict = {}
        if draw(st.booleans()):
            angle = draw(st.sampled_from(("radian", "degree")))
            attrs["angle"] = angle
            self.degree = angle == "degree"
        if draw(st.booleans()):
            attrs["eulerseq"] = "".join(draw(st.lists(st.sampled_from("xyzXYZ"), min_size=3,
                                                       max_size=3)))
        if self.rarely(4):
            attrs["inertiafromgeom"] = draw(st.sampled_from(("true", "false", "auto")))
        if self.rarely(5):
            low = 1 if self.rarely(4) else 0  # 1: most bodies without mass
            attrs["inertiagrouprange"] = f"{low} {draw(st.integers(max(low, 2), 5))}"
        if self.rarely(4):
            attrs["boundmass"] = fmt(grid(draw, 1, 10, 20))
        if self.rarely(4):
            attrs["boundinertia"] = fmt(grid(draw, 1, 10, 1000))
        if self.rarely(4):
            attrs["balanceinertia"] = draw(st.sampled_from(("true", "false")))
        if self.rarely(5):
            attrs["settotalmass"] = fmt(grid(draw, 1, 40, 2))
        if self.rarely(4):
            attrs["alignfree"] = draw(st.sampled_from(("true", "false")))
        if self.rarely(5):
            attrs["fusestatic"] = draw(st.sampled_from(("true", "false")))
        if self.rarely(8):
            attrs["fitaabb"] = draw(st.sampled_from(("true", "false")))
        if self.rarely(8):  # visual geoms (contype = conaffinity = 0) and their meshes
            attrs["discardvisual"] = draw(st.sampled_from(("true", "false")))
        if self.rarely(6):
            attrs["autolimits"] = draw(st.sampled_from(("true", "false")))
            self.autolimits = attrs["autolimits"] == "true"
        return El("compiler", attrs) if attrs else None

    def option(self) -> El | None:
        draw = self.draw
        attrs = {}
        children = []
        if draw(st.booleans()):
            attrs["gravity"] = fmt(*vector(draw, -10, 10))
        if self.rarely(8):
            children.append(El("flag", {"gravity": "disable"}))
        if self.rarely(12):  # a fluid: fusestatic keeps static bodies with mass
            attrs[draw(st.sampled_from(("density", "viscosity")))] = "1.2"
        return El("option", attrs, children) if attrs or children else None

    # -- defaults --

    def joint_attrs(self, kind: str | None) -> dict:
        """Optional joint attributes: pos, axis, ref, range/limited, armature."""
        draw = self.draw
        attrs: dict = {}
        if draw(st.booleans()):
            attrs["pos"] = fmt(*vector(draw, -2, 2, 10))
        if kind != "ball" and draw(st.booleans()):
            attrs["axis"] = fmt(*self.direction())
        if kind != "ball" and self.rarely(3):
            attrs["ref"] = fmt(grid(draw, -5, 5, 10) if kind == "slide" else self.angle() / 4)
        limit = draw(st.integers(0, 3))
        if limit:
            if kind == "ball":
                high = float(draw(st.integers(10, 170))) if self.degree else grid(draw, 2, 30, 10)
                attrs["range"] = fmt(0, high)
            elif kind == "slide":
                low = draw(st.integers(-5, 4))
                attrs["range"] = fmt(low / 10, draw(st.integers(low + 1, 6)) / 10)
            elif self.degree:
                low = draw(st.integers(-170, 160))
                attrs["range"] = fmt(low, draw(st.integers(low + 10, 170)))
            else:
                low = draw(st.integers(-30, 28))
                attrs["range"] = fmt(low / 10, draw(st.integers(low + 1, 30)) / 10)
            if limit >= 2 or not self.autolimits:
                attrs["limited"] = draw(st.sampled_from(("true", "false", "auto")))
        elif self.rarely(25):  # invalid on purpose: limited without a range
            attrs["limited"] = "true"
        if self.rarely(3):
            attrs["armature"] = fmt(grid(draw, 0, 10, 20))
        return attrs

    def geom_attrs(self, kind: str | None, in_default: bool) -> dict:
        """size (all the type needs, rarely fewer), mass or density, group, contype."""
        draw = self.draw
        attrs: dict = {}
        count = SIZE_COUNT.get(kind, 3)
        if not in_default or draw(st.booleans()):
            count = draw(st.integers(count, 3)) if not self.rarely(20) else 1
            attrs["size"] = fmt(*[grid(draw, 1, 6, 20) for _ in range(count)])
        if in_default and self.rarely(12):
            attrs["fromto"] = fmt(*vector(draw, -3, 3, 10, 3), *vector(draw, -3, 3, 10, 3))
        mass_form = draw(st.integers(0, 4))
        if mass_form == 1:
            attrs["mass"] = fmt(grid(draw, 0 if self.rarely(15) else 1, 20, 4))
        if mass_form == 2 or (mass_form == 1 and self.rarely(6)):
            attrs["density"] = fmt(draw(st.sampled_from((250, 500, 1000, 2000, 4000))))
        if self.rarely(5):
            attrs["shellinertia"] = "true"
        if self.rarely(4):
            attrs["group"] = str(draw(st.integers(0, 5)))
        if self.rarely(4):
            attrs["contype"] = str(draw(st.integers(0, 1)))
            attrs["conaffinity"] = str(draw(st.integers(0, 1)))
        return attrs

    def defaults(self) -> El | None:
        draw = self.draw
        if not draw(st.booleans()):
            return None
        main = El("default")
        self.fill_class("main", main)
        if self.rarely(4):  # the default of every actuator type
            main.children.append(El(self.draw(st.sampled_from(("motor", "general"))),
                                    {"armature": fmt(grid(draw, 1, 10, 50))}))
        pending = [("main", main)]
        for index in range(draw(st.integers(0, 4))):
            parent_name, parent_element = draw(st.sampled_from(pending))
            name = f"c{index}"
            element = El("default", {"class": name})
            parent = self.classes[parent_name]
            self.classes[name] = {"joint": dict(parent["joint"]), "geom": dict(parent["geom"])}
            self.fill_class(name, element)
            parent_element.children.append(element)
            pending.append((name, element))
        return main

    def fill_class(self, name: str, element: El) -> None:
        draw = self.draw
        cls = self.classes[name]
        if draw(st.booleans()):
            attrs = self.joint_attrs(None)
            if attrs:
                element.children.append(El("joint", attrs))
                cls["joint"].update(attrs)
        if draw(st.booleans()):
            attrs = {}
            if draw(st.booleans()):
                attrs["type"] = draw(st.sampled_from(GEOM_TYPES))
            attrs.update(self.geom_attrs(attrs.get("type"), True))
            pose = self.pose(2)
            if any(key in pose for key in ORIENTATIONS):  # replaces the parent's as a whole
                for key in ORIENTATIONS:
                    cls["geom"].pop(key, None)
            attrs.update(pose)
            if attrs:
                element.children.insert(0, El("geom", attrs))
                cls["geom"].update(attrs)

    def pick_class(self, active: str) -> tuple[dict, str]:
        """(class attribute for an element, the class it resolves to)."""
        if len(self.classes) > 1 and self.rarely(4):
            name = self.draw(st.sampled_from(sorted(self.classes)))
            return {"class": name}, name
        return {}, active

    def childclass(self, attrs: dict, active: str) -> str:
        if len(self.classes) > 1 and self.rarely(4):
            active = self.draw(st.sampled_from(sorted(self.classes)))
            attrs["childclass"] = active
        return active

    # -- elements of a body --

    def joint_plan(self, top_level: bool) -> list[str]:
        """The joint types of a body: free alone (top level), else up to 3 hinges and
        slides, or a ball with slides (a hinge beside a ball makes M singular); now and
        then an invalid extra joint."""
        draw = self.draw
        if top_level and self.rarely(4):
            plan = ["free"]
        else:
            plan = []
            for _ in range(draw(st.sampled_from((0, 1, 1, 1, 2, 2, 3)))):
                options = ["hinge", "slide"] + (["ball"] if not set(plan) - {"slide"} else [])
                kind = draw(st.sampled_from(options))
                if not (kind == "hinge" and "ball" in plan):
                    plan.append(kind)
        if self.rarely(80):  # invalid on purpose: both must refuse (or accept) it
            plan.insert(draw(st.integers(0, len(plan))),
                        draw(st.sampled_from(("hinge", "ball", "free"))))
        return plan

    def joint_name(self) -> dict:
        if self.rarely(4):
            return {}
        self.joint_names += 1
        return {"name": f"j{self.joint_names}{self.name_end}"}

    def joint(self, kind: str, active: str, used: dict) -> El:
        draw = self.draw
        if kind == "free":
            if draw(st.booleans()):
                attrs = self.joint_name()
                if self.rarely(3):
                    attrs["align"] = draw(st.sampled_from(("true", "false", "auto")))
                return El("freejoint", attrs)
            class_attrs, _ = self.pick_class(active)
            attrs = {**self.joint_name(), "type": "free", **class_attrs}
            if draw(st.booleans()):
                attrs["armature"] = fmt(grid(draw, 0, 10, 20))
            return El("joint", attrs)
        class_attrs, cls = self.pick_class(active)
        attrs = {**self.joint_name(), "type": kind, **class_attrs, **self.joint_attrs(kind)}
        if "name" in attrs:  # (inside <replicate>, MuJoCo copies what references it)
            (self.scalar_joints if kind != "ball" else self.ball_joints).append(attrs["name"])
        inherited = self.classes[cls]["joint"]
        if kind == "ball" and "range" not in attrs and "range" in inherited \
                and float(inherited["range"].split()[0]) != 0 and not self.rarely(10):
            attrs["range"] = fmt(0, 45.0 if self.degree else 0.8)  # the class's is a hinge's
        if kind in used:  # hinge and slide axes of one body must be independent
            axis = np.array([float(x) for x in
                             (attrs.get("axis") or inherited.get("axis") or "0 0 1").split()])
            previous = used[kind]
            if np.linalg.matrix_rank(np.array(previous + [axis]), tol=1e-9) <= len(previous):
                for candidate in ([1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, -1.0],
                                  [1.0, -1.0, 2.0]):
                    if np.linalg.matrix_rank(np.array(previous + [candidate]),
                                             tol=1e-9) > len(previous):
                        axis = np.array(candidate)
                        break
                attrs["axis"] = fmt(*axis)
            used[kind].append(axis)
        return El("joint", attrs)

    def geom(self, active: str, world: bool = False) -> El:
        draw = self.draw
        class_attrs, cls = self.pick_class(active)
        attrs: dict = dict(class_attrs)
        inherited = self.classes[cls]["geom"]
        kind = inherited.get("type", "sphere")
        if draw(st.booleans()):
            # planes: in the world; elsewhere rarely (only static bodies may have them)
            planes = ("plane",) if world or self.rarely(20) else ()
            kind = draw(st.sampled_from(GEOM_TYPES + planes))
            attrs["type"] = kind
        if kind == "plane":
            attrs["size"] = "1 1 0.1"
            return El("geom", attrs)
        if self.meshes and self.rarely(3):
            # a mesh geom, or a primitive fitted to the mesh
            kind = draw(st.sampled_from(("mesh",) + GEOM_TYPES))
            attrs.update({"type": kind, "mesh": draw(st.sampled_from(self.meshes))})
            if kind != "mesh" and self.rarely(3):
                attrs["fitscale"] = fmt(grid(draw, 5, 20, 10))
            mass = self.geom_attrs(kind, False)
            attrs.update({k: v for k, v in mass.items() if k not in ("size", "shellinertia")})
            attrs.update(self.pose(3))
            if "fromto" in inherited:
                attrs["type"] = "sphere"  # would be refused with a mesh
                del attrs["mesh"]
                attrs["size"] = "0.1"
            return El("geom", attrs)
        attrs.update(self.geom_attrs(kind, False))
        if self.rarely(150):  # invalid on purpose
            attrs[draw(st.sampled_from(("mass", "density")))] = "-1"
        if (kind != "sphere" or self.rarely(20)) and self.rarely(4):
            ends = vector(draw, -3, 3, 10, 6)
            if ends[:3] == ends[3:]:
                ends[5] += 0.2
            attrs["fromto"] = fmt(*ends)
            if kind in ("capsule", "cylinder") and draw(st.booleans()):
                attrs["size"] = attrs["size"].split()[0]  # the radius is all it needs
            if "pos" in inherited:
                attrs["pos"] = "0 0 0"
        else:
            attrs.update(self.pose(3))
        return El("geom", attrs)

    def inertial(self) -> El:
        draw = self.draw
        attrs = {"pos": fmt(*vector(draw, -2, 2, 10)), "mass": fmt(grid(draw, 1, 20, 4))}
        if self.rarely(3):
            diagonal = vector(draw, 8, 12, 100)
            off = vector(draw, -2, 2, 100)
            attrs["fullinertia"] = fmt(*diagonal, *off)
        else:
            low = 1 if self.rarely(8) else 4  # 1 to 8: may break A + B >= C
            attrs["diaginertia"] = fmt(*vector(draw, low, 8, 100))
            attrs.update(self.orientation())
        return El("inertial", attrs)

    def body(self, active: str, top_level: bool, depth: int) -> El:
        draw = self.draw
        self.bodies += 1
        attrs: dict = {}
        if not self.rarely(4):
            self.body_names += 1
            attrs["name"] = f"b{self.body_names}{self.name_end}"
        attrs.update(self.pose(5))
        active = self.childclass(attrs, active)
        plan = self.joint_plan(top_level)
        if top_level and not plan and self.rarely(10):
            attrs["mocap"] = "true"
        if self.rarely(12):  # fusestatic keeps fuse="false", and another gravcomp
            if draw(st.booleans()):
                attrs["fuse"] = draw(st.sampled_from(("false", "auto")))
            else:
                attrs["gravcomp"] = draw(st.sampled_from(("0", "0.5", "1")))
        # tokens in document order: joints (in plan order), geoms, inertial, child bodies
        tokens: list = [("joint", kind) for kind in plan]
        geoms = draw(st.sampled_from((0, 1, 1, 1, 2, 3) if plan else (0, 1, 2)))
        for _ in range(geoms):
            tokens.insert(draw(st.integers(0, len(tokens))), ("geom", None))
        if self.rarely(5) or (plan and not geoms and not self.rarely(15)):
            tokens.insert(draw(st.integers(0, len(tokens))), ("inertial", None))
        children = 0
        while self.bodies + children < self.budget and depth < 5 and not self.rarely(3):
            tokens.insert(draw(st.integers(0, len(tokens))), ("body", None))
            children += 1
        used: dict = {"hinge": [], "slide": []}  # axes of this body's joints so far
        return El("body", attrs, self.emit(tokens, active, used, False, depth))

    def emit(self, tokens: list, active: str, used: dict, world: bool, depth: int,
             frames: int = 0) -> list[El]:
        """The elements of ``tokens`` in order; now and then a contiguous run of them is
        wrapped in a <frame> (whose childclass applies to what it contains)."""
        draw = self.draw
        if tokens and frames < 2 and self.rarely(4):
            start = draw(st.integers(0, len(tokens) - 1))
            stop = draw(st.integers(start + 1, len(tokens)))
            before = self.emit(tokens[:start], active, used, world, depth, 2)
            attrs = self.pose(3)
            inner_class = self.childclass(attrs, active)
            inner = self.emit(tokens[start:stop], inner_class, used, world, depth, frames + 1)
            after = self.emit(tokens[stop:], active, used, world, depth, 2)
            return before + [El("frame", attrs, inner)] + after
        copyable = [i for i, (kind, _) in enumerate(tokens) if kind in ("geom", "body")]
        if copyable and frames < 2 and self.bodies < self.budget and self.rarely(8):
            # <replicate>: geoms and bodies only (joints cannot be its direct children)
            start = draw(st.sampled_from(copyable))
            stop = start + 1
            if stop in copyable and draw(st.booleans()):
                stop += 1
            before = self.emit(tokens[:start], active, used, world, depth, 2)
            attrs = {"count": str(draw(st.integers(2, 3))),
                     "offset": fmt(*vector(draw, -3, 3, 10))}
            if draw(st.booleans()):
                attrs["euler"] = fmt(self.angle(), self.angle(), self.angle())
            if draw(st.booleans()):
                attrs["sep"] = "_"
            self.copies += 1
            inner = self.emit(tokens[start:stop], active, used, world, depth, 2)
            self.copies -= 1
            after = self.emit(tokens[stop:], active, used, world, depth, 2)
            return before + [El("replicate", attrs, inner)] + after
        elements = []
        for kind, detail in tokens:
            if kind == "joint":
                elements.append(self.joint(detail, active, used))
            elif kind == "geom":
                elements.append(self.geom(active, world))
            elif kind == "inertial":
                elements.append(self.inertial())
            else:
                elements.append(self.body(active, world, depth + 1))
        return elements

    def worldbody(self) -> El:
        draw = self.draw
        tokens: list = [("geom", None)] * draw(st.sampled_from((0, 0, 1, 2)))
        bodies = 1
        while bodies < self.budget and not self.rarely(2):
            bodies += 1
        for _ in range(bodies):
            tokens.insert(draw(st.integers(0, len(tokens))), ("body", None))
        return El("worldbody", {}, self.emit(tokens, "main", {}, True, 0))

    def assets(self) -> El | None:
        """Now and then, meshes given by their vertices (MuJoCo takes their convex hull) and
        sometimes faces, some turned over; some flat. MuJoCo compiles every mesh and every
        geom: a flat mesh, one whose faces turn inconsistently under inertia="exact", or a
        capsule fitted to a mesh with a length <= 0 (fitaabb) is refused even where no
        inertia needs it."""
        draw = self.draw
        if not self.rarely(4):
            return None
        asset = El("asset")
        for index in range(draw(st.integers(1, 2))):
            points = [vector(draw, -20, 20, 100) for _ in range(draw(st.integers(4, 10)))]
            attrs = {"name": f"m{index}", "vertex": " ".join(fmt(*p) for p in points)}
            if draw(st.booleans()):
                attrs["inertia"] = draw(st.sampled_from(("convex", "exact", "legacy", "shell")))
            if self.rarely(3):  # faces: the hull's triangles, some turned over
                try:
                    hull = ConvexHull(np.array(points))
                except (QhullError, ValueError):
                    hull = None
                faces = [] if hull is None else [  # qhull's, wound outwards
                    list(face) if np.cross(*(np.array(points)[face[1:]] - points[face[0]]))
                    @ normal[:3] > 0 else list(face[::-1])
                    for face, normal in zip(hull.simplices, hull.equations)]
                faces = [face[::-1] if self.rarely(4) else face for face in faces]
                if faces:
                    attrs["face"] = " ".join(str(i) for face in faces for i in face)
            if self.rarely(3):
                attrs["scale"] = fmt(*vector(draw, 5, 20, 10))
            if self.rarely(4):
                attrs["refpos"] = fmt(*vector(draw, -1, 1, 10))
            if self.rarely(4):
                attrs["refquat"] = fmt(1, *vector(draw, -1, 1, 2))
            if self.rarely(5):
                attrs["maxhullvert"] = str(draw(st.integers(4, 8)))
            asset.children.append(El("mesh", attrs))
            self.meshes.append(attrs["name"])
        return asset

    def actuation(self) -> list[El]:
        """Now and then, fixed tendons and actuators with armature on named hinges and
        slides (joint armature + actuator armature gear^2 + tendon armature coef^2); rarely
        a tendon over two joints with armature, which treedyn refuses by design."""
        draw = self.draw
        if not self.scalar_joints or not self.rarely(3):
            return []  # (balls are targets only beside hinges and slides, for simplicity)
        tendon, actuator = El("tendon"), El("actuator")
        for index in range(draw(st.integers(0, 2))):
            joints = [draw(st.sampled_from(self.scalar_joints))]
            if self.rarely(6):
                joints.append(draw(st.sampled_from(self.scalar_joints)))
            children = [El("joint", {"joint": name, "coef": fmt(grid(draw, -4, 4, 2) or 1)})
                        for name in joints]
            attrs = {"name": f"t{index}"}
            if self.rarely(3):
                del attrs["name"]
            elif self.rarely(12) and index:  # repeated: refused
                attrs["name"] = "t0"
            if draw(st.booleans()):
                attrs["armature"] = fmt(grid(draw, 1, 10, 20))
            tendon.children.append(El("fixed", attrs, children))
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(("motor", "general", "position")))
            attrs = {}
            named = [t.attrs["name"] for t in tendon.children if "name" in t.attrs]
            if named and self.rarely(4):
                attrs["tendon"] = draw(st.sampled_from(named))
                if self.rarely(5):  # both: the tendon is the transmission
                    attrs["joint"] = draw(st.sampled_from(self.scalar_joints))
            elif self.rarely(15):  # refused: no transmission, or an unknown target
                attrs.update(draw(st.sampled_from(({}, {"joint": "nojoint"},
                                                   {"tendon": "notendon"}))))
            elif self.ball_joints and self.rarely(5):
                attrs["joint"] = draw(st.sampled_from(self.ball_joints))
            else:
                attrs["joint"] = draw(st.sampled_from(self.scalar_joints))
            if draw(st.booleans()):
                gear = [grid(draw, -6, 6, 2) or 1]
                if attrs.get("joint") in self.ball_joints:
                    gear += vector(draw, -2, 2, 2)
                attrs["gear"] = fmt(*gear)
            if not self.rarely(4):
                attrs["armature"] = fmt(grid(draw, 0, 10, 50))
            if kind == "position":
                attrs["kp"] = "10"
            if self.rarely(15):
                attrs["name"] = "act"  # refused when repeated
            actuator.children.append(El(kind, attrs))
        return [section for section in (tendon, actuator) if section.children]

    def document(self) -> str:
        root = El("mujoco", {"model": "fuzz"})
        for element in (self.compiler(), self.option(), self.defaults(), self.assets()):
            if element is not None:
                root.children.append(element)
        root.children.append(self.worldbody())
        root.children.extend(self.actuation())
        return root.render()


@st.composite
def mjcf_documents(draw) -> str:
    text = Generator(draw).document()
    if draw(st.integers(0, 5)) == 0:
        text = xml_leniency(draw, text)
    return text


# XML tinyxml2 (MuJoCo's reader) reads and libxml2 refuses, and text after the root, which
# both refuse
AFTER_ROOT = ("\0 <not xml & <<", '<extra x="1"><y/></extra>', "</mujoco> & < anything",
              "<!-- a -- b --->", "text after the root")


def xml_leniency(draw, text: str) -> str:
    """``text`` with one or more of: a comment holding ``--``, attributes with no space
    between them, "&" and "<" in the model's name, nodes after the root element."""
    kinds = draw(st.lists(st.sampled_from(("comment", "unspaced", "name", "after")),
                          min_size=1, max_size=4, unique=True))
    if "unspaced" in kinds:
        text = re.sub(r'" (?=[a-z]+=)', '"', text, count=draw(st.integers(1, 40)))
    if "name" in kinds:
        text = text.replace('model="fuzz"', 'model="f&u<z z&amp;"', 1)
    if "comment" in kinds:
        cut = draw(st.sampled_from([m.end() for m in re.finditer(r"/>", text)] or [0]))
        text = text[:cut] + "<!-- tinyxml2 -- reads this ---->" + text[cut:]
    if "after" in kinds:
        text += "\n" + draw(st.sampled_from(AFTER_ROOT)) + "\n"
    return text


# -- the test ------------------------------------------------------------------------------


def near_simple(m) -> bool:
    """Whether a body's inertial frame is within MuJoCo's 1e-6 of its body frame (its
    orientation, or its whole pose) without being on it: MuJoCo then computes with the
    body frame ("sameframe", "simple" bodies), a documented difference."""
    identity = np.array([1.0, 0.0, 0.0, 0.0])
    for i in range(1, m.nbody):
        ipos, iquat = m.body_ipos[i], m.body_iquat[i]
        quat_near = (np.all(np.abs(iquat - identity) < 1e-6)
                     or np.all(np.abs(iquat + identity) < 1e-6))
        quat_exact = np.array_equal(iquat, identity) or np.array_equal(iquat, -identity)
        pos_near, pos_exact = np.all(np.abs(ipos) < 1e-6), not np.any(ipos)
        if quat_near and (not quat_exact or (pos_near and not pos_exact)):
            return True
    return False


def aba_sensitivity(m, model, seed: int) -> float:
    """How far any forward-dynamics solve of these states must be from a, relative:
    ||M^-1|| max(|tau|, |bias|) eps / max|a| (rounding tau and the bias, then solving)."""
    worst = 0.0
    for _q, _v, a, M, tau, bias in states(m, model, seed):
        try:
            inverse = np.linalg.norm(np.linalg.inv(M), 2)
        except np.linalg.LinAlgError:
            return np.inf
        scale = max(np.abs(tau).max(), np.abs(bias).max())
        worst = max(worst, inverse * scale * np.finfo(float).eps / np.abs(a).max())
    return worst


def compare_without_aba(m, description, model, seed: int) -> None:
    """compare_with_mujoco for a model whose ABA the 1e-9 test cannot judge."""
    check_structure(m, model)
    check_inertia(m, description, model)
    for q, v, a, M, tau, _bias in states(m, model, seed):
        assert relative_error(crba(model, q), M) <= TOL
        assert relative_error(rnea(model, q, v, a), tau) <= TOL


def on_triangle_boundary(description) -> bool:
    """Whether a body's compiled principal moments satisfy A + B >= C only within
    rounding (1e-12 relative): MuJoCo's eigenvalues of such an inertia may break it by an
    ulp where treedyn's do not (treedyn also gives computed moments that much slack)."""
    for link in description.links:
        moments = np.linalg.eigvalsh(link.inertia.inertia)
        if moments.max() > 0 and moments[0] + moments[1] - moments[2] <= 1e-12 * moments.max():
            return True
    return False


def ambiguous_alignment(text: str, directory: str) -> bool:
    """Whether alignfree turns a free body to a principal frame that rounding decides.

    A body whose inertia has tied entries (equal off-diagonals, say, from a cylinder at
    zaxis="1 -1 1", or two equal moments) has principal axes that the Jacobi iteration
    picks by the last bits of the summed geom inertias, which are not bit-identical in
    treedyn and MuJoCo: treedyn's frame can come out turned (by a half turn about a
    principal axis, or about the symmetry axis), and with alignfree that is the body frame
    (qpos0's quaternion). Detected by perturbing the body's inertia (compiled without
    alignment) by 1e-13 relative."""
    if 'align="true"' not in text and 'alignfree="true"' not in text:
        return False
    unaligned = os.path.join(directory, "unaligned.xml")
    with open(unaligned, "w") as stream:
        stream.write(text.replace('align="true"', 'align="false"')
                     .replace('alignfree="true"', 'alignfree="false"'))
    m = mujoco.MjModel.from_xml_path(unaligned)
    rng = np.random.default_rng(0)
    for body in range(1, m.nbody):
        first = m.body_jntadr[body]
        if m.body_jntnum[body] != 1 or m.jnt_type[first] != mujoco.mjtJoint.mjJNT_FREE:
            continue
        rotation = quat_matrix(m.body_iquat[body])
        inertia = rotation @ np.diag(m.body_inertia[body]) @ rotation.T
        frame = quat_matrix(principal_axes(inertia, BODY_TOLERANCE)[1])
        for _ in range(8):
            noise = rng.normal(size=(3, 3)) * 1e-13 * np.abs(inertia).max()
            turned = quat_matrix(principal_axes(inertia + noise + noise.T, BODY_TOLERANCE)[1])
            if np.abs(turned - frame).max() > 1e-6:
                return True
    return False


def check_document(text: str, directory: str) -> str:
    """Compare one document: "refused" (both refuse it), "skipped" (a documented or
    rounding-level difference), "compared", "no ABA" (compared without ABA: see
    aba_sensitivity)."""
    path = os.path.join(directory, "model.xml")
    with open(path, "w") as stream:
        stream.write(text)
    try:
        m = reference(path)
    except ValueError as error:
        if currently_in_test_context():
            note(f"MuJoCo refuses it: {error}")
        if "A + B >= C" in str(error):
            try:
                description = parse_mjcf(path)
            except ParseError:
                return "refused"
            assert on_triangle_boundary(description), "treedyn accepts an inertia MuJoCo refuses"
            return "skipped"
        with pytest.raises(ParseError):
            parse_mjcf(path)
        return "refused"
    try:
        description = parse_mjcf(path)
    except ParseError as error:
        # refused by design: armature on a tendon over several joints
        if "spans several joints" in error.problem:
            return "refused"
        raise  # treedyn refuses a model MuJoCo compiles
    if near_simple(m) or ambiguous_alignment(text, directory):
        return "skipped"
    model = build_model(description)
    if m.nq and 0 < np.abs(model.q_neutral - m.qpos0).max() <= 1e-9 and "align" in text:
        # an aligned free body's frame from a mesh's principal axes (found to 1e-7, so
        # rounding moves them by up to ~1e-11): a rounding-level difference
        return "skipped"
    with_aba = not m.nv or aba_sensitivity(m, model, SEED) <= MAX_SENSITIVITY
    if not with_aba:
        compare_without_aba(m, description, model, SEED)
        return "no ABA"
    compare_with_mujoco(path, seed=SEED)
    return "compared"


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="mjcf_fuzz_") as directory:
        yield directory


def _settings():
    return settings(max_examples=EXAMPLES, deadline=None, derandomize=FUZZ_SEED is None,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@_settings()
@given(text=mjcf_documents())
def test_random_mjcf_matches_mujoco(workdir, text):
    note(text)
    outcome = check_document(text, workdir)
    event(outcome)
    assume(outcome != "skipped")


if FUZZ_SEED is not None:
    test_random_mjcf_matches_mujoco = seed(int(FUZZ_SEED))(test_random_mjcf_matches_mujoco)
