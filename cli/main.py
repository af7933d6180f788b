"""The ``dyn`` command line: a thin typer app over :mod:`treedyn.engine`.

The machine interface (commands, options, JSON keys, exit codes) is fixed by
``interface.md``. Every bad usage or bad input ends in :func:`run` as one line on stderr and
exit code 2. The parsers (lxml) and tabulate are imported only by the commands that need
them, so ``dyn --help`` stays quick.
"""
import copy
import errno
import json
import os
import signal
import sys
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Optional

import numpy as np
import typer

from treedyn.engine import aba, crba, external_forces, rnea

from .common import FreeFlyerOpt, ModelArg, examples, finite, load
from .diagnostics import register as register_diagnostics
from .inputs import (CHUNK, CorruptInput, Input, Layout, UsageError, parse_fext, parse_gravity,
                     single_state)
from .output import (OUTPUT_FORMATS, CsvSink, JsonSink, NpzSink, OutputError, Sink, TableSink,
                     info_csv, info_document, info_table, set_quiet, sparsity_document,
                     sparsity_table)
from .settings import configure_engine

try:
    from typer._click.exceptions import ClickException
except ImportError:  # typer releases that use the click package itself
    from click.exceptions import ClickException

SEED_EXAMPLE = ("dyn inverse fixtures/two_link_arm.urdf --q 0.5236,1.0472 --v 1,-0.5 --a 0.4,-0.2"
                " --format json")


EXAMPLES = examples(
    "dyn info fixtures/two_link_arm.urdf",
    SEED_EXAMPLE,
    "dyn forward fixtures/two_link_arm.urdf --degrees --q joint1=30,joint2=60 --tau 13.3,5.5",
    "dyn mass robot.urdf --free-flyer --sparsity",
    "dyn inverse robot.urdf --input states.jsonl --output tau.csv",
    "cat states.csv | dyn forward robot.urdf --input - --format json",
    "dyn check-inertia robot.urdf --fix --format github",
    "dyn verify robot.urdf --free-flyer",
    "dyn bench robot.urdf --free-flyer",
)

INFO_EXAMPLES = examples(
    "dyn info fixtures/two_link_arm.urdf",
    "dyn info robot.urdf --free-flyer --format json",
)
INVERSE_EXAMPLES = examples(
    SEED_EXAMPLE,
    "dyn inverse fixtures/two_link_arm.urdf --degrees --q joint1=30,joint2=60",
    "dyn inverse fixtures/two_link_arm.urdf --fext link2=0,0,-10,0,0,0",
    "dyn inverse robot.urdf --input states.csv --output tau.npz",
)
FORWARD_EXAMPLES = examples(
    "dyn forward fixtures/two_link_arm.urdf --q 0.5236,1.0472 --v 1,-0.5 --tau 13.3,5.5",
    "dyn forward robot.urdf --free-flyer --input states.jsonl --format json",
)
MASS_EXAMPLES = examples(
    "dyn mass fixtures/two_link_arm.urdf --q 0.5236,1.0472",
    "dyn mass robot.urdf --free-flyer --sparsity --format json",
)

app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXAMPLES,
)


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


FormatOpt = Annotated[Optional[Format], typer.Option(
    "--format", "-f", case_sensitive=False, show_default=False,
    help="Output format on stdout. Default: table on a terminal, json otherwise.")]
InfoFormatOpt = Annotated[Optional[Format], typer.Option(
    "--format", "-f", case_sensitive=False, show_default=False,
    help="Output format (default: table).")]
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
    "columns q0.. v0.. a0.. tau0.. or q:<joint> ...) or .npz (arrays q (N x nq), v, a, tau "
    "(N x nv)); '-' reads stdin. Output: one result per state, in order.")]
OutputOpt = Annotated[Optional[str], typer.Option(
    "--output", "-o", metavar="FILE", show_default=False,
    help="Write results to FILE; the format follows the extension: .jsonl, .csv or .npz.")]
FextOpt = Annotated[Optional[list[str]], typer.Option(
    "--fext", metavar="BODY=FX,FY,FZ,TX,TY,TZ", show_default=False,
    help="External wrench on a link (any link, also one merged by a fixed joint), in that "
    "link's frame about its origin. Repeatable; added to every state.")]
