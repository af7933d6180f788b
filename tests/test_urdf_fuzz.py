"""Differential fuzzing of the URDF reader and the dynamics against Pinocchio.

Hypothesis writes random URDF documents -- trees of up to 18 links with several children
per link (so the byte-wise joint-name order of siblings matters; names mix case, digits,
underscores and a few escaped or non-ASCII characters), every joint type urdfdom has,
chains of fixed joints (at the root, in the middle, at the leaves) merging inertia,
massless links and links without ``<inertial>``, rotated joint and inertial origins with
large angles, unnormalised axes in any direction, limits (lower > upper too), mimic tags,
decoy duplicate elements (urdfdom and the parser read the first), comments, the number
spellings urdfdom reads -- and compares, fixed base and with a free-flyer root
(``pin.JointModelFreeFlyer()``, ours through ``with_free_flyer()``), treedyn's model with
``pin.buildModelFromXML``'s: joint names and order, nq, nv, nv per joint, nv_subtree and
masses exactly; tau (RNEA), M (CRBA) and a (ABA) at random states within the limits, with
external forces on every body, to ``max|ours - ref| / max|ref| <= 1e-9`` with
``test_pinocchio``'s joint mapping and measure (see ``WELL_CONDITIONED`` for a).

Some documents are broken on purpose (``MUTATIONS``), each in a way the parser's docstring
says how it treats: urdfdom refuses a revolute or prismatic joint without ``<limit>`` and
a ``<limit>`` without effort or velocity, which the parser reads with a note, as are an
empty ``<dynamics>``, a ``<safety_controller>`` without k_velocity and a number urdfdom
cannot read in a joint's elements; the parser refuses a zero axis (or one whose length
overflows), an ``<inertia>`` without one of its attributes, and a ``<mimic>`` without
``joint``; an inertial number urdfdom cannot read (whitespace after it) and an
``<inertial>`` without ``<mass>`` or ``<inertia>`` are read as Pinocchio reads them, with
a note, and the dynamics must stay Pinocchio's. XML that tinyxml2 reads and libxml2
refuses (``XML_MUTATIONS``: ``--`` in a comment, attributes with no space between them,
``<`` and a bare ``&`` in names, a NUL byte or whole elements after the root) must give
Pinocchio's model; what tinyxml2 refuses after the root (text) must stay refused. A document Pinocchio refuses for a reason no mutation made passes if we
refuse it or note it, and fails otherwise: a file ROS and Pinocchio cannot load must not
pass dyn silently.

The committed run is derandomized and sized for about half a minute. To fuzz::

    TREEDYN_URDF_FUZZ=5000 pytest tests/test_urdf_fuzz.py -p no:cacheprovider

(random, 5000 examples per test; failures are shrunk, which can take minutes).

Kept out of the generator:

* planar axes other than +z (README, "Planar joints": Pinocchio ignores the axis, treedyn
  takes it as the plane normal; ``0 0 -1`` too differs);
* ``<robot version>`` (test_urdf_parser checks each spelling against Pinocchio);
* joints named ``universe``, Pinocchio's own name for its world (a joint named
  ``root_joint`` is generated: with the free-flyer dyn names its root ``root_joint_``
  then, and Pinocchio is built with that ``root_joint_name``);
* axes shorter than ~1e-154 (Pinocchio keeps the axis as Eigen normalises it, no longer of
  unit length when its squared norm is subnormal; our engine renormalises it);
* literal tabs and line breaks in joint names: a disagreement the fuzzer found, not
  fixed yet (strict xfail ``test_whitespace_in_joint_names``). The other one, an axis whose
  squared length overflows, is fixed (ba108c2; ``test_urdf_parser``) and generated here
  (mutation ``huge_axis``).
"""
from __future__ import annotations

import math
import os
import re
from xml.sax.saxutils import escape

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

pin = pytest.importorskip("pinocchio")

from test_pinocchio import TOL, Mapping, relative_error  # noqa: E402
from treedyn.engine import aba, build_model, crba, rnea  # noqa: E402
from treedyn.parsers.errors import ParseError  # noqa: E402
from treedyn.parsers.urdf import parse_urdf_string  # noqa: E402

