"""The library's settings from the environment, read in one place (as ``rasterio.env`` is
GDAL's): the layers below read none, and take these as arguments.

| variable | meaning | default |
|---|---|---|
| TREEDYN_THREADS | engine worker threads | 2 (or the CPUs) |
| TREEDYN_CHUNK | states per engine call | the engine's |
| TREEDYN_STREAM_CHUNK | states read per chunk of an input | 16384 |
| TREEDYN_PROCESSES | worker processes for text files (1: none) | the CPUs, at most 8 |
| TREEDYN_PART_BYTES | bytes of text per worker's part | 16 MiB |

The ROS variables are read here too, for the parsers: ``ROS_PACKAGE_PATH`` and
``AMENT_PREFIX_PATH`` (:func:`package_search`) say where ROS packages are (``$(find
PKG)``, ``package://``), and the whole environment is what xacro's ``$(env NAME)`` and
``$(optenv NAME default)`` read (:func:`xacro_environment`). ``GZ_SIM_RESOURCE_PATH`` and
``SDF_PATH`` say where SDFormat's ``model://NAME`` is (:func:`model_search`).

The first three (:data:`COUNTS`) are checked when ``dyn`` starts; the process counts
when a run first needs them (:func:`whole`), as a usage error. Imports nothing heavy:
``dyn --help`` reads :data:`COUNTS` from here.
"""
import os

from treedyn.pipeline.errors import UsageError

COUNTS = ("TREEDYN_THREADS", "TREEDYN_CHUNK", "TREEDYN_STREAM_CHUNK")


def count(name: str, default: int | None) -> int | None:
    """The positive whole number in ``name`` (one of :data:`COUNTS`), else ``default``."""
    value = os.environ.get(name, "").strip()
    return int(value) if value.isascii() and value.isdigit() and int(value) >= 1 else default


STREAM_CHUNK = count("TREEDYN_STREAM_CHUNK", 16384)  # states read per chunk of an input at
# most (callers may ask for fewer)


def whole(name: str, default: int | None) -> int | None:
    """The whole number in ``name``, else ``default``; UsageError when it is not a whole
    number of at least 1."""
    value = os.environ.get(name)
    if not value:
        return default
    text = value.strip()
    # -1 or 0 meant something else to whoever set it: say so; digits as count reads them
    if not (text.isascii() and text.isdigit()) or int(text) < 1:  # (not "1_0", "+2")
        raise UsageError(f"dyn: {name}={value!r} is not a positive whole number")
    return int(text)


MAX_PROCESSES = 8


def processes() -> int:
    """Worker processes: TREEDYN_PROCESSES, else the CPUs this process may use (at most
    MAX_PROCESSES); 1 turns the split of JSON Lines off (a CSV file is never split:
    :func:`treedyn.pipeline.batch.splits`)."""
    if os.environ.get("TREEDYN_PROCESSES"):
        return whole("TREEDYN_PROCESSES", 1)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return min(cpus, MAX_PROCESSES)


def part_bytes() -> int | None:
    """Bytes of text per worker's part: TREEDYN_PART_BYTES (tests use small parts), else
    None (the pipeline's PART_BYTES); files of two parts or more are split."""
    return whole("TREEDYN_PART_BYTES", None)


def package_search() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(folders of ROS_PACKAGE_PATH, prefixes of AMENT_PREFIX_PATH), empty entries left out."""
    return tuple(_path_list("ROS_PACKAGE_PATH")), tuple(_path_list("AMENT_PREFIX_PATH"))


def model_search() -> tuple[str, ...]:
    """Where SDFormat's model://NAME is looked for: the folders of GZ_SIM_RESOURCE_PATH,
    then those of SDF_PATH, empty entries left out."""
    return (*_path_list("GZ_SIM_RESOURCE_PATH"), *_path_list("SDF_PATH"))


def xacro_environment() -> tuple[tuple[str, str], ...]:
    """The environment as (name, value) pairs: what xacro's $(env) and $(optenv) read."""
    return tuple(sorted(os.environ.items()))


def _path_list(name: str) -> list[str]:
    return [folder for folder in os.environ.get(name, "").split(os.pathsep) if folder]