QuietOpt = Annotated[bool, typer.Option(
    "--quiet", help="No progress bar and no warnings on stderr (errors are still printed).")]
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


@dataclass
class Request:
    """One dynamics command as typed: everything needed to compute and print it."""

    command: str  # "inverse", "forward" or "mass"
    model: str
    free_flyer: bool
    vectors: dict  # kind -> text or None
    fext: Optional[list]
    input: Optional[str]
    output: Optional[str]
    format: Optional[Format]
    gravity: Optional[str]
    degrees: bool
    sparsity: bool = False
    quiet: bool = False
    scheduler: Optional[str] = None


RESULT_KEY = {"inverse": "tau", "forward": "a", "mass": "M"}


def show_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("treedyn")
        except PackageNotFoundError:
            number = "(not installed)"
        print(f"dyn (treedyn) {number}")
        raise typer.Exit()


@app.callback()
def main(version: Annotated[bool, typer.Option(
        "--version", is_eager=True, help="Print the version and exit.",
        callback=show_version)] = False) -> None:
    """dyn: rigid-body dynamics of URDF and MJCF robot models.

    Inverse dynamics (RNEA), forward dynamics (ABA) and the mass matrix (CRBA) for one
    state given on the command line or many states from a file; diagnostics of the model
    (check-inertia, condition, verify). Results go to stdout, errors to stderr as one
    line (exit code 2); checks that find errors exit 1.
    """


@app.command(short_help="The compact tree: joints, bodies, total mass, gravity.",
             epilog=INFO_EXAMPLES)
def info(model: ModelArg, free_flyer: FreeFlyerOpt = False, fmt: InfoFormatOpt = None,
         gravity: GravityOpt = None) -> None:
    """The compact tree: joints in tree order, bodies, total mass, gravity.

    Each joint shows its type, parent joint ('world' at a root), where its coordinates
    start in q (idx_q, nq) and v (idx_v, nv), and nv_subtree, the dofs it supports; the
    table view also draws the tree. Links welded by fixed joints are listed with the body
    they are merged into.
    """
    loaded = load(model, free_flyer)
    document = info_document(loaded, parse_gravity(gravity))
    if fmt is Format.json:
        print(json.dumps(document))
    elif fmt is Format.csv:
        info_csv(document, sys.stdout)
    else:
        print(info_table(document, loaded))


@app.command(short_help="Inverse dynamics (RNEA): tau from q, v, a (and f_ext).",
             epilog=INVERSE_EXAMPLES)
def inverse(model: ModelArg, q: QOpt = None, v: VOpt = None, a: AOpt = None,
            fext: FextOpt = None, input_file: InputOpt = None,
            output_file: OutputOpt = None, fmt: FormatOpt = None, gravity: GravityOpt = None,
            degrees: DegreesOpt = False,
            free_flyer: FreeFlyerOpt = False, quiet: QuietOpt = False,
            scheduler: SchedulerOpt = None) -> None:
    """Inverse dynamics (RNEA): tau = M(q) a + h(q, v) - sum J^T f_ext.

    JSON: {"tau": [nv numbers]} per state (a single state also lists "dofs").
    """
    solve(Request("inverse", model, free_flyer, {"q": q, "v": v, "a": a}, fext,
                  input_file, output_file, fmt, gravity, degrees, quiet=quiet,
                  scheduler=scheduler))


@app.command(short_help="Forward dynamics (ABA): a from q, v, tau (and f_ext).",
             epilog=FORWARD_EXAMPLES)
def forward(model: ModelArg, q: QOpt = None, v: VOpt = None, tau: TauOpt = None,
            fext: FextOpt = None, input_file: InputOpt = None,
            output_file: OutputOpt = None, fmt: FormatOpt = None, gravity: GravityOpt = None,
            degrees: DegreesOpt = False,
            free_flyer: FreeFlyerOpt = False, quiet: QuietOpt = False,
            scheduler: SchedulerOpt = None) -> None:
    """Forward dynamics (ABA): a = M(q)^-1 (tau - h(q, v) + sum J^T f_ext).

    JSON: {"a": [nv numbers]} per state (a single state also lists "dofs").
    """
    solve(Request("forward", model, free_flyer, {"q": q, "v": v, "tau": tau}, fext,
                  input_file, output_file, fmt, gravity, degrees, quiet=quiet,
                  scheduler=scheduler))


