"""check_inertia: every link and body check of :mod:`.inertia` on a model, as data: the
one table of checks, each a pure function, run over every link and body, then settled."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..description import LinkSpec
from ..model import Model
from .inertia import (ABSURD_MASS, HEURISTIC_CHECKS, MINVAL, NEGLIGIBLE_MASS, CheckOptions,
                      Deferred, Finding, Findings, InertiaReport, Inputs, LinkContext,
                      LinkGeometry)
from .inertia_body import (Body, Samples, articulated, block_passes, limits,
                           merged_pseudo_inertia)
from .inertia_geometry import geometry_checks
from .inertia_hierarchy import CONSISTENCY, settle
from ..inertia_forms import pseudo_inertia_of
from .inertia_link import (finite, inertia_pd, mass, numbers_of, placeholder, pseudo_inertia,
                           triangle)


class Check(NamedTuple):
    """One entry of :data:`TABLE`: a pure function of its scope's data returning findings.

    ``scope`` "link": ``run(context, inputs)``, for every link that passes ``when``;
    "body": ``run(context, inputs, body)`` for every moving body of the compact tree.
    """

    name: str
    scope: str
    run: Callable
    when: Callable[[LinkContext], bool] = lambda context: True


def checked(context: LinkContext) -> bool:
    """The link's numbers are finite and there is an inertia to judge (not an absurd mass,
    not a massless frame): the links whose LinkNumbers :func:`link_contexts` computes."""
    return context.numbers is not None


def judged(context: LinkContext) -> bool:
    """Checked, and not a placeholder (a placeholder is judged with its body)."""
    return checked(context) and not context.placeholder


TABLE = (
    Check("finite", "link", finite),
    Check("mass", "link", mass, lambda context: context.finite_moment),
    Check("placeholder", "link", placeholder,
          lambda context: checked(context) and bool(context.placeholder)),
    Check("inertia-pd", "link", inertia_pd, judged),
    Check("triangle", "link", triangle, judged),
    Check("pseudo-inertia", "link", pseudo_inertia, judged),
    Check("geometry", "link", geometry_checks, judged),  # density, plausibility, ...
    Check("articulated-inertia", "body", articulated),
    Check("merged-pseudo-inertia", "body", merged_pseudo_inertia),
    Check("limits", "body", limits),
)


def check_inertia(model: Model, geometry: dict[str, LinkGeometry] | None = None,
                  options: CheckOptions = CheckOptions()) -> InertiaReport:
    """Every check of :data:`TABLE` on ``model`` (its description's links, merged or not),
    then the one pass that settles which finding reports which defect
    (:func:`.inertia_hierarchy.settle`)."""
    contexts, quiet_links = link_contexts(model, geometry or {})
    inputs = Inputs(model, options, Samples(model, options))
    links: dict[str, list | Deferred] = {}  # in the description's order
    made: dict[str, list[Finding]] = {}  # those not deferred
    for name, quiet in zip(contexts, quiet_links):
        if quiet:
            links[name] = Deferred(read_link_findings, (contexts, name, inputs),
                                   PLACEHOLDER_KINDS)
        else:
            links[name] = made[name] = link_findings(contexts[name], inputs)
    frames: dict[int, list[str]] = {}  # body -> its links, in model.frames order
    for frame in model.frames:
        frames.setdefault(frame.joint, []).append(frame.name)
    for j, name in enumerate(model.body_names):
        if name not in contexts:
            link = next(spec for spec in model.description.links if spec.name == name)
            contexts[name] = LinkContext(link, j, True, None, link.source)
    bodies, massive, quiet = [], [], passing_bodies(inputs)
    for j, (name, kinds) in enumerate(zip(model.body_names, quiet)):
        members = tuple(frames.get(j, ()))
        merged = len(members) > 1 and len(body_of(contexts, j, members).massive) > 1
        if kinds is not None and not merged:  # (a merged body has merged-pseudo-inertia)
            bodies.append(Deferred(read_body_findings, (contexts, name, inputs, j, members),
                                   kinds))
            massive.append(())  # (settle reads a merged body's only)
        else:
            body = body_of(contexts, j, members)
            bodies.append(body_findings(contexts[name], inputs, body))
            massive.append(body.massive)
    settle(made, [() if isinstance(b, Deferred) else b for b in bodies], contexts, massive)
    return InertiaReport(model.name, Findings([*links.values(), *bodies]))


class Contexts:
    """name -> :class:`LinkContext` of every link the checks judge, in the description's
    order (a mapping), each made when first read (``contexts[name]``, by ``make(k)`` from
    the link's index k in ``links``, the value kept until then). The links counted in bulk
    (quiet placeholders: nearly every link of a large model) never have theirs made unless
    their findings are read."""

    def __init__(self, make, links):
        self.make, self.links, self._values = make, links, {}

    def __getitem__(self, name: str) -> LinkContext:
        context = self._values[name]
        if not isinstance(context, LinkContext):
            context = self._values[name] = self.make(context)
        return context

    def __setitem__(self, name: str, value: LinkContext | int) -> None:
        self._values[name] = value  # a context, or the index of the link to make it from

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def link(self, name: str) -> LinkSpec:
        """The link's spec, without making its context."""
        context = self._values[name]
        return context.link if isinstance(context, LinkContext) else self.links[context]

    def indices(self) -> list:
        """The values kept: a context, or the index of the link to make it from."""
        return list(self._values.values())


def read_link_findings(contexts: Contexts, name: str, inputs: Inputs) -> list[Finding]:
    """:func:`link_findings` of a deferred link, its context made now."""
    return link_findings(contexts[name], inputs)


def read_body_findings(contexts: Contexts, name: str, inputs: Inputs, j: int,
                       members: tuple[str, ...]) -> list[Finding]:
    """:func:`body_findings` of a deferred body, its link's context made now."""
    return body_findings(contexts[name], inputs, body_of(contexts, j, members))


def body_of(contexts: Contexts, j: int, members: tuple[str, ...]) -> Body:
    """Body ``j`` of the links ``members`` (in model.frames order)."""
    return Body(j, members, tuple(n for n in members if contexts.link(n).inertia.mass != 0))


def link_findings(context: LinkContext, inputs: Inputs) -> list[Finding]:
    """The findings of every link check of :data:`TABLE` on one link, in its order."""
    return [f for check in TABLE if check.scope == "link" and check.when(context)
            for f in check.run(context, inputs)]


def body_findings(context: LinkContext, inputs: Inputs, body: Body) -> list[Finding]:
    """The findings of every body check of :data:`TABLE` on one body, in its order."""
    return [f for check in TABLE if check.scope == "body"
            for f in check.run(context, inputs, body)]


# what a placeholder link that passes finite and mass gets (see link_contexts)
PLACEHOLDER_KINDS = (("finite", "pass", "info"), ("mass", "pass", "info"),
                     *((check, "skip", "info") for check in (*CONSISTENCY, *HEURISTIC_CHECKS)))


def passing_bodies(inputs: Inputs) -> list[tuple | None]:
    """Per body, the (check, status, severity) of its articulated-inertia and limits
    findings when both pass (or limits has none), known without making them
    (:func:`.inertia_body.articulated`, :func:`.inertia_body.limits`); else None. When
    every D-block passes against a bound of lambda_max(M) (:meth:`Samples.sure_passes`),
    lambda_max is not computed."""
    model, samples = inputs.model, inputs.samples
    sure = samples.sure_passes(inputs.options)
    lowest = [()] * len(model.body_names) if sure else samples.lowest()
    if not sure and not samples.finite:
        return [None] * len(model.body_names)
    low, high = model.q_lower.tolist(), model.q_upper.tolist()
    kinds: list[tuple | None] = []
    for j, (k, size) in enumerate(zip(model.idx_q.tolist(), model.nq_joint.tolist())):
        if lowest[j] is None or not (sure or block_passes(lowest[j][1], inputs.options)):
            kinds.append(None)
        elif size != 1 or not (math.isfinite(low[k]) or math.isfinite(high[k])):
            kinds.append(ARTICULATED_PASS)
        else:
            kinds.append(BOTH_PASS if not low[k] > high[k] else None)
    return kinds


ARTICULATED_PASS = (("articulated-inertia", "pass", "info"),)
LIMITS_PASS = (("limits", "pass", "info"),)
BOTH_PASS = ARTICULATED_PASS + LIMITS_PASS


def link_contexts(model: Model, geometry: dict[str, LinkGeometry]) -> tuple[Contexts, list]:
    """The context of every link the checks judge (:class:`Contexts`: each made when first
    read, its numbers computed in bulk) and, per such link in order, whether it is a quiet
    placeholder: its findings are :data:`PLACEHOLDER_KINDS`, known without making them (its
    settled findings are its checks' own: no rule of :func:`settle` touches a pass or a
    skip). That is a placeholder (so a mass above MINVAL, not absurd) with finite numbers,
    whose mass check passes (:func:`.inertia_link.mass`: a welded link, or a body that
    weighs more than MINVAL)."""
    body_of = {frame.name: frame.joint for frame in model.frames}
    every = model.description.links
    mass = np.array([link.inertia.mass for link in every], dtype=float)
    com = np.array([link.inertia.com for link in every], dtype=float).reshape(-1, 3)
    tensor = np.array([link.inertia.inertia for link in every], dtype=float).reshape(-1, 3, 3)
    finite = (np.isfinite(mass) & np.all(np.isfinite(com), axis=1)
              & np.all(np.isfinite(tensor), axis=(1, 2)))
    with np.errstate(all="ignore"):
        moment = finite.copy()  # and J does not overflow
        moment[finite] = np.all(np.isfinite(pseudo_inertia_of(mass[finite], com[finite],
                                                              tensor[finite])), axis=(1, 2))
        has_inertial = np.array([link.has_inertial for link in every], dtype=bool)
        judged = (moment & has_inertial & (mass <= ABSURD_MASS)
                  & ~((mass == 0) & ~np.any(tensor.reshape(-1, 9), axis=1)))
        traces = np.abs(np.trace(tensor, axis1=1, axis2=2))
        scale = (float(sum(max(m, 0.0) for m, link in zip(mass.tolist(), every)
                           if link.has_inertial)),
                 float(sum(t for t, link in zip(traces.tolist(), every) if link.has_inertial)))
        calm = judged & placeholder_like(has_inertial & ~np.array(
            [link.inertia_from_geometry for link in every], dtype=bool), mass, traces, scale)
    numbers: list = [None] * len(every)  # made in bulk when a context first needs them
    quiet = np.zeros(len(every), dtype=bool)
    rows = (finite.tolist(), moment.tolist(), judged.tolist(), traces.tolist())

    def make(k: int) -> LinkContext:
        link, (ok, fits, judge, trace) = every[k], (row[k] for row in rows)
        body = body_of[link.name]
        main = body >= 0 and model.body_names[body] == link.name
        if judge and numbers[k] is None:  # those of the quiet links only if one is read
            group = np.flatnonzero(judged & (quiet == quiet[k]))
            for row, values in zip(group.tolist(), numbers_of(mass[group], com[group],
                                                              tensor[group])):
                numbers[row] = values
        source = link.inertial_source if link.inertial_source.line else link.source
        return LinkContext(link, body, main, geometry.get(link.name), source,
                           _negligible(model, link, body, main),
                           _placeholder(model, link, body, scale, trace), ok, fits,
                           numbers[k])

    contexts = Contexts(make, every)
    heavy = (model.body_mass > MINVAL).tolist()
    for k, (link, calm_link) in enumerate(zip(every, calm.tolist())):
        body = body_of.get(link.name)
        if body is None or not (link.has_inertial or link.source.line or body >= 0):
            continue  # a world link a parser (or a free-flyer root) made up
        contexts[link.name] = k
        quiet[k] = calm_link and (body < 0 or heavy[body]
                                    or model.body_names[body] != link.name)
    return contexts, quiet[contexts.indices()].tolist()


def _negligible(model: Model, link: LinkSpec, body: int, main: bool) -> str:
    """Why a welded link hardly matters to the body it is welded to, or to the dynamics
    ("" if it matters)."""
    if body < 0:
        return "welded to the world, it does not enter the dynamics"
    if main:
        return ""
    body_mass = float(model.body_mass[body])
    if body_mass > 0 and abs(link.inertia.mass) <= NEGLIGIBLE_MASS * body_mass:
        share = 100 * abs(link.inertia.mass) / body_mass
        return f"{share:.2g} % of the mass of body {model.body_names[body]}"
    return ""


PLACEHOLDER_SHARE = 1e-4  # a link's share of the model's mass and inertia below which it is
# a placeholder (urdfdom and KDL want an <inertial> on every link: 1e-6 kg, 1e-6 kg m^2)


def _placeholder(model: Model, link: LinkSpec, body: int, scale: tuple[float, float],
                 trace: float) -> str:
    """Why the link's inertia is a placeholder ("" if it is not): a positive mass and a
    tensor that are both under :data:`PLACEHOLDER_SHARE` of the model's, whatever their
    form. Its own consistency does not matter; the body it belongs to is judged whole
    (merged-pseudo-inertia, articulated-inertia). ``scale``: the model's total mass and
    total |tr(I)|, ``trace`` the link's |tr(I)|."""
    inertia = link.inertia
    if not placeholder_like(link.has_inertial and not link.inertia_from_geometry,
                            inertia.mass, trace, scale):
        return ""
    where = ("welded to the world" if body < 0 else
             f"judged as part of body {model.body_names[body]}")
    return (f"{inertia.mass:g} kg, {inertia.mass / scale[0]:.2g} of the model's mass, "
            f"with a negligible tensor: {where}")


def placeholder_like(own, mass, trace, scale: tuple[float, float]):
    """Whether links are placeholders by :func:`_placeholder`'s rule: ``own``, an <inertial>
    of their own (not computed from geometry), a mass above MINVAL and both mass and
    |tr(I)| under :data:`PLACEHOLDER_SHARE` of the model's totals ``scale``. Bools and
    floats, or arrays of them."""
    total_mass, total_trace = scale
    return (own & (MINVAL < mass) & (mass <= PLACEHOLDER_SHARE * total_mass)
            & (trace <= PLACEHOLDER_SHARE * total_trace))
