"""Writing results for ``dyn``: JSON (Lines), CSV, .npz and tables for people.

Machine formats print every number repr-exact (``json.dumps`` and ``str`` of a Python
float are both ``repr``). A *sink* receives the results chunk by chunk, so large inputs
stream: ``put(result, states)`` per chunk, then ``close()``. After an error, ``close()``
still ends what was written cleanly (every state written is complete), and ``abort()``
removes an output file that received no state -- unless it existed before the run: a file
is emptied only at the first write (``begin()``), so until then it keeps its contents.
When the output itself cannot be written (a full disk), the sink raises
:class:`OutputError` after cutting a text file back to its whole states, or removing an
.npz. ``tabulate`` is imported only when a table is printed.
"""
from __future__ import annotations

import csv
import json
import os
import stat
import sys
from collections.abc import Callable, Sequence

import numpy as np

OUTPUT_FORMATS = {".jsonl": "json", ".ndjson": "json", ".json": "json", ".csv": "csv",
                  ".npz": "npz"}
FLOAT_FORMAT = ".6g"


QUIET = {"on": False}  # --quiet: no warnings (errors are always printed)


def set_quiet(quiet: bool) -> None:
    """Silence (or restore) warnings for the command being run."""
    QUIET["on"] = quiet


class UsageError(Exception):
    """Bad usage or bad input: reported as one line on stderr with exit code 2."""


class Ended(BaseException):
    """SIGTERM or SIGHUP arrived while dyn ran work it must clean up (worker processes, a
    cluster's files): raised by a handler so the cleanup runs, then dyn ends by the signal."""

    def __init__(self, number: int):
        super().__init__(number)
        self.number = number


