"""The options the ``dyn`` commands share, defined once: MODEL and its xacro arguments
(``name:=value`` after it, ``--xacro-arg``), --free-flyer, --format and
its choices, the state vectors, --input/--output, and the option callbacks; --mesh-path,
which every command that loads a model takes (:func:`with_model_options`).

Imports typer only: the app reads :func:`examples` from here before any command loads.
"""
import functools
import inspect
import os
from enum import Enum
from typing import Annotated, Optional

import typer


def model_argument(metavar: str, text: str) -> object:
    """A model-file argument (MODEL; OLD and NEW for ``diff``)."""
    return Annotated[str, typer.Argument(metavar=metavar, show_default=False, help=text)]


ModelArg = model_argument("MODEL", "URDF, MJCF, SDFormat (.sdf) or xacro (.xacro) model "
                          "file; '-' reads a URDF or MJCF document from stdin (relative paths "
                          "in it from the current folder).")
MeshPathOpt = Annotated[Optional[list[str]], typer.Option(
    "--mesh-path", metavar="DIR", show_default=False,
    help="A folder where URDF mesh files that are not found otherwise (relative paths, "
    "package:// URIs) are looked for, as DIR/path, then DIR/<file name> (repeatable, "
    "searched in the order given).")]
MESH_PATHS: list[str] = []  # this run's --mesh-path folders (set as the command starts)
MODEL_PARAMETERS = ("model", "old", "new")  # the model files of a command's signature
XacroArgs = Annotated[Optional[list[str]], typer.Argument(
    metavar="[NAME:=VALUE]...", show_default=False,
    help="xacro arguments of a .xacro MODEL, as for the xacro command.")]
XacroArgOpt = Annotated[Optional[list[str]], typer.Option(
    "--xacro-arg", metavar="NAME:=VALUE", show_default=False,
    help="A xacro argument of a .xacro MODEL (repeatable; the same as NAME:=VALUE after "
    "MODEL). Reading .xacro needs the optional extra: pip install 'treedyn[ros]'.")]
FreeFlyerOpt = Annotated[bool, typer.Option(
    "--free-flyer", help="URDF: add a floating root joint 'root_joint' (type free, q = "
    "[x, y, z, qx, qy, qz, qw], v = [linear, angular] in the base frame).")]
MimicOpt = Annotated[bool, typer.Option(
    "--mimic", help="URDF: enforce the <mimic> joints, as Pinocchio's buildModelFromUrdf("
    "..., mimic=True): a mimic joint has no coordinate of its own (q = multiplier * "
    "q_master + offset; nq and nv count the others) and tau, M and a are those of the "
    "coupled system.")]


def not_nan(value: float) -> float:
    """Option callback: NaN passes typer's min/max checks, so refuse it here (exit 2)."""
    if value != value:
        raise typer.BadParameter("nan is not a number")
    return value


def finite(value: float) -> float:
    """Option callback: a finite number (no nan, no inf)."""
    if not abs(value) < float("inf"):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def positive(value: float) -> float:
    """Option callback: a finite number above zero."""
    if not 0.0 < finite(value) < float("inf"):
        raise typer.BadParameter(f"{value} is not a positive number")
    return value


def examples(*lines: str) -> str:
    """An 'Examples:' epilog that click prints as is (\\b: no re-wrapping)."""
    return "\b\nExamples:\n" + "".join(f"  {line}\n" for line in lines)


def epilog(text: str):
    """Decorator: the text a command's ``--help`` ends with (its examples); the app reads
    it when it loads the command (:func:`treedyn.cli.app.click_command`)."""
    def attach(command):
        command.epilog = text
        return command
    return attach


def command_of(run, options: dict, doc: str):
    """A command whose parameters, as typer reads them from its signature, are ``options``
    (name -> (annotation, default; ``inspect.Parameter.empty``: an argument), in order),
    calling ``run(**values)``: commands that share options declare them once."""
    def command(**values):
        return run(**values)

    parameters = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    annotation=annotation, default=default)
                  for name, (annotation, default) in options.items()]
    command.__signature__ = inspect.Signature(parameters)
    command.__annotations__ = {name: annotation for name, (annotation, _) in options.items()}
    command.__doc__ = doc
    return command


