"""Pictures of the commands' results (``--plot FILE``): PNG, SVG or PDF by matplotlib.

A layer beside the command line: it may use the engine and the pipeline, and neither of
them imports it. matplotlib is the optional extra ``treedyn[plot]``, imported only when a
picture is asked for (this module imports nothing heavy, so a command names its option
cheaply). Every picture is drawn on its own ``Figure`` with the Agg canvas: no display, no
pyplot and none of its global state. A figure function (:mod:`.matrices`,
:mod:`.series`, :mod:`.fit`) draws one command's document on a Figure it is given;
:func:`figure` returns that Figure (the library's door, and the tests'), :meth:`Plot.draw`
writes it to the file asked for, atomically (a failure keeps a previous file).
"""
from __future__ import annotations

import io
import os
import re
import warnings
from dataclasses import dataclass

from treedyn.pipeline.errors import UsageError
from treedyn.pipeline.paths import writing

SUFFIXES = (".png", ".svg", ".pdf")
DPI = 100  # pixels per inch of a PNG (a size in px is divided by it)
SIZE = (10.0, 6.5)  # inches, when a figure function names no size of its own
SMALLEST = 1.0  # inches (100 px) a side at least: a smaller picture has no room to draw in
LARGEST = 100.0  # inches a side at most
SIZE_TEXT = re.compile(r"\s*(\d+(?:\.\d*)?)\s*[xX]\s*(\d+(?:\.\d*)?)\s*(px|in)?\s*")
MISSING = "dyn: --plot needs matplotlib: pip install 'treedyn[plot]'"


def sized(width: float, height: float):
    """Decorator: the size (inches) a figure function draws at unless one is asked for."""
    def attach(function):
        function.size = (width, height)
        return function
    return attach


def parse_size(text: str | None) -> tuple[float, float] | None:
    """``WxH`` in inches (``8x5``, ``8x5in``) or in pixels (``1200x800px``) as inches at
    :data:`DPI`, each side from :data:`SMALLEST` to :data:`LARGEST`; None for None. A usage
    error for anything else."""
    if text is None:
        return None
    match = SIZE_TEXT.fullmatch(text)
    width, height = (float(match[1]), float(match[2])) if match else (0.0, 0.0)
    if match and match[3] == "px":
        width, height = width / DPI, height / DPI
    if not (SMALLEST <= width <= LARGEST and SMALLEST <= height <= LARGEST):
        raise UsageError(f"dyn: --plot-size {text[:40]!r}: expected WxH in inches (8x5) or "
                         f"pixels (1200x800px), each side from {SMALLEST:g} inch "
                         f"({SMALLEST * DPI:g}px) to {LARGEST:g} inches")
    return width, height


def matplotlib_figure(size: tuple[float, float]):
    """A Figure of ``size`` inches on the Agg canvas (no display); a usage error when
    matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401  (first: its absence is what is said)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UsageError(MISSING) from None
    figure = Figure(figsize=size, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def figure(draw, *args, size: tuple[float, float] | None = None):
    """The Figure that ``draw(figure, *args)`` draws (a figure function of this package),
    ``size`` inches (default: the function's own, else :data:`SIZE`)."""
    chosen = matplotlib_figure(size or getattr(draw, "size", SIZE))
    draw(chosen, *args)
    return chosen


@dataclass(frozen=True)
class Plot:
    """A picture asked for: its file (its suffix the format) and its size (None: the
    figure's own)."""

    path: str
    size: tuple[float, float] | None = None

    def draw(self, draw, *args) -> None:
        """Draw ``draw(figure, *args)`` and write it to :attr:`path`: rendered whole in
        memory, then written beside it and renamed onto it."""
        from treedyn.pipeline.paths import replace_checked

        drawn = figure(draw, *args, size=self.size)
        data = io.BytesIO()
        with warnings.catch_warnings():  # (a size too small for the layout: drawn as it is)
            warnings.simplefilter("ignore", UserWarning)
            drawn.savefig(data, format=os.path.splitext(self.path)[1][1:].lower(),
                          metadata=metadata(self.path))
        try:
            replace_checked(self.path, data.getvalue(), lambda path: "")
        except OSError as error:
            raise UsageError(f"dyn: --plot {self.path}: cannot write it ({error.strerror})"
                             ) from None


def metadata(path: str) -> dict:
    """The file's metadata: the program that drew it, no date (one picture, one file)."""
    if path.lower().endswith(".svg"):
        return {"Date": None, "Creator": "treedyn"}
    if path.lower().endswith(".pdf"):
        return {"CreationDate": None, "Creator": "treedyn"}
    return {"Software": "treedyn"}


def requested(path: str | None, size: str | None) -> Plot | None:
    """The picture the options ask for, checked before any work: None without ``path``;
    a usage error for a suffix other than .png, .svg or .pdf, a bad size, a size without
    a picture, matplotlib missing, a folder that is not there, or a file the run reads
    (:func:`treedyn.pipeline.paths.writing`)."""
    if path is None:
        if size is not None:
            raise UsageError("dyn: --plot-size needs --plot FILE")
        return None
    if os.path.splitext(path)[1].lower() not in SUFFIXES:
        raise UsageError(f"dyn: --plot {path[:200]}: the picture's format follows its "
                         "suffix: .png, .svg or .pdf")
    chosen = parse_size(size)
    try:
        import matplotlib  # noqa: F401  (checked now, not after a long run)
    except ImportError:
        raise UsageError(MISSING) from None
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise UsageError(f"dyn: --plot {path[:200]}: no folder {folder[:200]} to write it in")
    if os.path.isdir(path):
        raise UsageError(f"dyn: --plot {path[:200]}: is a folder; name a file")
    writing(path)  # (none of the run's inputs, nor another of its outputs)
    return Plot(path, chosen)