class OutputError(UsageError):
    """The results could not be written (a full disk, a file size limit); ``reason`` is
    the system's. The sink has already cut or removed its file, and the message says so."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason  # "" once pickled (raised in a Dask worker)


CAPTURED: dict[str, list | None] = {"into": None}  # a list: warnings kept, not printed


def warn(message: str) -> None:
    """A warning line on stderr (results stay on stdout), unless --quiet; kept in
    CAPTURED["into"] instead when that is a list (a worker process, see .parts)."""
    if CAPTURED["into"] is not None:
        CAPTURED["into"].append(message)
    elif not QUIET["on"] and sys.stderr is not None:
        try:
            print(f"dyn: warning: {message}", file=sys.stderr)
        except (OSError, ValueError):  # stderr closed or full: a warning is not worth the run
            pass


def table(rows, headers, **options) -> str:
    from tabulate import tabulate

    return tabulate(rows, headers=headers, floatfmt=FLOAT_FORMAT, **options)


class Sink:
    """Receives results chunk by chunk. ``path`` is the file created for them, if any."""

    def __init__(self, stream, path: str | None = None):
        self.stream, self.path = stream, path
        self.count = 0  # states written so far
        self.whole = 0  # bytes of the output file that hold them (text files)
        self.created = True  # the file did not exist before (see cli.main.open_output)
        self.emptied = path is None  # an existing file is emptied at the first write
        self.regular = False  # the output is a regular file (not a pipe or a device)

    def begin(self) -> None:
        """Empty the output file before its first bytes: it is opened without emptying it,
        so a run that fails before its first state leaves an existing file as it was."""
        if not self.emptied:
            descriptor = self.stream.fileno()
            self.regular = stat.S_ISREG(os.fstat(descriptor).st_mode)
            if self.regular:  # a pipe or a device is left alone
                os.ftruncate(descriptor, 0)
            self.emptied = True

    def put(self, result: np.ndarray, states) -> None:
        """Write the results of a chunk of states and count them."""
        self.record(lambda: self.write(result, states), len(result))

    def record(self, write: Callable[[], None], count: int) -> None:
        """Call ``write`` (it writes ``count`` states) and count them; OutputError (see
        :meth:`failed`) if the output cannot be written."""
        try:
            self.begin()
            write()
        except OSError as error:
            raise self.failed(error) from None
        self.count += count
        self.mark()

    def write(self, result: np.ndarray, states) -> None:
        raise NotImplementedError

    def mark(self) -> None:
        """Note where the states written end in the output file (written and flushed; a
        pipe or a device has no position to note)."""
        if self.regular:
            self.whole = os.lseek(self.stream.fileno(), 0, os.SEEK_CUR)

    def where(self) -> str:
        """Where the results go, for messages: the file name or 'stdout'."""
        return "stdout" if self.path is None else self.path

    def close(self) -> None:
        """End the output; OutputError if it cannot be written."""
        try:
            self.begin()
            self.finish()
        except OSError as error:
            raise self.failed(error) from None

    def finish(self) -> None:
        if self.path is None:
            self.stream.flush()
        else:
            self.stream.close()

    def abort(self) -> bool:
        """Stop after an error before any state was written: remove the file if dyn
        created or emptied it (a file written to before keeps its contents); whether it
        was removed."""
        if self.path is None:
            return False
        close_quietly(self.stream)  # what its buffer still holds goes with the file
        if self.created or (self.emptied and self.regular):  # never a pipe or a device
            os.remove(os.path.realpath(self.path))  # (through a link: the file it names)
            return True
        return False

    def failed(self, error: OSError) -> OSError:
        """The error to raise when the output cannot be written (an OutputError, but a
        closed pipe on stdout stays a BrokenPipeError): a file keeps the states written
        whole (the bytes after them are cut off); one with none is removed."""
        reason = error.strerror or str(error)
        if self.path is None:
            if isinstance(error, BrokenPipeError):  # stdout's reader went away: dyn ends
                return error  # quietly (SIGPIPE, or as parts.try_parts does)
            after = f" after {self.count} states" if self.count else ""
            return OutputError(f"dyn: cannot write to stdout ({reason}){after}", reason)
        if self.count == 0:
            outcome = "it is removed" if self.abort() else "it is left as it was"
            return OutputError(f"{self.path}: cannot write ({reason}); {outcome}", reason)
        close_quietly(self.stream)  # the rest of its buffer: cut off here
        if self.regular:
            os.truncate(self.path, self.whole)
        states = "1 state" if self.count == 1 else f"{self.count} states"
        return OutputError(f"{self.path}: cannot write ({reason}); it holds the first {states}",
                           reason)


def close_quietly(*files) -> None:
    """Close files whose contents no longer matter (buffers that cannot be written)."""
    for file in files:
        try:
            file.close()
        except (OSError, ValueError):
            pass


class TextSink(Sink):
    """JSON Lines or CSV: a chunk's results become one text, written and flushed. The text
    may also be made elsewhere (``text`` in a worker process, see :mod:`.formatting`) and
    written with ``put_text``."""

    def text(self, result: np.ndarray) -> str:
        raise NotImplementedError

    def write(self, result, states) -> None:
        self.write_text(self.text(result))

    def write_text(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def put_text(self, text: str, count: int) -> None:
        """Write the ``text`` of ``count`` states and count them."""
        self.record(lambda: self.write_text(text), count)


TEXT_BLOCK = 1 << 16  # results turned into Python floats at a time


def row_lists(result: np.ndarray):
    """``result.tolist()`` (N, ...) row by row, converted TEXT_BLOCK numbers at a time: a
    chunk of 64 mass matrices of 1000 dofs is 64 million numbers, 2 GB as Python floats."""
    per_row = max(1, int(np.prod(result.shape[1:])))
    step = max(1, TEXT_BLOCK // per_row)
    for start in range(0, len(result), step):
        yield from result[start:start + step].tolist()


class JsonSink(TextSink):
    """One JSON object per state and line: ``{"<key>": value, **extra}``."""

    def __init__(self, stream, key: str, extra: dict | None = None, path: str | None = None):
        super().__init__(stream, path)
        self.head = json.dumps(key) + ": "
        self.tail = ", " + json.dumps(extra)[1:-1] if extra else ""

    def text(self, result) -> str:
        return "".join(["{" + self.head + json.dumps(row) + self.tail + "}\n"
                        for row in row_lists(result)])


class CsvSink(TextSink):
    """A header row, then one row per state (matrices flattened row-major). The header is
    written with the first rows (or at the end of an empty input), so an input rejected
    before its first state leaves nothing on stdout."""

    def __init__(self, stream, header: Sequence[str] | None, path: str | None = None):
        super().__init__(stream, path)
        self.writer = csv.writer(stream, lineterminator="\n")
        self.header: Sequence[str] | None = header  # None once written (or written elsewhere)

    def text(self, result) -> str:
        # numbers never need quoting; joining their reprs gives csv.writer's bytes faster
        rows = row_lists(result.reshape(len(result), -1))
        return "".join([",".join(map(repr, row)) + "\n" for row in rows])

    def write_text(self, text: str) -> None:
        self.write_header()
        super().write_text(text)

    def write_header(self) -> None:
        if self.header is not None:
            self.writer.writerow(self.header)
            self.header = None

    def finish(self) -> None:
        self.write_header()
        super().finish()


class NpzSink(Sink):
    """Saves ``{key: (N, ...), "dofs": labels, **extra}`` (uncompressed, like np.savez).

    An .npz cannot be appended to and its arrays need their length up front. When the
    number of states is known (``total``: a count, or a function giving it once known, e.g.
    the states of an .npz input, asked when the first chunk arrives) and the output is a
    seekable file, the archive's ``key``.npy member is written as chunks arrive: its header
    announces ``total`` rows and each chunk's rows go straight into it. Otherwise (and if
    the count announced turns out wrong, e.g. a bad row stopped the run) the rows are spooled
    to a temporary file next to the output and copied into the archive on close. Either way
    memory stays one chunk, whatever N, and the archive ends with the true count.
    """

    def __init__(self, stream, key: str, shape: tuple[int, ...], labels: Sequence[str],
                 extra: dict | None = None, path: str | None = None, total=None):
        super().__init__(stream, path)
        self.key, self.shape = key, shape
        self.extra = {"dofs": np.array(labels, dtype=str), **(extra or {})}
        self.total = total  # int | Callable[[], int | None] | None: the states to come
        self.spool = None  # the raw rows, when the count was not known up front
        self.archive = self.member = None  # the archive written as chunks arrive
        self.announced = 0  # rows the member's header announces
        self.rows_at = 0  # offset of its first row in the output file

    def write(self, result, states) -> None:
        rows = np.ascontiguousarray(result, dtype=np.float64)
        if self.member is None and self.spool is None:
            self.start()
        if self.member is not None:
            self.member.write(rows)
        else:
            self.spool.write(rows)  # (tofile's errors have no errno to report)

    def start(self) -> None:
        """At the first chunk: stream into the archive if the count is known, else spool."""
        import tempfile
        import zipfile

        total = self.total() if callable(self.total) else self.total
        if total and self.path is not None and self.stream.seekable():
            self.archive = zipfile.ZipFile(self.stream, "w", zipfile.ZIP_STORED,
                                           allowZip64=True)
            self.member = self.archive.open(f"{self.key}.npy", "w", force_zip64=True)
            self.announced = int(total)
            self.header(self.member, self.announced)
            self.rows_at = self.stream.tell()
        else:
            folder = os.path.dirname(os.path.abspath(self.path)) if self.path else None
            self.spool = tempfile.TemporaryFile(dir=folder)

    def header(self, member, count: int) -> None:
        from numpy.lib import format as npy

        npy.write_array_header_2_0(member, {
            "descr": npy.dtype_to_descr(np.dtype(np.float64)), "fortran_order": False,
            "shape": (count, *self.shape)})

    def mark(self) -> None:
        """Nothing to note: an unfinished archive is removed, not cut (see failed)."""

    def finish(self) -> None:
        import shutil
        import zipfile

        if self.member is not None:
            with self.archive:
                self.member.close()  # zipfile puts the member's size and CRC in its header
                if self.count == self.announced:
                    self.write_extra(self.archive)
            if self.count == self.announced:
                super().finish()
                return
            self.respool()
        with zipfile.ZipFile(self.stream, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            with archive.open(f"{self.key}.npy", "w", force_zip64=True) as member:
                self.header(member, self.count)
                if self.spool is not None:
                    self.spool.seek(0)
                    shutil.copyfileobj(self.spool, member, 1 << 20)
            self.write_extra(archive)
        if self.spool is not None:
            self.spool.close()
        super().finish()

    def respool(self) -> None:
        """Not the count announced (the archive is closed): move the rows written to a
        spool and empty the output, to write the archive again with the true count."""
        import tempfile

        self.archive = self.member = None
        self.stream.flush()
        self.spool = tempfile.TemporaryFile(dir=os.path.dirname(os.path.abspath(self.path)))
        left = self.count * int(np.prod(self.shape, dtype=np.int64)) * 8
        with open(self.path, "rb") as written:
            written.seek(self.rows_at)
            while left > 0:
                data = written.read(min(left, 1 << 20))
                if not data:
                    raise OSError(f"{self.path}: rows missing while rewriting the archive")
                self.spool.write(data)
                left -= len(data)
        self.stream.seek(0)
        self.stream.truncate()

    def write_extra(self, archive) -> None:
        from numpy.lib import format as npy

        for name, array in self.extra.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                npy.write_array(member, np.asanyarray(array), allow_pickle=False)

    def abort(self) -> bool:
        close_quietly(*(part for part in (self.member, self.archive, self.spool)
                        if part is not None))
        return super().abort()

    def failed(self, error: OSError) -> OutputError:
        """An archive is readable only once complete: the file is removed."""
        reason = error.strerror or str(error)
        if self.path is None:
            return super().failed(error)
        if not self.abort():
            return OutputError(f"{self.path}: cannot write ({reason}); it is left as it was",
                               reason)
        return OutputError(f"{self.path}: cannot write ({reason}); it is removed (an "
                           "unfinished .npz cannot be read)", reason)


class TableSink(Sink):
    """Tables for people: a vector as dof/value/unit rows, a matrix with labelled rows."""

    def __init__(self, stream, key: str, labels: Sequence[str], units: Sequence[str] | None,
                 single: bool, footer: str = ""):
        super().__init__(stream)
        self.key, self.labels, self.units = key, list(labels), units
        self.single, self.footer = single, footer

    def write(self, result, states) -> None:
        if result.ndim == 3:
            for i, matrix in enumerate(result):
                title = "" if self.single else f"state {states.where(i)}\n"
                self.stream.write(title + matrix_table(matrix, self.labels) + "\n\n")
        elif self.single:
            rows = [[label, value, unit]
                    for label, value, unit in zip(self.labels, result[0], self.units)]
            self.stream.write(table(rows, ["dof", self.key, "unit"]) + "\n")
        else:
            rows = [[states.where(i), *row] for i, row in enumerate(result)]
            self.stream.write(table(rows, ["state", *self.labels]) + "\n")

    def finish(self) -> None:
        if self.footer:
            self.stream.write(self.footer + "\n")
        super().finish()


def matrix_table(matrix: np.ndarray, labels: Sequence[str]) -> str:
    rows = [[label, *row] for label, row in zip(labels, matrix)]
    return table(rows, ["", *labels])


# ----------------------------------------------------------------------------- info

def info_document(model, gravity: np.ndarray | None) -> dict:
    """What ``dyn info --format json`` prints (the keys of interface.md, and a few more)."""
    joints = []
    for j, name in enumerate(model.joint_names):
        joint = {"name": name, "type": model.public_type(j),
                 "parent": (model.joint_names[model.parent[j]] if model.parent[j] >= 0
                            else "world"),
                 "idx_q": int(model.idx_q[j]), "nq": int(model.nq_joint[j]),
                 "idx_v": int(model.idx_v[j]), "nv": int(model.nv_joint[j]),
                 "nv_subtree": int(model.nv_subtree[j]), "body": model.body_names[j]}
        mimic = model.mimic.get(name)
        if mimic is not None:
            joint["mimic"] = {"joint": mimic.joint, "multiplier": float(mimic.multiplier),
                              "offset": float(mimic.offset)}
        joints.append(joint)
    return {
        "name": model.name, "format": model.format, "source": model.source,
        "nq": int(model.nq), "nv": int(model.nv),
        "gravity": (model.gravity if gravity is None else gravity).tolist(),
        # MuJoCo's mj_getTotalmass counts bodies welded to the world, Pinocchio's
        # computeTotalMass does not
        "total_mass": model.total_mass + (model.world_mass if model.format == "mjcf" else 0.0),
        "joints": joints, "bodies": bodies_document(model),
        # (not the world link --free-flyer makes up, which is in no file)
        "world_links": [f.name for f in model.frames if f.joint < 0 and f.source.file],
        "world_mass": float(model.world_mass),
        "ignored": dict(model.description.ignored),
        "tree": tree_document(model),
        "layout": layout_document(model),
    }


def bodies_document(model) -> list[dict]:
    """One entry per moving body of the file: the joints that move it (``joint`` the last,
    which carries its frame), its mass, its com in its own frame, and its links (the body
    and the links welded to it; not the joint-anchor frames of an MJCF body)."""
    anchors = {frame for frame, body in zip(model.body_frames, model.body_names)
               if frame != body}
    frames, links = {}, {}  # frame name -> frame; joint -> its links in model.frames order
    for frame in model.frames:
        frames.setdefault(frame.name, frame)
        if frame.name not in anchors:
            links.setdefault(frame.joint, []).append(frame.name)
    bodies = []
    for body in model.bodies:
        last = body.joints[-1]
        own = frames[body.name]
        com = own.rotation.T @ (model.body_com[last] - own.translation)
        bodies.append({
            "name": body.name, "joint": model.joint_names[last],
            "joints": [model.joint_names[j] for j in body.joints],
            "mass": float(model.body_mass[list(body.joints)].sum()), "com": com.tolist(),
            "links": links.get(last, []),
        })
    return bodies


def layout_document(model) -> dict:
    """Every entry of q and v: its index, joint and component (and, for v, its frame)."""
    q_entries, v_entries = [], []
    for j, name in enumerate(model.joint_names):
        joint = model.joint_models[j]
        for k, part in enumerate(joint.q_parts):
            q_entries.append({"index": int(model.idx_q[j]) + k, "joint": name, "part": part})
        for k, part in enumerate(joint.v_parts or ("rate",)):
            v_entries.append({"index": int(model.idx_v[j]) + k, "joint": name, "part": part,
                              "frame": joint.velocity_frame})
    return {"q": q_entries, "v": v_entries}


def tree_document(model) -> list[dict]:
    """Per joint in tree order: depth, children, support (root .. joint) and subtree."""
    names = model.joint_names
    children = joint_children(model)
    supports: list[list[str]] = []
    tree = []
    for j, name in enumerate(names):
        parent = model.parent[j]  # parents come first
        support = (supports[parent] if parent >= 0 else []) + [name]
        supports.append(support)
        first = int(model.idx_v[j])
        tree.append({
            "joint": name, "depth": len(support) - 1,
            "children": [names[c] for c in children[j]],
            "support": support,
            "subtree": list(names[j:model.subtree_end[j]]),
            "dofs": [first, first + int(model.nv_joint[j])],
            "subtree_dofs": [first, first + int(model.nv_subtree[j])],
        })
    return tree


def tree_lines(model) -> list[str]:
    """An indented ASCII drawing of the tree: joint (type) -> body [mass], dofs, subtree.

    The joints of an MJCF body with several joints follow each other; its mass is shown at
    the last one. Drawn depth first with a stack of (joint, prefix, last child): a chain of
    a thousand joints is deeper than Python's recursion limit."""
    lines = ["world"]
    children = joint_children(model)
    roots = [j for j in range(model.njoints) if model.parent[j] < 0]
    stack = [(root, "", index == len(roots) - 1) for index, root in enumerate(roots)][::-1]
    while stack:
        j, prefix, last = stack.pop()
        first, own = int(model.idx_v[j]), int(model.nv_joint[j])
        dofs = f"v[{first}]" if own == 1 else f"v[{first}:{first + own}]"
        subtree = f"v[{first}:{first + int(model.nv_subtree[j])}]"
        body = model.body_names[j]
        mass = (f" [{model.body_mass[j]:g} kg]" if j + 1 == model.njoints
                or model.body_names[j + 1] != body or model.parent[j + 1] != j else "")
        lines.append(f"{prefix}{'`- ' if last else '|- '}{model.joint_names[j]} "
                     f"({model.public_type(j)}) -> {body}{mass}  {dofs}, supports {subtree}")
        below = prefix + ("   " if last else "|  ")
        stack += [(child, below, index == len(children[j]) - 1)
                  for index, child in enumerate(children[j])][::-1]
    return lines


