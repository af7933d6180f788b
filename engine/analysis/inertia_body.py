"""Body checks on the compact tree: ABA's articulated inertia (D-block) of every joint and
the pseudo-inertia of bodies merged from several massive links."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..description import Inertia
from .inertia import LinkChecks, LinkContext, spatial_pseudo_inertia
from .inertia_hierarchy import CONSISTENCY, failing_consistency, implied_skip


class BodyChecks(LinkChecks):
    """The checks of each moving body (a joint's link with the links welded to it)."""

    def bodies(self, contexts: dict[str, LinkContext]) -> None:
        model = self.model
        blocks = self.joint_blocks()
        frames: dict[int, list[str]] = {}  # body -> its links, in model.frames order
        for frame in model.frames:
            frames.setdefault(frame.joint, []).append(frame.name)
        # link -> the places of its link findings, all made before the body checks: each
        # body looks at its own links' findings, not at every finding of the model
        self.link_findings: dict[str, list[int]] = {}
        for n, finding in enumerate(self.findings):
            if finding.scope == "link":
                self.link_findings.setdefault(finding.body, []).append(n)
        for j, name in enumerate(model.body_names):
            context = contexts[name]
            links = tuple(frames.get(j, ()))
            if self.finite and np.all(np.isfinite(blocks[j])):
                self.articulated(context, j, blocks[j], links)
            else:
                self.add(context, "articulated-inertia", "fail", "error",
                         f"joint {model.joint_names[j]}: M(q) or ABA's D-block overflows "
                         "(inertias too large for a double)", scope="body", links=links)
            self.implied_by_mass(context, links)
            massive = [n for n in links if contexts[n].link.inertia.mass != 0]
            if len(massive) >= 2:
                rigid = Inertia.from_spatial(model.body_inertia[j])
                self.add_pseudo_inertia(context, rigid, "merged-pseudo-inertia", None,
                                        J=spatial_pseudo_inertia(model.body_inertia[j]),
                                        scope="body", links=links)
                winner = failing_consistency(
                    [self.findings[n] for n in self.places(massive)], massive)
                if self.findings[-1].status != "fail":
                    self.excuse_negligible(contexts, massive, name)
                elif winner is not None:
                    self.findings[-1] = implied_skip(self.findings[-1], winner)
            self.limits(context, j, links)

    def excuse_negligible(self, contexts: dict[str, LinkContext], links, body: str) -> None:
        """An inconsistent link that hardly matters to a body consistent as a whole is a
        warning: the dynamics only see the body (as MuJoCo's compiler, fusing static
        bodies, and Pinocchio, merging fixed joints, do)."""
        for n in self.places(links):
            finding = self.findings[n]
            context = contexts.get(finding.body)
            if (finding.body in links and finding.scope == "link" and finding.status == "fail"
                    and finding.severity == "error" and finding.check in CONSISTENCY
                    and context is not None and context.negligible):
                self.findings[n] = dataclasses.replace(
                    finding, severity="warning",
                    message=f"{finding.message} [warning only: {context.negligible}, and body "
                            f"{body} as a whole is consistent (see merged-pseudo-inertia)]")

    def places(self, links) -> list[int]:
        """The places in ``findings`` of the link findings of ``links``, in order."""
        return sorted(n for name in set(links) for n in self.link_findings.get(name, ()))

    def implied_by_mass(self, context: LinkContext, links) -> None:
        """A singular D-block of a body whose mass check failed reports that same defect."""
        last = self.findings[-1]
        if last.check != "articulated-inertia" or last.severity != "error":
            return
        mass = next((f for f in (self.findings[n] for n in self.places([context.link.name]))
                     if f.check == "mass"), None)
        if mass is not None and mass.status == "fail" and mass.severity == "error":
            self.findings[-1] = implied_skip(last, mass)

    def limits(self, context: LinkContext, j: int, links) -> None:
        """A 1-dof joint's position limits: lower <= upper (MuJoCo refuses the reverse)."""
        model = self.model
        if model.nq_joint[j] != 1:
            return
        k = int(model.idx_q[j])
        lower, upper = float(model.q_lower[k]), float(model.q_upper[k])
        if not (np.isfinite(lower) or np.isfinite(upper)):
            return
        joint = model.joint_names[j]
        details = {"joint": joint, "joint_line": model.joint_sources[j].line,
                   "lower": lower, "upper": upper}
        if lower > upper:
            self.add(context, "limits", "fail", "error",
                     f"joint {joint}: lower limit {lower:g} above upper limit {upper:g}: no "
                     "position satisfies both (swapped?)", [lower, upper], upper - lower,
                     details, scope="body", links=links)
        else:
            self.add(context, "limits", "pass", "info",
                     f"joint {joint}: limits {lower:g} to {upper:g}", [lower, upper],
                     upper - lower, details, scope="body", links=links)

    def articulated(self, context: LinkContext, j: int, D: np.ndarray, links) -> None:
        model = self.model
        joint = model.joint_names[j]
        low = np.linalg.eigvalsh(D)[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(self.largest > 0, low / self.largest, 0.0)
        worst = int(np.argmin(ratios))
        ratio = float(ratios[worst])
        details = {"joint": joint, "joint_line": model.joint_sources[j].line,
                   "d_min": float(low[worst]), "lambda_max": float(self.largest[worst]),
                   "sample": worst}
        margin = float(np.log10(ratio / self.options.min_block_ratio)) if ratio > 0 else None
        extra = {"scope": "body", "links": links}
        if ratio <= 1e-15:
            self.add(context, "articulated-inertia", "fail", "error",
                     f"joint {joint} moves (with its descendants free) no inertia along some "
                     f"direction: ABA's D-block is singular (smallest eigenvalue "
                     f"{low[worst]:.3g}), M is singular", ratio, margin, details, **extra)
        elif ratio < self.options.min_block_ratio:
            self.add(context, "articulated-inertia", "fail", "warning",
                     f"joint {joint}: ABA's D-block is {ratio:.3g} of lambda_max(M) "
                     f"({low[worst]:.3g} vs {self.largest[worst]:.3g}), so cond(M) >= "
                     f"{1 / ratio:.3g}: a nearly singular chain", ratio, margin, details,
                     **extra)
        else:
            self.add(context, "articulated-inertia", "pass", "info",
                     f"joint {joint}: ABA's D-block is {ratio:.3g} of lambda_max(M)", ratio,
                     margin, details, **extra)