FUZZ = int(os.environ.get("TREEDYN_URDF_FUZZ", "0"))
FUZZ_SETTINGS = settings(
    derandomize=not FUZZ, max_examples=FUZZ or 120, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
    print_blob=bool(FUZZ))
STATES = 2
# test_pinocchio's rule for a: forward error 1e-9 where M is well conditioned, else a
# backward error of 1e-9 (with Pinocchio's M and h). Random trees need the switch lower
# than its 1e8: at cond(M) = 2e6 both libraries' a are 2e-9 from an exact solve (so 4e-9
# apart) with backward errors of 1e-11.
WELL_CONDITIONED = 1e5
# cond(M) above which M is singular to working precision (a massless subtree, which random
# trees make often): Pinocchio's a is then nan where it divides by an exact zero and ours
# huge where rounding left 1e-17 in its place, both meaningless
SINGULAR = 1e12

# -- numbers, as urdfdom reads them (strToDouble: std::istringstream, classic locale) --


def spell(draw, x: float) -> str:
    """One of the spellings of ``x`` that both readers take to the same double."""
    style = draw(st.sampled_from(("repr", "repr", "repr", "exp", "EXP", "plus", "dot", "lead",
                                  "tab", "long")))
    text = repr(float(x))
    if style == "exp":
        text = f"{x:.17e}"
    elif style == "EXP":
        text = f"{x:.16E}"
    elif style == "plus" and not text.startswith("-"):
        text = "+" + text
    elif style == "dot" and text.startswith(("0.", "-0.")) and "e" not in text:
        text = text.replace("0.", ".", 1)  # ".25", "-.25"
    elif style == "dot" and text.endswith(".0"):
        text = text[:-1]  # "2."
    elif style == "lead":
        text = " " + text  # urdfdom skips whitespace before a number, not after
    elif style == "tab":
        text = "&#9;" + text  # a tab libxml2 keeps (a literal one it makes a space)
    elif style == "long":
        text = f"{x:.25g}"
    return text


def spell_vector(draw, values) -> str:
    """Three numbers separated by one or more spaces, maybe with spaces around them."""
    gap = draw(st.sampled_from((" ", " ", "  ")))
    text = gap.join(spell(draw, v) for v in values)
    return draw(st.sampled_from(("", " "))) + text + draw(st.sampled_from(("", " ")))


def floats(low: float, high: float):
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


# (strategies are built once: Hypothesis validates every new one, which cost half the run)
SPECIAL_ANGLES = (0.0, math.pi / 2, -math.pi / 2, math.pi, -math.pi, 2 * math.pi, 1e-12)
ANGLES = st.one_of(floats(-math.pi, math.pi), floats(-30.0, 30.0),
                   st.sampled_from(SPECIAL_ANGLES), floats(-1e6, 1e6))


# -- names ----------------------------------------------------------------------------

NAME_CHARS = "abcdefgABCDEFG_0123456789"
# escaped in the XML; UTF-8 bytes sort as code points. No tab or line break: libxml2 makes
# them spaces, urdfdom does not (test_whitespace_in_joint_names)
ODD_CHARS = "xyzXYZ-. é日&<>\"'"
_PLAIN = st.text(st.sampled_from(NAME_CHARS), min_size=1, max_size=5)
NAMES = st.one_of(_PLAIN, _PLAIN, _PLAIN, st.text(st.sampled_from(NAME_CHARS + ODD_CHARS),
                                                  min_size=1, max_size=5),
                  st.sampled_from(("base_link", "world", "a", "A", "_", "0", "Z", "universe")))
JOINT_NAMES = st.one_of(NAMES, st.just("root_joint")).filter(lambda name: name != "universe")


def attr(value: str) -> str:
    return '"' + escape(value, {'"': "&quot;"}) + '"'


# -- the document ---------------------------------------------------------------------

