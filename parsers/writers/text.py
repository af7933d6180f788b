"""The pieces of model text both writers write: numbers that read back bit for bit, XML
comments that hold any text, and where an element came from (names not yet taken:
:func:`treedyn.engine.names.unique`)."""
from __future__ import annotations

from xml.sax.saxutils import quoteattr

import numpy as np

from treedyn.engine.description import SourceRef


def number(value: float) -> str:
    """A float as its shortest round-trip text ("1" for 1.0, "0" for either zero): MuJoCo
    and urdfdom read it back bit for bit."""
    value = float(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def numbers(values) -> str:
    """Space-separated :func:`number` s of ``values`` (any shape, flattened)."""
    return " ".join(number(value) for value in np.ravel(values))


def attribute(text) -> str:
    """``text`` quoted as an XML attribute's value, read back as it is (quoteattr writes
    line ends and tabs as character references, which a reader would otherwise turn into
    spaces)."""
    return quoteattr(str(text))


def comment(text: str) -> str:
    """``text`` as one XML comment line: control characters escaped, no ``--`` inside."""
    text = "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in str(text))
    while "--" in text:
        text = text.replace("--", "- -")
    return f"<!-- {text} -->"


def where(source: SourceRef) -> str:
    """file:line of a source, the file alone when its line is unknown (a note names the
    element itself)."""
    return f"{source.file}:{source.line}" if source.line else source.file
