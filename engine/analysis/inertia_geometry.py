"""Link checks against the link's geometry: plausibility, about-origin, orientation and
density (uniform-density solids as in :mod:`.inertia`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..description import Inertia
from ..inertia_forms import parallel_axis, principal_moments, symmetric
from .inertia import (EXACT_MATCH, HEURISTIC_CHECKS, MINVAL, CheckOptions, Finding, Fix,
                      Inputs, LinkContext, UniformInertia, equivalent_box, triangle_slack,
                      uniform_inertia)
from .inertia_link import adder


def geometry_checks(context: LinkContext, inputs: Inputs) -> list[Finding]:
    """density, plausibility, about-origin and orientation."""
    out: list[Finding] = []
    add = adder(context, inputs.options, out)
    options = inputs.options
    geometry = context.geometry
    uniform = uniform_inertia(geometry.solids) if geometry and geometry.solids else None
    inertia = context.link.inertia
    moments = context.numbers.moments
    # semi-definite tensors (a rod, a flat plate) are consistent enough to compare
    consistent = (not context.numbers.negligible and moments[0] >= 0
                  and triangle_slack(moments) >= -options.tolerance * moments[2])
    why = ("the link has no mass" if inertia.mass <= 0 else
           "MuJoCo computed this inertia from the body's geoms"
           if context.link.inertia_from_geometry else
           f"no usable geometry ({geometry.note})" if geometry and uniform is None else
           "no geometry" if uniform is None else "")
    if why:
        for check in HEURISTIC_CHECKS:
            add(check, "skip", "info", f"skipped: {why}")
        return out
    context, uniform = holding_geometry(context, uniform, options)
    token = density(context, options, add, uniform)
    if not consistent:
        for check in HEURISTIC_CHECKS[:3]:
            add(check, "skip", "info",
                "skipped: the inertia itself is not physically consistent")
        return out
    if token:
        for check in HEURISTIC_CHECKS[:2]:
            add(check, "skip", "info",
                f"skipped: the {context.geometry.role} geometry is too small to hold "
                "the mass (see density): a token shape says nothing of the inertia")
    else:
        reading = origin_reading(context.link.inertia, uniform, options)
        plausibility(context, options, add, uniform, reading)
        about_origin(context, options, add, reading, uniform)
    orientation(context, options, add, uniform)
    return out


def plausibility(context: LinkContext, options: CheckOptions, add, uniform: UniformInertia,
                 reading: "OriginReading") -> None:
    inertia = context.link.inertia
    role = context.geometry.role
    reference = inertia.mass * uniform.inertia
    ratio = reading.ratio_as_com
    moments = context.numbers.moments
    box = np.sort(equivalent_box(moments, inertia.mass))
    extent = np.sort(uniform.high - uniform.low)
    outside = float(np.linalg.norm(inertia.com - np.clip(inertia.com, uniform.low,
                                                         uniform.high)))
    diagonal = float(np.linalg.norm(uniform.high - uniform.low))
    details = {"ratio": ratio, "equivalent_box": box, "geometry_box": extent,
               "role": role, "com_outside": outside, "exact": context.geometry.exact}
    sizes = (f"equivalent uniform box {dims(box)} m vs {role} geometry box "
             f"{dims(extent)} m")
    margin = float(np.log10(options.implausible_ratio / ratio)) if ratio > 0 else None
    fix = None if reading.explained else lambda: Fix(  # noqa: E731
        inertia.mass, inertia.com, reference, context.link.inertial_rotation,
        f"uniform density filling the {role} geometry, same mass")
    see = " (see about-origin)" if reading.explained else ""
    if ratio >= options.implausible_ratio:
        add("plausibility", "fail", "error",
            f"inertia is {ratio:.3g}x that of a uniform body filling the {role} "
            f"geometry ({sizes}): a units or origin mistake?{see}", ratio, margin,
            details, fix)
    elif ratio >= options.plausible_ratio:
        add("plausibility", "fail", "warning",
            f"inertia is {ratio:.3g}x that of a uniform body filling the {role} "
            f"geometry ({sizes}){see}", ratio, margin, details, fix)
    elif ratio <= 1.0 / options.implausible_ratio:
        add("plausibility", "fail", "warning",
            f"inertia is only {ratio:.3g}x that of a uniform body filling the {role} "
            f"geometry ({sizes}): a placeholder value?", ratio, margin, details, fix)
    elif outside > max(diagonal, 0.01):
        add("plausibility", "fail", "warning",
            f"com lies {outside:.3g} m outside the {role} geometry's bounding box "
            f"(diagonal {diagonal:.3g} m)", ratio, margin, details)
    else:
        add("plausibility", "pass", "info",
            f"inertia is {ratio:.3g}x that of a uniform body filling the {role} "
            f"geometry ({sizes})", ratio, margin, details)


def about_origin(context: LinkContext, options: CheckOptions, add, reading: "OriginReading",
                 uniform: UniformInertia) -> None:
    """The CAD-export mistake: the tensor is about the link origin, not the com (an
    error when only that reading is plausible; a warning when that reading is, within
    :data:`EXACT_MATCH`, the uniform inertia of exact geometry while the one about the
    com is at least twice it)."""
    if reading.alternative is None:
        add("about-origin", "skip", "info",
            "com at the link origin: both readings agree")
        return
    inertia = context.link.inertia
    details = {"ratio_as_com": reading.ratio_as_com,
               "ratio_as_origin": reading.ratio_as_origin,
               "consistent_as_origin": reading.consistent}
    if reading.explained:
        add("about-origin", "fail", "error",
            f"the inertia fits the {context.geometry.role} geometry only when read "
            f"about the link origin instead of the com ({reading.ratio_as_com:.3g}x "
            f"vs {reading.ratio_as_origin:.3g}x the uniform inertia): a CAD export "
            "about the wrong point?", reading.ratio_as_origin, None, details,
            lambda: Fix(inertia.mass, inertia.com, reading.alternative,
                             context.link.inertial_rotation,
                             "the tensor read about the link origin, moved to the com"))
    elif (context.geometry.exact and reading.consistent and reading.ratio_as_com >= 2
          and relative_distance(reading.alternative, inertia.mass * uniform.inertia)
          <= EXACT_MATCH):
        add("about-origin", "fail", "warning",
            f"read about the link origin, the inertia is that of a uniform body "
            f"filling the {context.geometry.role} geometry (within "
            f"{EXACT_MATCH:.0%}); read about the com, as URDF means it, it is "
            f"{reading.ratio_as_com:.3g}x that: a CAD export about the wrong point?",
            reading.ratio_as_origin, None, details,
            lambda: Fix(inertia.mass, inertia.com, reading.alternative,
                             context.link.inertial_rotation,
                             "the tensor read about the link origin, moved to the com"))
    else:
        state = "consistent" if reading.consistent else "inconsistent"
        add("about-origin", "pass", "info",
            f"read about the com: {reading.ratio_as_com:.3g}x the uniform inertia; "
            f"read about the origin it would be {state}", reading.ratio_as_origin,
            None, details)


def orientation(context: LinkContext, options: CheckOptions, add,
                uniform: UniformInertia) -> None:
    """Principal axes against the geometry's, and the inertial rpy applied wrongly."""
    link = context.link
    target = shape_of(uniform.inertia)
    other = context.geometry.alternative
    twin = uniform_inertia(other.solids) if other is not None and other.exact else None
    if twin is not None and relative_distance(
            link.inertia.inertia, link.inertia.mass * twin.inertia) <= EXACT_MATCH:
        add("orientation", "pass", "info",
            f"the inertia is that of a uniform body filling the {other.role} "
            f"geometry (within {EXACT_MATCH:.0%}): its axes are right", 0.0, 0.5)
        return
    if np.linalg.norm(target - np.eye(3) / 3) < 0.05:
        add("orientation", "skip", "info",
            "the geometry is too round to tell its axes apart")
        return
    distance = float(np.linalg.norm(shape_of(link.inertia.inertia) - target))
    R = link.inertial_rotation
    candidates = {}
    if not np.allclose(R, np.eye(3)):
        written = R.T @ link.inertia.inertia @ R
        rotation = options.rotation_name
        candidates = {f"without {rotation}": written,
                      f"with the inverse of {rotation}": R.T @ written @ R}
    scored = sorted((float(np.linalg.norm(shape_of(tensor) - target)), name, tensor)
                    for name, tensor in candidates.items())
    details = {"distance": distance, "candidates": {n: d for d, n, _ in scored}}
    if not context.geometry.exact and distance >= 0.15:
        # a mesh's bounding box is aligned with the mesh frame, as is a tensor read
        # without its rotation: it favours that reading whatever the mass does
        add("orientation", "pass", "info",
            f"principal axes not judged: the {context.geometry.role} meshes, as "
            f"bounding boxes aligned with their frames, say nothing of the axes "
            f"(distance {distance:.3g})", distance, 0.5 - distance, details)
    elif scored and distance >= 0.15 and scored[0][0] <= 0.4 * distance:
        best, name, tensor = scored[0]
        add("orientation", "fail", "error",
            f"principal axes disagree with the {context.geometry.role} geometry "
            f"(distance {distance:.3g}) but agree {name} (distance {best:.3g}): "
            "the rotation was applied wrongly", distance, -distance, details,
            lambda: Fix(link.inertia.mass, link.inertia.com, tensor, R,
                             f"the tensor {name}"))
    elif distance >= 0.5 and context.geometry.exact:
        add("orientation", "fail", "warning",
            f"principal axes disagree with the {context.geometry.role} geometry "
            f"(distance {distance:.3g} between the normalized tensors)", distance,
            0.5 - distance, details)
    else:
        add("orientation", "pass", "info",
            f"principal axes {'match' if distance < 0.5 else 'roughly match'} the "
            f"{context.geometry.role} geometry (distance {distance:.3g}"
            f"{'' if context.geometry.exact else ', meshes as bounding boxes'})",
            distance, 0.5 - distance, details)


