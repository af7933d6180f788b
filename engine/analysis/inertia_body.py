"""Body checks on the compact tree: ABA's articulated inertia (D-block) of every joint and
the pseudo-inertia of bodies merged from several massive links."""
from __future__ import annotations

import numpy as np

from ..description import Inertia
from ..reference import articulated_blocks
from .inertia import LinkChecks, LinkContext, spatial_pseudo_inertia


class BodyChecks(LinkChecks):
    """The checks of each moving body (a joint's link with the links welded to it)."""

    def bodies(self, contexts: dict[str, LinkContext]) -> None:
        model = self.model
        with np.errstate(all="ignore"):
            blocks = articulated_blocks(model, self.q)
        frames: dict[int, list[str]] = {}  # body -> its links, in model.frames order
        for frame in model.frames:
            frames.setdefault(frame.joint, []).append(frame.name)
        for j, name in enumerate(model.body_names):
            context = contexts[name]
            links = tuple(frames.get(j, ()))
            if self.finite and np.all(np.isfinite(blocks[j])):
                self.articulated(context, j, blocks[j], links)
            else:
                self.add(context, "articulated-inertia", "fail", "error",
                         f"joint {model.joint_names[j]}: M(q) or ABA's D-block overflows "
                         "(inertias too large for a double)", scope="body", links=links)
            massive = [n for n in links if contexts[n].link.inertia.mass != 0]
            if len(massive) >= 2:
                rigid = Inertia.from_spatial(model.body_inertia[j])
                self.add_pseudo_inertia(context, rigid, "merged-pseudo-inertia", None,
                                        J=spatial_pseudo_inertia(model.body_inertia[j]),
                                        scope="body", links=links)

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
