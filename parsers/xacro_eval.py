"""xacro expressions (``${...}`` and ``$(eval ...)``) evaluated on a whitelisted walk of
their syntax tree: a model file computes with data, and runs no code.

ROS's xacro hands an expression to Python's ``eval`` with the builtins taken away, which
is escapable (``${python.vars(python.type)['__subclasses__']...}`` reaches any class of
the process). Here the expression is parsed by :mod:`ast` and each node is evaluated by
this module, never compiled to code. What it allows: numbers, strings, lists, tuples,
dicts, sets, booleans, None; arithmetic, comparisons, boolean operators, conditional
expressions, subscripts and slices, comprehensions; names as xacro resolves them (its
symbol tables, with their lazy properties, scopes and namespaces, and the dotted keys of
YAML data); calls of the functions of :mod:`.xacro_calls` only. What it refuses, as
:class:`Refused`: attributes that start with ``_`` or that the receiver's type does not
allow, names that start with ``__``, identifiers that are not plain ASCII (Python would
read a look-alike such as ``ｆｏｒｍａｔ`` as ``format``), lambdas, assignment expressions,
f-strings, and anything over the bounds of :mod:`.xacro_limits`.
"""
from __future__ import annotations

import ast
import builtins
import io
import math
import tokenize
import unicodedata

from .xacro_calls import BUILTINS, DICT_METHODS, Callables, method_of
from .xacro_limits import (
    MAX_CHARS,
    MAX_EXPRESSION,
    MAX_STEPS,
    Budget,
    Refused,
    binary,
    shown,
    sized,
)

UNARY = {"USub": lambda v: -v, "UAdd": lambda v: +v, "Not": lambda v: not v,
         "Invert": lambda v: ~v}
COMPARE = {"Eq": lambda a, b: a == b, "NotEq": lambda a, b: a != b,
           "Lt": lambda a, b: a < b, "LtE": lambda a, b: a <= b,
           "Gt": lambda a, b: a > b, "GtE": lambda a, b: a >= b,
           "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b,
           "Is": lambda a, b: a is b, "IsNot": lambda a, b: a is not b}
CONSTANTS = (int, float, complex, str, bool, type(None))
CONTAINERS = (list, tuple, dict, set, frozenset)
ITERABLES = (str, list, tuple, dict, set, frozenset, range,
             type({}.keys()), type({}.values()), type({}.items()))
SUBSCRIPTABLE = (str, list, tuple, dict, range)
SYNTAX = {"Lambda": "a lambda", "NamedExpr": "an assignment expression (:=)",
          "JoinedStr": "an f-string", "FormattedValue": "an f-string", "Await": "await",
          "Yield": "yield", "YieldFrom": "yield", "Starred": "a starred expression here"}
CACHED = 1024  # containers this heavy keep their weight for the rest of the expression


class Scope:
    """Names as an expression sees them: comprehension variables, then xacro's table."""

    def __init__(self, symbols, local: tuple[dict, ...] = ()):
        self.symbols, self.local = symbols, local

    def inner(self, names: dict) -> Scope:
        return Scope(self.symbols, (*self.local, names))

    def __getitem__(self, name: str) -> object:
        for names in reversed(self.local):
            if name in names:
                return names[name]
        try:
            return self.symbols[name]
        except KeyError:
            raise NameError(f"name '{name}' is not defined") from None


