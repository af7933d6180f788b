"""URDF parser: a ``<robot>`` file to a format-neutral :class:`TreeDescription`.

The semantics are Pinocchio's (``pin.buildModelFromUrdf``, which reads URDF with urdfdom):

* ``<origin xyz rpy>``: translation ``xyz`` and fixed-axis roll-pitch-yaw,
  ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``. A missing origin is the identity, a missing
  attribute is zeros.
* A joint's ``<origin>`` places the joint frame in the parent link's frame; the child
  link's frame is the joint frame after the joint motion.
* ``<axis xyz>`` defaults to (1, 0, 0) -- (0, 0, 1) for a planar joint, Pinocchio's plane
  -- and is normalised; a zero-length axis is an error
  for the joint types that use it.
* Joint types: revolute, continuous, prismatic, fixed (merged by ``build_model``),
  floating (type ``free``: Pinocchio's LOCAL free-flyer) and planar (see ``JOINT_TYPES``).
  ``<limit lower upper>`` bounds revolute and prismatic joints (both default to 0, as in
  the URDF specification); continuous and the other joints are unlimited. urdfdom refuses
  a revolute or prismatic joint without ``<limit>`` and a ``<limit>`` without ``effort``
  or ``velocity``, so ROS and Pinocchio cannot load such a file: it is read (unlimited
  when ``<limit>`` is missing) with a note saying so. So are the other things urdfdom
  refuses in elements dyn does not need or reads more kindly: ``<dynamics>`` with neither
  damping nor friction, ``<safety_controller>`` without k_velocity, a number in a joint's
  limit, dynamics, safety, calibration or mimic element that its strToDouble cannot read
  (whitespace after it, or not a finite number), and a ``<robot version>`` other than
  1.0 to 1.2.
* ``<limit effort velocity>`` of a revolute, continuous or prismatic joint: its effort and
  velocity limits (absolute values), as urdfdom and Pinocchio's ``effortLimit`` and
  ``velocityLimit`` read them; ``effort="0"`` is a limit of zero (what PyBullet, Gazebo and
  ros2_control enforce), an attribute not given (urdfdom refuses the file) or a joint
  without ``<limit>`` is no limit (+inf), and so is a limit of the largest double
  (Pinocchio's "no limit", ±1.7976931348623157e+308). The ``<limit>`` line is kept as
  ``JointSpec.limit_source``.
* ``<dynamics damping friction>``: ``JointSpec.damping`` and ``friction`` (0 when not
  given), as Pinocchio's ``damping`` and ``friction`` read them; the dynamics do not use
  them (Pinocchio's algorithms do not either), the converters carry them.
* ``<inertial>``: ``<mass value>``, the centre of mass at the origin's ``xyz`` and the
  ``<inertia>`` tensor given in the frame rotated by the origin's ``rpy``, so that in the
  link frame ``I = R I_urdf R^T``. A link without ``<inertial>`` has zero inertia and
  ``has_inertial=False``. An ``<inertial>`` without ``<inertia>`` is a point mass, one
  without ``<mass>`` no inertia at all, as Pinocchio reads them (with a note; urdfdom logs
  an error); the attributes of both are required; a negative mass is left to the diagnostics.
* ``<mimic joint multiplier offset>`` is recorded; the joint stays independent, like
  Pinocchio's default (``load_model(..., mimic=True)`` enforces it, see
  :mod:`treedyn.engine.coupling`). urdfdom and Pinocchio's default load a mimic of the
  joint itself or of a joint the file does not have; ``notes`` gets a line for each.
* Joint order: urdfdom keeps the joints in a map keyed by name, so Pinocchio visits the
  children of a link in byte-wise order of their joint names. ``joints`` is listed
  depth-first from the root in that order, which ``build_model`` reproduces.
* ``<collision>`` and ``<visual>`` geometry (box, cylinder, sphere, mesh, and the
  non-standard capsule) is kept as ``LinkSpec.geometry`` for the diagnostics only; it is
  read leniently: a shape with a missing or malformed size is left out, never an error.
  The ``<inertial>`` element's location and its origin's rotation are kept as
  ``LinkSpec.inertial_source`` and ``LinkSpec.inertial_rotation``.
* ``<material>``, ``<gazebo>``, ``<transmission>``, ``<sensor>`` and unknown tags are
  ignored; the top-level ones are counted in ``TreeDescription.ignored``.
"""
from __future__ import annotations

