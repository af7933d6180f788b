"""Model and mesh files, read within bounds: regular files only, and no larger than a
limit, checked before a byte is read.

A path that names a FIFO would block forever, one linked to ``/dev/zero`` would read until
memory runs out, and a 3 GB file would be held whole: each is refused at once as an
OSError whose text every reader reports in its one line ("cannot read file (...)").
Where a file is looked up before it is read (an MJCF include, mesh or texture), the
lookup says what the path names instead with :func:`not_a_file`: "is a directory", "is a
FIFO, not a file", ..., never "not found" for a path that is there.
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence

MODEL_BYTES = 256 << 20  # a URDF, an MJCF file or one of its includes
MESH_BYTES = 1 << 30  # a mesh (MuJoCo's largest assets are a few hundred MB)

KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


def lexical_path(*parts: str) -> str:
    """``parts`` joined as MuJoCo joins an MJCF file's paths (model directory, meshdir,
    file; an absolute part starts afresh), with "." and "name/.." removed from the text
    before the system sees it -- so ``link/../m.stl`` is ``m.stl`` beside the model even
    where ``link`` is a symbolic link to a folder elsewhere (MuJoCo's ``FilePath``; URDF
    paths are left to the system, as urdfdom leaves them)."""
    return os.path.normpath(os.path.join(*parts))


def confined(path: str, roots: Sequence[str], within: str) -> tuple[str, str]:
    """(the real path of ``path``, links followed; "" when it is one of the folders
    ``roots`` (real paths) or lies below one, else the refusal's end: ", which is outside
    {within}: model files may not read it", ``within`` naming ``roots``)."""
    real = os.path.realpath(path)
    if any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots):
        return real, ""
    return real, f", which is outside {within}: model files may not read it"


def not_a_file(path: str) -> str:
    """"" when ``path`` names a regular file (links followed), else what is wrong, to follow
    the name in a message: "not found", "is a directory", "is a FIFO, not a file", "is a
    character device, not a file", ... (a FIFO is not opened, so nothing waits)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        missing = error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
        return "not found" if missing else f"cannot be read ({error.strerror})"
    if stat.S_ISREG(mode):
        return ""
    kind = KINDS.get(stat.S_IFMT(mode), "not a file")
    return f"is {kind}" if stat.S_ISDIR(mode) else f"is {kind}, not a file"


def open_bounded(path: str, limit: int):
    """The regular file at ``path`` opened for binary reading, once it is known to be a
    regular file of at most ``limit`` bytes (OSError otherwise, before anything is read;
    the open does not wait on a FIFO)."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            kind = KINDS.get(stat.S_IFMT(status.st_mode), "not a file")
            raise OSError(errno.EINVAL, f"{kind}, not a regular file")
        if status.st_size > limit:
            raise OSError(errno.EFBIG, f"{status.st_size >> 20} MiB, larger than the "
                                       f"{limit >> 20} MiB dyn reads")
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_bounded(path: str, limit: int) -> bytes:
    """The bytes of the regular file at ``path`` of at most ``limit`` bytes (OSError as
    :func:`open_bounded` says; also when it grows past the limit while it is read)."""
    with open_bounded(path, limit) as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than the {limit >> 20} MiB dyn reads")
    return data


def file_head(path: str, limit: int, count: int) -> tuple[int, bytes]:
    """(size, the first ``count`` bytes) of the regular file at ``path`` of at most
    ``limit`` bytes (OSError as :func:`open_bounded` says): a header checked before the
    file is read whole."""
    with open_bounded(path, limit) as stream:
        return os.fstat(stream.fileno()).st_size, stream.read(count)
