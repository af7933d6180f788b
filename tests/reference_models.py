"""Where the reference models live: example-robot-data's URDFs, gymnasium's and dm_control's MJCF.

All come with the ``test`` extra; each function returns an empty result when its package
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


# dm_control folders of robot and animal models, and the files there MuJoCo cannot compile
# as shipped: the fruit fly's build sources (the wheel leaves out their meshes) and the dog
# scene (it repeats the texture name "grid").
DM_CONTROL_FOLDERS = ("suite", "locomotion", "third_party")
DM_CONTROL_UNCOMPILABLE = ("locomotion/walkers/assets/build_fruitfly/",
                           "locomotion/walkers/assets/dog_v2/scene.xml")


def dm_control_models() -> list[str]:
    """dm_control's MJCF models (its suite, locomotion walkers, ant and Jaco), sorted: the
    package is only read for its files, never imported."""
    spec = importlib.util.find_spec("dm_control")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = spec.submodule_search_locations[0]
    paths = []
    for folder in DM_CONTROL_FOLDERS:
        for path in glob.glob(os.path.join(root, folder, "**", "*.xml"), recursive=True):
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            if not relative.startswith(DM_CONTROL_UNCOMPILABLE):
                paths.append(path)
    return sorted(paths)


def dm_control_id(path: str) -> str:
    """A test id: the path inside the dm_control package."""
    return path.split(f"{os.sep}dm_control{os.sep}", 1)[-1]