import math
import os
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from lxml import etree

from treedyn.engine.description import (
    GRAVITY,
    Inertia,
    JointSpec,
    LinkSpec,
    Mimic,
    Shape,
    SourceRef,
    TreeDescription,
)
from treedyn.engine.rotations import rpy_matrix

from .errors import ParseError, quoted
from .files import MODEL_BYTES, read_bounded
from .mimic import mimic_notes
from .urdf_numbers import (element_error, floats, number, numbers, plain, source_line,
                           urdfdom_number, urdfdom_reads)
from .urdf_tree import joint_tree
from .xml_text import read_xml

# URDF joint type -> engine joint type. For "planar" Pinocchio ignores <axis> and always
# moves in the joint frame's xy plane; our engine honours the axis as the plane normal,
# which is the same motion for the default-free case of axis (0, 0, 1).
JOINT_TYPES = {
    "revolute": "revolute",
    "continuous": "continuous",
    "prismatic": "prismatic",
    "fixed": "fixed",
    "floating": "free",
    "planar": "planar",
}
AXIS_TYPES = ("revolute", "continuous", "prismatic", "planar")
LIMITED_TYPES = ("revolute", "prismatic")
# numbers urdfdom reads in a joint's first element of each tag (its strToDouble); one it
# cannot read makes it refuse the whole file
URDFDOM_JOINT_NUMBERS = {"limit": ("lower", "upper", "effort", "velocity"),
                         "dynamics": ("damping", "friction"),
                         "safety_controller": ("soft_lower_limit", "soft_upper_limit",
                                               "k_position", "k_velocity"),
                         "calibration": ("rising", "falling"),
                         "mimic": ("multiplier", "offset")}
URDFDOM_VERSIONS = ((1, 0), (1, 1), (1, 2))  # <robot version> "major.minor" it accepts
URDFDOM_REFUSES = "urdfdom refuses the joint, so ROS and Pinocchio cannot load this file"
INERTIA_ATTRIBUTES = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def parse_urdf(path: str, data: bytes | None = None) -> TreeDescription:
    """The description of the URDF file at ``path`` (of bytes ``data`` when given: its
    relative paths resolve from the folder of ``path``); ParseError if unreadable or
    invalid."""
    try:
        data = read_bounded(path, MODEL_BYTES) if data is None else data
    except OSError as error:
        raise ParseError(f"cannot read file ({error.strerror})", str(path)) from None
    return _parse(read_xml(data, str(path)), str(path))


def parse_urdf_string(text: str, path: str = "<string>") -> TreeDescription:
    """The description of URDF ``text``; ``path`` names it in errors and ``source``."""
    return _parse(read_xml(text.encode("utf-8"), path, encoding="utf-8"), path)


def _parse(robot: etree._Element, path: str) -> TreeDescription:
    """The description of ``robot``; an error in a file that still holds xacro markup says
    so, since expanding it is then the fix."""
    try:
        return _parse_robot(robot, path)
    except ParseError as error:
        markup = _xacro_markup(robot)
        if not markup:
            raise
        raise ParseError(f"{error.problem} (the file holds unexpanded xacro: {markup}; name it "
                         f".xacro for dyn to expand it, or expand it first: xacro FILE > "
                         f"robot.urdf)", error.file, error.line, error.element) from None


def _xacro_markup(robot: etree._Element) -> str:
    """Where ``robot`` first holds xacro markup (an ``xacro:`` element, or ``${...}`` or
    ``$(...)`` in an attribute), or "" if it holds none."""
    for element in robot.iter(etree.Element):
        if element.prefix == "xacro" or "wiki/xacro" in (etree.QName(element).namespace or ""):
            return f"<{_tag_name(element)}> at line {source_line(element)}"
        for key, value in element.attrib.items():
            if "${" in value or "$(" in value:
                return f'{key}={quoted(value)} at line {source_line(element)}'
    return ""


