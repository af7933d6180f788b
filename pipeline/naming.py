"""One naming scheme for the coordinates of a model, used by every input and output.

A coordinate of q or v is named by its joint: a 1-number joint by the joint's name
(``elbow``), entry ``k`` of a joint of several numbers by ``<joint>:<k>`` (``root_joint:3``).
These *labels* are what every output writes -- JSON (``"dofs"``), CSV headers
(``tau:<label>``), ``.npz`` (``dofs``), tables, ``condition`` -- and what ``--q
name=value`` and CSV headers read. ``dyn info`` shows what each entry is: its *part*, a
name from the joint model (:attr:`JointModel.q_parts`, :attr:`JointModel.v_parts`, such
as ``qw`` or ``wx``; ``rate`` for a 1-dof joint's velocity). Inputs also accept an entry
as ``<joint>.<part>`` (``root_joint.wx``).

A label that cannot be typed bare in a ``name=value,name=value`` list (it holds ``,``,
``=`` or ``"``, or starts or ends with a space) is typed in double quotes, with ``\"`` and
``\\`` inside: ``--q '"wrist, left"=0.3'``. :func:`typed` gives that form, and every
message that suggests a name uses it. Messages and tables show names through :func:`shown`:
control and invisible characters escaped, names longer than :data:`SHOWN` characters
shortened; JSON, CSV and ``.npz`` keep them whole and exact.
"""
from __future__ import annotations

from collections.abc import Sequence



# categories that are never shown raw: controls (C0, DEL, C1), format characters (bidi
# controls, zero-width ones, ...), line and paragraph separators, lone surrogates (bytes
# of a file name that are not UTF-8)
UNSAFE = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))


def printable(text: str) -> str:
    """``text`` safe on one terminal line: every control character (C0 -- TAB and line ends
    too --, DEL, C1), format character (category Cf: the bidi controls U+202A..U+202E,
    U+2066..U+2069, U+200E, U+200F, U+061C, zero-width characters), line or paragraph
    separator and lone surrogate is shown as Python writes it in a string, ``\\x1b``,
    ``\\u202e``, ``\\U000e0001``; everything else (accents, CJK, spaces) is unchanged.
    Backslashes are left as they are, so escaping twice changes nothing."""
    if text.isprintable():  # (false also for spaces other than ' ', which stay)
        return text
    import unicodedata

    return "".join(_escaped(char) if unicodedata.category(char) in UNSAFE else char
                   for char in text)


def _escaped(char: str) -> str:
    code = ord(char)
    return (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
            else f"\\U{code:08x}")


def labels(name: str, size: int) -> list[str]:
    """The labels of a joint's ``size`` entries: ``[name]``, or ``name:0``..``name:k``."""
    return [name] if size == 1 else [f"{name}:{k}" for k in range(size)]


def q_labels(model) -> list[str]:
    """(nq,) labels of q."""
    return [label for j, name in enumerate(model.joint_names)
            for label in labels(name, int(model.nq_joint[j]))]


def v_labels(model) -> list[str]:
    """(nv,) labels of v, a and tau (the dofs)."""
    return [label for j, name in enumerate(model.joint_names)
            for label in labels(name, int(model.nv_joint[j]))]


def v_parts(joint_model) -> tuple[str, ...]:
    """The part names of a joint's v entries: ``("rate",)`` for a 1-dof joint."""
    return tuple(joint_model.v_parts) or ("rate",)


def listing(items: Sequence[str], most: int, width: int | None = None) -> str:
    """'a, b, c' -- the first ``most`` items (each :func:`shown` in ``width`` characters,
    :data:`SHOWN` by default), then ', ...' when there are more: a message stays short
    whatever the file holds."""
    width = SHOWN if width is None else width
    return ", ".join(shown(item, width) for item in items[:most]) + (
        ", ..." if len(items) > most else "")


SHOWN = 60  # characters of a name a message or a table shows


def shown(name: str, most: int = SHOWN) -> str:
    """``name`` as messages and tables show it: safe for a terminal line (control and
    invisible format characters escaped, ``\\x1b``, ``\\u202e``: :func:`.console.printable`)
    and, when longer than ``most`` characters, its head and tail around '...' and its length
    (a 200 000-character name must not make a 1 GB table)."""
    if len(name) <= most:
        return printable(name)
    keep = (most - 24) // 2
    return f"{printable(name[:keep])}...{printable(name[-keep:])} ({len(name)} characters)"


UNTYPABLE = frozenset(',="')


def typed(label: str) -> str:
    """``label`` as it is typed in a ``name=value`` list: bare, or in double quotes."""
    if label and label == label.strip() and not UNTYPABLE.intersection(label):
        return label
    return '"' + label.replace("\\", "\\\\").replace('"', '\\"') + '"'


def split_pairs(text: str) -> list[str]:
    """The comma-separated items of a ``name=value`` list, commas inside double quotes
    kept (the quotes too: :func:`split_name` reads them)."""
    items, start, quoted, k = [], 0, False, 0
    while k < len(text):
        char = text[k]
        if char == "\\" and quoted:
            k += 1
        elif char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            items.append(text[start:k])
            start = k + 1
        k += 1
    items.append(text[start:])
    return items


def split_name(item: str) -> tuple[str, str, str] | None:
    """``(name, '=', value)`` of one ``name=value`` item, the name unquoted when it is
    typed in double quotes; ``None`` when a quote is not closed."""
    item = item.strip()
    if not item.startswith('"'):
        return tuple(s.strip() for s in item.partition("="))  # type: ignore[return-value]
    name, k = [], 1
    while k < len(item) and item[k] != '"':
        if item[k] == "\\" and k + 1 < len(item):
            k += 1
        name.append(item[k])
        k += 1
    if k >= len(item):
        return None
    rest = item[k + 1:].strip()
    sep, value = ("=", rest[1:].strip()) if rest.startswith("=") else ("", rest)
    return "".join(name), sep, value


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a formula


def csv_cell(value):
    """``value`` as a CSV cell safe to open in a spreadsheet: a text that starts as a
    formula would (``=HYPERLINK(...)``, ``@SUM(1+1)``, a name from a model file) gets a
    leading ``'``, as OWASP recommends; numbers, and texts that read as a number
    (``-0.5``), are left as they are."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
        return value
    except ValueError:
        return "'" + value


class _SafeWriter:
    """A ``csv.writer`` whose text cells go through :func:`csv_cell`."""

    def __init__(self, writer):
        self.writer = writer

    def writerow(self, row):
        return self.writer.writerow([csv_cell(cell) for cell in row])

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


def csv_writer(stream):
    """The one CSV writer of dyn's outputs (lines ended by ``\\n``): names that would be
    read as formulas are neutralised (:func:`csv_cell`)."""
    import csv

    return _SafeWriter(csv.writer(stream, lineterminator="\n"))
