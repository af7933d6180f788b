"""Input and output files by path: whether two names are one file (the output must not be
the input, which it would empty before it is read); the files one run reads and writes
(:func:`guarded`); an output's temporary, its rename."""
import contextlib
import os
import sys
from contextvars import ContextVar

from .errors import UsageError


def file_identity(path: str):
    """(device, inode) of an existing file, else None: two names with one identity are one
    file (a hard or symbolic link), as :func:`os.path.samefile` decides."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return status.st_dev, status.st_ino


def stdin_identity():
    """(device, inode) of what stdin reads (a file it is redirected from, a pipe), else None
    (no descriptor)."""
    try:
        status = os.fstat(sys.stdin.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return status.st_dev, status.st_ino


def same_file(source: str, target: str) -> bool:
    """Whether the input ``source`` (a path, or - for stdin) and the output ``target`` are
    one file (also through links, or stdin redirected from it); False if one does not exist."""
    if source == "-":
        stdin = stdin_identity()
        return stdin is not None and stdin == file_identity(target)
    if os.path.realpath(source) == os.path.realpath(target):
        return True
    return file_identity(source) is not None and file_identity(source) == file_identity(target)


def refuse_input_as_output(input: str | None, output: str | None) -> None:
    """A usage error when the output ``output`` is the input ``input`` (:func:`same_file`):
    written, it would replace the states it is computed from. Every command that reads
    states and writes a file asks this before it opens the output."""
    if input is not None and output is not None and same_file(input, output):
        raise UsageError(f"dyn: --output {output} is the input file"
                         f"{' (on stdin)' if input == '-' else ''}: it would be replaced by "
                         "the results computed from it; write to another file")


# ---------------------------------------------------------------------- one run's files
# Within :func:`guarded` (a dyn command: treedyn.cli.app.run_app) every file the run reads
# is recorded -- the model and the files it includes, the meshes it names, the states, a
# baseline (:func:`reading`) -- and every output it writes (:func:`writing`), whichever
# comes first: an output that is one of those files (also through a link, or stdin
# redirected from it), or another output of the run, is refused before it is written.
# Outside it (a Python caller's runs) nothing is recorded.


class RunFiles:
    """What one run reads and writes. Outputs are renamed onto their names, so another
    name of a file (a hard link) keeps its contents: a file read is known by its real path
    (links followed), stdin by the (device, inode) of the file it is redirected from."""

    def __init__(self) -> None:
        self.read: dict = {}  # real path, or stdin's (device, inode) -> what the file is
        self.written: dict = {}  # real path -> the output's name as given


RUN_FILES: ContextVar = ContextVar("treedyn_run_files", default=None)


@contextlib.contextmanager
def guarded(files: bool = True):
    """Within: one run, whose outputs may be none of the files it reads, nor one another;
    ``files`` False: nothing recorded (``dyn bench``'s scratch folder, whose files it writes,
    reads and writes again)."""
    token = RUN_FILES.set(RunFiles() if files else None)
    try:
        yield
    finally:
        RUN_FILES.reset(token)


def recording() -> bool:
    """Whether a run records its files here (:func:`guarded`): what costs to find (the
    meshes a model names) is looked for only then."""
    return RUN_FILES.get() is not None


def reading(path: str, what: str) -> None:
    """This run reads the file ``path`` (``-``: stdin), which is ``what`` ("the model file",
    "the input file"); a UsageError when an output of the run declared before is that file."""
    files = RUN_FILES.get()
    if files is None:
        return
    key = stdin_identity() if path == "-" else (
        os.path.realpath(path) if os.path.isfile(path) else None)
    if key is None:  # (a folder, a device: nothing a file output could replace)
        return
    files.read.setdefault(key, f"{what} {path}" if path != "-" else f"{what} on stdin")
    for real, output in files.written.items():
        if key in (real, file_identity(output)):
            raise overwrites(output, files.read[key])


def writing(path: str) -> None:
    """This run writes the file ``path``: a UsageError when it is a file the run reads
    (:func:`reading`), or another output of the run (through symbolic links)."""
    files = RUN_FILES.get()
    if files is None:
        return
    real = os.path.realpath(path)
    for key in (real, file_identity(path)):  # (the identity: stdin's file, if it is)
        if key in files.read:
            raise overwrites(path, files.read[key])
    other = files.written.get(real)
    if other is not None and other != path:
        raise UsageError(f"dyn: {path} and {other} are one file, which this run would "
                         "write twice; write two files")
    files.written[real] = path


def written(target: str) -> None:
    """The output at the real path ``target`` is complete: a file like any other from now
    on, which the run may read (``dyn bench`` reads the states it wrote)."""
    files = RUN_FILES.get()
    if files is not None:
        files.written.pop(target, None)


def overwrites(output: str, what: str) -> UsageError:
    return UsageError(f"dyn: {output} is {what}: writing it would replace a file this run "
                      "reads; write to another file")


# ---------------------------------------------------------------------- output files
# Every output file is written to a temporary in its folder, owned by this run, and renamed
# onto its name only once complete; a run that does not finish renames what it completed to
# NAME.partial.EXT. A temporary is named ``.<name>.<pid>-<host>.<random>.part`` (``<host>``:
# 8 hex digits of a digest of the host's name), so the next run to the same output removes
# those whose process is gone (SIGKILL, a power cut) and leaves every other run's alone.


def host_tag() -> str:
    """8 hex digits naming this host in temporaries' names (another host sharing the
    folder has its own processes, whose pids mean nothing here)."""
    import hashlib
    import platform

    return hashlib.sha256(platform.node().encode()).hexdigest()[:8]


def temporary_name(target: str, suffix: str = ".part") -> str:
    """A new name for the temporary of ``target`` (a real path) in its folder."""
    folder, name = os.path.split(target)
    return os.path.join(folder, f".{name}.{os.getpid()}-{host_tag()}.{os.urandom(4).hex()}"
                                f"{suffix}")


def remove_stale(target: str, suffixes=(".part", ".parts")) -> list[str]:
    """Remove the temporaries of ``target`` (a real path; files, or folders of a split
    run's parts) left by runs of this host that are gone (their process no longer exists:
    killed, or the machine stopped); the names removed. Another output's temporaries, and
    those of runs still alive, are left alone."""
    import re
    import shutil

    folder, name = os.path.split(target)
    endings = "|".join(re.escape(suffix) for suffix in suffixes)
    pattern = re.compile(rf"\.{re.escape(name)}\.(\d+)-{host_tag()}\.[0-9a-f]{{8}}(?:{endings})")
    removed = []
    try:
        entries = os.listdir(folder or ".")
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry)
        if match is None or int(match.group(1)) == os.getpid() or alive(int(match.group(1))):
            continue
        path = os.path.join(folder, entry)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
            removed.append(entry)
        except OSError:  # gone meanwhile, or not ours to remove
            pass
    return removed


def alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (one of another user counts). A zombie
    -- killed, not yet reaped, as a killed Dask worker stays where nothing reaps orphans --
    runs no more: its temporaries are stale."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:  # "pid (name) S ..." (Linux)
            return stat_file.read().rpartition(b")")[2].split()[:1] != [b"Z"]
    except OSError:  # no /proc (macOS), or gone meanwhile
        return True


def partial_name(path: str) -> str:
    """Where a run that did not finish leaves the states it completed: ``out.npz`` ->
    ``out.partial.npz`` (beside the file a link names, if ``path`` is a link)."""
    if os.path.islink(path):
        path = os.path.realpath(path)
    stem, extension = os.path.splitext(path)
    return f"{stem}.partial{extension}"


def settle(stream, temporary: str, target: str) -> None:
    """Make the complete file ``temporary`` (its open ``stream``, flushed and closed
    here) the file ``target``: its bytes on disk first (fsync), then one rename, so
    ``target`` holds either its old contents or the whole new file, never a part."""
    if not stream.closed:
        stream.flush()
        os.fsync(stream.fileno())
        stream.close()
    else:
        descriptor = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    os.replace(temporary, target)
    written(target)


def replace_checked(target: str, data: bytes, check) -> None:
    """``data`` written to a temporary beside ``target`` (named as the temporaries above,
    with ``target``'s extension), read back by ``check`` (its path -> a problem, or ""),
    then renamed onto ``target``: a file there from before is untouched unless the new one
    is complete and checked, whatever stops the run (a UsageError says why not). A folder
    or a device there is refused, not replaced; so is a file the run reads
    (:func:`writing`)."""
    writing(target)
    real = os.path.realpath(target)
    if os.path.exists(real) and not os.path.isfile(real):
        what = "a folder" if os.path.isdir(real) else "not a regular file (a device, a pipe)"
        raise UsageError(f"{target}: is {what}; name a file to write")
    ending = ".part" + os.path.splitext(target)[1]
    remove_stale(real, (ending,))
    temporary = temporary_name(real, ending)
    try:
        try:
            with open(temporary, "xb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
        except OSError as error:
            raise UsageError(f"{target}: cannot write ({error.strerror or error})") from None
        problem = check(temporary)
        if problem:
            raise UsageError(f"{target}: {problem.replace(temporary, target)}; nothing is "
                             "written")
        os.replace(temporary, real)
        written(real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
