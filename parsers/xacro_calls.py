"""What an expression in a xacro file may call: the functions xacro documents, and a few
methods of strings, lists and dicts, each with the bounds of :mod:`.xacro_limits`.

A call goes to a function of this table only, found by identity (the very object xacro
puts in its symbols, or one of :data:`BUILTINS`), never to an object an expression made:
``type``, ``vars``, ``getattr``, ``isinstance`` of other than plain types, ``operator``,
lambdas and everything else that reaches Python's internals are not in it. A function that
takes a function (``map``, ``sorted(key=)``) gets one of the table's, called through the
table. Lazy results (``map``, ``zip``, ``enumerate``, ``filter``, ``reversed``) are lists.
"""
from __future__ import annotations

import builtins
import math
import re

from .xacro_limits import (
    MAX_INT_BITS,
    MAX_ITEMS,
    Refused,
    binary,
    brace_format,
    sized,
    weight,
)

PLAIN_TYPES = (int, float, str, bool, list, tuple, dict, type(None))
STR_METHODS = frozenset(
    "strip lstrip rstrip lower upper startswith endswith find rfind index rindex count "
    "isdigit isalpha isalnum isspace isnumeric isdecimal islower isupper capitalize title "
    "swapcase casefold partition rpartition split rsplit splitlines replace join "
    "format".split())
SEQUENCE_METHODS = frozenset({"index", "count"})
DICT_METHODS = frozenset({"keys", "values", "items", "get"})
NUMBER_METHODS = {float: frozenset({"is_integer"}), int: frozenset({"bit_length"})}
MESSAGE_OPTIONS = frozenset({"color", "alt_text", "print_location"})
DEPRECATED = "Using {name}() directly is deprecated. Use {ns}.{name}() instead."


class Method:
    """An allowed method of a plain value, bound to it (``'a b'.split``)."""

    __slots__ = ("receiver", "name")

    def __init__(self, receiver: object, name: str):
        self.receiver, self.name = receiver, name

    def __repr__(self) -> str:
        return f"<method {self.name} of {type(self.receiver).__name__}>"


def method_of(receiver: object, name: str) -> Method | None:
    """The method ``name`` of ``receiver`` when model files may call it, else None."""
    if isinstance(receiver, str):
        allowed = STR_METHODS
    elif isinstance(receiver, (list, tuple)):
        allowed = SEQUENCE_METHODS
    elif isinstance(receiver, dict):
        allowed = DICT_METHODS
    else:
        allowed = NUMBER_METHODS.get(type(receiver), frozenset())
    return Method(receiver, name) if name in allowed else None


class Callables:
    """The table of callables of one expansion: ``call`` runs one, ``known`` says whether
    an object is one. ``load_yaml`` is the expansion's own (confined) reader."""

    def __init__(self, xacro, load_yaml):
        self.xacro = xacro
        self.table: dict[int, tuple[object, object]] = {}
        for name, function in BUILTINS.items():
            self.add(getattr(builtins, name), function or getattr(builtins, name))
        for name, value in vars(math).items():
            if callable(value) and not name.startswith("_"):
                self.add(value, MATH_BOUNDED.get(name, value))
        self._add_xacro(xacro, load_yaml)

    def add(self, obj: object, function) -> None:
        self.table[id(obj)] = (obj, function)

    def known(self, obj: object) -> bool:
        entry = self.table.get(id(obj))
        return isinstance(obj, Method) or (entry is not None and entry[0] is obj)

    def _add_xacro(self, xacro, load_yaml) -> None:
        """xacro's own functions (namespace ``xacro``) and the deprecated global names."""
        symbols = xacro._global_symbols
        namespace = dict.items(symbols["xacro"])
        own = {"load_yaml": load_yaml, "tokenize": tokenize,
               "dotify": lambda value: xacro.YamlDictWrapper(_mapping(value))}
        for name, value in namespace:
            if name in own:
                self.add(value, own[name])
            elif name in ("message", "warning", "error", "print_location", "fatal"):
                self.add(value, _said(value))
            elif name in ("arg", "abs_filename"):
                self.add(value, value)
        for name, ns in (("sorted", "python"), ("range", "python"), ("load_yaml", "xacro"),
                         ("abs_filename", "xacro"), ("dotify", "xacro")):
            wrapper, target = symbols.get(name), dict.get(symbols[ns], name)
            if wrapper is not None and wrapper is not target and self.known(target):
                self.add(wrapper, _warned(xacro, DEPRECATED.format(name=name, ns=ns),
                                          self.table[id(target)][1]))

    def call(self, function: object, args: list, kwargs: dict, name: str) -> object:
        """``function(*args, **kwargs)`` when the table holds ``function``; ``name`` is how
        the expression wrote it (for the refusal)."""
        if isinstance(function, Method):
            return self._method(function, args, kwargs)
        entry = self.table.get(id(function))
        if entry is None or entry[0] is not function:
            raise Refused(f"calls '{name}', which model files may not call")
        if entry[1] is isinstance:
            return _isinstance(*args, **kwargs)
        args = [self._guarded(value) for value in args]
        kwargs = {key: self._guarded(value) for key, value in kwargs.items()}
        return entry[1](*args, **kwargs)

    def _guarded(self, value: object) -> object:
        """A function passed to a function (``map(str, ...)``), as one that calls it
        through the table; any other value as it is."""
        if isinstance(value, PLAIN_TYPES) or not (callable(value) or isinstance(value, Method)):
            return value
        if not self.known(value):
            raise Refused(f"passes {type(value).__name__} '{getattr(value, '__name__', '?')}'"
                          ", which model files may not call")
        return lambda *args, **kwargs: self.call(value, list(args), kwargs, "?")

    def _method(self, method: Method, args: list, kwargs: dict) -> object:
        receiver, name = method.receiver, method.name
        if isinstance(receiver, str):
            if name == "format":
                brace_format(receiver, (*args, *kwargs.values()))
            elif name == "join":
                items = list(args[0]) if args else []
                sized(receiver, len(receiver) * max(len(items) - 1, 0)
                      + sum(len(item) if isinstance(item, str) else 0 for item in items))
                args = [items]
            elif name == "replace" and len(args) >= 2 and all(isinstance(a, str) for a in args[:2]):
                count = receiver.count(args[0]) if args[0] else len(receiver) + 1
                sized(receiver, len(receiver) + count * max(len(args[1]) - len(args[0]), 0))
            elif name in ("split", "rsplit", "splitlines") and len(receiver) > 2 * MAX_ITEMS:
                raise Refused(f"splits a text of {len(receiver)} characters "
                              f"(at most {2 * MAX_ITEMS})")
        bound = getattr(receiver, name) if not isinstance(receiver, dict) else \
            getattr(dict, name).__get__(receiver)
        return bound(*args, **kwargs)


