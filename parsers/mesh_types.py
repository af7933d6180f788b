"""What every mesh reader returns or raises (:mod:`.meshes`, :mod:`.obj`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class MeshFileError(ValueError):
    """A mesh file that cannot be read or is invalid (message without the file name)."""


@dataclass(frozen=True)
class MeshData:
    """Vertices (n, 3) float64 holding float32 values, faces (m, 3) int64 (m may be 0)."""

    vertices: np.ndarray
    faces: np.ndarray