def _parse_robot(robot: etree._Element, path: str) -> TreeDescription:
    if robot.tag != "robot":
        raise ParseError(f"root element is <{_tag_name(robot)}>, expected <robot>", path,
                         source_line(robot))
    name = robot.get("name") or Path(path).stem
    links: dict[str, LinkSpec] = {}
    joints: dict[str, JointSpec] = {}
    elements: dict[str, etree._Element] = {}  # joint name -> its <joint> element
    ignored: Counter[str] = Counter()
    notes: list[str] = []
    version = robot.get("version")
    if version is not None and _urdfdom_version(version) not in URDFDOM_VERSIONS:
        notes.append(f"{path}:{source_line(robot)}: <robot> version={quoted(version)}: urdfdom "
                     f"refuses the file, so ROS and Pinocchio cannot load it (it reads versions "
                     f"1.0 to 1.2, written major.minor)")
    for element in robot.iterchildren(etree.Element):
        if element.tag == "link":
            _add_unique(links, _link(element, path, notes))
        elif element.tag == "joint":
            joint = _add_unique(joints, _joint(element, path, notes))
            elements[joint.name] = element
        else:
            ignored[_tag_name(element)] += 1
    mimic_notes(joints, notes)
    robot_source = SourceRef(path, source_line(robot), f'robot name={quoted(name)}')
    root, order = joint_tree(links, list(joints.values()), elements, robot_source)
    return TreeDescription(
        name=name,
        format="urdf",
        links=list(links.values()),
        joints=order,
        world_link=root,
        gravity=np.array(GRAVITY),
        source=path,
        ignored=dict(ignored),
        notes=tuple(notes),
        files=(os.path.realpath(path),),
    )


def _add_unique(table: dict, spec):
    """Add a LinkSpec/JointSpec under its name; a second one with that name is an error."""
    first = table.get(spec.name)
    if first is not None:
        kind = "link" if isinstance(spec, LinkSpec) else "joint"
        raise ParseError.at(spec.source, f'duplicate {kind} name {quoted(spec.name)} '
                                         f"(first defined at line {first.source.line})")
    table[spec.name] = spec
    return spec


# -- elements -------------------------------------------------------------------------


def _link(element: etree._Element, path: str, notes: list[str]) -> LinkSpec:
    source = _named_source(element, path)
    name = element.get("name")
    first = _first_children(element)
    geometry = _geometry(element, path) if "collision" in first or "visual" in first else ()
    inertial = first.get("inertial")
    if inertial is None:
        return LinkSpec(name, Inertia.zero(), source, has_inertial=False, geometry=geometry)
    inertia, rotation = _inertia(inertial, source, notes)
    inertial_source = SourceRef(path, source_line(inertial) or source.line,
                                "inertial")
    return LinkSpec(name, inertia, source, inertial_source=inertial_source,
                    inertial_rotation=rotation, geometry=geometry)


def _inertia(inertial: etree._Element, owner: SourceRef,
             notes: list[str]) -> tuple[Inertia, np.ndarray]:
    """(inertia in the link frame, rotation of the frame the tensor was written in).

    Numbers urdfdom cannot read although they are numbers -- followed by whitespace
    (``ixz="-3.2e-11\\r\\n"``, as in unitree_ros), or separated by a tab written as
    ``&#9;`` -- are read as urdfdom reads them, so Pinocchio's numbers stay ours: its parser
    stops at the first such value and leaves it and all that comes after (origin, mass,
    tensor, in that order) at zero. ``notes`` gets one line saying so. (A literal tab or
    line break between numbers is a space once libxml2 has normalised the attribute, so
    it cannot be told from one; urdfdom's tinyxml2 does not normalise and fails there.)
    """
    first = _first_children(inertial)
    origin, mass_element, tensor_element = (first.get(tag) for tag in ("origin", "mass",
                                                                        "inertia"))
    if mass_element is not None and tensor_element is not None:
        plain_inertia = _plain_inertia(origin, mass_element, tensor_element, owner)
        if plain_inertia is not None:
            return plain_inertia
    rotation, com = _pose(origin, owner)
    if mass_element is None or tensor_element is None:
        return _incomplete_inertial(inertial, owner, notes, rotation, com)
    mass = number(mass_element, "value", None, owner)
    ixx, ixy, ixz, iyy, iyz, izz = moments = [number(tensor_element, key, None, owner)
                                              for key in INERTIA_ATTRIBUTES]
    tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    read = [(origin, key, 3, 2) for key in ("xyz", "rpy")]  # 2: origin, mass and tensor lost
    read += [(mass_element, "value", 1, 1)]  # 1: mass and tensor
    read += [(tensor_element, key, 1, 0) for key in INERTIA_ATTRIBUTES]  # 0: tensor
    for element, key, count, lost in read:
        text = None if element is None else element.get(key)
        if text is None or urdfdom_reads(text, count):
            continue
        what = ("rotational inertia", "mass and rotational inertia",
                "mass, centre of mass and rotational inertia")[lost]
        notes.append(f"{owner.file}:{source_line(element) or owner.line}: {element.tag} {key}="
                     f'''{quoted(text, mark="'")}: urdfdom cannot read it (whitespace after '''
                     f"a number, or between numbers other than spaces), so Pinocchio, and dyn "
                     f"with it, set the {what} of <{owner.element}> to zero")
        mass, com, tensor = (mass if lost < 1 else 0.0, com if lost < 2 else np.zeros(3),
                             np.zeros((3, 3)))
        rotation = rotation if lost < 2 else np.eye(3)
        break
    else:
        if _unrotated(rotation, moments):
            return Inertia(mass, com, tensor), rotation
    return Inertia(mass, com, rotation @ tensor @ rotation.T), rotation