JOINT_KINDS = ("revolute", "continuous", "prismatic", "fixed", "fixed", "floating", "planar")
AXES = ((1, 0, 0), (0, 1, 0), (0, 0, 1), (-1, 0, 0), (0, -1, 0), (0, 0, -1))
# broken on purpose -> what the parser promises: "refused": Pinocchio refuses, we read it
# with a note; "error": we refuse it (Pinocchio may load it); "zeroed": both load it and
# we note it, with Pinocchio's numbers
MUTATIONS = {
    "no_limit": "refused", "no_effort": "refused", "no_velocity": "refused",
    "empty_dynamics": "refused", "safety_without_k_velocity": "refused",
    "unreadable_joint_number": "refused",
    "zero_axis": "error", "huge_axis": "error", "mimic_without_joint": "error",
    "no_inertia_attribute": "error",
    "unreadable_number": "zeroed",  # Pinocchio loads it, our numbers must be its numbers
    "no_mass": "noted", "no_inertia": "noted",  # read as Pinocchio reads them, with a note
}
# XML tinyxml2 reads and libxml2 refuses -> "same": Pinocchio's model; "xml_error": both refuse
XML_MUTATIONS = {
    "double_hyphen_comment": "same", "unspaced_attributes": "same", "bare_names": "same",
    "nul_after_root": "same", "elements_after_root": "same", "end_tag_after_root": "same",
    "text_after_root": "xml_error",
}
NOTED = "urdfdom logs an error"
INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def origin(draw, tag="origin") -> str:
    parts = draw(st.sampled_from(("none", "xyz", "rpy", "both", "both", "both", "empty")))
    if parts == "none":
        return ""
    if parts == "empty":
        return f"<{tag}/>"
    text = f"<{tag}"
    if parts in ("xyz", "both"):
        text += f' xyz="{spell_vector(draw, [draw(floats(-1.5, 1.5)) for _ in range(3)])}"'
    if parts in ("rpy", "both"):
        text += f' rpy="{spell_vector(draw, [draw(ANGLES) for _ in range(3)])}"'
    return text + "/>"


def axis(draw, kind: str) -> str:
    if kind == "planar":  # Pinocchio's plane is the joint's xy plane whatever the axis
        choice = draw(st.sampled_from(("none", "z", "scaled")))
        if choice == "none":
            return ""
        scale = 1.0 if choice == "z" else draw(floats(1e-3, 1e3))
        return f'<axis xyz="{spell_vector(draw, [0.0, 0.0, scale])}"/>'
    choice = draw(st.sampled_from(("none", "aligned", "scaled", "random", "random", "random")))
    if choice == "none":
        return ""  # urdfdom's default (1, 0, 0)
    if choice == "aligned":
        vector = np.array(draw(st.sampled_from(AXES)), dtype=float)
    elif choice == "scaled":
        vector = np.array(draw(st.sampled_from(AXES)), dtype=float) * draw(floats(1e-3, 1e3))
    else:
        vector = np.array([draw(floats(-3.0, 3.0)) for _ in range(3)])
        assume(np.linalg.norm(vector) > 1e-3)
    return f'<axis xyz="{spell_vector(draw, vector)}"/>'


LIMIT_VALUES = st.one_of(floats(-4, 4), floats(-1e3, 1e3))


def limit(draw, kind: str) -> str:
    if kind == "continuous" and draw(st.booleans()):
        return ""
    if kind not in ("revolute", "prismatic", "continuous") and draw(st.integers(0, 3)):
        return ""
    text = "<limit"
    for key in ("lower", "upper"):
        if draw(st.integers(0, 5)):  # absent: 0
            text += f' {key}="{spell(draw, draw(LIMIT_VALUES))}"'
    text += f' effort="{spell(draw, draw(floats(0.0, 100.0)))}"'
    text += f' velocity="{spell(draw, draw(floats(0.0, 100.0)))}"'
    return text + "/>"


def inertia_tensor(draw) -> np.ndarray:
    """R diag(moments) R^T with moments from a mass distribution (triangle inequality)."""
    second = np.array([draw(floats(1e-3, 1.0)) for _ in range(3)])
    moments = second.sum() - second
    rotation = pin.rpy.rpyToMatrix(*[draw(ANGLES) for _ in range(3)])
    return rotation @ np.diag(moments) @ rotation.T


MASSES = st.one_of(floats(0.05, 20.0), st.just(1.0))


