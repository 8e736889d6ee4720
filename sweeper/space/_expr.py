"""A small, safe expression language for space files.

Values and constraints may be written as expressions over other parameters and
device facts (``2*sms``, ``cdiv(n, BLOCK)``, ``BLOCK >= block``).  The text is
parsed with :mod:`ast` and only a white-listed set of nodes is accepted; the tree
is then walked by :func:`evaluate`.  Nothing is ever handed to ``eval``.

Sizes with binary units may appear inside an expression (``footprint <= 64MiB``).
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sweeper.errors import ExpressionError

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_SIZE_IN_EXPR = re.compile(r"(?<![\w.])(\d+)\s*(KiB|MiB|GiB|TiB)\b")


def cdiv(a: int, b: int) -> int:
    """Ceiling division, as in ``triton.cdiv``."""
    return -(-a // b)


FUNCTIONS: Mapping[str, Callable[..., int]] = {"cdiv": cdiv, "min": min, "max": max,
                                               "isqrt": math.isqrt}

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
ALLOWED = ("integers, sizes (64MiB), names, + - * // %, cdiv() min() max() isqrt(), comparisons, "
           "and/or/not")


@dataclass(frozen=True)
class Expr:
    """A parsed expression: its source text, tree and the names it reads."""

    text: str
    tree: ast.expression
    names: frozenset[str]

    def __str__(self) -> str:
        return self.text


def parse(text: str) -> Expr:
    """Parse ``text`` or raise :class:`ExpressionError` naming what is not allowed."""
    source = _SIZE_IN_EXPR.sub(lambda m: str(int(m.group(1)) * UNITS[m.group(2)]), text)
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as err:
        raise ExpressionError(f"cannot parse expression {text!r}: {err.msg}") from None
    names: set[str] = set()
    callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if id(node) not in callees:
            _check_node(node, text, names)
    return Expr(text=text, tree=tree, names=frozenset(names))


def _check_node(node: ast.AST, text: str, names: set[str]) -> None:
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            called = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise ExpressionError(
                f"function {called!r} is not allowed in {text!r}; allowed: {', '.join(FUNCTIONS)}")
        if node.keywords:
            raise ExpressionError(f"keyword arguments are not allowed in {text!r}")
        return
    if isinstance(node, ast.Name):
        names.add(node.id)
        return
    if isinstance(node, ast.Constant):
        if type(node.value) is not int:
            raise ExpressionError(
                f"constant {node.value!r} is not allowed in {text!r}; only integers are")
        return
    if isinstance(node, ast.BinOp) and type(node.op) not in _BINOPS:
        raise ExpressionError(
            f"operator {ast.unparse(node)!r} is not allowed in {text!r}; allowed: {ALLOWED}")
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Load,
               ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or, *_BINOPS, *_COMPARES)
    if not isinstance(node, allowed):
        raise ExpressionError(
            f"{type(node).__name__.lower()} is not allowed in {text!r}; allowed: {ALLOWED}")


def evaluate(expr: Expr, env: Mapping[str, int]) -> int | bool:
    """Evaluate ``expr`` with the names in ``env``; errors say which name or value failed."""
    missing = sorted(expr.names - env.keys())
    if missing:
        raise ExpressionError(
            f"unknown name {missing[0]!r} in {expr.text!r}; known: {', '.join(sorted(env))}")
    try:
        return _eval(expr.tree.body, env)
    except ZeroDivisionError:
        raise ExpressionError(f"division by zero in {expr.text!r} with {_show(expr, env)}") \
            from None


def _show(expr: Expr, env: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={env[k]}" for k in sorted(expr.names))


def _eval(node: ast.AST, env: Mapping[str, int]) -> int | bool:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, env)
        return not value if isinstance(node.op, ast.Not) else (-value if isinstance(
            node.op, ast.USub) else +value)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, env)
            if not _COMPARES[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        values = (_eval(v, env) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return FUNCTIONS[node.func.id](*(_eval(a, env) for a in node.args))
    raise AssertionError(f"unchecked node {ast.dump(node)}")  # parse() rejects these