def joint_children(model) -> list[list[int]]:
    """The children of each joint (nj lists), in tree order."""
    children: list[list[int]] = [[] for _ in range(model.njoints)]
    for j, parent in enumerate(model.parent):
        if parent >= 0:
            children[parent].append(j)
    return children


JOINT_COLUMNS = ("name", "type", "parent", "idx_q", "nq", "idx_v", "nv", "nv_subtree", "body")


def info_csv(document: dict, stream) -> None:
    """The joints of ``info`` as CSV, one row per joint in tree order."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(JOINT_COLUMNS)
    writer.writerows([joint[c] for c in JOINT_COLUMNS] for joint in document["joints"])


def info_table(document: dict, model=None) -> str:
    """The info document for people; with ``model``, the tree is drawn too."""
    d = document
    joints = table([[joint[c] for c in JOINT_COLUMNS] for joint in d["joints"]],
                   JOINT_COLUMNS)
    bodies = table([[b["name"], ", ".join(b["joints"]), b["mass"], ", ".join(b["links"])]
                    for b in d["bodies"]], ["body", "joints", "mass [kg]", "links"],
                   maxcolwidths=[None, 40, None, 60])
    mimics = [f"  {j['name']} = {j['mimic']['multiplier']:g} * {j['mimic']['joint']} "
              f"+ {j['mimic']['offset']:g}" for j in d["joints"] if "mimic" in j]
    ignored = ", ".join(f"{count} <{tag}>" for tag, count in sorted(d["ignored"].items()))
    lines = [
        f"model {d['name']} ({d['format']}, {d['source']}): nq={d['nq']}, nv={d['nv']}, "
        f"{len(d['joints'])} joints",
        *(["", "tree (joint (type) -> body [mass], its dofs, the dofs it supports):",
            *tree_lines(model)] if model is not None else []),
        "", "joints in tree order:", joints,
        "", "bodies (links welded by fixed joints are merged into their body):", bodies,
        "", "coordinate layout" + (" (q = qpos, v = qvel):" if d["format"] == "mjcf"
                                   else ":"), layout_table(d["layout"]),
        "",
        f"welded to the world: {', '.join(d['world_links']) or 'nothing'} "
        f"(mass {d['world_mass']:g} kg, no effect on the dynamics)",
        f"total mass: {d['total_mass']:g} kg"
        + (" (MuJoCo's, with the bodies welded to the world)"
           if d["format"] == "mjcf" and d["world_mass"] else ""),
        "gravity: " + ", ".join(f"{g:g}" for g in d["gravity"]) + " m/s^2",
        "mimic joints (reported, not enforced):" + ("" if mimics else " none"),
        *mimics,
        f"ignored by the parser: {ignored or 'nothing'}",
    ]
    return "\n".join(lines)


def layout_table(layout: dict) -> str:
    """q and v entries side by side: index, joint, component; v's frame once per joint."""
    rows = []
    for k in range(max(len(layout["q"]), len(layout["v"]))):
        q = layout["q"][k] if k < len(layout["q"]) else None
        v = layout["v"][k] if k < len(layout["v"]) else None
        first_of_joint = v is not None and (k == 0 or layout["v"][k - 1]["joint"] != v["joint"])
        rows.append([k,
                     f"{q['joint']}.{q['part']}" if q else "",
                     f"{v['joint']}.{v['part']}" if v else "",
                     v["frame"] if first_of_joint else ""])
    return table(rows, ["index", "q", "v", "v expressed in"])


