"""States in and out, and a model's computation run over them: the library under ``dyn``.

Readers and writers of each format (``.npz``, ``.csv``, ``.jsonl``, Parquet, HDF5) and one
function that streams states from a source through the engine into a sink (:func:`run`);
the regressor and the identification stream a log the same way (:mod:`.regression`). The
engine never sees a file; the command line only parses options, makes one call and renders.
Importing this package loads nothing heavy: each module is imported when it is used.
"""

__all__ = ["COMPUTATIONS", "Computation", "Input", "Layout", "StatesWarning", "UsageError",
           "identify_stream", "open_sink", "run", "write_regressor"]
_HOMES = {"COMPUTATIONS": "compute", "Computation": "compute", "Input": "source",
          "Layout": "layout", "StatesWarning": "errors", "UsageError": "errors",
          "identify_stream": "regression", "open_sink": "outputs", "run": "stream",
          "write_regressor": "regression"}


def __getattr__(name: str):
    """The public names, each imported from its module when first used."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