class Evaluator:
    """Expressions of one expansion: ``evaluate`` is xacro's ``safe_eval``,
    ``substitution`` its ``$(eval ...)``."""

    def __init__(self, xacro, callables: Callables, budget: Budget):
        self.xacro, self.callables, self.budget = xacro, callables, budget
        self.steps = 0
        self.weights: dict[int, tuple[object, int]] = {}
        self.depth = 0
        self.weighed = 0  # the weight of the value evaluate returned last

    def evaluate(self, expression: object, symbols) -> object:
        """The value of ``expression`` with names from ``symbols`` (a xacro ``Table`` or
        any mapping); Python's own errors (NameError, ZeroDivisionError, ...) as eval
        raises them, Refused for what a model file may not do."""
        if not isinstance(expression, str):
            raise TypeError(f"an expression must be text, not {type(expression).__name__}")
        text = expression.strip()
        saved = self.steps
        self.depth += 1
        try:
            tree = parse_expression(text)
            self.steps = 0
            value = self._eval(tree.body, Scope(symbols))
            self.weighed = self._weight(value)
            return value
        except Refused as refused:
            if refused.expression is None:
                refused.expression = text
            raise
        except RecursionError:
            raise Refused("nests too deeply to evaluate", text) from None
        finally:
            self.steps = saved
            self.depth -= 1
            if not self.depth:
                self.weights.clear()

    def substitution(self, text: str, names) -> str:
        """``$(eval text)``: as xacro's, with ``names`` (its argument mapping with the
        substitution functions) and no double underscore anywhere."""
        if "__" in text:
            raise Refused("uses a double underscore, which $(eval ...) may not use", text)
        return str(self.evaluate(text, names))

    # -- nodes ---------------------------------------------------------------------------

    def _eval(self, node: ast.AST, scope: Scope) -> object:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Refused(f"takes more than {MAX_STEPS} steps to evaluate")
        self.budget.check_time()
        handler = getattr(self, "_" + type(node).__name__, None)
        if handler is None:
            what = SYNTAX.get(type(node).__name__, f"Python syntax ({type(node).__name__})")
            raise Refused(f"uses {what}, which model files may not use")
        return handler(node, scope)

    def _Constant(self, node: ast.Constant, scope: Scope) -> object:
        if not isinstance(node.value, CONSTANTS):
            raise Refused(f"uses a constant of type {type(node.value).__name__}, which model "
                          "files may not use")
        return node.value

    def _Name(self, node: ast.Name, scope: Scope) -> object:
        if node.id.startswith("__"):
            raise Refused(f"uses the name '{node.id}', which model files may not use")
        return scope[node.id]

    def _Attribute(self, node: ast.Attribute, scope: Scope) -> object:
        return self._attribute(self._eval(node.value, scope), node.attr)

    def _attribute(self, receiver: object, name: str) -> object:
        """``receiver.name``: a namespace's symbol, a YAML dict's key, an allowed method."""
        if name.startswith("_"):
            raise Refused(f"uses attribute '{name}', which model files may not use")
        xacro = self.xacro
        if isinstance(receiver, xacro.NameSpace):
            try:
                return xacro.Table.__getitem__(receiver, name)
            except KeyError:
                raise NameError(f"name '{name}' is not defined") from None
        if isinstance(receiver, xacro.YamlDictWrapper) and name not in DICT_METHODS:
            if hasattr(dict, name):
                raise Refused(f"uses attribute '{name}' of a dict, which model files may "
                              "not use")
            return xacro.YamlDictWrapper.__getattr__(receiver, name)
        method = method_of(receiver, name)
        if method is None:
            raise Refused(f"uses attribute '{name}' of {_kind(receiver)}, which model files "
                          "may not use")
        return method

    def _Subscript(self, node: ast.Subscript, scope: Scope) -> object:
        receiver = self._eval(node.value, scope)
        if not isinstance(receiver, SUBSCRIPTABLE):
            raise Refused(f"subscripts {_kind(receiver)}, which model files may not do")
        return receiver[self._eval(node.slice, scope)]

    def _Slice(self, node: ast.Slice, scope: Scope) -> slice:
        return slice(*(None if part is None else self._eval(part, scope)
                       for part in (node.lower, node.upper, node.step)))

    def _BinOp(self, node: ast.BinOp, scope: Scope) -> object:
        left, right = self._eval(node.left, scope), self._eval(node.right, scope)
        return self._weigh(binary(type(node.op).__name__, left, right))

    def _UnaryOp(self, node: ast.UnaryOp, scope: Scope) -> object:
        return UNARY[type(node.op).__name__](self._eval(node.operand, scope))

    def _BoolOp(self, node: ast.BoolOp, scope: Scope) -> object:
        value = None
        for operand in node.values:
            value = self._eval(operand, scope)
            if bool(value) == isinstance(node.op, ast.Or):
                return value
        return value

    def _Compare(self, node: ast.Compare, scope: Scope) -> bool:
        left = self._eval(node.left, scope)
        for op, operand in zip(node.ops, node.comparators):
            right = self._eval(operand, scope)
            if not COMPARE[type(op).__name__](left, right):
                return False
            left = right
        return True

    def _IfExp(self, node: ast.IfExp, scope: Scope) -> object:
        chosen = node.body if self._eval(node.test, scope) else node.orelse
        return self._eval(chosen, scope)

    def _Call(self, node: ast.Call, scope: Scope) -> object:
        if isinstance(node.func, ast.Attribute):
            function = self._attribute(self._eval(node.func.value, scope), node.func.attr)
        else:
            function = self._eval(node.func, scope)
        args = self._elements(node.args, scope)
        kwargs = {}
        for keyword in node.keywords:
            value = self._eval(keyword.value, scope)
            if keyword.arg is not None:
                kwargs[keyword.arg] = value
            elif isinstance(value, dict) and all(isinstance(k, str) for k in value):
                kwargs.update(value)
            else:
                raise TypeError("argument after ** must be a mapping with text keys")
        name = ast.unparse(node.func)
        return self._weigh(self.callables.call(function, args, kwargs, name[:100]))

    def _elements(self, nodes: list, scope: Scope) -> list:
        """The values of a display's or a call's elements, ``*iterable`` spread out."""
        values = []
        for element in nodes:
            if isinstance(element, ast.Starred):
                values.extend(self._iterable(self._eval(element.value, scope)))
            else:
                values.append(self._eval(element, scope))
            sized(values, len(values))
        return values

    def _List(self, node: ast.List, scope: Scope) -> list:
        return self._weigh(self._elements(node.elts, scope))

    def _Tuple(self, node: ast.Tuple, scope: Scope) -> tuple:
        return self._weigh(tuple(self._elements(node.elts, scope)))

    def _Set(self, node: ast.Set, scope: Scope) -> set:
        return self._weigh(set(self._elements(node.elts, scope)))

    def _Dict(self, node: ast.Dict, scope: Scope) -> dict:
        result = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                result.update(self._eval(value, scope))
            else:
                result[self._eval(key, scope)] = self._eval(value, scope)
            sized(result, len(result))
        return self._weigh(result)

    # -- comprehensions ------------------------------------------------------------------

    def _ListComp(self, node: ast.ListComp, scope: Scope) -> list:
        found = []
        self._generate(node.generators, scope, lambda inner: found.append(
            self._eval(node.elt, inner)))
        return self._weigh(found)

    _GeneratorExp = _ListComp  # evaluated at once, as a list

    def _SetComp(self, node: ast.SetComp, scope: Scope) -> set:
        return self._weigh(set(self._ListComp(node, scope)))

    def _DictComp(self, node: ast.DictComp, scope: Scope) -> dict:
        found = {}

        def add(inner):
            found[self._eval(node.key, inner)] = self._eval(node.value, inner)
            sized(found, len(found))
        self._generate(node.generators, scope, add)
        return self._weigh(found)

    def _generate(self, generators: list, scope: Scope, emit, count: list | None = None) -> None:
        """``emit(scope)`` for each binding of the comprehension's ``for`` clauses whose
        ``if`` clauses hold; at most :data:`.xacro_limits.MAX_ITEMS` bindings."""
        count = [0] if count is None else count
        first, rest = generators[0], generators[1:]
        if first.is_async:
            raise Refused("uses async, which model files may not use")
        for item in self._iterable(self._eval(first.iter, scope)):
            names: dict = {}
            _bind(first.target, item, names)
            inner = scope.inner(names)
            if all(self._eval(test, inner) for test in first.ifs):
                if rest:
                    self._generate(rest, inner, emit, count)
                else:
                    count[0] += 1
                    sized(None, count[0])
                    emit(inner)

    def _iterable(self, value: object) -> object:
        if not isinstance(value, ITERABLES):
            raise Refused(f"iterates over {_kind(value)}, which model files may not do")
        return value

    # -- bounds --------------------------------------------------------------------------

    def _weigh(self, value: object) -> object:
        """``value`` once its weight (:func:`.xacro_limits.weight`, with containers met
        before remembered) is within :data:`MAX_CHARS`."""
        self._weight(value)
        return value

    def _weight(self, value: object) -> int:
        if isinstance(value, str):
            return len(value) + 2
        if isinstance(value, int):
            return 1 + value.bit_length() // 3
        if not isinstance(value, CONTAINERS):
            return 24
        cached = self.weights.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1]
        total = 2
        if isinstance(value, dict):
            parts = [*dict.keys(value), *dict.values(value)]
        else:  # a YAML list's own items, not wrapped anew at each look
            parts = list.__iter__(value) if isinstance(value, list) else value
        for part in parts:
            total += 2 + self._weight(part)
            if total > MAX_CHARS:
                raise Refused(f"makes a value of more than {MAX_CHARS} characters as text")
        if total >= CACHED:
            self.weights[id(value)] = (value, total)
        return total


