"""``dyn inertia-from-geometry``: each link's com and inertia from its shapes at uniform
density, its mass kept, as MuJoCo's compiler computes them (parsers/geometry_inertia.py);
shown, or written into a copy of the model's own text (``--write``)."""
import sys
from enum import Enum
from typing import Annotated, Optional

import numpy as np
import typer

from treedyn.parsers.geometry_inertia import geometry_inertias
from treedyn.parsers.inertial_writer import Change
from treedyn.pipeline.errors import UsageError

from ..console import print_document, show_text, warn
from ..model import load, package_paths, xacro_arguments
from ..options import (ModelArg, ReportFormat, ReportFormatOpt, XacroArgOpt, XacroArgs,
                       epilog, examples)
from ..render.geometry import geometry_csv, geometry_table
from ..run.fitted import check_write_target, load_written, write_changes

GEOMETRY_EXAMPLES = examples(
    "dyn inertia-from-geometry fixtures/shapes.urdf",
    "dyn inertia-from-geometry robot.urdf --from visual --format json",
    "dyn inertia-from-geometry robot.urdf --write robot_geometric.urdf",
)


class Role(str, Enum):
    collision = "collision"
    visual = "visual"


@epilog(GEOMETRY_EXAMPLES)
def inertia_from_geometry(
        model: ModelArg, xacro_args: XacroArgs = None,
        role: Annotated[Role, typer.Option(
            "--from", case_sensitive=False,
            help="The shapes that give the inertia.")] = Role.collision,
        shell: Annotated[bool, typer.Option(
            "--shell", help="Mass on the shapes' surfaces (MuJoCo's shellinertia and "
            "<mesh inertia=\"shell\">) instead of through their volumes.")] = False,
        write: Annotated[Optional[str], typer.Option(
            "--write", metavar="NEW", show_default=False,
            help="Write a copy of the URDF with the new <inertial>s to NEW (a new .urdf "
            "file; only those elements change).")] = None,
        fmt: ReportFormatOpt = None, xacro_arg: XacroArgOpt = None) -> None:
    """Each link's com and inertia from its collision (or visual) shapes, mass kept.

    The shapes are given a uniform density that keeps the link's mass, and the com and
    the inertia (about the com, link frame) are theirs, as MuJoCo's compiler computes them
    with inertiafromgeom="true": primitives exactly, meshes (STL, OBJ, DAE) by MuJoCo's
    volume integrals. A mesh that is not a closed surface is replaced by its convex hull
    (a warning names it). Links without mass or without such shapes are left as they are.
    """
    loaded = load(model, False, diagnose=True, xacro=xacro_arguments(xacro_args, xacro_arg))
    description = loaded.description
    if description.format != "urdf":
        raise UsageError(f"{model}: an MJCF model's inertias come from its geoms already "
                         "(<compiler inertiafromgeom=\"true\">); this command reads URDF")
    if write is not None:
        if model.lower().endswith(".xacro"):
            raise UsageError(f"dyn: --write {write}: the model must be a URDF file to copy "
                             "(expand a xacro file first: xacro robot.urdf.xacro > robot.urdf)")
        check_write_target(model, write, "urdf", "-")
    results = geometry_inertias(description, loaded.source, package_paths(), role.value,
                                shell)
    for result in results:
        if result.status == "unreadable":
            warn(f"{loaded.source}: link '{result.link}' left as it is: {result.reason}")
        for mesh in result.hulls:
            warn(f"{mesh} (link '{result.link}') is not a closed surface: its convex hull "
                 "gives its inertia (MuJoCo's <mesh inertia=\"convex\">)")
    document = {"model": model, "from": role.value, "shell": shell,
                "links": [_entry(result) for result in results]}
    if write is not None:
        document["written"] = _write(model, write, description, results)
    if fmt is ReportFormat.json:
        print_document(document, "inertia-from-geometry")
    elif fmt is ReportFormat.csv:
        geometry_csv(document, sys.stdout)
    else:
        show_text(geometry_table(document))


def _entry(result) -> dict:
    """A link's JSON object: its new inertia (link frame), or why it is left alone."""
    entry = {"link": result.link, "status": result.status}
    if result.inertia is None:
        return {**entry, "reason": result.reason}
    inertia = result.inertia
    tensor = inertia.inertia
    return {**entry, "mass": inertia.mass, "measure": result.measure,
            "density": inertia.mass / result.measure, "com": inertia.com.tolist(),
            "inertia": [tensor[0, 0], tensor[0, 1], tensor[0, 2], tensor[1, 1],
                        tensor[1, 2], tensor[2, 2]], "hull": list(result.hulls)}


def _write(model: str, target: str, description, results) -> dict:
    """The new inertias into a copy of ``model``'s text at ``target``, read back first."""
    links = {link.name: link for link in description.links}
    changes = [Change(links[r.link], r.inertia) for r in results if r.inertia is not None]

    def check(written: str) -> str:
        again, problem = load_written(written, target)
        if again is None:
            return problem
        found = {link.name: link.inertia for link in again.description.links}
        for change in changes:
            new, old = found[change.link.name].spatial(), change.inertia.spatial()
            if not np.allclose(new, old, rtol=1e-10, atol=1e-12 * np.abs(old).max()):
                return f"reading it back, link '{change.link.name}' has another inertia"
        return ""

    write_changes(model, target, "urdf", changes, check)
    return {"file": target, "links": [change.link.name for change in changes]}