def holding_geometry(context: LinkContext, uniform: UniformInertia, options: CheckOptions
                     ) -> tuple[LinkContext, UniformInertia]:
    """The link's other geometry (visual for collision) when the first is too small to
    hold the mass and the other is not: collision shapes that are contact points or
    plates under a foot, not the link's extent."""
    other = context.geometry.alternative
    second = uniform_inertia(other.solids) if other is not None and other.solids else None
    limit, mass = options.max_density, context.link.inertia.mass
    if second is None or mass / uniform.volume <= limit or mass / second.volume > limit:
        return context, uniform
    return context._replace(geometry=other), second


def density(context: LinkContext, options: CheckOptions, add,
            uniform: UniformInertia) -> bool:
    """The density check; True when the geometry is too small to hold the mass."""
    density = context.link.inertia.mass / uniform.volume
    limit = options.max_density
    text = (f"mass / {context.geometry.role} volume = {density:.4g} kg/m^3 "
            f"(volume {uniform.volume:.3g} m^3)")
    if density > limit and context.negligible:
        add("density", "skip", "info",
            f"not judged ({context.negligible}: a sensor or marker frame, whose "
            f"mass in a wrong unit would not be negligible): {text}",
            density, limit - density)
        return True
    if density > limit:
        add("density", "fail", "warning",
            f"{text}: denser than any metal ({limit:g}); mass in the wrong unit?",
            density, limit - density)
        return True
    add("density", "pass", "info", text, density, limit - density)
    return False


