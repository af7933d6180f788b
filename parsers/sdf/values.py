"""The values of SDFormat elements: numbers in an element's text, and ``<pose>`` s.

SDFormat writes values as element text (``<mass>2</mass>``, ``<pose>0 0 1 0 0 0</pose>``),
numbers separated by whitespace. A pose is ``x y z roll pitch yaw`` (URDF's fixed-axis
roll-pitch-yaw, ``R = Rz(yaw) Ry(pitch) Rx(roll)``), in degrees with ``degrees="true"``
(1.9), or ``x y z qx qy qz qw`` with ``rotation_format="quat_xyzw"`` (1.9; normalised, a
zero quaternion is an error). An empty ``<pose/>`` is the identity.
"""
from __future__ import annotations

import math

import numpy as np
from lxml import etree

from treedyn.engine.description import SourceRef
from treedyn.engine.rotations import quaternion_matrix, rpy_matrix

from ..errors import WORD_CHARACTERS, ParseError, quoted
from ..numbers import NUMBER, word_problem

Pose = tuple[np.ndarray, np.ndarray]  # (rotation (3, 3), translation (3,)): p_a = R p_b + t


def here(element: etree._Element, owner: SourceRef) -> SourceRef:
    """``owner`` located at ``element``'s own line (the owner's when unknown)."""
    return SourceRef(owner.file, element.sourceline or owner.line, owner.element)


def child(element: etree._Element, tag: str) -> etree._Element | None:
    """The first child element ``tag`` of ``element``, or None."""
    return next(element.iterchildren(tag), None)


def text_of(element: etree._Element | None, default: str = "") -> str:
    """The stripped text of ``element`` (``default`` when it is missing)."""
    return default if element is None else (element.text or "").strip()


def floats(element: etree._Element, owner: SourceRef, counts: tuple[int, ...] = (1,)
           ) -> list[float]:
    """The finite numbers of ``element``'s text, as many as one of ``counts``."""
    text = element.text or ""
    words = text.split()
    problem = ""
    if len(words) not in counts:
        expected = " or ".join(map(str, counts))
        problem = f"expected {expected} number{'s' if counts != (1,) else ''}, got {len(words)}"
    for word in words if not problem else ():
        problem = word_problem(word)
        if not problem and not math.isfinite(float(word)):
            problem = "is not finite (out of double range)"
        if problem:
            problem = f"{quoted(word, WORD_CHARACTERS)} {problem}"
            break
    if problem:
        raise ParseError.at(here(element, owner), f"<{element.tag}> {quoted(text.strip())}: "
                                                  f"{problem}")
    return [float(word) for word in words]


def scalar(parent: etree._Element, tag: str, default: float, owner: SourceRef) -> float:
    """The number of ``parent``'s child ``tag``, ``default`` when it has none."""
    element = child(parent, tag)
    return default if element is None else floats(element, owner)[0]


def vector(parent: etree._Element, tag: str, default, owner: SourceRef) -> np.ndarray:
    """The 3 numbers of ``parent``'s child ``tag``, ``default`` when it has none."""
    element = child(parent, tag)
    return np.array(default if element is None else floats(element, owner, (3,)), dtype=float)


def flag(parent: etree._Element, tag: str, default: bool, owner: SourceRef) -> bool:
    """A boolean child (``true``/``false``/``1``/``0``), ``default`` when absent."""
    element = child(parent, tag)
    if element is None:
        return default
    return boolean(text_of(element), here(element, owner), f"<{tag}>")


def boolean(text: str, owner: SourceRef, what: str) -> bool:
    """SDFormat's reading of a boolean ``text``, refused unless true/false/1/0."""
    word = text.strip().lower()
    if word not in ("true", "false", "1", "0"):
        raise ParseError.at(owner, f"{what} {quoted(text)}: expected true or false")
    return word in ("true", "1")


def pose_value(element: etree._Element | None, owner: SourceRef) -> Pose:
    """(rotation, translation) of a ``<pose>``; the identity when absent or empty."""
    if element is None or not (element.text or "").strip():
        return np.eye(3), np.zeros(3)
    source = here(element, owner)
    form = element.get("rotation_format", "euler_rpy").strip()
    if form not in ("euler_rpy", "quat_xyzw"):
        raise ParseError.at(source, f"<pose> rotation_format={quoted(form)}: expected "
                                    "euler_rpy or quat_xyzw")
    values = floats(element, owner, (7,) if form == "quat_xyzw" else (6,))
    if form == "quat_xyzw":
        x, y, z, w = values[3:]
        if x * x + y * y + z * z + w * w < 1e-20:
            raise ParseError.at(source, "<pose> has a zero quaternion")
        rotation = quaternion_matrix(*(np.array([c]) for c in (w, x, y, z)))[0]
    else:
        angles = values[3:]
        if boolean(element.get("degrees", "false"), source, "<pose> degrees="):
            angles = [math.radians(angle) for angle in angles]
        rotation = rpy_matrix(*angles)
    return rotation, np.array(values[:3])


def compose(a: Pose, b: Pose) -> Pose:
    """The pose ``a * b``: frame c in frame a, given b (c in b) and a (b in a)."""
    return a[0] @ b[0], a[0] @ b[1] + a[1]


def inverse(a: Pose) -> Pose:
    return a[0].T, -a[0].T @ a[1]
