"""HDF5 states and results (the optional extra ``treedyn[hdf5]``, h5py), streamed a chunk
of rows at a time.

Input: datasets ``q`` (N x nq), ``v``, ``a``, ``tau`` (N x nv) at the file's root or in the
group ``--dataset-prefix`` names (``data/demo_0/obs``, as robomimic-style files nest
them). Rows are read by slicing the datasets, a chunk at a time (h5py reads only those, and
decompresses chunked datasets as it goes), and handed to the one reader of arrays
(:func:`.npz.npz_chunks`: finite numbers, units, the bad row).

Output: the dataset named as the result (``tau``, ``a``: N x nv; ``M``: N x nv x nv),
chunked and grown a chunk of states at a time, with ``dofs`` (the labels) and, for ``mass
--sparsity``, ``sparsity`` beside it, in the group ``--dataset-prefix`` names; written
beside its name and renamed once complete, as an .npz (:class:`.sinks.BesideSink`).
"""
from __future__ import annotations

import atexit
import gc
import os

import numpy as np

from .errors import CorruptInput, UsageError
from .layout import TIME, Layout
from .npz import StatesArray, check_members
from .sinks import BesideSink

EXTRA = "reading and writing .h5 files needs the optional extra: pip install 'treedyn[hdf5]'"


OPEN: dict = {}  # h5py file -> the Python file object it reads or writes, until closed


def opened(h5py, stream, mode: str):
    """The HDF5 file of ``stream`` (an input, or a sink's temporary), opened by its path,
    and held until :func:`close_files` of the stream.

    By path, not through h5py's driver for Python file objects: that driver calls back into
    Python when HDF5 frees it, and HDF5 frees what is left at its own exit, after the
    interpreter has ended: a file that failed to open, or a dataset an error's traceback
    kept, then crashed the process as it exited. A stream without a path (none here:
    stdin is spooled to a file first) still goes through the driver; at exit, while
    Python runs, the cycles are collected and every file still open is closed
    (:func:`end`)."""
    if not OPEN:
        atexit.unregister(end)
        atexit.register(end)
    name = getattr(stream, "name", None)
    file = h5py.File(name if isinstance(name, str) and os.path.isfile(name) else stream, mode)
    OPEN[file] = stream
    return file


def close_files(stream=None) -> None:
    """Close the h5py files over ``stream`` (every one: None), their datasets with them."""
    for file, over in list(OPEN.items()):
        if stream is None or over is stream:
            del OPEN[file]
            try:
                file.close()
            except Exception:  # (its stream already closed or gone: nothing more to do)
                pass


def end() -> None:
    """At exit: the datasets and files in reference cycles freed, the rest closed."""
    gc.collect()
    close_files()


def require_h5py():
    """The h5py module, or the one-line error naming the optional extra."""
    try:
        import h5py
    except ImportError:
        raise UsageError(f"dyn: {EXTRA}") from None
    return h5py


def clean_prefix(prefix: str | None) -> str:
    """A group path without its leading and trailing slashes ('' for the root)."""
    return (prefix or "").strip("/")


class _Dataset(StatesArray):
    """One vector of the states: an HDF5 dataset read by rows, a
    :class:`.npz.StatesArray` for :func:`.npz.npz_chunks` (its count, width and messages
    are the array's)."""

    def __init__(self, kind: str, dataset):
        shape = tuple(dataset.shape)
        self.times = kind == TIME and len(shape) == 1  # the times t (N,): one a state
        super().__init__(kind, (*shape, 1) if self.times else shape, np.dtype(dataset.dtype))
        self.dataset = dataset  # rows are new arrays: no stream to seek, nothing to verify

    def read(self, start: int, stop: int) -> np.ndarray:
        try:
            if self.times:
                return self.dataset[start:stop].reshape(-1, 1)
            if len(self.shape) == 1:
                return self.dataset[()].reshape(1, self.width)
            return self.dataset[start:stop]
        except (OSError, ValueError, RuntimeError) as error:
            raise CorruptInput(f"not a readable HDF5 file ({error})") from None