def inertial(draw, massless: bool) -> str:
    """An <inertial> (or none); ``massless`` allows links without mass or rotational
    inertia, which often make M singular (then there is no acceleration to compare)."""
    kind = draw(st.sampled_from(("none", "full", "full", "full", "full", "zero", "point",
                                 "rotor") if massless else ("full",)))
    if kind == "none":
        return ""
    mass = 0.0 if kind in ("zero", "rotor") else draw(MASSES)
    if mass and draw(st.integers(0, 7)) == 0:
        mass *= 10.0 ** draw(st.integers(-4, 3))  # ill-conditioned M: the backward-error rule
    tensor = (np.zeros((3, 3)) if kind in ("zero", "point")
              else (mass or 1.0) * inertia_tensor(draw))
    values = dict(zip(INERTIA_KEYS,
                      (tensor[0, 0], tensor[0, 1], tensor[0, 2], tensor[1, 1], tensor[1, 2],
                       tensor[2, 2])))
    text = "<inertial>" + origin(draw)
    text += f'<mass value="{spell(draw, mass)}"/>'
    text += "<inertia" + "".join(f' {k}="{spell(draw, v)}"' for k, v in values.items()) + "/>"
    return text + "</inertial>"


DECOYS = ('<origin xyz="9 9 9" rpy="1 2 3"/>', '<axis xyz="0.3 0.4 0.5"/>',
          '<limit lower="-7" upper="7" effort="1" velocity="1"/>', '<parent link="nowhere"/>',
          '<child link="nowhere"/>')
DECOY_INERTIAL = ('<inertial><mass value="123"/><inertia ixx="9" ixy="0" ixz="0" iyy="9" '
                  'iyz="0" izz="9"/></inertial>')


def mutate(draw, mutation: str, links: list[str], joints: list[list]) -> None:
    """Break one of ``links`` or ``joints`` ([name, kind, parts]) in place as ``mutation``
    says."""
    def limited(joint):
        return any(part.startswith("<limit") for part in joint[2])

    applicable = {
        "no_limit": lambda j: j[1] in ("revolute", "prismatic") and limited(j),
        "no_effort": limited, "no_velocity": limited,
        "zero_axis": lambda j: j[1] not in ("fixed", "floating"),
        "huge_axis": lambda j: j[1] not in ("fixed", "floating"),
    }.get(mutation, lambda j: True)
    candidates = [joint for joint in joints if applicable(joint)]
    assume(candidates)
    parts = draw(st.sampled_from(candidates))[2]
    with_limit = [i for i, part in enumerate(parts) if part.startswith("<limit")][:1]
    bodies = [i for i, link in enumerate(links) if "<inertial>" in link]
    if mutation == "no_limit":
        parts[:] = [p for p in parts if not p.startswith("<limit")]  # a decoy one too
    elif mutation in ("no_effort", "no_velocity"):
        key = mutation[3:]
        part = parts[with_limit[0]]
        start = part.index(f" {key}=")
        parts[with_limit[0]] = part[:start] + part[part.index('"', start + len(key) + 3) + 1:]
    elif mutation in ("zero_axis", "huge_axis"):
        if mutation == "zero_axis":
            xyz = draw(st.sampled_from(("0 0 0", "0.0 -0 +0", "0 0 0.0e5")))
        else:  # its squared length overflows (before ba108c2: a silent zero axis, nan dynamics)
            scale = 10.0 ** draw(st.integers(155, 300))
            xyz = spell_vector(draw, scale * np.array(draw(st.sampled_from(AXES)), dtype=float))
        parts[:] = [f'<axis xyz="{xyz}"/>'] + [p for p in parts if not p.startswith("<axis")]
    elif mutation == "mimic_without_joint":
        parts.insert(0, "<mimic/>")
    elif mutation == "empty_dynamics":  # urdfdom reads a joint's first <dynamics>
        parts.insert(0, "<dynamics/>")
    elif mutation == "safety_without_k_velocity":
        parts.insert(0, '<safety_controller k_position="1" soft_upper_limit="0.5"/>')
    elif mutation == "unreadable_joint_number":  # whitespace after it, in the first <limit>
        space = draw(st.sampled_from((" ", "&#9;", "&#10;")))
        if with_limit and draw(st.booleans()):
            part = parts[with_limit[0]]
            cut = draw(st.sampled_from([m.end(1) for m in re.finditer(r'="([^"]*)', part)]))
            parts[with_limit[0]] = part[:cut] + space + part[cut:]
        else:
            key = draw(st.sampled_from(("rising", "falling")))
            parts.insert(0, f'<calibration {key}="0.25{space}"/>')
    else:  # in the first <inertial> of a link
        assume(bodies)
        i = draw(st.sampled_from(bodies))
        start = links[i].index("<inertial>")
        end = links[i].index("</inertial>", start)
        inertial = links[i][start:end]
        if mutation == "no_mass":
            inertial = re.sub(r"<mass [^>]*/>", "", inertial)
        elif mutation == "no_inertia":
            inertial = re.sub(r"<inertia [^>]*/>", "", inertial)
        elif mutation == "no_inertia_attribute":
            key = draw(st.sampled_from(INERTIA_KEYS))
            inertial = re.sub(rf' {key}="[^"]*"', "", inertial)
        elif mutation == "unreadable_number":  # urdfdom stops there, Pinocchio zeroes the rest
            key = draw(st.sampled_from(("xyz", "rpy", "value", *INERTIA_KEYS)))
            match = re.search(rf' {key}="([^"]*)"', inertial)
            assume(match)
            value = match.group(1)
            if key in ("xyz", "rpy"):  # a tab between numbers or after the last
                words = value.split()
                cut = draw(st.integers(1, 3))
                value = " ".join(words[:cut]) + "&#9;" + " ".join(words[cut:])
            else:  # whitespace after the number
                value = value + draw(st.sampled_from((" ", "&#9;", "&#10;", "&#13;&#10;")))
            inertial = inertial[:match.start(1)] + value + inertial[match.end(1):]
        links[i] = links[i][:start] + inertial + links[i][end:]


