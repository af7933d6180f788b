"""A conditioning report as data: the JSON-ready document of
:func:`.conditioning.analyze`'s report (non-finite numbers as ``None``)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .check_report import plain


def condition_document(report, model, labels: Sequence[str], options) -> dict:
    worst = report.worst
    eigen = report.eigenvalues
    return {
        "model": model.name, "samples": int(len(report.q)), "seed": options.seed,
        "cond": {"min": plain(float(np.min(report.cond))),
                 "median": plain(float(np.median(report.cond))),
                 "max": plain(float(report.cond[worst]))},
        "worst": {"sample": worst, "q": plain(report.q[worst]), "cond": plain(report.cond[worst]),
                  "lambda_min": plain(eigen[worst, 0]), "lambda_max": plain(eigen[worst, -1]),
                  "weakest_direction": {label: plain(c) for label, c in
                                        zip(labels, report.weakest)}},
        "d_blocks": [{"joint": b.joint, "d_min": plain(b.d_min), "ratio": plain(b.ratio),
                      "d_cond": plain(b.d_cond)} for b in report.blocks],
        "mass_ratios": [{"parent": r.parent, "child": r.child, "parent_mass": r.parent_mass,
                         "child_mass": r.child_mass, "ratio": plain(r.ratio)}
                        for r in report.mass_ratios],
        "thresholds": thresholds(options),
        "warnings": list(report.warnings),
        **({"singular": {"samples": report.singular_count, "joints": list(report.coinciding)}}
           if report.singular_count else {}),
    }


def empty_condition_document(model, options, note: str) -> dict:
    """condition_document's keys for a model without dofs: no samples, nulls, a note."""
    return {"model": model.name, "samples": 0, "seed": options.seed, "cond": None,
            "worst": None, "d_blocks": [], "mass_ratios": [],
            "thresholds": thresholds(options), "warnings": [], "note": note}


def thresholds(options) -> dict:
    return {"max_cond": options.max_cond, "max_mass_ratio": options.max_mass_ratio,
            "min_block_ratio": options.min_block_ratio}
