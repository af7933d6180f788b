"""Text pipelines in one process against dyn's parallel ways: JSON Lines split over worker
processes (treedyn/pipeline/parts.py), CSV read by pyarrow's threads
(treedyn/pipeline/csvfile.py); an .npz input runs in one process both ways (its text
workers were removed: they gave no gain once orjson wrote the text). Then dyn's way
against the library way: one process whose text is read by the format library's own
threads.

    python benchmarks/bench_parts.py [--states 100000] [--repeats 3] [--markdown]
        [--tables talos,library,heap] [--models two-link,xarm7,talos] [--megabytes 100]

Table ``talos``: Talos (``talos_reduced.urdf`` from example-robot-data) with a free-flyer
root. ``--states`` random states (seeded) are written once as JSON Lines, CSV and .npz;
then, for each input format and command, ``dyn COMMAND MODEL --free-flyer --input F
--output O`` runs as a fresh process in one process (below) and with dyn's default (JSON
Lines split over one worker per CPU, at most 8; CSV read by pyarrow's threads),
alternating within each repeat so the shared machine's load hits both alike. The table
gives the median wall times and their ratio, and whether the outputs are byte for byte
the same (the promise of both parallel ways).

One process is ``dyn`` with ``TREEDYN_PROCESSES=1`` and, for CSV, pyarrow's threads off
(this file, ``--one-run``: dyn with ``csvfile.ARROW_BYTES`` out of reach, so numpy.loadtxt
reads the rows, as it does without pyarrow installed).

Table ``library``: a file of about ``--megabytes`` MB of random states (q, v, a, tau) of
the two-link arm (fixtures/two_link_arm.urdf) and of a 7-dof arm (xarm7 from
example-robot-data), JSON Lines and CSV, ``inverse`` into the input's format, three ways,
alternating within each repeat: one process, ``dyn``'s default (the split for JSON Lines,
pyarrow's threads for CSV), and the library way: a fresh Python process (this file,
``--library-run``) that reads the whole file with pyarrow's threaded reader
(``pyarrow.csv.open_csv`` / ``pyarrow.json.read_json``, ``use_threads=True``) and streams
the arrays, in dyn's chunks, through ``treedyn.pipeline.stream.run`` (the engine's threads
and dyn's writers). The ratio is the library way's time over dyn's: a hand-made way (the
split) stays only where it is 1.3x or more; for CSV, dyn's way is pyarrow's threads, and
the ratio shows what its chunked stream costs against reading the file whole. The CPU
seconds (user and system, workers included) show each way's work apart from the machine's
load. "identical" compares each output with the one process's.

Table ``heap`` (only when asked for): one process on the same files, with glibc's malloc
keeping freed memory (``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_THRESHOLD_``) against its
defaults; dyn no longer sets it itself.

Processes run with a bytecode cache, as after a pip install (see bench_pipeline.py).
"""
from __future__ import annotations

import argparse
import filecmp
import os
import platform
import resource
import statistics
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import print_table, robots_root  # noqa: E402
from bench_pipeline import TALOS, dyn_executable, wall  # noqa: E402

CASES = (("jsonl", "inverse", ".jsonl"), ("jsonl", "forward", ".npz"), ("csv", "inverse", ".csv"),
         ("csv", "mass", ".npz"), ("npz", "inverse", ".csv"), ("npz", "forward", ".jsonl"))
HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {"two-link": ("two-link arm", os.path.join(HERE, "..", "fixtures", "two_link_arm.urdf"),
                       False),
          "xarm7": ("xarm7 (7 dof)", "xarm_description/urdf/xarm7.urdf", False),
          "talos": ("talos_reduced --free-flyer", TALOS, True)}


ONE_RUN = ("import sys; from treedyn.pipeline import csvfile; "
           "csvfile.ARROW_BYTES = float('inf'); from treedyn.cli import run; "
           "sys.argv[0] = 'dyn'; run()")  # dyn with pyarrow's CSV threads off


def one_process(dyn: str, args: list[str]) -> list[str]:
    """The command line of ``dyn ARGS`` in one process (run with TREEDYN_PROCESSES=1): for a
    CSV input, with pyarrow's threads off (numpy.loadtxt reads the rows)."""
    if not any(str(arg).endswith(".csv") for arg in args[args.index("--input"):][:2]):
        return [dyn, *args]
    return [sys.executable, "-c", ONE_RUN, *args]


def write_inputs(folder: str, model, count: int, formats=("jsonl", "csv", "npz"),
                 stem: str = "states") -> dict[str, str]:
    """The same random states as JSON Lines, CSV and .npz (all of q, v, a, tau), written
    as dyn bench writes its samples."""
    from treedyn.pipeline.bench import random_states
    from treedyn.pipeline.trajectory import write_states

    vectors = random_states(model, count)
    paths = {fmt: os.path.join(folder, f"{stem}.{fmt}") for fmt in formats}
    for fmt, path in paths.items():
        write_states(path, vectors)
    return paths


