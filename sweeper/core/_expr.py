"""A small, safe expression language for space files.

Values and constraints may be written as expressions over other parameters and
device facts (``2*sms``, ``cdiv(n, BLOCK)``, ``BLOCK >= block``).  The text is
parsed with :mod:`ast` and only a white-listed set of nodes is accepted; the tree
is then walked by :func:`evaluate`.  Nothing is ever handed to ``eval``.

Sizes with binary units may appear inside an expression (``footprint <= 64MiB``).

An expression comes from outside, so :func:`parse` bounds what it may cost and
checks what it may mean before anything is evaluated: ASCII only (Python would read
full-width digits and letters), at most :data:`MAX_TEXT` characters nested at most
:data:`MAX_DEPTH` deep, literals of at most :data:`MAX_DIGITS` digits, each function
with its number of arguments, and types: a value must give a number, a constraint a
truth value.  :func:`evaluate` turns every arithmetic failure (division by zero,
``isqrt`` of a negative, a result beyond ``2**62``) into an :class:`ExpressionError`,
so a config that meets one is ruled out with the reason, and no number too large for
int64 or JSON ever reaches a record.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, cast

from sweeper.errors import ExpressionError
from sweeper.escape import cut

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_SIZE_IN_EXPR = re.compile(r"(?<![\w.])(\d+)\s*(KiB|MiB|GiB|TiB)\b", re.ASCII)
MAX_TEXT = 1000
MAX_DEPTH = 50
MAX_DIGITS = 18
#: Values an expression may give: within +-2**62, so any sum of two still fits in int64.
LIMIT = 1 << 62

Kind = Literal["number", "truth"]


def cdiv(a: int, b: int) -> int:
    """Ceiling division, as in ``triton.cdiv``."""
    return -(-a // b)


def _isqrt(a: int) -> int:
    if a < 0:
        raise ArithmeticError(f"isqrt of a negative number ({a})")
    return math.isqrt(a)


#: The functions an expression may call, each with the arguments it takes: (function,
#: least, most); ``None``: no most.
FUNCTIONS: Mapping[str, tuple[Callable[..., int], int, int | None]] = {
    "cdiv": (cdiv, 2, 2), "min": (min, 2, None), "max": (max, 2, None), "isqrt": (_isqrt, 1, 1)}

_BINOPS: Mapping[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_COMPARES: Mapping[type, Callable[[int, int], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
#: The operators an expression may not use, as written (for refusals).
_SYMBOLS = {ast.Div: "/", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|",
            ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
ALLOWED = ("integers, sizes (64MiB), names, + - * // %, cdiv(a, b) min(a, b, ...) "
           "max(a, b, ...) isqrt(a), comparisons, and/or/not")


@dataclass(frozen=True)
class Expr:
    """A parsed expression: its source text, tree, the names it reads and what it gives."""

    text: str
    tree: ast.Expression
    names: frozenset[str]
    kind: Kind = "number"

    def __str__(self) -> str:
        return self.text

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its compiled closures (:attr:`run`), which a worker process
        compiles again when first used."""
        return {k: v for k, v in self.__dict__.items() if k != "run"}

    @cached_property
    def run(self) -> Callable[[Mapping[str, int]], int | bool]:
        """The tree as nested closures: a space's expressions are evaluated once per config,
        up to a million times, and this is several times faster than walking the tree."""
        return _compile(self.tree.body)


def quoted(text: str) -> str:
    """``repr(text)`` cut to a readable length: an error stays one short line."""
    return repr(cut(text, 60))