def mutate_xml(draw, mutation: str, text: str) -> str:
    """``text`` rewritten as ``mutation`` (one of XML_MUTATIONS) says."""
    head, end, tail = text.rpartition("</robot>")
    if mutation == "double_hyphen_comment":  # tinyxml2 reads a comment to the first -->
        cuts = [m.end() for m in re.finditer(r"/>|</\w+>", head)]
        cut = draw(st.sampled_from(cuts))
        return head[:cut] + draw(st.sampled_from(("<!-- a -- b -->", "<!-- x --->", "<!---->",
                                                  "<!-- <!-- -- -->"))) + head[cut:] + end + tail
    if mutation == "unspaced_attributes":
        spaces = [m.start() for m in re.finditer(r'"( +)[\w:]+=', head)]
        assume(spaces)
        chosen = set(draw(st.lists(st.sampled_from(spaces), min_size=1, unique=True)))
        return re.sub(r'"( +)(?=[\w:]+=)', lambda m: '"' if m.start() in chosen else m.group(),
                      head) + end + tail
    if mutation == "bare_names":  # "<" and an "&" that starts no reference, unescaped
        assume("&lt;" in head or "&amp;" in head)
        return re.sub(r"&amp;(?![#\w]+;)", "&", head.replace("&lt;", "<")) + end + tail
    after = {"nul_after_root": "\0<not xml & <<", "elements_after_root": '<a x="1"/>\n<b><c/></b>',
             "end_tag_after_root": "</robot>\nanything & <", "text_after_root": "some text"}
    return head + end + "\n" + after[mutation] + tail


SIZES = st.one_of(st.integers(1, 9), st.integers(1, 9), st.integers(10, 18))


