"""Warnings and notes for the person at the terminal: one reporter for the whole run.

A warning is one ``dyn: warning: ...`` line on stderr, unless the command runs with
``--quiet``. A note (``dyn: note:
...``: what was loaded, how long a stage took, an estimated quantity) is printed with
``--verbose`` only. Whether stderr's lines are coloured is settled once per run
(``--color``, ``NO_COLOR``, ``FORCE_COLOR``: :func:`.settings.colour_wanted`).

Text from a file or the user (names, paths, CSV headers, JSON keys) is made safe for a
terminal line by :func:`printable`: names are shown through it (:func:`..naming.shown`,
the tables of :mod:`..render.table`), and every line dyn writes to stderr passes through
:func:`one_line` on its way out, whatever built it.
"""
from __future__ import annotations

import contextlib
import sys
import time
import warnings

from treedyn.pipeline.errors import Ended, StatesWarning
from treedyn.pipeline.naming import printable
from treedyn.pipeline.schema import document_text

from .settings import colour_wanted

LINE_CHARS = 1000  # the longest line dyn writes to stderr


def one_line(message: str, most: int = LINE_CHARS) -> str:
    """``message`` as one safe line of at most about ``most`` characters: its lines joined
    by spaces (a library's message may have several), then :func:`printable`, then, when
    still longer, its middle left out with a note of how many characters."""
    text = printable(message.rstrip("\r\n").replace("\r\n", " ").replace("\r", " ")
                     .replace("\n", " "))
    if len(text) <= most:
        return text
    keep = (most - 40) // 2
    return f"{text[:keep]} ... [{len(text) - 2 * keep} characters left out] ... {text[-keep:]}"


COLOURS = {"warning": "33", "note": "36", "error": "31"}  # SGR codes: yellow, cyan, red


class Console:
    """Where warnings go: stderr, or nowhere (``quiet``); whether notes are printed (``verbose``) and stderr's lines coloured (``colour``)."""

    def __init__(self) -> None:
        self.quiet = False  # --quiet: no warnings, notes or bar (errors are always printed)
        self.verbose = False  # --verbose: notes too
        self.colour: str | None = None  # --color: auto (None), always or never
        self.command: str | None = None  # the command this run is (its documents' schema)
        self.others = warnings.showwarning  # how Python shows the other warnings

    def start(self) -> None:
        """A new run: every setting back to its default (the options set them again)."""
        self.quiet, self.verbose, self.colour = False, False, None

    def configure(self, quiet: bool, verbose: bool, colour: str | None) -> None:
        """The global options of this run (given before the command or after it; either
        place turns --quiet or --verbose on, the last --color given wins)."""
        self.quiet, self.verbose = self.quiet or quiet, self.verbose or verbose
        self.colour = colour or self.colour

    def coloured(self, stream=None) -> bool:
        """Whether lines to ``stream`` (stderr) are coloured."""
        return colour_wanted(self.colour, sys.stderr if stream is None else stream)

    def line(self, kind: str, message: str) -> str:
        """``dyn: <kind>: message`` made safe (:func:`one_line`), its kind coloured when
        stderr takes colour (after :func:`one_line`, which would escape the codes)."""
        text = one_line(f"dyn: {kind}: {message}")
        if not self.coloured():
            return text
        return text.replace(f"{kind}:", f"\033[{COLOURS[kind]}m{kind}:\033[0m", 1)

    def show_warning(self, message, category, filename, lineno, file=None, line=None):
        """:data:`warnings.showwarning` while a command runs: the pipeline's
        :class:`StatesWarning` go through :meth:`warn`, any other as Python shows it (none
        with --quiet)."""
        if issubclass(category, StatesWarning):
            self.warn(str(message))
        elif not self.quiet:
            self.others(message, category, filename, lineno, file, line)

    def warn(self, message: str) -> None:
        if not self.quiet:
            self.say("warning", message)

    def note(self, message: str) -> None:
        """A note for --verbose runs (never with --quiet, never in a worker's capture)."""
        if self.verbose and not self.quiet:
            self.say("note", message)

    def say(self, kind: str, message: str) -> None:
        if sys.stderr is None:
            return
        try:
            print(self.line(kind, message), file=sys.stderr)
        except (OSError, ValueError):  # stderr closed or full: not worth the run
            pass

    @contextlib.contextmanager
    def stage(self, name: str):
        """Within: one stage of the run; --verbose notes how long it took."""
        started = time.perf_counter()
        yield
        self.note(f"{name}: {1e3 * (time.perf_counter() - started):.1f} ms")


console = Console()


def show_text(text: str) -> None:
    """Print a text report or table for people on stdout, each of its lines made safe for
    the terminal (:func:`printable`): names and paths in it come from model and state
    files. The one writer of human text on stdout; JSON, CSV and files keep names exact."""
    print("\n".join(printable(line) for line in text.split("\n")))


def print_document(document: dict, command: str | None = None) -> None:
    """Print a command's JSON document on stdout as one line, with its ``"schema"``
    (:func:`treedyn.pipeline.schema.versioned`); ``command`` None: the command running.
    The one printer of a JSON document (JSON Lines of many states are the sinks')."""
    print(document_text(document, command or console.command))


def warn(message: str) -> None:
    """A warning line on stderr (results stay on stdout): :meth:`Console.warn`."""
    console.warn(message)



@contextlib.contextmanager
def saying_kept():
    """Within: a run ended by Ctrl-C, SIGTERM or SIGHUP (:class:`Ended`) says, in the line
    it ends with, what its output kept (the ``kept`` text the pipeline gave the error;
    nothing when it has none)."""
    try:
        yield
    except (KeyboardInterrupt, Ended) as error:
        kept = getattr(error, "kept", None)
        if kept is not None:
            how = "interrupted" if isinstance(error, KeyboardInterrupt) else "ended by a signal"
            with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr closed
                print(one_line(f"dyn: {how}; {kept}"), file=sys.stderr)  # (an output path)
            error.kept = None  # said once
        raise