def _plain_inertia(origin: etree._Element | None, mass_element: etree._Element,
                   tensor_element: etree._Element,
                   owner: SourceRef) -> tuple[Inertia, np.ndarray] | None:
    """What :func:`_inertia` gives when all its numbers are plain (see
    :mod:`treedyn.parsers.urdf_numbers`), so that none fails or needs a note; None when one
    is not (or is missing), for the general path to say why."""
    com = np.zeros(3)
    if origin is not None:
        xyz, rpy = origin.get("xyz"), origin.get("rpy")
        translation = (0.0, 0.0, 0.0) if xyz is None else plain(xyz, 3)
        if translation is None or (rpy is not None and plain(rpy, 3) is None):
            return None
        com = np.array(translation, dtype=float)
    texts = [mass_element.get("value"), *map(tensor_element.get, INERTIA_ATTRIBUTES)]
    values = [None if text is None else plain(text, 1) for text in texts]
    if None in values:
        return None
    (mass,), *moments = values
    ixx, ixy, ixz, iyy, iyz, izz = moments = [value for value, in moments]
    tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    rotation, identity = (_IDENTITY.copy(), True) if origin is None else \
        _rotation_of(origin, owner)
    if not (identity and _no_negative_zero(moments)):
        tensor = rotation @ tensor @ rotation.T
    return Inertia(mass, com, tensor), rotation


def _unrotated(rotation: np.ndarray, moments: list[float]) -> bool:
    """Whether ``rotation @ tensor @ rotation.T`` is ``tensor`` itself, bit for bit: the
    rotation is the identity up to signed zeros and no moment is -0.0."""
    return _is_identity(rotation) and _no_negative_zero(moments)


def _is_identity(rotation: np.ndarray) -> bool:
    """Whether ``rotation`` is the identity up to signed zeros."""
    return bool(rotation[0, 0] == rotation[1, 1] == rotation[2, 2] == 1.0
                and np.count_nonzero(rotation) == 3)


def _no_negative_zero(values: list[float]) -> bool:
    return 0.0 not in values or all(value or math.copysign(1.0, value) > 0.0
                                    for value in values)


def _incomplete_inertial(inertial: etree._Element, owner: SourceRef, notes: list[str],
                         rotation: np.ndarray, com: np.ndarray) -> tuple[Inertia, np.ndarray]:
    """An ``<inertial>`` without ``<inertia>`` (a point mass) or ``<mass>`` (no inertia), as
    Pinocchio reads it (docs/fidelity.md); ``notes`` gets one line saying so."""
    mass_element = inertial.find("mass")
    where = f"{owner.file}:{source_line(inertial) or owner.line}: <{owner.element}>: <inertial>"
    if mass_element is None:
        notes.append(f"{where} has no <mass>: urdfdom logs an error; dyn reads no inertia "
                     f"there (zero mass), as Pinocchio does")
        return Inertia.zero(), np.eye(3)
    notes.append(f"{where} has <mass> but no <inertia>: urdfdom logs an error; dyn reads a "
                 f"point mass at its origin, as Pinocchio and iDynTree do")
    return Inertia(number(mass_element, "value", None, owner), com, np.zeros((3, 3))), rotation