@st.composite
def documents(draw, allow_mutation: bool = True, sizes=None, mutation: str | None = None):
    """(URDF text, mutation or None); ``sizes`` draws the number of links; ``mutation``
    breaks every document that way."""
    count = draw(SIZES if sizes is None else sizes)
    link_names = draw(st.lists(NAMES, min_size=count, max_size=count, unique=True))
    joint_names = draw(st.lists(JOINT_NAMES,
                                min_size=count - 1, max_size=count - 1, unique=True))
    hub = draw(st.integers(0, count - 1))  # a link likely to get several children
    massless = draw(st.booleans())
    links, joints = [], []
    for k, name in enumerate(link_names):
        body = inertial(draw, massless or k == 0)
        if body and draw(st.integers(0, 15)) == 0:
            body += DECOY_INERTIAL  # urdfdom and the parser read the first <inertial>
        if draw(st.integers(0, 7)) == 0:
            body += ('<visual><origin xyz="0 0 0.1"/><geometry><box size="0.1 0.2 0.3"/>'
                     '</geometry></visual><collision><geometry><cylinder radius="0.1" '
                     'length="0.2"/></geometry></collision>')
        links.append(f"<link name={attr(name)}>{body}</link>")
        if k == 0:
            continue
        parent = draw(st.one_of(st.integers(0, k - 1), st.just(min(hub, k - 1))))
        kind = draw(st.sampled_from(JOINT_KINDS))
        joint = joint_names[k - 1]
        parts = [origin(draw), f"<parent link={attr(link_names[parent])}/>",
                 f"<child link={attr(name)}/>"]
        if kind != "fixed" and kind != "floating":
            parts.append(axis(draw, kind))
        elif draw(st.integers(0, 5)) == 0:
            xyz = spell_vector(draw, [draw(floats(-2, 2)) for _ in range(3)])
            parts.append(f'<axis xyz="{xyz}"/>')  # read, unused
        parts.append(limit(draw, kind))
        if draw(st.integers(0, 6)) == 0:
            target = draw(st.one_of(st.sampled_from(joint_names), NAMES))
            parts.append(f"<mimic joint={attr(target)}"
                         + (f' multiplier="{spell(draw, draw(floats(-3, 3)))}"'
                            if draw(st.booleans()) else "")
                         + (f' offset="{spell(draw, draw(floats(-1, 1)))}"'
                            if draw(st.booleans()) else "") + "/>")
        if draw(st.integers(0, 9)) == 0:
            parts.append('<dynamics damping="0.5" friction="0.1"/>')
        parts = draw(st.permutations(parts))
        if draw(st.integers(0, 9)) == 0:
            parts.insert(draw(st.integers(0, len(parts))), "<!-- <origin xyz='5 5 5'/> -->")
        if draw(st.integers(0, 9)) == 0:  # a second <axis> on a planar joint may be the first
            parts.append(draw(st.sampled_from(DECOYS[:1] + DECOYS[2:] if kind == "planar"
                                              else DECOYS)))
        joints.append([joint, kind, parts])

    if mutation is None and allow_mutation and joints and draw(st.integers(0, 7)) == 0:
        mutation = draw(st.sampled_from(sorted(MUTATIONS) + sorted(XML_MUTATIONS)))
    if mutation is not None and mutation not in XML_MUTATIONS:
        assume(joints)
        mutate(draw, mutation, links, joints)
    elements = links + [f"<joint name={attr(name)} type=\"{kind}\">{''.join(parts)}</joint>"
                        for name, kind, parts in joints]
    elements = draw(st.permutations(elements))
    if draw(st.integers(0, 5)) == 0:
        elements.insert(draw(st.integers(0, len(elements))),
                        '<material name="m"><color rgba="1 0 0 1"/></material>')
    head = draw(st.sampled_from(("", '<?xml version="1.0"?>\n',
                                 '<?xml version="1.0" encoding="UTF-8"?>\n<!-- fuzz -->\n')))
    robot = f"<robot name={attr(draw(NAMES))}"  # urdfdom refuses a robot without a name
    if draw(st.integers(0, 9)) == 0:
        robot += ' xmlns="http://www.ros.org"'  # urdfdom has no namespaces
    text = head + robot + ">\n  " + "\n  ".join(elements) + "\n</robot>\n"
    if mutation in XML_MUTATIONS:
        text = mutate_xml(draw, mutation, text)
    return text, mutation


# -- the comparison -------------------------------------------------------------------