# ----------------------------------------------------------------------------- sparsity

def sparsity_document(model, samples: int = 3, seed: int = 0) -> dict:
    """The structural pattern of M, its tree-ordered L^T D L factor, and a numeric check.

    ``pattern``, ``nnz`` and ``nnz_factor`` are the interface's keys. ``factor`` is the
    factor's compressed layout in MuJoCo's terms (``M_rownnz``, ``M_rowadr``,
    ``M_colind``, every row with all its ancestors: MuJoCo 4 shortens the rows of its
    "simple" dofs to the diagonal); ``fill_in`` counts the new non-zeros (pairs below the diagonal) that
    eliminating in another order would create; ``confirmed`` checks the pattern on M(q) at
    random configurations, and the factor's solve against ABA there.
    """
    from treedyn.engine.factor import factor_structure, fill_in

    pattern = model.sparsity.astype(int)
    nnz, nv = int(pattern.sum()), int(model.nv)
    structure = factor_structure(model.dof_parent)
    return {
        "pattern": pattern.tolist(),
        "nnz": nnz,
        "nnz_factor": structure.nnz,
        "density": nnz / nv ** 2 if nv else 0.0,
        "nv_subtree": {name: int(n) for name, n in zip(model.joint_names, model.nv_subtree)},
        "subtree_blocks": [{"joint": name, "first": int(model.idx_v[j]),
                            "size": int(model.nv_subtree[j])}
                           for j, name in enumerate(model.joint_names)],
        "factor": {"rownnz": structure.rownnz.tolist(), "rowadr": structure.rowadr.tolist(),
                   "colind": structure.colind.tolist()},
        "fill_in": {"tree_order": fill_in(model.sparsity, np.arange(nv)[::-1]),
                    "root_first": fill_in(model.sparsity, np.arange(nv))},
        "confirmed": confirm_pattern(model, samples, seed),
    }