@app.command(short_help="Mass matrix M(q) (CRBA); --sparsity adds its pattern.",
             epilog=MASS_EXAMPLES)
def mass(model: ModelArg, q: QOpt = None,
         sparsity: Annotated[bool, typer.Option(
             "--sparsity", help="Add the structural pattern of M (1 where the tree lets dofs "
             "i and j couple), its nnz, the tree-ordered L^T D L factor (nnz, its row layout "
             "as MuJoCo's M_rownnz/M_rowadr/M_colind without MuJoCo's shortened rows of "
             "'simple' dofs, the fill-in a root-first order would create) and a check of "
             "the pattern on M at random q.")] = False,
         input_file: InputOpt = None, output_file: OutputOpt = None, fmt: FormatOpt = None,
         gravity: Annotated[Optional[str], typer.Option(
             "--gravity", metavar="GX,GY,GZ", show_default=False,
             help="Accepted like the other commands; M does not depend on gravity.")] = None,
         degrees: Annotated[bool, typer.Option(
             "--degrees", help="The angles of q in degrees (revolute and continuous joints, "
             "the planar angle), also in --input files; M stays SI.")] = False,
         free_flyer: FreeFlyerOpt = False,
         quiet: QuietOpt = False, scheduler: SchedulerOpt = None) -> None:
    """The joint-space mass matrix M(q) (CRBA), full and symmetric.

    JSON: {"M": [[nv numbers] x nv]} per state (a single state also lists "dofs").
    """
    parse_gravity(gravity)
    solve(Request("mass", model, free_flyer, {"q": q}, None, input_file, output_file, fmt, None,
                  degrees, sparsity, quiet, scheduler))


register_diagnostics(app)


@app.command(short_help="Throughput table (states/s) of inverse, forward and mass.",
             epilog=examples("dyn bench fixtures/two_link_arm.urdf",
                             "dyn bench robot.urdf --free-flyer --states 16384"))
def bench(model: ModelArg, free_flyer: FreeFlyerOpt = False,
          states: Annotated[int, typer.Option(
              "--states", "-n", min=1, help="Batch size of the batched rows.")] = CHUNK,
          seconds: Annotated[float, typer.Option(
              "--seconds", min=0.01, callback=finite,
              help="Time spent on each row (best of the runs).")] = 0.3,
          files: Annotated[bool, typer.Option(
              "--files/--no-files", help="Also time reading and writing .npz, JSON Lines "
              "and CSV files, and the whole --input/--output pipeline.")] = True,
          fmt: InfoFormatOpt = None) -> None:
    """Throughput of RNEA (inverse), ABA (forward) and CRBA (mass) on MODEL.

    Random states (seeded) at N=1 and at a batch of --states, with 1 and 2 engine threads:
    states/s and microseconds per state, so jobs can be sized. Then, per command and file
    format: states/s reading the inputs, writing the results, and the whole
    'dyn COMMAND --input F --output F' after start-up (--no-files skips these).
    """
    from .bench import run_bench

    run_bench(load(model, free_flyer), states, seconds,
              fmt.value if fmt is not None else "table", files)


def solve(request: Request) -> None:
    """Read the state(s), run the engine once per chunk and stream the results."""
    set_quiet(request.quiet)
    model = load(request.model, request.free_flyer)
    layout = Layout.of(model, request.degrees)
    gravity = parse_gravity(request.gravity)
    wrenches = parse_fext(request.fext, model)
    if request.input is None:
        if request.scheduler is not None:
            raise UsageError("dyn: --scheduler needs --input FILES.npz and --output DIR/")
        states = single_state(layout, request.vectors, wrenches)
        result = compute(request.command, layout, states, gravity)
        sink = open_sink(request, layout, single=True)
        sink.put(result, states)
        sink.close()
        return
    given = [f"--{kind}" for kind, text in request.vectors.items() if text is not None]
    if given:
        raise UsageError(f"dyn: {' and '.join(given)} cannot be combined with --input "
                         "(put the vectors in the input file)")
    from .distributed import solve_many, wants_many

    if wants_many(request):
        return solve_many(request, layout, gravity, wrenches)
    if request.output is not None and same_file(request.input, request.output):
        raise UsageError(f"dyn: --output {request.output} is the input file"
                         f"{' (on stdin)' if request.input == '-' else ''}: it would be "
                         "emptied before it is read; write to another file")
    from .parts import try_parts

    if not try_parts(request, layout, gravity, wrenches):
        stream(request, layout, gravity, wrenches)


