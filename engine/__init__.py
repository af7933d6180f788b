"""treedyn.engine: the compact-tree model and the batched RNEA / CRBA / ABA algorithms.

The engine never sees XML: parsers build a :class:`TreeDescription`, :func:`build_model`
turns it into a :class:`Model`, and the algorithms take states with an optional leading
batch dimension (``q`` of shape (N, nq) or (nq,)).
"""
from .aba import aba
from .coupling import couple
from .crba import crba
from .description import Inertia, JointSpec, LinkSpec, Mimic, SourceRef, TreeDescription
from .forces import external_forces
from .model import Frame, Model, ModelError, build_model
from .rnea import generalized_gravity, nonlinear_effects, rnea

__all__ = [
    "Frame", "Inertia", "JointSpec", "LinkSpec", "Mimic", "Model", "ModelError", "SourceRef",
    "TreeDescription", "aba", "build_model", "couple", "crba", "external_forces",
    "generalized_gravity", "nonlinear_effects", "rnea",
]