def choices(name: str, words: str) -> type[Enum]:
    """The choices of an option (``--format``'s, ``--color``'s, ...): a ``str`` Enum named
    ``name`` whose members are ``words``, each its own value, in order."""
    return Enum(name, [(word, word) for word in words.split()], type=str, module=__name__)


Format = choices("Format", "table json csv")


def format_option(choices: type[Enum], text: str) -> object:
    """A command's --format (-f): one of ``choices``, in any case."""
    return Annotated[Optional[choices], typer.Option(
        "--format", "-f", case_sensitive=False, show_default=False, help=text)]


FormatOpt = format_option(Format, "Output format on stdout. Default: table on a terminal, "
                          "json otherwise.")
InfoFormatOpt = format_option(Format, "Output format (default: table).")


GravityOpt = Annotated[Optional[str], typer.Option(
    "--gravity", metavar="GX,GY,GZ", show_default=False,
    help="Override the model's gravity (URDF default 0,0,-9.81) in m/s^2.")]


DegreesOpt = Annotated[bool, typer.Option(
    "--degrees", help="Angles in degrees: the q of revolute and continuous joints and the "
    "planar angle; v and a of every rotational dof (hinges, spherical and free angular "
    "velocity) in deg/s and deg/s^2, also in --input files and in the a that 'forward' "
    "prints. tau, forces, lengths and M stay SI.")]


InputOpt = Annotated[Optional[str], typer.Option(
    "--input", "-i", metavar="FILE", show_default=False,
    help="Many states: JSON Lines (.jsonl: objects with q, v, a, tau, fext), CSV (.csv: "
    "columns q0.. v0.. a0.. tau0.. or q:<joint> ...), .npz (arrays q (N x nq), v, a, tau "
    "(N x nv)), .parquet (list columns q, v, a, tau, or CSV's columns; pip install "
    "'treedyn[arrow]') or .h5/.hdf5 (datasets q, v, a, tau; pip install 'treedyn[hdf5]'); "
    "'-' reads stdin. Output: one result per state, in order.")]


OutputOpt = Annotated[Optional[str], typer.Option(
    "--output", "-o", metavar="FILE", show_default=False,
    help="Write results to FILE; the format follows the extension: .jsonl, .csv, .npz, "
    ".parquet or .h5/.hdf5.")]


DatasetPrefixOpt = Annotated[Optional[str], typer.Option(
    "--dataset-prefix", metavar="GROUP", show_default=False,
    help="The HDF5 group of the datasets read and written (e.g. data/demo_0); default: the "
    "file's root.")]


FextOpt = Annotated[Optional[list[str]], typer.Option(
    "--fext", metavar="BODY=FX,FY,FZ,TX,TY,TZ", show_default=False,
    help="External wrench on a link (any link, also one merged by a fixed joint), in that "
    "link's frame about its origin. Repeatable; added to every state.")]


QuietOpt = Annotated[bool, typer.Option(
    "--quiet", "-q", help="No progress bar, warnings or notes on stderr (errors are still "
    "printed).")]
VerboseOpt = Annotated[bool, typer.Option(
    "--verbose", "-v", help="Notes on stderr: what was loaded, how long each stage took, "
    "estimated quantities (states per chunk).")]


Colour = choices("Colour", "auto always never")


ColourOpt = Annotated[Optional[Colour], typer.Option(
    "--color", case_sensitive=False, show_default=False,
    help="Colour on stderr: auto (default: on a terminal, off with NO_COLOR set, on with "
    "FORCE_COLOR set), always or never.")]
GLOBAL_OPTIONS = {"quiet": (QuietOpt, False), "verbose": (VerboseOpt, False),
                  "color": (ColourOpt, None)}  # every command's, and the group's


def set_global(quiet: bool, verbose: bool, color) -> None:
    """This run's global options into the console (:meth:`.console.Console.configure`)."""
    from .console import console

    console.configure(quiet, verbose, color.value if color is not None else None)


SchedulerOpt = Annotated[Optional[str], typer.Option(
    "--scheduler", metavar="ADDRESS", show_default=False,
    help="Run on a Dask cluster: tcp://HOST:8786, or 'local' (2 worker processes here). "
    "Needs --input .npz files (a glob such as 'logs/*.npz') and --output DIR/; writes "
    "DIR/<input stem>.npz per input. Optional extra: pip install 'treedyn[dask]'.")]


