"""``dyn inertia-from-geometry``: each link's com and inertia from its shapes at uniform
density, its mass kept, as MuJoCo's compiler computes them (parsers/geometry_inertia.py);
shown, or written into a copy of the model's own text (``--write``)."""
import sys
from typing import Annotated, Optional

import typer

from treedyn.parsers.geometry_inertia import geometry_inertias
from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.reports import geometry_csv, geometry_document
from treedyn.session.fitted import check_write_target, write_inertias
from treedyn.session.models import package_paths

from ..console import print_document, show_text, warn
from ..model import load, xacro_arguments
from ..options import (MESH_PATHS, ModelArg, choices, ReportFormat, ReportFormatOpt, XacroArgOpt,
                       XacroArgs, epilog, examples)
from ..render.geometry import geometry_table

GEOMETRY_EXAMPLES = examples(
    "dyn inertia-from-geometry fixtures/shapes.urdf",
    "dyn inertia-from-geometry robot.urdf --from visual --format json",
    "dyn inertia-from-geometry robot.urdf --write robot_geometric.urdf",
)


Role = choices("Role", "collision visual")


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
        why = ("an MJCF model's inertias come from its geoms already (<compiler "
               "inertiafromgeom=\"true\">)" if description.format == "mjcf"
               else "an SDFormat model")
        raise UsageError(f"{model}: {why}; this command reads URDF")
    if write is not None:
        if model.lower().endswith(".xacro"):
            raise UsageError(f"dyn: --write {write}: the model must be a URDF file to copy "
                             "(expand a xacro file first: xacro robot.urdf.xacro > robot.urdf)")
        check_write_target(model, write, "urdf", ())
    results = geometry_inertias(description, loaded.source, package_paths(MESH_PATHS),
                                role.value, shell)
    for result in results:
        if result.status == "unreadable":
            warn(f"{loaded.source}: link '{result.link}' left as it is: {result.reason}")
        for mesh in result.hulls:
            warn(f"{mesh} (link '{result.link}') is not a closed surface: its convex hull "
                 "gives its inertia (MuJoCo's <mesh inertia=\"convex\">)")
    document = geometry_document(model, role.value, shell, results)
    if write is not None:
        document["written"] = write_inertias(model, write, description, results,
                                             MESH_PATHS, warn)
    if fmt is ReportFormat.json:
        print_document(document, "inertia-from-geometry")
    elif fmt is ReportFormat.csv:
        geometry_csv(document, sys.stdout)
    else:
        show_text(geometry_table(document))

