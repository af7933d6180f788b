"""Throughput of inverse, forward and mass on a model, to size jobs (``dyn bench MODEL``
prints these rows).

Engine rows time one engine function on seeded random states (q within the joint limits,
v, a and tau normal): one state, then a batch with 1 and with 2 engine threads
(:func:`treedyn.engine.configured`). A row repeats the call for about ``seconds``
and keeps the best run, reported as states/s and microseconds per state.

File rows (``files=True``) time what a job on files adds, per command and format (.npz,
JSON Lines, CSV), on a file of such states in a temporary folder: reading the command's
inputs, writing its results, and the whole pipeline (:func:`.stream.run`, what
``dyn COMMAND --input F --output F`` runs) in this process (the model already parsed:
start-up and parsing come once per job). The
number of states grows from 16 until the pipeline takes about ``seconds`` (at most the
batch size); each stage is then the fastest of two runs.
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass

import numpy as np

from treedyn.engine import aba, configured, crba, rnea, settings
from treedyn.engine.samples import random_states as engine_random_states

from .chunks import computation_chunk
from .compute import COMPUTATIONS, compute
from .errors import UsageError
from .layout import Layout
from .outputs import open_sink
from .paths import guarded
from .source import CHUNK, Input
from .stream import run
from .trajectory import write_states

FUNCTIONS = ("inverse", "forward", "mass")
MASS_BYTES = 256 << 20  # the mass matrices of one batched call stay under this
FIRST_FILE_NUMBERS = 1 << 16  # the first file of a format holds about this many results
FORMATS = {"npz": ".npz", "jsonl": ".jsonl", "csv": ".csv"}  # format -> file extension
INPUTS = {"inverse": ("q", "v", "a"), "forward": ("q", "v", "tau"), "mass": ("q",)}
STAGES = ("read", "write", "pipeline")


@dataclass
class Row:
    """One measurement."""

    command: str
    states: int
    threads: int
    seconds: float  # best time of one call

    @property
    def rate(self) -> float:
        return self.states / self.seconds

    @property
    def micros(self) -> float:
        return 1e6 * self.seconds / self.states

    def document(self) -> dict:
        return {"command": self.command, "states": self.states, "threads": self.threads,
                "states_per_s": self.rate, "us_per_state": self.micros}


@dataclass
class FileRow:
    """What one file format adds to a command: seconds for ``states`` states."""

    command: str
    format: str  # a key of FORMATS
    states: int
    threads: int  # engine threads of the pipeline
    read: float  # reading the inputs (every chunk parsed and checked)
    write: float  # writing the results
    pipeline: float  # dyn COMMAND --input F --output F, after the model is parsed

    def rate(self, stage: str) -> float:
        return self.states / getattr(self, stage)

    def documents(self) -> list[dict]:
        """One row per stage, shaped like Row.document() plus "stage" and "format"."""
        return [{"command": self.command, "states": self.states, "threads": self.threads,
                 "states_per_s": self.rate(stage),
                 "us_per_state": 1e6 * getattr(self, stage) / self.states,
                 "stage": stage, "format": self.format} for stage in STAGES]


def random_states(model, count: int, seed: int = 0) -> dict[str, np.ndarray]:
    """``count`` seeded states: q within the joint limits, v, a and tau standard normal."""
    s = engine_random_states(model, count, seed, fext=False)
    return {"q": s.q, "v": s.v, "a": s.a, "tau": s.tau}


def state_bytes(model) -> int:
    """Bytes a state of the batch holds: q, v, a, tau and results, once as arrays and once
    as the text of its file rows."""
    numbers = int(model.nq) + 4 * int(model.nv)
    return numbers * (3 * 8 + 2 * 25)


def batch_states(command: str, model, batch: int) -> int:
    """States of a batched call of ``command``: ``batch``, fewer for mass matrices that
    would pass MASS_BYTES (16384 states of 38 dofs fit; 33 states of 1000 dofs)."""
    if command != "mass":
        return batch
    return max(1, min(batch, MASS_BYTES // (8 * max(model.nv, 1) ** 2)))


def calls(model, count: int, seed: int = 0) -> dict:
    """The engine call of each command on ``count`` random states (mass on the first
    :func:`batch_states` of them)."""
    s = random_states(model, count, seed)
    q_mass = s["q"][:batch_states("mass", model, count)]
    return {"inverse": lambda: rnea(model, s["q"], s["v"], s["a"]),
            "forward": lambda: aba(model, s["q"], s["v"], s["tau"]),
            "mass": lambda: crba(model, q_mass)}


def best_time(call, seconds: float) -> float:
    """The fastest of repeated calls lasting about ``seconds`` in total (at least 3)."""
    best, spent, runs = float("inf"), 0.0, 0
    while runs < 3 or spent < seconds:
        start = time.perf_counter()
        call()
        took = time.perf_counter() - start
        best, spent, runs = min(best, took), spent + took, runs + 1
    return best


def measure(model, batch: int, seconds: float) -> list[Row]:
    """Rows for every command: N=1, then N=batch (:func:`batch_states`) with 1 and 2
    threads."""
    rows = []
    single, many = calls(model, 1), calls(model, batch)
    with np.errstate(all="ignore"):
        for command in FUNCTIONS:
            with configured(threads=1):
                rows.append(Row(command, 1, 1, best_time(single[command], seconds)))
            for threads in (1, 2):
                with configured(threads=threads):
                    rows.append(Row(command, batch_states(command, model, batch), threads,
                                    best_time(many[command], seconds)))
    return rows


def measure_files(model, batch: int, seconds: float, chunk: int = CHUNK) -> list[FileRow]:
    """A FileRow for every command and format, in a temporary folder: on 16 states first
    (fewer when their results pass FIRST_FILE_NUMBERS: 1 mass matrix of 1000 dofs, whose
    text takes a second), then more until the pipeline takes about ``seconds``, at most
    :func:`batch_states`; the pipeline reads ``chunk`` states at a time at most."""
    layout = Layout.of(model)
    rows = []
    with (tempfile.TemporaryDirectory(prefix="dyn-bench-") as folder,
          np.errstate(all="ignore"), guarded(files=False)):  # (its own files, rewritten)
        for command in FUNCTIONS:
            most = batch_states(command, model, batch)
            numbers = max(1, model.nv ** 2 if command == "mass" else model.nv)
            for fmt in FORMATS:
                if fmt == "csv" and not model.nv:  # a state with no numbers is a blank
                    continue  # CSV line, which is no state: CSV cannot carry this model's
                count = min(most, 16, max(1, FIRST_FILE_NUMBERS // numbers))
                job = FileJob(layout, command, fmt, count, folder, chunk)
                took = job.time(job.pipeline)
                for _ in range(4):  # fixed costs weigh on small runs: grow in steps
                    if took >= seconds / 2 or count == most:
                        break
                    count = min(most, 16 * count, int(count * seconds / max(took, 1e-6)))
                    job = FileJob(layout, command, fmt, count, folder, chunk)
                    took = job.time(job.pipeline)
                rows.append(job.row(took))
    return rows


class FileJob:
    """``count`` random states of a command written as an input file in ``folder``
    (states.<ext>), and the stages to time on it; results go to results.<ext>."""

    def __init__(self, layout, command: str, fmt: str, count: int, folder: str,
                 chunk: int = CHUNK):
        self.layout, self.command, self.fmt, self.count = layout, command, fmt, count
        self.kinds = INPUTS[command]
        self.extension = FORMATS[fmt]
        self.folder = folder
        self.source = os.path.join(folder, "states" + self.extension)
        states = random_states(layout.model, count)
        write_states(self.source, {kind: states[kind] for kind in self.kinds})
        self.size = computation_chunk(command, layout.model, chunk)
        self.results = [(compute(command, layout, states, None), states)
                        for states in self.read()]

    def output(self, name: str) -> str:
        return os.path.join(self.folder, name + self.extension)

    def read(self) -> list:
        """Every chunk of the input file, parsed and checked."""
        return list(Input.open(self.source).chunks(self.layout, self.kinds, {}, self.size))

    def write(self) -> None:
        """The results, chunk by chunk, to written.<ext>."""
        computation = COMPUTATIONS[self.command]
        sink = open_sink(self.output("written"), computation.key,
                         computation.shape(self.layout.model.nv), self.layout.v_labels)
        sink.total = self.count
        for result, chunk in self.results:
            sink.put(result, chunk)
        sink.close()

    def pipeline(self) -> None:
        """dyn COMMAND --input states.<ext> --output results.<ext>, after the parse."""
        run(self.layout, self.command, self.source, self.output("results"), chunk=self.size)

    @staticmethod
    def time(stage) -> float:
        start = time.perf_counter()
        stage()
        return time.perf_counter() - start

    def row(self, pipeline: float, runs: int = 2) -> FileRow:
        """Each stage's fastest of ``runs``, the pipeline's counting the run timed already."""
        def fastest(stage, *done: float) -> float:
            return min([*done, *(self.time(stage) for _ in range(runs - len(done)))])

        return FileRow(self.command, self.fmt, self.count, settings.threads,
                       fastest(self.read), fastest(self.write), fastest(self.pipeline, pipeline))


def bench_document(model, rows: list[Row], file_rows: list[FileRow] | None) -> dict:
    """``dyn bench``'s JSON document (``file_rows`` None: not measured, no "files")."""
    document = {"model": model.name, "nq": int(model.nq), "nv": int(model.nv),
                "rows": [row.document() for row in rows]}
    if file_rows is not None:
        document["files"] = [line for row in file_rows for line in row.documents()]
    return document


def bench_csv(rows: list[Row], file_rows: list[FileRow] | None) -> str:
    """``dyn bench``'s CSV: a line per engine row (stage "engine"), then per file stage."""
    lines = [line for row in file_rows or () for line in row.documents()]
    return "\n".join(["command,states,threads,states_per_s,us_per_state,stage,format"]
                     + [f"{row.command},{row.states},{row.threads},{row.rate!r},"
                        f"{row.micros!r},engine," for row in rows]
                     + [",".join(str(line[key]) if isinstance(line[key], (int, str))
                                 else repr(line[key]) for key in line) for line in lines])


def bench(model, batch: int, seconds: float, files: bool = True,
          chunk: int = CHUNK) -> tuple[list[Row], list[FileRow]]:
    """The engine rows (:func:`measure`) and, with ``files``, the file rows
    (:func:`measure_files`); a usage error first when there is no temporary folder."""
    if files:
        try:
            tempfile.gettempdir()
        except FileNotFoundError:
            raise UsageError("no writable temporary folder for the file rows: set TMPDIR to "
                             "one, or skip them with --no-files") from None
    rows = measure(model, batch, seconds)
    return rows, measure_files(model, batch, seconds, chunk) if files else []