def _urdfdom_version(text: str) -> tuple[int, int] | None:
    """(major, minor) as urdfdom reads ``<robot version>``: two integers (strtol: leading
    whitespace and a sign allowed, nothing after) joined by one dot; None if it cannot."""
    pieces = text.split(".")
    if len(pieces) != 2 or not all(re.fullmatch(r"\s*[+-]?\d+", piece) for piece in pieces):
        return None
    major, minor = (int(piece) for piece in pieces)
    return (major, minor) if major >= 0 and minor >= 0 else None


def _urdfdom_joint_notes(first: dict, owner: SourceRef, notes: list[str]) -> None:
    """What makes urdfdom refuse a joint dyn can read: a number in a sub-element it cannot
    read (whitespace after it; not a finite number, where dyn does not need it), ``<dynamics>``
    with neither damping nor friction, ``<safety_controller>`` without k_velocity.
    ``first`` holds the joint's first child of each tag (:func:`_first_children`)."""
    for tag, keys in URDFDOM_JOINT_NUMBERS.items():
        element = first.get(tag)
        if element is None:
            continue
        where = f"{owner.file}:{source_line(element) or owner.line}: <{owner.element}>: "
        for key in keys:
            text = element.get(key)
            if text is not None and plain(text, 1) is None and not urdfdom_number(text):
                notes.append(where + f'''{tag} {key}={quoted(text, mark="'")}: '''
                             f"urdfdom cannot read it as a number: {URDFDOM_REFUSES}")
        if tag == "dynamics" and element.get("damping") is None \
                and element.get("friction") is None:
            notes.append(where + f"<dynamics> has neither damping nor "
                         f"friction: {URDFDOM_REFUSES}")
        if tag == "safety_controller" and element.get("k_velocity") is None:
            notes.append(where + f"<safety_controller> has no k_velocity: "
                         f"{URDFDOM_REFUSES}")


# Shape tag -> (attributes giving its size, in order); a box's single "size" has 3 numbers.
SHAPE_SIZES = {"box": ("size",), "cylinder": ("radius", "length"), "sphere": ("radius",),
               "capsule": ("radius", "length")}


def _geometry(link: etree._Element, path: str) -> tuple[Shape, ...]:
    """The link's <collision> and <visual> shapes that are well formed, in document order."""
    shapes = []
    for element in link.iterchildren("collision", "visual"):
        shape = _shape(element, path)
        if shape is not None:
            shapes.append(shape)
    return tuple(shapes)


def _shape(element: etree._Element, path: str) -> Shape | None:
    """One <collision>/<visual> as a Shape, or None when it is incomplete or malformed."""
    geometry = element.find("geometry")
    body = None if geometry is None else next(geometry.iterchildren(etree.Element), None)
    if body is None or (body.tag not in SHAPE_SIZES and body.tag != "mesh"):
        return None
    source = SourceRef(path, source_line(element), f"{element.tag}")
    try:
        rotation, translation = _pose(element.find("origin"), source)
        if body.tag == "mesh":
            filename = body.get("filename")
            if not filename:
                return None
            return Shape("mesh", np.zeros(0), rotation, translation, element.tag, filename,
                         numbers(body, "scale", 3, (1.0, 1.0, 1.0), source), source)
        count = 3 if body.tag == "box" else 1
        size = np.concatenate([numbers(body, key, count, None, source)
                               for key in SHAPE_SIZES[body.tag]])
    except ParseError:
        return None
    return Shape(body.tag, size, rotation, translation, element.tag, source=source)


