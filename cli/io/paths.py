"""Input and output files by path: whether two names are one file (the output must not be
the input, which it would empty before it is read)."""
import os
import sys


def file_identity(path: str):
    """(device, inode) of an existing file, else None: two names with one identity are one
    file (a hard or symbolic link), as :func:`os.path.samefile` decides."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return status.st_dev, status.st_ino


def same_file(source: str, target: str) -> bool:
    """Whether the input ``source`` (a path, or - for stdin) and the output ``target`` are
    one file (also through links, or stdin redirected from it); False if one does not exist."""
    if source == "-":
        try:
            stdin = os.fstat(sys.stdin.fileno())
        except (OSError, ValueError, AttributeError):  # stdin without a descriptor
            return False
        return (stdin.st_dev, stdin.st_ino) == file_identity(target)
    if os.path.realpath(source) == os.path.realpath(target):
        return True
    return file_identity(source) is not None and file_identity(source) == file_identity(target)