def parse(text: str, kind: Kind = "number") -> Expr:
    """Parse ``text``, which must give ``kind`` (a number, or a truth value for a
    constraint), or raise :class:`ExpressionError` naming what is not allowed."""
    if len(text) > MAX_TEXT:
        raise ExpressionError(f"expression {quoted(text)} is {len(text)} characters long; "
                              f"at most {MAX_TEXT}")
    odd = next((c for c in text if not c.isascii() or not (c.isprintable() or c in " \t")),
               None)
    if odd is not None:
        raise ExpressionError(f"character {odd!r} (U+{ord(odd):04X}) is not allowed in "
                              f"{quoted(text)}; expressions are ASCII letters, digits and "
                              "operators")
    source = _SIZE_IN_EXPR.sub(lambda m: _size(m, text), text)
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as err:
        raise ExpressionError(f"cannot parse expression {quoted(text)}: {err.msg}; it is not an "
                              f"expression, which may use {ALLOWED}") from None
    except (ValueError, RecursionError, MemoryError):
        raise ExpressionError(f"cannot parse expression {quoted(text)}: too complex") from None
    _check_depth(tree, text)
    names: set[str] = set()
    callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if id(node) not in callees:
            _check_node(node, text, names)
    given = _kind(tree.body, text)
    if given != kind:
        if kind == "number":
            raise ExpressionError(f"{quoted(text)} is a comparison (true or false), not a "
                                  "number; a value must give a number (comparisons belong in "
                                  "constraints)")
        raise ExpressionError(f"{quoted(text)} gives a number, not true or false; a constraint "
                              f"must be a comparison (e.g. {quoted(text + ' != 0')})")
    return Expr(text=text, tree=tree, names=frozenset(names), kind=kind)


def _size(match: re.Match[str], text: str) -> str:
    digits, unit = match.groups()
    if len(digits) > MAX_DIGITS or int(digits) * UNITS[unit] >= 10 ** MAX_DIGITS:
        raise ExpressionError(f"size {match.group()!r} in {quoted(text)} is too large; at most "
                              f"{MAX_DIGITS} digits of bytes")
    return str(int(digits) * UNITS[unit])


def _check_depth(tree: ast.Expression, text: str) -> None:
    """Refuse calls and operators nested more than :data:`MAX_DEPTH` within one another,
    without recursing into the tree.  A level is what the text writes: a call, an operator
    (``a + b + c`` is two, one inside the other), a comparison, or any other construct
    (refused later by name, after this has bounded the tree); the nodes ``ast`` adds
    around them (an operator's symbol, a name's context) and names and numbers, a called
    function's name among them, are not levels."""
    stack: list[tuple[ast.AST, int]] = [(tree.body, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.expr) and not isinstance(node, (ast.Name, ast.Constant)):
            depth += 1
            if depth > MAX_DEPTH:
                raise ExpressionError(f"expression {quoted(text)} nests more than {MAX_DEPTH} "
                                      "levels deep; allowed: calls and operators nested at "
                                      f"most {MAX_DEPTH} deep (a + b + c is 2); split it")
        stack.extend((child, depth) for child in ast.iter_child_nodes(node))


def _check_node(node: ast.AST, text: str, names: set[str]) -> None:
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            called = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise ExpressionError(
                f"function {quoted(called)} is not allowed in {quoted(text)}; allowed: "
                f"{', '.join(FUNCTIONS)}")
        if node.keywords:
            raise ExpressionError(f"keyword arguments are not allowed in {quoted(text)}")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ExpressionError(f"* arguments are not allowed in {quoted(text)}")
        _, least, most = FUNCTIONS[node.func.id]
        if not least <= len(node.args) <= (most or len(node.args)):
            takes = f"{least}" if least == most else f"{least} or more"
            raise ExpressionError(f"{node.func.id}() takes {takes} argument"
                                  f"{'' if takes == '1' else 's'}, got {len(node.args)} in "
                                  f"{quoted(text)}")
        return
    if isinstance(node, ast.Name):
        names.add(node.id)
        return
    if isinstance(node, ast.Constant):
        if type(node.value) is not int:
            raise ExpressionError(
                f"constant {repr(node.value)[:40]} is not allowed in {quoted(text)}; only "
                "integers are")
        if node.value >= 10 ** MAX_DIGITS:
            raise ExpressionError(f"the number {str(node.value)[:30]}... in {quoted(text)} is too "
                                  f"large; numbers have at most {MAX_DIGITS} digits")
        return
    if isinstance(node, ast.BinOp) and type(node.op) not in _BINOPS:
        symbol = _SYMBOLS.get(type(node.op), type(node.op).__name__)
        hint = " (// divides integers)" if isinstance(node.op, ast.Div) else ""
        raise ExpressionError(
            f"operator {quoted(symbol)} is not allowed in {quoted(text)}{hint}; allowed: "
            f"{ALLOWED}")
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Load,
               ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or, *_BINOPS, *_COMPARES)
    if not isinstance(node, allowed):
        raise ExpressionError(
            f"{type(node).__name__.lower()} is not allowed in {quoted(text)}; allowed: "
            f"{ALLOWED}")


