"""Which finding of check-inertia reports a defect when several checks see the same one:
the one pass (:func:`settle`) over every check's findings, after all of them ran.

One defect, one finding: the most specific failing check wins and the findings it implies
become skips that name it (``--all`` still lists them). The rules, each a function of the
findings the checks made (and of the rules above it), applied in this order:

1. One link, one consistency defect. From the most to the least specific: ``inertia-pd``
   errors (not symmetric, a negative principal moment) imply ``triangle`` and
   ``pseudo-inertia``; ``triangle`` errors imply ``pseudo-inertia`` (for m > 0, J >= 0
   exactly when the triangle inequality holds) and the ``inertia-pd`` warning of a
   semi-definite tensor (moments 0, 0, x violate the triangle inequality); ``inertia-pd``
   warnings (a point mass, a rod) imply the ``pseudo-inertia`` warning; ``pseudo-inertia``
   alone remains for flat idealisations (lambda_1 + lambda_2 = lambda_3 with every moment
   positive), and a negative ``mass`` implies its error. (``finite`` and an absurd
   ``mass`` leave nothing else checked on the link: the checks' gates, not a rule.)
2. A link that hardly matters to its body (or is welded to the world) is judged with its
   body: its idealisation (point, rod, flat: a consistency warning) is no defect, and its
   inconsistent tensor is a warning on a link welded to the world.
3. A body's ``articulated-inertia`` singular D-block is implied by its link's ``mass``
   error (a moving body without mass).
4. ``merged-pseudo-inertia`` of a body with a link that already fails a consistency check
   (or has a mass error) is implied by that link (a sum of consistent inertias is
   consistent, so the merged body can only fail through one of its links); a consistent
   merged body makes the consistency errors of its negligible links warnings (the
   dynamics only see the body, as MuJoCo's compiler, fusing static bodies, and Pinocchio,
   merging fixed joints, do).
"""
from __future__ import annotations

from .inertia import LINK_CHECKS, Finding, LinkContext

CONSISTENCY = ("inertia-pd", "triangle", "pseudo-inertia")
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def implied_skip(finding: Finding, winner: Finding) -> Finding:
    """``finding`` as a skip naming the finding that reports its defect."""
    where = "this link" if winner.body == finding.body else f"link {winner.body}"
    return finding._replace(
        status="skip", severity="info", fix=None,
        message=f"implied by the {winner.check} finding of {where} (reported there): "
                f"{finding.message}")


def settle(links: dict[str, list[Finding]], bodies: list[list[Finding]],
           contexts: dict[str, LinkContext], massive: list[tuple[str, ...]]) -> list[Finding]:
    """Every finding once, the rules of the module doc applied: ``links`` the findings of
    each link (in the model's order), ``bodies`` those of each body (``model.body_names``
    order), ``massive`` each body's links with mass. Link findings first, then body ones."""
    for name, findings in links.items():
        one_defect(findings)
        if contexts[name].negligible:
            judged_with_body(findings, contexts[name])
    for j, findings in enumerate(bodies):
        main = contexts[findings[0].body] if findings else None
        for n, finding in enumerate(findings):
            if finding.check == "articulated-inertia" and main is not None:
                findings[n] = implied_by_mass(finding, links.get(main.link.name, ()))
            elif finding.check == "merged-pseudo-inertia":
                findings[n] = merged(finding, links, contexts, massive[j])
    return [f for findings in links.values() for f in findings] + \
        [f for findings in bodies for f in findings]


def one_defect(findings: list[Finding]) -> None:
    """Rule 1 on one link's findings: one failing consistency finding, the most specific."""
    failing = [(n, f) for n, f in enumerate(findings)
               if f.status == "fail" and f.check in CONSISTENCY]
    if not failing:
        return
    _, winner = min(failing, key=lambda item: (SEVERITY_RANK[item[1].severity],
                                               CONSISTENCY.index(item[1].check)))
    mass = next((f for f in findings if f.check == "mass" and f.status == "fail"
                 and f.severity == "error"), None)
    for n, finding in failing:
        if finding is not winner:
            findings[n] = implied_skip(finding, winner)
        elif finding.check == "pseudo-inertia" and mass is not None:
            findings[n] = implied_skip(finding, mass)


def judged_with_body(findings: list[Finding], context: LinkContext) -> None:
    """Rule 2 on the findings of a link that hardly matters to its body: an idealisation
    (point, rod, flat) is no defect; an inconsistent tensor is a warning on a link welded
    to the world (on a welded link, rule 4 excuses it when the body is consistent)."""
    for n, finding in enumerate(findings):
        if finding.check not in CONSISTENCY or finding.status != "fail":
            continue
        if finding.severity == "warning":
            findings[n] = finding._replace(
                status="skip", severity="info", fix=None,
                message=f"not a defect here ({context.negligible}): {finding.message}")
        elif context.body < 0:
            findings[n] = finding._replace(
                severity="warning",
                message=f"{finding.message} [warning only: {context.negligible}]")


def implied_by_mass(finding: Finding, own: list[Finding]) -> Finding:
    """Rule 3: a singular D-block of a body whose mass check failed reports that defect."""
    if finding.severity != "error":
        return finding
    mass = next((f for f in own if f.check == "mass"), None)
    if mass is not None and mass.status == "fail" and mass.severity == "error":
        return implied_skip(finding, mass)
    return finding


def merged(finding: Finding, links: dict[str, list[Finding]],
           contexts: dict[str, LinkContext], massive: tuple[str, ...]) -> Finding:
    """Rule 4: the merged body's finding, and its negligible links' excused errors."""
    names = [name for name in dict.fromkeys(contexts) if name in set(massive)]
    if finding.status == "fail":
        failing = [(k, LINK_CHECKS.index(f.check), f) for k, name in enumerate(names)
                   for f in links.get(name, ()) if f.status == "fail" and (
                       f.check in CONSISTENCY or (f.check == "mass" and f.severity == "error"))]
        # the first link in the model's order, its most basic check (mass first)
        return implied_skip(finding, min(failing)[2]) if failing else finding
    for name in names:
        own, context = links.get(name, []), contexts[name]
        for n, f in enumerate(own):
            if (f.status == "fail" and f.severity == "error" and f.check in CONSISTENCY
                    and context.negligible):
                own[n] = f._replace(
                    severity="warning",
                    message=f"{f.message} [warning only: {context.negligible}, and body "
                            f"{finding.body} as a whole is consistent (see "
                            "merged-pseudo-inertia)]")
    return finding