def vector_option(kind: str, text: str) -> object:
    return Annotated[Optional[str], typer.Option(
        f"--{kind}", metavar=kind.upper(), show_default=False, help=text)]


QOpt = vector_option("q", "Configuration: nq numbers 'q0,q1,...', or joint=value pairs for "
                     "1-dof joints (the others stay neutral). Default: neutral.")


VOpt = vector_option("v", "Velocity: nv numbers, or joint=value pairs. Default: zeros.")


AOpt = vector_option("a", "Acceleration: nv numbers, or joint=value pairs. Default: zeros.")


TauOpt = vector_option("tau", "Joint forces: nv numbers, or joint=value pairs. "
                       "Default: zeros.")


CheckFormat = choices("CheckFormat", "table json csv github sarif")
FindingsFormat = choices("FindingsFormat", "table json github sarif")  # statics: for CI
LimitsFormat = choices("LimitsFormat", "table json csv sarif")  # csv: refused in words


SelectOpt = Annotated[Optional[str], typer.Option(
    "--select", metavar="CHECK,...", show_default=False,
    help="Report only these checks (names as in the JSON findings' \"check\").")]
IgnoreOpt = Annotated[Optional[str], typer.Option(
    "--ignore", metavar="CHECK,...", show_default=False,
    help="Do not report these checks.")]
BaselineOpt = Annotated[Optional[str], typer.Option(
    "--baseline", metavar="FILE", show_default=False,
    help="A previous --format json output of this command: its findings (matched by check "
    "and subject, not message or value) are not reported and do not fail the run.")]


DiffFormat = choices("DiffFormat", "table json github")


ReportFormat = Format  # the reports' formats: the same three (default: table)


SeedOpt = Annotated[int, typer.Option("--seed", min=0, help="Seed of the random samples.")]
ReportFormatOpt = format_option(ReportFormat, "table (default), json or csv.")


def samples_option(text: str) -> object:
    """The --samples option of a diagnostic: how many states it draws, at least 1."""
    return Annotated[int, typer.Option("--samples", min=1, help=text)]


def with_options(function, added: dict, take):
    """``function`` taking the options ``added`` (name -> (annotation, default)) after its
    own: ``take(chosen, values)`` receives their values (``chosen``, taken out of
    ``values``) and the function's before it runs."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def command(**values):
        take({name: values.pop(name, None) for name in added}, values)
        return function(**values)

    command.__signature__ = signature.replace(parameters=[
        *signature.parameters.values(),
        *(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                            default=default) for name, (annotation, default) in added.items())])
    command.__annotations__ = {**function.__annotations__,
                               **{name: annotation for name, (annotation, _) in added.items()}}
    return command


def with_global_options(function):
    """The command ``function`` taking the global options too (:data:`GLOBAL_OPTIONS`:
    --quiet, --verbose, --color), which go to the console before it runs (commands read
    them there: ``console.quiet``, ...)."""
    return with_options(function, GLOBAL_OPTIONS,
                        lambda chosen, values: set_global(*chosen.values()))


def with_model_options(function):
    """The command ``function`` taking --mesh-path too, when it loads a model (a parameter
    of :data:`MODEL_PARAMETERS`): the folders (each must be one) go to :data:`MESH_PATHS`,
    where the model loader finds them. Stdin cannot give two of the model, OLD and NEW,
    and the states (--input, --validate): a UsageError."""
    if not set(MODEL_PARAMETERS) & set(inspect.signature(function).parameters):
        return function

    def take(chosen: dict, values: dict) -> None:
        from treedyn.pipeline.errors import UsageError

        MESH_PATHS[:] = chosen["mesh_path"] or ()
        for folder in MESH_PATHS:
            if not os.path.isdir(folder):
                raise UsageError(f"dyn: --mesh-path {folder}: no such folder")

        def stdin(value) -> bool:  # ("-", or a list of files holding "-")
            return value == "-" or (isinstance(value, list) and "-" in value)

        models = [name for name in MODEL_PARAMETERS if stdin(values.get(name))]
        states = [name for name in ("input_file", "inputs", "validate")
                  if stdin(values.get(name))]
        if len(models) > 1:
            raise UsageError("dyn: stdin ('-') can give OLD or NEW, not both: give one of "
                             "them as a file")
        if models and states:
            raise UsageError("dyn: stdin ('-') can give the model or the states, not both: "
                             "give one of them as a file")
    return with_options(function, {"mesh_path": (MeshPathOpt, None)}, take)


def plot_option(what: str) -> object:
    """A command's --plot FILE: the picture of ``what`` it draws."""
    return Annotated[Optional[str], typer.Option(
        "--plot", metavar="FILE", show_default=False,
        help=f"Also draw {what} into FILE: .png, .svg or .pdf by its suffix (needs the "
        "optional extra: pip install 'treedyn[plot]').")]


