"""Shell completion of ``dyn`` (bash, zsh, fish, as typer's scripts ask for it): what the
command line completes beyond commands and options, attached to the command's
parameters only when a shell asks (``_DYN_COMPLETE`` set; :func:`attach`).

Model files complete to the folders and the files dyn reads (.urdf, .xacro, .xml, .mjcf,
.sdf); ``--q``, ``--v``, ``--a``, ``--tau`` to ``NAME=`` of the model's 1-dof joints, and
``--frame``, ``--subtree`` to its frames (links, MJCF bodies, joints, sites). The model is
the one named earlier on the line, loaded quietly; a half-typed line, a missing or broken
model complete to nothing, never to an error.
"""
from __future__ import annotations

import os

from ..console import console

MODEL_SUFFIXES = (".urdf", ".xacro", ".xml", ".mjcf", ".sdf")
VECTORS = ("q", "v", "a", "tau")
FRAMES = ("frame", "subtree")


def words() -> list[str]:
    """The words of the line the shell completes, before the word completed and without
    the program's name (bash: COMP_WORDS up to COMP_CWORD; zsh and fish:
    _TYPER_COMPLETE_ARGS)."""
    import shlex

    def split(text: str) -> list[str]:
        try:
            return shlex.split(text)
        except ValueError:  # an open quote: the words before it
            return text.split()

    if "COMP_WORDS" in os.environ:
        found = split(os.environ["COMP_WORDS"])
        cword = os.environ.get("COMP_CWORD", "")
        return found[1:int(cword)] if cword.isdigit() else found[1:]
    line = os.environ.get("_TYPER_COMPLETE_ARGS", "")
    found = split(line)[1:]
    return found if line.endswith(" ") else found[:-1]


def model_paths(ctx, param, incomplete: str) -> list[str]:
    """Folders (with a trailing /) and model files whose path starts with ``incomplete``."""
    folder, start = os.path.split(incomplete)
    try:
        entries = sorted(os.scandir(folder or "."), key=lambda entry: entry.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.name.startswith(start) or (entry.name.startswith(".")
                                                and not start.startswith(".")):
            continue
        path = os.path.join(folder, entry.name)
        try:
            if entry.is_dir():
                found.append(path + "/")
            elif entry.name.lower().endswith(MODEL_SUFFIXES):
                found.append(path)
        except OSError:
            continue
    return found


def loaded(ctx):
    """The model the line names before the word completed (its first word naming a model
    file), or None (never an error)."""
    line = words()
    path = next((word for word in line if word.lower().endswith(MODEL_SUFFIXES)), None)
    if path is None:
        return None
    console.quiet = True  # (its notes and warnings are not for the completion)
    try:
        from ..model import load

        return load(path, "--free-flyer" in line)
    except BaseException:  # a half-typed line names anything: nothing to offer
        return None


def joint_values(ctx, param, incomplete: str) -> list[str]:
    """``NAME=`` of the 1-dof joints, after the pairs already typed (``a=1,b``)."""
    model = loaded(ctx)
    done, _, last = incomplete.rpartition(",")
    if model is None or "=" in last:
        return []
    head = done + "," if done else ""
    return [f"{head}{name}=" for name, count in zip(model.joint_names, model.nq_joint)
            if count == 1 and name.startswith(last)]


def frame_names(ctx, param, incomplete: str) -> list[str]:
    """The model's named frames: links (MJCF bodies), joints and sites."""
    model = loaded(ctx)
    if model is None:
        return []
    names = [frame.name for frame in model.frames] + list(model.joint_names)
    names += [site.name for site in model.description.sites]
    return sorted({name for name in names if name.startswith(incomplete)})


def attach(group) -> None:
    """The completions above on the parameters of every command of the click ``group``."""
    for command in group.commands.values():
        for param in command.params:
            if param.name in ("model", "old", "new"):
                param._custom_shell_complete = model_paths
            elif param.name in VECTORS:
                param._custom_shell_complete = joint_values
            elif param.name in FRAMES:
                param._custom_shell_complete = frame_names
