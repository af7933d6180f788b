"""``dyn info``: the compact tree -- joints in tree order, bodies, total mass, gravity."""

import sys

from ..console import print_document, show_text
from ..model import load, xacro_arguments
from treedyn.pipeline.vectors import parse_gravity
from ..options import (Format, FreeFlyerOpt, GravityOpt, InfoFormatOpt, MimicOpt, ModelArg,
                       XacroArgOpt, XacroArgs, epilog, examples)
from ..render.info import info_table
from treedyn.pipeline.reports import info_csv, info_document

INFO_EXAMPLES = examples(
    "dyn info fixtures/two_link_arm.urdf",
    "dyn info robot.urdf --free-flyer --format json",
    "dyn info robot.urdf.xacro use_gripper:=true   # xacro: pip install 'treedyn[ros]'",
)


@epilog(INFO_EXAMPLES)
def info(model: ModelArg, xacro_args: XacroArgs = None, free_flyer: FreeFlyerOpt = False,
         fmt: InfoFormatOpt = None, gravity: GravityOpt = None,
         xacro_arg: XacroArgOpt = None, mimic: MimicOpt = False) -> None:
    """The compact tree: joints in tree order, bodies, total mass, gravity.

    Each joint shows its type, parent joint ('world' at a root), where its coordinates
    start in q (idx_q, nq) and v (idx_v, nv), and nv_subtree, the dofs it supports; the
    table view also draws the tree. Links welded by fixed joints are listed with the body
    they are merged into. With --mimic, a mimic joint has nq = nv = 0 and its master's
    idx_q and idx_v (Pinocchio's layout), and the coupling is listed.
    """
    loaded = load(model, free_flyer, xacro=xacro_arguments(xacro_args, xacro_arg),
                  mimic=mimic)
    document = info_document(loaded, parse_gravity(gravity))
    if fmt is Format.json:
        print_document(document, "info")
    elif fmt is Format.csv:
        info_csv(document, sys.stdout)
    else:
        show_text(info_table(document, loaded))