def _joint(element: etree._Element, path: str, notes: list[str]) -> JointSpec:
    source = _named_source(element, path)
    kind = element.get("type")
    if kind is None:
        raise ParseError.at(source, "type attribute is missing")
    if kind not in JOINT_TYPES:
        raise ParseError.at(source, f'unknown joint type {quoted(kind)} '
                                    f"(expected one of {', '.join(JOINT_TYPES)})")
    first = _first_children(element)
    rotation, translation = _pose(first.get("origin"), source)
    limit = first.get("limit")
    lower, upper, effort, velocity = _limits(limit, kind, source, notes)
    _urdfdom_joint_notes(first, source, notes)
    damping, friction = _dynamics(first.get("dynamics"), source)
    return JointSpec(
        name=element.get("name"),
        type=JOINT_TYPES[kind],
        parent=_link_reference(element, first, "parent", source),
        child=_link_reference(element, first, "child", source),
        rotation=rotation,
        translation=translation,
        axis=_axis(first.get("axis"), kind, source),
        lower=lower,
        upper=upper,
        mimic=_mimic(first.get("mimic"), source),
        damping=damping,
        friction=friction,
        source=source,
        effort=effort,
        velocity=velocity,
        limit_source=source if limit is None else
        SourceRef(source.file, source_line(limit) or source.line, source.element),
    )


def _first_children(element: etree._Element) -> dict:
    """tag -> the first child of ``element`` with that tag, as ``element.find(tag)`` gives it
    (one pass over the children instead of one per tag)."""
    first: dict = {}
    for child in element:
        first.setdefault(child.tag, child)
    return first


def _link_reference(joint: etree._Element, first: dict, role: str, owner: SourceRef) -> str:
    """The link named by the joint's required ``<parent>`` or ``<child>`` (``role``)."""
    element = first.get(role)
    if element is None:
        raise element_error(joint, owner, f"<{joint.tag}> has no <{role}>")
    link = element.get("link")
    if not link:
        raise element_error(element, owner, f"<{role}> has no link attribute")
    return link


def _axis(element: etree._Element | None, kind: str, owner: SourceRef) -> np.ndarray:
    """Unit axis in the joint frame; only the joints that move along it need a non-zero one.
    A planar joint without ``<axis>`` moves in the xy plane (normal z), as in Pinocchio."""
    if element is None:
        return np.array([0.0, 0.0, 1.0]) if kind == "planar" else np.array([1.0, 0.0, 0.0])
    text = element.get("xyz")
    if text is None and kind in AXIS_TYPES:
        raise element_error(element, owner, "<axis> has no xyz attribute (urdfdom then keeps a "
                                            "zero axis: a joint that moves nothing, in "
                                            "Pinocchio too)")
    unit = _UNIT_AXES.get(text)  # a text read before to a finite non-zero length
    if unit is not None:
        return np.array(unit)
    axis = numbers(element, "xyz", 3, (1.0, 0.0, 0.0), owner)
    with np.errstate(over="ignore"):
        length = math.sqrt(axis.dot(axis))  # np.linalg.norm's own formula, without its overhead
    if length == math.inf and kind in AXIS_TYPES:  # Pinocchio's joint would move nothing
        raise element_error(element, owner, "axis is too long: its length overflows (scale it "
                                            "down)")
    if length == 0.0:
        if kind in AXIS_TYPES:
            raise element_error(element, owner, "axis has zero length")
        return np.array([1.0, 0.0, 0.0])
    unit = axis / length
    if text is not None and length != math.inf and len(_UNIT_AXES) < 4096:
        _UNIT_AXES[text] = tuple(unit.tolist())
    return unit


_UNIT_AXES: dict[str, tuple[float, ...]] = {}  # <axis xyz> text -> the unit axis it gives


def _limits(element: etree._Element | None, kind: str, owner: SourceRef,
            notes: list[str]) -> tuple[float, float, float, float]:
    """(lower, upper, effort, velocity): the position limits, and the effort and velocity
    limits as urdfdom and Pinocchio read them (``effort="0"`` is a limit of zero, as in
    PyBullet, Gazebo and ros2_control; an attribute not given is +inf, no limit). Every
    number given is checked, whatever the type. What urdfdom refuses (see the module
    notes) goes to ``notes``."""
    refused = ": " + URDFDOM_REFUSES
    if element is None:
        if kind in LIMITED_TYPES:
            notes.append(f"{owner.file}:{owner.line}: <{owner.element}>: a {kind} joint without "
                         f"<limit>{refused} (dyn takes the joint as unlimited)")
        return -math.inf, math.inf, math.inf, math.inf
    missing = [key for key in ("effort", "velocity") if element.get(key) is None]
    if missing:
        notes.append(f"{owner.file}:{source_line(element) or owner.line}: <{owner.element}>: "
                     f"<limit> has no {' and no '.join(missing)}{refused}")
    lower, upper, effort, velocity = (
        _no_limit(number(element, key, default, owner)) for key, default in
        (("lower", 0.0), ("upper", 0.0), ("effort", math.inf), ("velocity", math.inf)))
    effort, velocity = abs(effort), abs(velocity)
    if kind not in LIMITED_TYPES:
        return -math.inf, math.inf, effort, velocity
    return lower, upper, effort, velocity