def same_file(source: str, target: str) -> bool:
    """Whether the input ``source`` (a path, or - for stdin) and the output ``target`` are
    one file (also through links, or stdin redirected from it); False if one does not exist."""
    try:
        if source == "-":
            stdin, output = os.fstat(sys.stdin.fileno()), os.stat(target)
            return (stdin.st_dev, stdin.st_ino) == (output.st_dev, output.st_ino)
        if os.path.realpath(source) == os.path.realpath(target):
            return True
        return os.path.samefile(source, target)
    except (OSError, ValueError, AttributeError):  # no such file; stdin without a descriptor
        return False


def stream(request: Request, layout: Layout, gravity, wrenches) -> None:
    """Many states: chunks in, results out as they are computed, progress on stderr.

    A chunk is computed on a worker thread while the next one is read and the previous
    one written (numpy releases the GIL in the engine, so parsing and writing overlap it);
    results are written in input order. On an error, the states before the bad one are
    computed and written, the output is ended cleanly and the error says how many states
    it holds (a file that received no state is removed, or left as it was if it existed).
    """
    from concurrent.futures import ThreadPoolExecutor

    from .formatting import ahead_of, text_workers
    from .progress import Progress, wanted

    source = Input.open(request.input)
    size = chunk_states(request.command, layout)
    chunks = source.chunks(layout, tuple(request.vectors), wrenches, size)
    workers = text_workers(request, source)
    sink = open_sink(request, layout, single=False)
    if isinstance(sink, NpzSink):  # the count is known once the first chunk is read
        sink.total = lambda: source.total
    text = None  # the processes that make the text (when a full first chunk says "many")
    target = sink  # where each chunk's results are put
    progress = Progress(wanted(request.quiet, results_on_stdout=request.output is None))
    worker = ThreadPoolExecutor(1, thread_name_prefix="dyn-compute")
    interrupted = False
    try:
        pending = None  # (future, states, share of the input read) of the chunk computed
        for states in ahead(chunks):
            if pending is None and workers and states is not None and states.count == size:
                text = ahead_of(sink, workers)  # forked before the compute thread starts
                target = sink if text is None else text
            done = None if pending is None else (
                collect(pending[0].result, pending[1], target), *pending[1:])
            pending = None if states is None else (
                worker.submit(compute, request.command, layout, states, gravity), states,
                source.consumed())
            if done is not None:
                result, states_done, consumed = done
                before = sink.count
                if text is None:
                    sink.put(result, states_done)
                else:  # the share read for the states written, once they are
                    text.put(result, states_done, consumed)
                    consumed = text.share
                progress.advance(sink.count - before, source.total, consumed)
        if text is not None:
            before = sink.count
            text.settle()
            progress.advance(sink.count - before, source.total, text.share)
    except BaseException as error:
        progress.close()
        interrupted = isinstance(error, KeyboardInterrupt)
        if text is not None and not isinstance(error, OutputError):
            error = settled(text, error, wait=not interrupted)
        raise stopped(sink, error) from None
    finally:
        worker.shutdown(wait=True)
        if text is not None:
            text.shutdown(wait=not interrupted)
    progress.close()
    sink.close()


def settled(text, error: BaseException, wait: bool = True) -> BaseException:
    """The error to report after the texts still under way are written (only those made
    already, without ``wait``: Ctrl-C): ``error``, or the one that writing them raised."""
    try:
        if wait:
            text.settle()
        else:
            text.write_done()
    except BaseException as failure:  # noqa: BLE001 -- reported instead (Ctrl-C too)
        return failure
    return error


def ahead(chunks):
    """The chunks, then None; a read error (a bad row) is raised one step late, after the
    None, so that the chunk still being computed is written first."""
    try:
        yield from chunks
    except Exception as error:  # noqa: BLE001 -- re-raised below, after the last chunk
        yield None
        raise error from None
    yield None


def collect(result, states, sink: Sink) -> np.ndarray:
    """The result of a chunk of ``states`` (``result()`` returns or raises it); if state k
    of it failed, the k results before it are written and the error raised."""
    try:
        return result()
    except PartialResult as error:
        if len(error.result):
            sink.put(error.result, states)
        raise UsageError(str(error)) from None