def _kind(node: ast.AST, text: str) -> Kind:
    """What ``node`` gives; arithmetic and comparisons take numbers, and/or/not truths."""
    if isinstance(node, (ast.Compare, ast.BoolOp)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        operands = [node.left, *node.comparators] if isinstance(node, ast.Compare) else (
            node.values if isinstance(node, ast.BoolOp) else [node.operand])
        want: Kind = "number" if isinstance(node, ast.Compare) else "truth"
        given: Kind = "truth"
    else:
        operands = [node.left, node.right] if isinstance(node, ast.BinOp) else (
            [node.operand] if isinstance(node, ast.UnaryOp) else (
                node.args if isinstance(node, ast.Call) else []))
        want = given = "number"
    for operand in operands:
        if _kind(operand, text) != want:
            what, needed = ("a comparison (true or false)", "a number") if want == "number" \
                else ("a number", "true or false")
            raise ExpressionError(f"{quoted(ast.unparse(operand))} in {quoted(text)} is {what}, "
                                  f"where {needed} is needed")
    return given


def evaluate(expr: Expr, env: Mapping[str, int]) -> int | bool:
    """Evaluate ``expr`` with the names in ``env``; errors say which name or value failed."""
    if not expr.names <= env.keys():
        missing = sorted(expr.names - env.keys())
        raise ExpressionError(
            f"unknown name {missing[0]!r} in {quoted(expr.text)}; known: "
            f"{', '.join(sorted(env))}")
    try:
        result = expr.run(env)
    except ZeroDivisionError:
        raise ExpressionError(f"division by zero in {quoted(expr.text)}"
                              f"{_with(expr, env)}") from None
    except ArithmeticError as err:
        raise ExpressionError(f"{err} in {quoted(expr.text)}{_with(expr, env)}") from None
    if type(result) is int and not -LIMIT <= result <= LIMIT:
        raise ExpressionError(f"{quoted(expr.text)} gives a number beyond +-2**62 (values must "
                              f"fit in 62 bits){_with(expr, env)}")
    return result


def _with(expr: Expr, env: Mapping[str, int]) -> str:
    """`` with a=1, b=2``: the values of the names ``expr`` reads, or nothing when it reads
    none."""
    if not expr.names:
        return ""
    return " with " + ", ".join(f"{k}={env[k]}" for k in sorted(expr.names))


Run = Callable[[Mapping[str, int]], "int | bool"]


def _compile(node: ast.AST) -> Run:
    """``node`` as a closure over its children's; :func:`parse` checked every node."""
    if isinstance(node, ast.Constant):
        value = cast("int | bool", node.value)   # parse admits no other constant
        return lambda env: value
    if isinstance(node, ast.Name):
        return operator.itemgetter(node.id)
    if isinstance(node, ast.BinOp):
        op, left, right = _BINOPS[type(node.op)], _compile(node.left), _compile(node.right)
        return lambda env: op(left(env), right(env))
    if isinstance(node, ast.UnaryOp):
        operand = _compile(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda env: not operand(env)
        return (lambda env: -operand(env)) if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Compare):
        terms = [_compile(n) for n in (node.left, *node.comparators)]
        tests = [_COMPARES[type(op)] for op in node.ops]
        if len(tests) == 1:
            test, first, second = tests[0], terms[0], terms[1]
            return lambda env: test(first(env), second(env))
        return lambda env: _chain(tests, terms, env)
    if isinstance(node, ast.BoolOp):
        values = [_compile(v) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda env: all(v(env) for v in values)
        return lambda env: any(v(env) for v in values)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        function, args = FUNCTIONS[node.func.id][0], [_compile(a) for a in node.args]
        return lambda env: function(*[a(env) for a in args])
    raise AssertionError(f"unchecked node {ast.dump(node)}")  # parse() rejects these


def _chain(tests: list[Callable[[int, int], bool]], terms: list[Run],
           env: Mapping[str, int]) -> bool:
    """``a < b <= c``: each test in turn, each term evaluated once, stopping at a false one."""
    left = terms[0](env)
    for test, term in zip(tests, terms[1:], strict=True):
        right = term(env)
        if not test(left, right):
            return False
        left = right
    return True