@dataclass(frozen=True)
class OriginReading:
    """The link's tensor read about the com (URDF) and about the link origin (CAD mistake)."""

    ratio_as_com: float  # tr(I) / tr(uniform inertia of the geometry)
    alternative: np.ndarray | None  # I - m (|c|^2 1 - c c^T); None when the com is at the origin
    ratio_as_origin: float
    consistent: bool  # the alternative is a physically consistent inertia
    explained: bool  # implausible as written, consistent and plausible read about the origin


def origin_reading(inertia: Inertia, uniform: UniformInertia,
                   options: CheckOptions) -> OriginReading:
    reference = float(np.trace(inertia.mass * uniform.inertia))
    ratio = float(np.trace(inertia.inertia)) / reference
    shift = parallel_axis(inertia.mass, inertia.com)
    if np.trace(shift) <= 1e-3 * abs(np.trace(inertia.inertia)):
        return OriginReading(ratio, None, ratio, True, False)
    alternative = inertia.inertia - shift
    moments, _ = principal_moments(alternative)
    consistent = bool(moments[0] > 0 and
                      triangle_slack(moments) >= -options.tolerance * moments[2])
    ratio_origin = float(np.trace(alternative)) / reference
    plausible = 1.0 / options.plausible_ratio < ratio_origin < options.plausible_ratio
    explained = consistent and plausible and ratio >= options.plausible_ratio
    return OriginReading(ratio, alternative, ratio_origin, consistent, explained)


# ----------------------------------------------------------------------------- helpers


def relative_distance(tensor: np.ndarray, reference: np.ndarray) -> float:
    """Frobenius distance between two tensors relative to the reference's norm."""
    return float(np.linalg.norm(tensor - reference) / max(np.linalg.norm(reference), MINVAL))


def shape_of(inertia: np.ndarray) -> np.ndarray:
    """A rotational inertia normalized to unit trace (its shape, independent of size)."""
    trace = np.trace(inertia)
    return symmetric(inertia) / trace if trace > 0 else np.zeros((3, 3))


def dims(values: np.ndarray) -> str:
    return " x ".join(f"{v:.3g}" for v in values)