CHUNK_BYTES = 8 << 20  # a chunk's results stay about this size ...
CHUNK_FLOOR = 32  # ... but hold at least this many states: the engine's per-level work is
# per chunk (mass at 1000 dofs, .npz to .npz: 8 states take 1.45x the time of 64, 32 states
# 0.87x, at half the memory of 64)


def chunk_states(command: str, layout: Layout) -> int:
    """States per chunk: inputs.CHUNK (TREEDYN_STREAM_CHUNK), fewer when a chunk's results
    would pass CHUNK_BYTES (mass matrices of large models), so memory stays small whatever
    the output format."""
    nv = max(layout.model.nv, 1)
    per_state = 8 * (nv * nv if command == "mass" else nv)
    return min(CHUNK, max(CHUNK_FLOOR, CHUNK_BYTES // per_state))


def stopped(sink: Sink, error: BaseException) -> BaseException:
    """End the output after an error; a UsageError then also says what the output holds.

    A damaged input (a failed CRC-32) is only found once the damaged part was read, so the
    states before it are not known to be good: an output file is removed then.
    """
    if isinstance(error, OutputError):  # the sink has ended its output already
        return error
    if sink.count == 0:
        sink.abort()
        return error
    states, were = (f"{sink.count} states", "were") if sink.count > 1 else ("1 state", "was")
    if isinstance(error, CorruptInput):
        if sink.path is None:
            return UsageError(f"{error}; the {states} written to stdout before this was "
                              f"found {were} read from that file and may be wrong")
        sink.abort()
        return UsageError(f"{error}; {sink.where()} is removed: the {states} written to it "
                          f"{were} read from that file and may be wrong")
    sink.close()
    if not isinstance(error, UsageError):
        return error
    held = "saved in" if isinstance(sink, NpzSink) else "written to"
    return UsageError(f"{error}; stopped there: the {states} before it "
                      f"{'are' if sink.count > 1 else 'is'} {held} {sink.where()}")


class PartialResult(UsageError):
    """State k of a chunk gave no valid result; ``result`` holds the k before it."""

    def __init__(self, message: str, result: np.ndarray):
        super().__init__(message)
        self.result = result


def compute(command: str, layout: Layout, states, gravity) -> np.ndarray:
    """One batched engine call for a chunk of states; non-finite results are errors."""
    model = layout.model
    with np.errstate(all="ignore"):
        fext = (external_forces(model, states.wrenches, states.count) if states.wrenches
                else None)
        try:
            if command == "inverse":
                result = rnea(model, states.q, states.v, states.a, fext, gravity)
            elif command == "forward":
                result = aba(model, states.q, states.v, states.tau, fext, gravity)
                if layout.degrees:
                    result /= layout.v_scale
            else:
                result = crba(model, states.q)
        except np.linalg.LinAlgError:
            raise UsageError(f"{states.where(0)}: {SINGULAR}") from None
    finite = np.isfinite(result.reshape(states.count, -1)).all(axis=1)
    if not finite.all():
        bad = int(np.argmin(finite))
        problem = "the result is not finite (it overflows)"
        if command == "forward":
            problem = singular_problem(model, states.q[bad]) or problem
        raise PartialResult(f"{states.where(bad)}: {problem}", result[:bad])
    return result


SINGULAR = ("forward dynamics is singular here (a joint moves no mass or inertia?); "
            "see dyn check-inertia")


def singular_problem(model, q: np.ndarray) -> str:
    """Why forward dynamics is singular at q, naming the joints whose ABA D-block is; ""
    when M(q) is positive definite (a non-finite result then overflowed)."""
    from treedyn.engine.reference import articulated_blocks

    with np.errstate(all="ignore"):
        blocks = articulated_blocks(model, q[None])
    scale = max((float(np.abs(b).max()) for b in blocks if b.size and np.isfinite(b).all()),
                default=1.0)
    names = [model.joint_names[j] for j, block in enumerate(blocks) if block.size and not (
        np.isfinite(block).all() and np.linalg.eigvalsh(block[0])[0] > 1e-12 * scale)]
    if not names:
        return SINGULAR if singular(model, q) else ""
    listed = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
    return (f"forward dynamics is singular here: joint{'s' if len(names) > 1 else ''} "
            f"{listed} move{'' if len(names) > 1 else 's'} no positive mass or inertia; see dyn "
            "check-inertia")


def singular(model, q: np.ndarray) -> bool:
    """Whether M(q) is not positive definite (else a non-finite ABA result overflowed)."""
    M = crba(model, q)
    try:
        np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        return True
    return not np.isfinite(M).all()


def open_sink(request: Request, layout: Layout, single: bool) -> Sink:
    """Where the results go: --output FILE (format from its extension) or stdout."""
    key = RESULT_KEY[request.command]
    labels = layout.v_labels
    kind = sink_kind(request)
    if request.sparsity and kind == "csv":
        raise UsageError("dyn: --sparsity is written in json, npz and table formats, not csv")
    sparsity = sparsity_document(layout.model) if request.sparsity else None
    path = request.output
    stream, created = (sys.stdout, False) if path is None else open_output(path, kind == "npz")
    sink: Sink
    if kind == "json":
        extra = {"dofs": list(labels)} if single else {}
        if sparsity:
            extra["sparsity"] = sparsity
        sink = JsonSink(stream, key, extra, path)
    elif kind == "csv":
        sink = CsvSink(stream, csv_header(key, labels), path)
    elif kind == "npz":
        shape = (layout.model.nv,) * (2 if key == "M" else 1)
        extra = {"sparsity": np.array(sparsity["pattern"], dtype=np.int8)} if sparsity else {}
        sink = NpzSink(stream, key, shape, labels, extra, path)
    else:
        footer = sparsity_table(sparsity, layout.v_names) if sparsity else ""
        sink = TableSink(stream, key, layout.v_names, units(request.command, layout), single,
                         footer)
    sink.created = created
    return sink


def sink_kind(request: Request) -> str:
    """json, csv, npz or table: --output's extension, else --format, else table on a
    terminal and json in a pipe."""
    if request.output is not None:
        if request.input is not None and request.output.lower().endswith(".json"):
            raise UsageError(f"{request.output}: many states are written as JSON Lines, one "
                             "object per line, which is not one JSON document: name the "
                             "file .jsonl")
        return output_format(request.output, request.format)
    return request.format.value if request.format else (
        "table" if sys.stdout.isatty() else "json")


def output_format(path: str, requested: Optional[Format]) -> str:
    """The format --output's extension asks for (an explicit --format must agree)."""
    kind = OUTPUT_FORMATS.get(os.path.splitext(path)[1].lower())
    if kind is None:
        raise UsageError(f"{path}: unknown output format "
                         f"'{os.path.splitext(path)[1] or path}' (use .jsonl, .csv or .npz)")
    if requested is not None and requested.value != kind:
        raise UsageError(f"dyn: --format {requested.value} conflicts with --output {path}; "
                         "the extension decides the file's format")
    return kind


def open_output(path: str, binary: bool):
    """(file, created): the output file opened for writing -- created if missing, but not
    emptied (Sink.begin empties it at the first write, so a run that fails before its
    first state leaves an existing file as it was) -- and whether it was created."""
    created = not os.path.exists(path)  # (a link to nothing: its file is created)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
    except OSError as error:
        raise UsageError(f"{path}: cannot write ({error.strerror or error})") from None
    if binary:
        return os.fdopen(descriptor, "wb"), created
    return os.fdopen(descriptor, "w", encoding="utf-8", newline=""), created


def csv_header(key: str, labels) -> list[str]:
    """tau:<joint> (tau:<joint>:<k> for multi-dof joints); M:<row dof>|<column dof>."""
    if key == "M":
        return [f"M:{row}|{column}" for row in labels for column in labels]
    return [f"{key}:{label}" for label in labels]


def units(command: str, layout: Layout) -> list[str]:
    """Unit of each dof of the result, for tables."""
    angular = layout.angular
    if command == "inverse":
        return ["N m" if rotation else "N" for rotation in angular]
    return [("deg/s^2" if layout.degrees else "rad/s^2") if rotation else "m/s^2"
            for rotation in angular]


FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}  # writes that fail for lack of room


def fail(message: str) -> None:
    """Print one error line on stderr and exit with code 2 (also when stderr is closed or
    cannot be written: the exit code still says it)."""
    try:
        if sys.stderr is not None:
            print(" ".join(message.splitlines()), file=sys.stderr)
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    sys.exit(2)


class ClosedStdout:
    """Stands for stdout when dyn was started with it closed (``>&-``): writing a result
    fails as writing to a closed descriptor does, so it is an error, not a silent success."""

    def write(self, text) -> int:
        raise OSError(errno.EBADF, "stdout is closed")

    def flush(self) -> None:
        """Nothing is ever buffered (runs that write to --output flush stdout too)."""

    @property
    def buffer(self) -> "ClosedStdout":
        return self

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "stdout is closed")

    def isatty(self) -> bool:
        return False