def same_output(first: str, second: str) -> bool:
    if not first.endswith(".npz"):
        return filecmp.cmp(first, second, shallow=False)
    with np.load(first) as a, np.load(second) as b:
        return a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files)


def bench_env(work: str) -> dict[str, str]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPYCACHEPREFIX": os.path.join(work, "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("TREEDYN_PROCESSES", None)
    return env


def talos_table(args) -> None:
    from treedyn.session.environment import processes
    from treedyn.parsers import load_model

    urdf = os.path.join(robots_root(), TALOS)
    model = load_model(urdf, free_flyer=True)
    dyn = dyn_executable()
    with tempfile.TemporaryDirectory(prefix="bench-parts-") as work:
        paths = write_inputs(work, model, args.states)
        env = bench_env(work)
        rows = []
        for fmt, command, extension in CASES:
            size = os.path.getsize(paths[fmt]) / 2 ** 20
            times = {1: [], 0: []}
            outputs = {}
            for _ in range(args.repeats + 1):  # the first round warms the bytecode cache
                for split in (1, 0):
                    output = os.path.join(work, f"out{split}{extension}")
                    outputs[split] = output
                    line = [command, urdf, "--free-flyer", "--input", paths[fmt], "--output",
                            output]
                    run_env = {**env, "TREEDYN_PROCESSES": "1"} if split == 1 else env
                    times[split].append(wall(one_process(dyn, line) if split == 1
                                             else [dyn, *line], run_env))
            one, split = (statistics.median(times[k][1:]) for k in (1, 0))
            rows.append([f"{fmt} -> {extension[1:]}", command, f"{size:.0f}", f"{one:.2f}",
                         f"{split:.2f}", f"{split / one:.2f}x",
                         "yes" if same_output(outputs[1], outputs[0]) else "NO"])
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},"
          f" numpy {np.__version__}; talos_reduced --free-flyer, {args.states} states; "
          f"{processes()} worker processes by default; median of {args.repeats} after a "
          "warm-up\n")
    print_table(["input -> output", "command", "input MB", "one process s", "dyn's default s",
                 "ratio", "identical output"], rows, args.markdown)


def models_inputs(work: str, args):
    """(name, URDF path, the --free-flyer option or none, the input of each format) of
    every model ``--models`` names."""
    for stem in args.models.split(","):
        name, urdf, free_flyer = MODELS[stem]
        urdf = urdf if os.path.isabs(urdf) else os.path.join(robots_root(), urdf)
        paths = model_inputs(work, urdf, free_flyer, stem, args.megabytes)
        yield name, urdf, ["--free-flyer"] if free_flyer else [], paths


def model_inputs(work: str, urdf: str, free_flyer: bool, stem: str, megabytes: float
                 ) -> dict[str, str]:
    """JSON Lines and CSV files of about ``megabytes`` MB of random states of the model."""
    from treedyn.parsers import load_model

    model = load_model(urdf, free_flyer=free_flyer)
    sample = write_inputs(work, model, 2000, ("jsonl", "csv"), stem)
    per_state = max(os.path.getsize(path) for path in sample.values()) / 2000
    return write_inputs(work, model, int(megabytes * 2 ** 20 / per_state), ("jsonl", "csv"),
                        stem)


def library_table(args) -> None:
    import pyarrow

    from treedyn.session.environment import processes

    dyn = dyn_executable()
    ways = ("one", "dyn", "library")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-parts-") as work:
        env = bench_env(work)
        for name, urdf, root, paths in models_inputs(work, args):
            for fmt, path in paths.items():
                times = {way: [] for way in ways}
                cpu = {way: [] for way in ways}
                outputs = {way: os.path.join(work, f"{way}.{fmt}") for way in ways}
                lines = {"one": one_process(dyn, ["inverse", urdf, *root, "--input", path,
                                                  "--output", outputs["one"]]),
                         "dyn": [dyn, "inverse", urdf, *root, "--input", path, "--output",
                                 outputs["dyn"]],
                         "library": [sys.executable, os.path.abspath(__file__), "--library-run",
                                     urdf, path, outputs["library"], *root]}
                for _ in range(args.repeats + 1):  # the first round warms the bytecode cache
                    for way in ways:
                        run_env = {**env, "TREEDYN_PROCESSES": "1"} if way == "one" else env
                        for into, value in zip((times, cpu), timed(lines[way], run_env)):
                            into[way].append(value)
                one, default, library = (statistics.median(times[way][1:]) for way in ways)
                seconds = "/".join(f"{statistics.median(cpu[way][1:]):.1f}" for way in ways)
                same = all(same_output(outputs["one"], outputs[way]) for way in ways[1:])
                rows.append([name, f"{fmt} -> {fmt}", f"{os.path.getsize(path) / 2 ** 20:.0f}",
                             DYN_WAY[fmt], f"{one:.2f}", f"{default:.2f}", f"{library:.2f}",
                             f"{one / default:.2f}x", f"{library / default:.2f}x", seconds,
                             "yes" if same else "NO"])
    print(f"\n# {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, numpy {np.__version__}, pyarrow {pyarrow.__version__};"
          f" inverse; {processes()} worker processes by default; median of {args.repeats} "
          "after a warm-up\n")
    print_table(["model", "input -> output", "input MB", "dyn's way", "one process s",
                 "dyn s", "library way s", "dyn's speed-up", "library / dyn",
                 "CPU s (one/dyn/library)", "identical output"], rows, args.markdown)


