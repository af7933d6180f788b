"""Numbers as plain Python data: what the diagnostics' reports hold, and JSON-ready."""
from __future__ import annotations

import math

import numpy as np


def plain(value, nulls: bool = False):
    """``value`` with numpy arrays as lists and numpy scalars as Python ones, through dicts,
    lists and tuples (both become lists); with ``nulls``, non-finite floats become None
    (JSON has no inf or nan)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # the common cases first
        return value
    if kind is float:
        return None if nulls and not math.isfinite(value) else value
    if isinstance(value, dict):
        return {str(k): plain(v, nulls) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        items = value.tolist() if isinstance(value, np.ndarray) else value
        return [plain(v, nulls) for v in items]
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        value = value.item()
    if nulls and isinstance(value, float) and not math.isfinite(value):
        return None
    return value