def _isinstance(value: object, types: object) -> bool:
    """``isinstance`` of the plain types only."""
    each = types if isinstance(types, tuple) else (types,)
    if not all(any(t is plain for plain in PLAIN_TYPES) for t in each):
        raise Refused("uses isinstance with other than plain types (int, float, str, bool, "
                      "list, tuple, dict)")
    return isinstance(value, types)


def _said(function):
    """xacro's message functions: what they print is bounded, and only their own options
    are passed on."""
    def say(*args, **kwargs):
        unknown = set(kwargs) - MESSAGE_OPTIONS
        if unknown:
            raise Refused(f"passes the option {sorted(unknown)[0]} to a xacro message function")
        for value in (*args, *kwargs.values()):
            weight(value)
        return function(*args, **kwargs)
    return say


def _warned(xacro, message: str, function):
    def deprecated(*args, **kwargs):
        xacro.warning(message)
        return function(*args, **kwargs)
    return deprecated


def _mapping(value: object) -> dict:
    if not isinstance(value, dict):
        raise TypeError(f"xacro.dotify takes a dict, not {type(value).__name__}")
    return value


def tokenize(text: str, sep: str = ",; ", skip_empty: bool = True) -> list:
    """xacro's ``tokenize``: ``text`` split at any character of ``sep`` (each character
    taken literally, where xacro puts ``sep`` into a regular expression)."""
    if not isinstance(text, str) or not isinstance(sep, str) or not sep:
        raise TypeError("xacro.tokenize takes a text and a non-empty text of separators")
    if len(text) > 2 * MAX_ITEMS:
        sized(None, sum(text.count(c) for c in set(sep)) + 1)
    parts = re.split("[" + "".join(re.escape(c) for c in sep) + "]", text)
    return [part for part in parts if part] if skip_empty else parts


def _items(iterable) -> object:
    """``iterable`` when it has at most :data:`MAX_ITEMS` items (those it has a length)."""
    if hasattr(iterable, "__len__"):
        sized(None, len(iterable))
    return iterable


def _range(*args) -> range:
    values = range(*args)
    try:
        length = len(values)
    except OverflowError:
        length = MAX_ITEMS + 1
    sized(None, length)
    return values


def _sum(items, start=0):
    total = start
    for item in _items(items):
        total = binary("Add", total, item)
    return total


def _prod(items, *, start=1):
    total = start
    for item in _items(items):
        total = binary("Mult", total, item)
    return total


def _round(number, ndigits=None):
    if isinstance(ndigits, int) and abs(ndigits) > 1000:
        raise Refused(f"rounds to {ndigits} digits (at most 1000)")
    return round(number) if ndigits is None else round(number, ndigits)


def _small(function, limit: int):
    """``function`` of integer arguments no larger than ``limit`` (factorial, comb, perm
    grow past :data:`MAX_INT_BITS` bits soon after)."""
    def bounded(*args):
        if any(isinstance(a, int) and abs(a) > limit for a in args):
            raise Refused(f"calls {function.__name__} with an argument over {limit}")
        return function(*args)
    return bounded


def _text(function):
    def bounded(*args, **kwargs):
        for value in args:
            weight(value)
        return function(*args, **kwargs)
    return bounded


def _materialized(function):
    """A lazy builtin (map, zip, ...) whose result is a bounded list."""
    def bounded(*args, **kwargs):
        for value in args:
            _items(value)
        return list(function(*args, **kwargs))
    return bounded


def _collection(kind):
    def bounded(*args, **kwargs):
        for value in args:
            _items(value)
        return kind(*args, **kwargs)
    return bounded


# the builtins model files may call, with their bounded forms (None: as they are)
BUILTINS = {
    "len": None, "float": None, "int": None, "bool": None, "abs": None, "ord": None,
    "divmod": None, "any": None, "all": None, "min": None, "max": None,
    "isinstance": None, "str": _text(str), "repr": _text(repr), "round": _round,
    "list": _collection(list), "tuple": _collection(tuple), "dict": _collection(dict),
    "set": _collection(set), "frozenset": _collection(frozenset), "sorted": _collection(sorted),
    "range": _range, "sum": _sum, "map": _materialized(map), "filter": _materialized(filter),
    "zip": _materialized(zip), "enumerate": _materialized(enumerate),
    "reversed": _materialized(reversed),
}
MATH_BOUNDED = {"factorial": _small(math.factorial, 1000), "comb": _small(math.comb, 10_000),
                "perm": _small(math.perm, 10_000), "prod": _prod,
                "isqrt": _small(math.isqrt, 1 << MAX_INT_BITS)}
