"""Where the reference models live: example-robot-data's URDFs and gymnasium's MJCF files.

Both come with the ``test`` extra; each function returns an empty result when its package
is missing, so the tests that need it can skip with a reason.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import site


def robots_root() -> str:
    """example-robot-data's ``robots`` folder (cmeel layout), or "" when not installed."""
    for base in site.getsitepackages() + [site.getusersitepackages()]:
        root = os.path.join(base, "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(root):
            return root
    return ""


def robot_urdfs() -> list[str]:
    """Every URDF example-robot-data ships, sorted."""
    root = robots_root()
    return sorted(glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True)) if root else []


def gymnasium_models() -> list[str]:
    """Every MJCF model under gymnasium/envs/mujoco/assets, sorted."""
    spec = importlib.util.find_spec("gymnasium")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = os.path.join(spec.submodule_search_locations[0], "envs", "mujoco", "assets")
    return sorted(glob.glob(os.path.join(root, "*.xml")))
