"""Which finding of check-inertia reports a defect when several checks see the same one.

One defect, one finding: the most specific failing check wins and the findings it implies
become skips that name it (``--all`` still lists them). On one link, from the most to the
least specific:

1. ``finite`` and an absurd ``mass``: nothing else is checked on the link.
2. ``inertia-pd`` errors (not symmetric, a negative principal moment) imply ``triangle``
   and ``pseudo-inertia``.
3. ``triangle`` errors imply ``pseudo-inertia`` (for m > 0, J >= 0 exactly when the
   triangle inequality holds) and the ``inertia-pd`` warning of a semi-definite tensor
   (moments 0, 0, x violate the triangle inequality).
4. ``inertia-pd`` warnings (a point mass, a rod) imply the ``pseudo-inertia`` warning.
5. ``pseudo-inertia`` alone remains for flat idealisations (lambda_1 + lambda_2 =
   lambda_3 with every moment positive), and a negative ``mass`` implies its error.

On a body: ``merged-pseudo-inertia`` of a body with a link that already fails a
consistency check is implied by that link (a sum of consistent inertias is consistent,
so the merged body can only fail through one of its links); ``articulated-inertia``'s
singular D-block is implied by the body's ``mass`` error (a moving body without mass).
"""
from __future__ import annotations

import dataclasses

from .inertia import Finding

CONSISTENCY = ("inertia-pd", "triangle", "pseudo-inertia")
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def implied_skip(finding: Finding, winner: Finding) -> Finding:
    """``finding`` as a skip naming the finding that reports its defect."""
    where = "this link" if winner.body == finding.body else f"link {winner.body}"
    return dataclasses.replace(
        finding, status="skip", severity="info", fix=None,
        message=f"implied by the {winner.check} finding of {where} (reported there): "
                f"{finding.message}")


def suppress_link(findings: list[Finding], start: int) -> None:
    """Keep one failing consistency finding among one link's findings (``findings[start:]``,
    its mass finding among them): the most specific, see the module doc."""
    own = list(enumerate(findings[start:], start))
    failing = [(n, f) for n, f in own if f.status == "fail" and f.check in CONSISTENCY]
    if not failing:
        return
    _, winner = min(failing, key=lambda item: (SEVERITY_RANK[item[1].severity],
                                               CONSISTENCY.index(item[1].check)))
    mass = next((f for _, f in own if f.check == "mass" and f.status == "fail"
                 and f.severity == "error"), None)
    for n, finding in failing:
        if finding is not winner:
            findings[n] = implied_skip(finding, winner)
        elif finding.check == "pseudo-inertia" and mass is not None:
            findings[n] = implied_skip(finding, mass)


def failing_consistency(findings: list[Finding], links) -> Finding | None:
    """The first reported (failing) consistency or mass error among ``links``' findings."""
    names = set(links)
    return next((f for f in findings if f.body in names and f.scope == "link"
                 and f.status == "fail" and (f.check in CONSISTENCY or
                                             (f.check == "mass" and f.severity == "error"))),
                None)