def load_pinocchio(text: str, free_flyer: bool, root: str = "root_joint"):
    """Pinocchio's model, or the exception it raised; ``root`` names its free-flyer."""
    try:
        if free_flyer:
            return pin.buildModelFromXML(text, pin.JointModelFreeFlyer(), root)
        return pin.buildModelFromXML(text)
    except (RuntimeError, ValueError) as error:
        return error


def load_ours(text: str, free_flyer: bool):
    """(model or ParseError, notes)."""
    try:
        description = parse_urdf_string(text, "fuzz.urdf")
    except ParseError as error:
        return error, ()
    if free_flyer:
        description = description.with_free_flyer()
    return build_model(description), description.notes


def refusal_notes(notes) -> list[str]:
    return [n for n in notes if "urdfdom refuses the joint" in n]


def compare(text: str, mutation: str | None, free_flyer: bool, seed: int) -> None:
    """Assert treedyn agrees with Pinocchio on ``text`` (see the module docstring)."""
    ours, notes = load_ours(text, free_flyer)
    root = "root_joint"
    if free_flyer and not isinstance(ours, Exception):
        root = ours.joint_names[0]  # root_joint_ beside a moving joint named root_joint
        assert (root == "root_joint") == ("root_joint" not in ours.joint_names[1:]), root
    reference = load_pinocchio(text, free_flyer, root)
    expected = MUTATIONS.get(mutation, XML_MUTATIONS.get(mutation))
    if expected == "same":  # XML tinyxml2 reads: Pinocchio's model, nothing noted for it
        assert not isinstance(reference, Exception), reference
        assert not isinstance(ours, Exception), ours
    if expected == "noted":
        assert not isinstance(reference, Exception), reference
        assert not isinstance(ours, Exception), ours
        assert [n for n in notes if NOTED in n], notes
    if expected == "refused":  # urdfdom refuses the joint: we read it with a note
        assert isinstance(reference, Exception), "Pinocchio loads what urdfdom should refuse"
        assert not isinstance(ours, Exception), ours
        assert refusal_notes(notes), notes
        return
    if expected in ("error", "xml_error"):
        assert isinstance(ours, ParseError), f"{mutation}: no ParseError"
        if expected == "xml_error":
            assert isinstance(reference, Exception), "Pinocchio loads text after the root"
        return
    if expected == "zeroed":
        assert not isinstance(reference, Exception), reference
        assert not isinstance(ours, Exception), ours
        assert [n for n in notes if "urdfdom cannot read it" in n], notes
    if isinstance(reference, Exception):
        # urdfdom refuses something no mutation made: we must refuse it or note it too
        if isinstance(ours, ParseError) or refusal_notes(notes):
            return
        raise AssertionError(f"Pinocchio refuses it, treedyn reads it silently: {reference}")
    assert not isinstance(ours, Exception), f"Pinocchio loads it, treedyn refuses: {ours}"
    assert not refusal_notes(notes), notes
    model, pinmodel = ours, reference
    compare_models(model, pinmodel, seed)