PlotSizeOpt = Annotated[Optional[str], typer.Option(
    "--plot-size", metavar="WxH", show_default=False,
    help="The --plot picture's size: inches (8x5) or pixels (1200x800px, at 100 per inch), "
    "each side from 1 inch (100px) to 100 inches. Default: a size that suits the picture.")]


# identify's options (dyn identify: the log, the held-out states, the fits)
InputsOpt = Annotated[list[str], typer.Option(
    "--input", "-i", metavar="FILE", show_default=False,
    help="A log: JSON Lines, CSV or .npz states with q, v, a and the measured tau (as the "
    "other commands read them); '-' reads stdin. Repeat it, or give a quoted glob "
    "('logs/*.csv'): each file is its own trajectory.")]
ValidateOpt = Annotated[str, typer.Option(
    "--validate", metavar="F|FILE",
    help="Hold out this fraction of the states (0 to 0.9: blocks of 100 spread over the "
    "log), or a log FILE of its own, and report the torque RMS per dof on them (also over "
    "the measured torques' RMS).")]
CutoffOpt = Annotated[Optional[float], typer.Option(
    "--cutoff", metavar="HZ", show_default=False,
    callback=lambda x: x if x is None else positive(x),
    help="A log of q, tau and the times t (no v, a): the low-pass cut-off (Hz) before v "
    "and a are estimated. Default: 20 Hz, at most a fifth of the sample rate.")]
WeightsOpt = Annotated[str, typer.Option(
    "--weights", metavar="auto|none",
    help="auto: each joint's rows weighted by 1/sigma_j, its residual standard deviation "
    "in a first fit, and fitted again (IDIM-WLS); none: unweighted.")]
PriorWeightOpt = Annotated[float, typer.Option(
    "--prior-weight", min=0.0, callback=finite,
    help="Weight of the file's inertias in the consistent fit, in equations: a "
    "body's relative change of pseudo-inertia weighs like this many torque "
    "equations one sigma off.")]
LossOpt = Annotated[str, typer.Option(
    "--loss", metavar="LOSS", help="Robust loss of the consistent fit: linear, "
    "soft_l1, huber, cauchy or arctan (not linear: keeps the training rows in "
    "memory).")]
LossScaleOpt = Annotated[Optional[float], typer.Option(
    "--loss-scale", callback=lambda x: x if x is None else positive(x),
    show_default=False, help="Residual (N m) where the robust loss bends. "
    "Default: 1.345 x the residuals' robust spread (1.4826 MAD).")]
RankTolOpt = Annotated[float, typer.Option(
    "--rank-tol", min=0.0, max=1.0, callback=not_nan,
    help="Relative singular value of the column-scaled regressor below which a "
    "direction counts as not determined by the log.")]
CurrentOpt = Annotated[bool, typer.Option(
    "--current", help="The log's tau holds the drives' currents: fit tau = gain x "
    "current with the gain term, scaled by --known.")]
KnownOpt = Annotated[Optional[list[str]], typer.Option(
    "--known", metavar="NAME=VALUE", show_default=False,
    help="A parameter known beforehand (BODY.m=2.5, gain.DOF=0.08): not fitted; "
    "repeatable.")]
WriteOpt = Annotated[Optional[str], typer.Option(
    "--write", metavar="NEW", show_default=False,
    help="Write a copy of the model file with the consistent fit's inertias: only "
    "its <inertial> elements change.")]