def _bind(target: ast.AST, value: object, names: dict) -> None:
    """A comprehension's ``for`` target bound to ``value`` in ``names``."""
    if isinstance(target, ast.Name):
        if target.id.startswith("__"):
            raise Refused(f"uses the name '{target.id}', which model files may not use")
        names[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        values = list(value) if isinstance(value, (list, tuple, str)) else None
        if values is None or len(values) != len(target.elts):
            raise ValueError(f"cannot unpack {_kind(value)} into {len(target.elts)} names")
        for part, item in zip(target.elts, values):
            _bind(part, item, names)
    else:
        raise Refused("binds a comprehension variable other than to names, which model "
                      "files may not do")


def _kind(value: object) -> str:
    """``a list``, ``an int``: the type of ``value`` for a message."""
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def parse_expression(text: str) -> ast.Expression:
    """The syntax tree of ``text`` (SyntaxError as Python's compiler raises it), once its
    length and its identifiers are known to be fine."""
    if len(text) > MAX_EXPRESSION:
        raise Refused(f"is {len(text)} characters long (more than {MAX_EXPRESSION})")
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        tokens = []  # the parser says what is wrong
    for token in tokens:
        if token.type in (tokenize.NAME, tokenize.ERRORTOKEN, tokenize.OP) and (
                not token.string.isascii()
                or unicodedata.normalize("NFKC", token.string) != token.string):
            raise Refused(f"uses the identifier {shown(token.string)}, which is not plain ASCII "
                          "(model files may not use look-alike names)")
    return ast.parse(text, "<expression>", "eval")


class EvalNames:
    """The names of ``$(eval ...)``, as xacro's: its functions first (``arg``,
    ``dirname``, ``env``, ``optenv``, ``find``, ``true``, ``false``, the math module, and
    here the builtins of :data:`.xacro_calls.BUILTINS`), then the xacro arguments, each
    converted as xacro converts them (``convert(text, "auto")``: a number, a boolean or
    the text)."""

    def __init__(self, functions: dict, arguments: dict, convert):
        self.names = {name: value for name, value in vars(math).items()
                      if not name.startswith("_")}
        self.names.update({name: getattr(builtins, name) for name in BUILTINS})
        self.names.update(true=True, false=False, **functions)
        self.arguments, self.convert = arguments, convert

    def __getitem__(self, name: str) -> object:
        if name in self.names:
            return self.names[name]
        return self.convert(self.arguments[name], "auto")