def compare_models(model, pinmodel, seed: int, joints=None) -> None:
    """``joints``: Pinocchio's joint id of each of ours, when the names differ (a free-flyer
    renamed beside a moving joint named ``root_joint``); else the names must be equal."""
    data = pinmodel.createData()
    if joints is None:
        assert list(model.joint_names) == list(pinmodel.names)[1:]
    assert model.nv == pinmodel.nv
    extra_q = sum(kind in ("continuous", "planar") for kind in model.joint_types)
    assert model.nq + extra_q == pinmodel.nq
    mapping = Mapping(model, pinmodel, joints)
    assert [pinmodel.nvs[j] for j in mapping.joint] == list(model.nv_joint)
    masses = [inertia.mass for inertia in pinmodel.inertias]
    assert model.total_mass == pytest.approx(sum(masses[1:]), rel=1e-12, abs=1e-12)
    assert model.world_mass == pytest.approx(masses[0], rel=1e-12, abs=1e-12)

    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng, STATES)
    v, a, tau = (rng.normal(size=(STATES, model.nv)) for _ in range(3))
    fext = rng.normal(size=(STATES, model.njoints, 6))
    ours_tau = np.asarray(rnea(model, q, v, a, fext)).reshape(STATES, model.nv)
    ours_M = np.asarray(crba(model, q)).reshape(STATES, model.nv, model.nv)
    with np.errstate(all="ignore"):
        ours_a = np.asarray(aba(model, q, v, tau, fext)).reshape(STATES, model.nv)
    for n in range(STATES):
        ref_tau, ref_M, (pq, pv, forces) = mapping.reference(data, q[n], v[n], a[n], fext[n])
        if n == 0:
            assert [data.nvSubtree[j] for j in mapping.joint] == list(model.nv_subtree)
        assert relative_error(ours_tau[n], ref_tau) <= TOL, (ours_tau[n], ref_tau)
        assert relative_error(ours_M[n], ref_M) <= TOL, (ours_M[n], ref_M)
        if model.nv == 0:
            continue
        ref_a = mapping.back(pin.aba(pinmodel, data, pq, pv, mapping.v(tau[n]), forces))
        condition = np.linalg.cond(ref_M)
        if not np.all(np.isfinite(ref_a)) or not condition <= SINGULAR:
            continue  # M singular to working precision (a massless subtree): no a to compare
        if condition <= WELL_CONDITIONED:
            assert relative_error(ours_a[n], ref_a) <= TOL, (ours_a[n], ref_a)
        else:
            bias = mapping.back(pin.rnea(pinmodel, data, pq, pv, np.zeros(pinmodel.nv), forces))
            backward = relative_error(ref_M @ ours_a[n], tau[n] - bias)
            # ABA is not backward stable in M: at cond(M) = 2.5e9 Pinocchio's own a has a
            # backward error of 5e-9, so ours may reach 10 times Pinocchio's where it is > 1e-9
            allowed = max(TOL, 10 * relative_error(ref_M @ ref_a, tau[n] - bias))
            assert backward <= allowed, (backward, allowed, ours_a[n], ref_a)


@pytest.mark.parametrize("free_flyer", [False, True], ids=["fixed", "free-flyer"])
@FUZZ_SETTINGS
@given(document=documents(), seed=st.integers(0, 2**32 - 1))
def test_matches_pinocchio(free_flyer, document, seed):
    text, mutation = document
    note(text)
    compare(text, mutation, free_flyer=free_flyer, seed=seed)


@pytest.mark.parametrize("mutation", sorted(MUTATIONS) + sorted(XML_MUTATIONS))
@settings(FUZZ_SETTINGS, max_examples=max(FUZZ // 10, 4))
@given(data=st.data())
def test_broken_documents_as_promised(mutation, data):
    """Every mutation, a few times (the two tests above meet each only now and then)."""
    text, _ = data.draw(documents(mutation=mutation, sizes=st.integers(2, 6)), "document")
    free_flyer = data.draw(st.booleans(), "free_flyer")
    compare(text, mutation, free_flyer, seed=data.draw(st.integers(0, 2**32 - 1), "seed"))


# -- a disagreement the fuzzer found, kept out of the generator until fixed ---------------

LINKS = ('<link name="a"/><link name="b"><inertial><mass value="1"/><inertia ixx="1" ixy="0" '
         'ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>')


@pytest.mark.xfail(strict=True, reason=(
    "bug: libxml2 normalises a literal tab or line break in an attribute value to a space "
    "(XML 1.0, 3.3.3), urdfdom's tinyxml2 keeps it, so joint names and the order of "
    "siblings differ from Pinocchio's (parsers/xml_text.py parse, parsers/urdf.py _tree)"))
def test_whitespace_in_joint_names():
    text = ('<robot name="r">' + LINKS + '<link name="c"/>'
            '<joint name="j\tz" type="prismatic"><parent link="a"/><child link="b"/>'
            '<limit effort="1" velocity="1"/></joint>'
            '<joint name="j\ny" type="revolute"><parent link="a"/><child link="c"/>'
            '<limit effort="1" velocity="1"/></joint></robot>')
    reference = load_pinocchio(text, False)
    assert list(reference.names)[1:] == ["j\tz", "j\ny"]  # prismatic first: "\t" < "\n"
    ours, notes = load_ours(text, False)
    if not isinstance(ours, ParseError) and not notes:  # refused or said: not a silent change
        compare(text, None, False, seed=0)
