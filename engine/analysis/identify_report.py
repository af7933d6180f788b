"""An identification as data: what the log determines, the fits, per-body consistency and
per-joint residuals, JSON-ready (:func:`treedyn.engine.analysis.plain.plain`).

Per body: the file's and the consistent fit's mass, com and rotational inertia about the
com (body frame ``model.body_frames[j]``), with the pseudo-inertia margin of each (the
smallest eigenvalue of the com-frame second moment Sigma_c over its trace; positive:
physically consistent, :func:`.inertia.pseudo_inertia_margin`). The base parameters carry
the ordinary least squares value and its standard deviation, and the same combination of
the file's and of the consistent fit's parameters.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..description import Inertia
from ..model import Model
from ..regressor import Layout, layout_of, model_parameters, spatial_inertia
from ..spatial import inertia_to_parent
from .consistent import Fit
from .identify import Base, LeastSquares, Problem, joint_rms
from .inertia_link import pseudo_inertia_margin


@dataclass
class Identification:
    """Everything one identification found (see :func:`report`)."""

    model: Model
    layout: Layout
    problem: Problem
    base: Base
    ols: LeastSquares
    fit: Fit
    pi_file: np.ndarray
    settings: dict  # prior_weight, loss, tolerance, validate, ...
    logs: list = ()  # per file of problem.files: {"file": its name, "estimated": how or None}
    joint_sigma: np.ndarray | None = None  # (nv,) IDIM-WLS's weights' sigma_j; None: unweighted


def body_inertia(parameters: np.ndarray) -> Inertia:
    """Mass, com and inertia about the com of one body's ten parameters."""
    return Inertia.from_spatial(spatial_inertia(parameters))


def _body(parameters: np.ndarray) -> dict:
    inertia = body_inertia(parameters)
    margin = (pseudo_inertia_margin(inertia.inertia)[1] if inertia.mass > 0 else None)
    return {"mass": inertia.mass, "com": inertia.com, "inertia": inertia.inertia,
            "margin": margin, "consistent": bool(margin is not None and margin > 0)}


def report(result: Identification, dof_labels) -> dict:
    """The identification as a JSON-ready document (keys in docs/identify.md)."""
    layout, base, fit, problem = result.layout, result.base, result.fit, result.problem
    names = layout.names
    bodies = []
    for b, name in enumerate(layout.bodies):
        cols = slice(10 * b, 10 * b + 10)
        bodies.append({"body": name, "frame": result.model.body_frames[layout.body_joint[b]],
                       "fitted": bool(fit.fitted[b]),
                       "file": _body(result.pi_file[cols]),
                       "identified": _body(fit.pi[cols])})
    terms = [{"name": names[k], "file": float(result.pi_file[k]), "identified": float(fit.pi[k])}
             for k in range(layout.inertial, layout.size)]
    file_base, fit_base = base.project(result.pi_file), base.project(fit.pi)
    ols = result.ols
    relative = 100.0 * ols.std / np.where(ols.base != 0.0, np.abs(ols.base), np.nan)
    base_rows = [{"name": base.combination(names, k), "ols": float(ols.base[k]),
                  "std": float(ols.std[k]), "relative_std": float(relative[k]),
                  "file": float(file_base[k]), "consistent": float(fit_base[k])}
                 for k in range(base.rank)]
    in_combination = ~base.identifiable & ~base.no_effect
    candidates = {"file": result.pi_file, "ols": result.ols.full(base), "consistent": fit.pi}
    residuals = {"dofs": list(dof_labels)}
    for split, gram, count in (("train", problem.gram_train, problem.states),
                               ("validate", problem.gram_validate, problem.validate_states)):
        if count:
            residuals[split] = {key: joint_rms(gram, pi, count) for key, pi in candidates.items()}
    if problem.validate_states:  # over the RMS of the measured torques: 0 perfect, 1 none
        measured = np.sqrt(problem.gram_validate[:, -1, -1] / problem.validate_states)
        residuals["validate_normalised"] = {
            key: rms / np.where(measured > 0, measured, np.nan)
            for key, rms in residuals["validate"].items()}
    files = [{**log, "states": count, "rms": joint_rms(gram, candidates["ols"], count)}
             for log, (count, gram) in zip(result.logs, problem.files)]
    return {
        "model": result.model.name,
        "files": files,
        "states": {"train": problem.states, "validate": problem.validate_states},
        "equations": problem.equations,
        "settings": dict(result.settings),
        "parameters": len(names),
        "rank": base.rank,
        "condition": base.condition,
        "condition_scaled": base.condition_scaled,
        "identifiable": [names[k] for k in np.flatnonzero(base.identifiable)],
        "unidentifiable": {"in_combination": [names[k] for k in np.flatnonzero(in_combination)],
                           "no_effect": [names[k] for k in np.flatnonzero(base.no_effect)]},
        "base": base_rows,
        "sigma": result.ols.sigma if ols.unweighted is None else ols.unweighted,
        "joint_sigma": result.joint_sigma,
        "fit": {"converged": fit.converged, "message": fit.message, "cost": fit.cost,
                "evaluations": fit.iterations, "reweightings": fit.reweightings},
        "bodies": bodies,
        "joint_terms": terms,
        "residuals": residuals,
    }


def link_inertias(model: Model, layout: Layout, pi: np.ndarray, fitted: np.ndarray) -> list:
    """(link name, new Inertia in that link's frame) for each fitted body: its main link
    (the one named as the body) takes the whole change of the body's inertia, the links
    welded to it keep theirs."""
    changes = []
    links = {link.name: link for link in model.description.links}
    for b, name in enumerate(layout.bodies):
        if not fitted[b] or name not in links:
            continue
        cols = slice(10 * b, 10 * b + 10)
        file = model.body_inertia[layout.body_joint[b]]
        delta = spatial_inertia(pi[cols]) - file  # (6, 6) about the body origin, body frame
        frame = model.frame(name)  # p_body = R p_link + t
        R, t = frame.rotation, frame.translation
        in_link = inertia_to_parent(R[None], (-R.T @ t)[None], delta[None])[0]
        changes.append((name, Inertia.from_spatial(links[name].inertia.spatial() + in_link)))
    return changes


def unmatched_body(written: Model, result: Identification) -> str | None:
    """The first fitted body of ``result`` that the model ``written`` (read back from the
    file the fit was written to) does not give the consistent fit's parameters, to 1e-9 of
    their size (a compiler that rescales inertias); None when every one matches."""
    columns = result.layout
    pi = model_parameters(written, layout_of(written, columns.terms))[:columns.inertial]
    for b, name in enumerate(columns.bodies):
        if not result.fit.fitted[b]:
            continue
        want = result.fit.pi[10 * b:10 * b + 10]
        got = pi[10 * b:10 * b + 10] if written.bodies[b].name == name else None
        if got is None or np.abs(got - want).max() > 1e-9 * np.abs(want).max():
            return name
    return None