def _no_limit(value: float) -> float:
    """``value``, or an infinity of its sign when it is the largest double (Pinocchio's "no
    limit", which :mod:`treedyn.parsers.writers.urdf` writes where URDF wants a number)."""
    return math.copysign(math.inf, value) if abs(value) >= sys.float_info.max else value


def _dynamics(element: etree._Element | None, owner: SourceRef) -> tuple[float, float]:
    """(damping, friction) of a joint's ``<dynamics>``, each 0 when not given, as urdfdom
    and Pinocchio's ``damping`` and ``friction`` read them. A value that is not a finite
    number is 0 too: urdfdom refuses the file, which the notes say already."""
    if element is None:
        return 0.0, 0.0
    values = []
    for key in ("damping", "friction"):
        try:
            values.append(number(element, key, 0.0, owner))
        except ParseError:
            values.append(0.0)
    return values[0], values[1]


def _mimic(element: etree._Element | None, owner: SourceRef) -> Mimic | None:
    if element is None:
        return None
    joint = element.get("joint")
    if not joint:
        raise element_error(element, owner, "<mimic> has no joint attribute")
    return Mimic(joint, number(element, "multiplier", 1.0, owner),
                 number(element, "offset", 0.0, owner),
                 SourceRef(owner.file, source_line(element) or owner.line, owner.element))


def _pose(origin: etree._Element | None, owner: SourceRef) -> tuple[np.ndarray, np.ndarray]:
    """(rotation, translation) of an ``<origin>``; identity when absent."""
    if origin is None:
        return np.eye(3), np.zeros(3)
    translation = numbers(origin, "xyz", 3, (0.0, 0.0, 0.0), owner)
    return _rotation(origin, owner), translation


def _rotation(origin: etree._Element, owner: SourceRef) -> np.ndarray:
    """The rotation of an ``<origin>``'s rpy (zeros when absent)."""
    return _rotation_of(origin, owner)[0]


def _rotation_of(origin: etree._Element, owner: SourceRef) -> tuple[np.ndarray, bool]:
    """(the rotation of an ``<origin>``'s rpy, whether it is the identity up to signed
    zeros)."""
    text = origin.get("rpy")
    known = _ROTATIONS.get(text)  # an rpy text read before
    if known is None:
        rotation = rpy_matrix(*floats(origin, "rpy", 3, (0.0, 0.0, 0.0), owner))
        known = rotation.copy(), _is_identity(rotation)
        if text is not None and len(_ROTATIONS) < 4096:
            _ROTATIONS[text] = known
        return rotation, known[1]
    return known[0].copy(), known[1]


# <origin rpy> text -> its rotation matrix, and whether that is the identity
_ROTATIONS: dict[str, tuple[np.ndarray, bool]] = {}
_IDENTITY = np.eye(3)  # copied, never handed out


# -- sources ------------------------------------------------------------------------


def _named_source(element: etree._Element, path: str) -> SourceRef:
    """SourceRef of a ``<link>``/``<joint>``, which must have a non-empty name."""
    name = element.get("name")
    if not name:
        raise ParseError("name attribute is missing", path, source_line(element), element.tag)
    return SourceRef(path, source_line(element), f'{element.tag} name={quoted(name)}')


def _tag_name(element: etree._Element) -> str:
    """Tag as written: ``prefix:name`` for namespaced tags (e.g. ``xacro:macro``)."""
    name = etree.QName(element).localname
    return f"{element.prefix}:{name}" if element.prefix else name
