"""treedyn.engine: the compact-tree model and the batched RNEA / CRBA / ABA algorithms.

The engine never sees XML: parsers build a :class:`TreeDescription`, :func:`build_model`
turns it into a :class:`Model`, and the algorithms take states with an optional leading
batch dimension (``q`` of shape (N, nq) or (nq,)). Batches run in chunks on a thread pool:
:func:`configure` (threads, states per chunk, work-array bytes) and :func:`configured` (the
same for a ``with`` block) set them, :func:`clear_workspaces` releases the work arrays.
:func:`joint_torque_regressor` is the batched Y(q, v, a) with tau = Y pi (columns:
:mod:`treedyn.engine.regressor`).
"""
from .aba import aba
from .batch.memory import clear_workspaces
from .batch.regressor import regressor as joint_torque_regressor
from .batch.threads import configure, configured, settings
from .coupling import couple
from .crba import crba
from .description import Inertia, JointSpec, LinkSpec, Mimic, SourceRef, TreeDescription
from .forces import external_forces
from .model import Frame, Model, ModelError, build_model
from .rnea import generalized_gravity, nonlinear_effects, rnea

__all__ = [
    "Frame", "Inertia", "JointSpec", "LinkSpec", "Mimic", "Model", "ModelError", "SourceRef",
    "TreeDescription", "aba", "build_model", "clear_workspaces", "configure", "configured",
    "couple", "crba", "external_forces", "generalized_gravity", "joint_torque_regressor",
    "nonlinear_effects", "rnea", "settings",
]