def hdf5_members(stream, name: str, layout: Layout, kinds, prefix: str | None = None,
                 warns: bool = True) -> list[_Dataset]:
    """The datasets of the kinds in use in the group ``prefix``, checked: numeric, of the
    model's width, as many states each."""
    h5py = require_h5py()
    try:
        file = opened(h5py, stream, "r")
    except (OSError, ValueError) as error:
        raise UsageError(f"{name}: not a readable HDF5 file ({error})") from None
    try:
        return _members(h5py, file, name, layout, kinds, prefix, warns)
    except BaseException:
        close_files(stream)
        raise


def _members(h5py, file, name: str, layout: Layout, kinds, prefix, warns) -> list[_Dataset]:
    group_name = clean_prefix(prefix)
    try:
        group = file[group_name] if group_name else file
    except KeyError:
        raise UsageError(f"{name}: has no group '{group_name}' (--dataset-prefix)") from None
    if not isinstance(group, h5py.Group):
        raise UsageError(f"{name}: '{group_name}' is a dataset, not a group of datasets "
                         "(--dataset-prefix names the group that holds q, v, ...)")
    names = [key for key in group if isinstance(group.get(key), h5py.Dataset)]
    where = f"{name}{':/' + group_name if group_name else ''}"
    members = [_Dataset(kind, group[kind]) for kind in kinds if kind in names]
    if not members:
        raise UsageError(f"{where}: has none of the datasets {', '.join(kinds)} (it has: "
                         f"{', '.join(names) or 'nothing'}; --dataset-prefix names a group)")
    count = members[0].count
    check_members(members, names, where, layout, kinds,
                  (lambda n: group[n].shape[:1] == (count,)) if warns else None, "dataset")
    return members


CHUNK_BYTES = 1 << 20  # an HDF5 chunk of results: about this size


class Hdf5Sink(BesideSink):
    """Results as an HDF5 file: the ``key`` dataset (N, ...) grown a chunk at a time."""

    noun = "HDF5 file"

    def __init__(self, stream, key: str, shape: tuple[int, ...], extra: dict,
                 path: str | None = None, prefix: str | None = None):
        super().__init__(stream, path)
        self.key, self.shape, self.extra, self.prefix = key, shape, extra, clean_prefix(prefix)
        self.file = self.dataset = None

    def parts(self) -> tuple:
        return (self.file,)

    def open_file(self) -> None:
        h5py = require_h5py()
        self.file = opened(h5py, self.stream, "w")
        group = self.file.require_group(self.prefix) if self.prefix else self.file
        rows = max(1, CHUNK_BYTES // (8 * max(1, int(np.prod(self.shape)))))
        # no dofs: a chunk is at least 1 wide, so those axes' extent is left open
        self.dataset = group.create_dataset(self.key, shape=(0, *self.shape),
                                            maxshape=(None, *(n or None for n in self.shape)),
                                            chunks=(rows, *(max(1, n) for n in self.shape)),
                                            dtype=np.float64)

    def write(self, result, states) -> None:
        if self.file is None:
            self.open_file()
        start = self.dataset.shape[0]
        try:
            self.dataset.resize(start + len(result), axis=0)
            self.dataset[start:] = result
        except (RuntimeError, ValueError) as error:  # (h5py's I/O errors are OSErrors)
            raise OSError(str(error)) from None

    def finish(self) -> None:
        h5py = require_h5py()
        if self.file is None:
            self.open_file()  # no state: an empty dataset
        group = self.dataset.parent
        for key, value in self.extra.items():
            data = np.asarray(value)
            if data.dtype.kind == "U":
                group.create_dataset(key, data=data.astype(object),
                                     dtype=h5py.string_dtype())
            else:
                group.create_dataset(key, data=data)
        close_files(self.stream)

    def end_partial(self) -> int:
        """The dataset cut to the states counted (a chunk written but not yet counted when
        a signal came is dropped), then the file ended."""
        if self.dataset is not None and self.dataset.shape[0] != self.count:
            self.dataset.resize(self.count, axis=0)
        self.finish()
        return self.count