DYN_WAY = {"jsonl": "split", "csv": "pyarrow threads"}  # dyn's default, by input format


def timed(command, env) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the process and its workers) of a command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed = wall(command, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


KEEP_FREED = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}


def heap_table(args) -> None:
    """One process with glibc's malloc keeping freed memory (the two settings dyn once made
    through mallopt, here glibc's own environment variables) against its defaults."""
    dyn = dyn_executable()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-heap-") as work:
        env = {**bench_env(work), "TREEDYN_PROCESSES": "1"}
        for name, urdf, root, paths in models_inputs(work, args):
            for fmt, path in paths.items():
                times = {False: [], True: []}
                for _ in range(args.repeats + 1):  # the first round warms the bytecode cache
                    for keep in (False, True):
                        times[keep].append(wall(
                            [dyn, "inverse", urdf, *root, "--input", path, "--output",
                             os.path.join(work, f"out.{fmt}")],
                            {**env, **KEEP_FREED} if keep else env))
                plain, kept = (statistics.median(times[k][1:]) for k in (False, True))
                rows.append([name, f"{fmt} -> {fmt}", f"{os.path.getsize(path) / 2 ** 20:.0f}",
                             f"{plain:.2f}", f"{kept:.2f}", f"{kept / plain:.2f}x"])
    print(f"\n# one process (TREEDYN_PROCESSES=1), inverse; malloc keeping freed memory: "
          f"{' '.join(f'{k}={v}' for k, v in KEEP_FREED.items())}; median of {args.repeats} "
          "after a warm-up\n")
    print_table(["model", "input -> output", "input MB", "glibc defaults s",
                 "freed memory kept s", "ratio"], rows, args.markdown)


def library_run(urdf: str, path: str, output: str, free_flyer: str = "") -> None:
    """``dyn inverse URDF --input PATH --output OUTPUT`` the library way: the whole text
    parsed by pyarrow's threads, then streamed through the pipeline in dyn's chunks."""
    from treedyn.parsers import load_model
    from treedyn.pipeline.layout import Layout
    from treedyn.pipeline.source import CHUNK, Input
    from treedyn.pipeline.stream import run
    from treedyn.pipeline.vectors import States

    layout = Layout.of(load_model(urdf, free_flyer=free_flyer == "--free-flyer"))
    sizes = {"q": layout.model.nq, "v": layout.model.nv, "a": layout.model.nv}
    arrays = (arrow_csv if path.endswith(".csv") else arrow_jsonl)(path, sizes)

    class Arrays(Input):  # a source of arrays read already
        def chunks(self, layout, kinds, wrenches, size):
            for start in range(0, self.total, size):
                yield States(**{k: arrays[k][start:start + size] for k in kinds})

    source = Arrays(path, "npz", open(path, "rb"))
    source.total = len(arrays["q"])
    run(layout, "inverse", source, output, chunk=CHUNK)


def arrow_csv(path: str, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    import pyarrow as pa
    import pyarrow.csv as csv

    names = [f"{kind}{k}" for kind, n in sizes.items() for k in range(n)]
    reader = csv.open_csv(path, read_options=csv.ReadOptions(use_threads=True),
                          convert_options=csv.ConvertOptions(
                              include_columns=names,
                              column_types={name: pa.float64() for name in names}))
    batches = [np.column_stack([batch.column(name).to_numpy() for name in names])
               for batch in reader]
    values = np.concatenate(batches)
    out, at = {}, 0
    for kind, n in sizes.items():
        out[kind], at = np.ascontiguousarray(values[:, at:at + n]), at + n
    return out


def arrow_jsonl(path: str, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    import pyarrow as pa
    import pyarrow.json as json

    schema = pa.schema([(kind, pa.list_(pa.float64())) for kind in sizes])
    table = json.read_json(path, read_options=json.ReadOptions(use_threads=True),
                           parse_options=json.ParseOptions(explicit_schema=schema,
                                                           unexpected_field_behavior="ignore"))
    return {kind: table.column(kind).combine_chunks().flatten().to_numpy().reshape(-1, n)
            for kind, n in sizes.items()}


def main() -> None:
    if sys.argv[1:2] == ["--library-run"]:
        return library_run(*sys.argv[2:6])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--states", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--megabytes", type=float, default=100)
    parser.add_argument("--tables", default="talos,library")
    parser.add_argument("--models", default="two-link,xarm7",
                        help="of the library table: " + ", ".join(MODELS))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if "talos" in args.tables:
        talos_table(args)
    if "library" in args.tables:
        library_table(args)
    if "heap" in args.tables:
        heap_table(args)


if __name__ == "__main__":
    main()