def confirm_pattern(model, samples: int, seed: int) -> dict:
    """M(q) at random q against the pattern, and the factor's solve against ABA."""
    from treedyn.engine import aba, crba, rnea
    from treedyn.engine.factor import ltdl, ltdl_solve

    if model.nv == 0:
        return {"samples": 0, "seed": seed, "max_outside": 0.0, "zero_inside": 0,
                "solve_vs_aba": 0.0}
    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng, samples)
    tau = rng.normal(size=(samples, model.nv))
    M = crba(model, q).reshape(samples, model.nv, model.nv)
    outside = np.abs(M[:, ~model.sparsity])
    zero_inside = int(np.sum(np.all(M[:, model.sparsity] == 0, axis=0)))
    with np.errstate(all="ignore"):
        solved = ltdl_solve(model.dof_parent, ltdl(model.dof_parent, M),
                            tau - rnea(model, q, None, None))
        expected = aba(model, q, None, tau)
        difference = np.abs(solved - expected)  # inf - inf when M is singular
    gap = float(difference.max()) if np.all(np.isfinite(difference)) else None
    return {"samples": samples, "seed": seed,
            "max_outside": float(outside.max()) if outside.size else 0.0,
            "zero_inside": zero_inside, "solve_vs_aba": gap}


def sparsity_table(document: dict, labels: Sequence[str]) -> str:
    """The pattern drawn with '#' (dofs i, j can couple) and '.', then the counts."""
    pattern = document["pattern"]
    nv = len(pattern)
    digits = len(str(max(nv - 1, 0)))
    width = max((len(label) for label in labels), default=0)
    ruler = " " * (digits + width + 3) + "".join(str(k % 10) for k in range(nv))
    rows = [f"{i:>{digits}} {label:<{width}}  " + "".join("#" if x else "." for x in row)
            for i, (label, row) in enumerate(zip(labels, pattern))]
    blocks = table([[b["joint"], b["size"], f"v[{b['first']}:{b['first'] + b['size']}]"]
                    for b in document["subtree_blocks"]],
                   ["joint", "nv_subtree", "block (its row and column of M)"])
    fill, check = document["fill_in"], document["confirmed"]
    solve = ("not finite (M singular)" if check["solve_vs_aba"] is None
             else f"{check['solve_vs_aba']:.3g}")
    return "\n".join([
        "sparsity pattern of M (# where dofs i and j can couple: one supports the other):",
        ruler, *rows, "",
        f"nnz: {document['nnz']} of {nv * nv} (density {100 * document['density']:.1f} %); "
        f"tree-ordered L^T D L factor: {document['nnz_factor']} nonzeros incl. diagonal",
        f"fill-in: {fill['tree_order']} eliminating leaves first (tree order, as MuJoCo); "
        f"{fill['root_first']} new nonzero pair(s) if the root went first",
        f"confirmed on M(q) at {check['samples']} random configurations (seed {check['seed']}):"
        f" max |M_ij| outside the pattern = {check['max_outside']:.3g}, "
        f"{check['zero_inside']} pattern entries zero at every sample; "
        f"L^T D L solve vs ABA: {solve}",
        "", blocks,
    ])