def click_message(error: ClickException) -> str:
    """A click/typer usage error as one line naming the command."""
    context = getattr(error, "ctx", None)
    program = context.command_path if context is not None else "dyn"
    return f"{program}: {error.format_message()} (see '{program} --help')"


def click_command(args: list):
    """The click group that runs ``args``.

    typer builds a command's click options from its signature, ~0.6 ms per command: when
    the first argument names a command, the group gets that command only (it parses, helps
    and fails alike); otherwise (no command, group options, an unknown name) all of them.
    """
    if args and not args[0].startswith("-"):
        named = [info for info in app.registered_commands
                 if (info.name or typer.main.get_command_name(info.callback.__name__))
                 == args[0]]
        if named:
            one = copy.copy(app)
            one.registered_commands = named
            return typer.main.get_command(one)
    return typer.main.get_command(app)


def run(argv: Optional[list] = None) -> None:
    """Console entry point: run the app; one-line errors with exit code 2.

    With ``argv`` (tests, other Python programs) it runs in process and ends by SystemExit;
    without, it is the dyn program, which ends through :func:`leave`.
    """
    if argv is not None:
        return run_app(list(argv))
    if hasattr(signal, "SIGPIPE"):  # the dyn program in `dyn ... | head`:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # end quietly, as other Unix tools do
        # (no sockets here; the --scheduler path, which has them, ignores SIGPIPE again)
    from treedyn.cli import check_environment, interrupted

    if signal.getsignal(signal.SIGINT) is interrupted:  # set while the modules loaded
        signal.signal(signal.SIGINT, signal.default_int_handler)  # run_app handles Ctrl-C
    check_environment()
    if sys.stdout is None:
        sys.stdout = ClosedStdout()
    try:
        run_app(sys.argv[1:])
    except SystemExit as ending:
        leave(ending.code)
    leave(0)


def leave(code) -> None:
    """End the dyn program with exit ``code`` (a SystemExit code) without tearing Python down.

    Every output file is closed by now (the commands close their sinks on every path);
    what is left is freeing the modules -- numpy, typer, ours -- one by one, ~50 ms: a fifth
    of a one-state run. So stdout and stderr are flushed and the process ends with
    os._exit. Not after --scheduler: Dask's clients and clusters end in atexit hooks.
    """
    if not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    if "distributed" in sys.modules:
        sys.exit(code)
    try:
        if not isinstance(sys.stdout, ClosedStdout):
            sys.stdout.flush()
    except (OSError, ValueError) as error:  # a full disk behind `> file`; a closed stdout
        print(f"dyn: cannot write to stdout: {getattr(error, 'strerror', None) or error}",
              file=sys.stderr)
        code = 2
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        code = code or 2
    os._exit(code)


def run_app(args: list) -> None:
    """Run the app on the command-line arguments ``args``; ends by SystemExit."""
    set_quiet(False)
    configure_engine()
    try:
        command = click_command(args)
        code = command.main(args=args or ["--help"], prog_name="dyn", standalone_mode=False)
    except UsageError as error:
        fail(str(error))
    except ClickException as error:
        fail(click_message(error))
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as error:
        if isinstance(error, OSError) and error.errno in FULL:  # a report to a full disk
            fail(f"dyn: cannot write the output ({error.strerror})")
        if isinstance(error, OSError) and error.errno == errno.EBADF:
            fail(f"dyn: cannot write the results ({error.strerror})")
        if os.environ.get("DYN_TRACEBACK"):
            raise
        fail(f"dyn: internal error: {type(error).__name__}: {error} "
             "(set DYN_TRACEBACK=1 to see where)")
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    run()
