"""The tensor operations one launch of a ``@triton.jit`` function runs on the Triton
interpreter, counted from its source (read with :mod:`ast`, never run): what
``sweeper plan`` prices a user kernel's interpreted launch by, as a built-in counts its
own (:meth:`~sweeper.kernels.Kernel.interpreted_ops`).

The interpreter runs each program of the grid in turn and each operation of its body as
Python calls over NumPy arrays, so a launch costs its programs' operations, whatever
they move.  A kernel that counts none is priced at one copy step (9 operations) a
program; ``examples/matmul.yaml``'s program runs 32 around its loop over K and 26 a step
of it (two tile loads with their addresses and masks, the ``tl.dot``).  On the 2-core
development machine under load (load average 8-12, three runs each, 2026-12-07) copy's
launches measured 4.7-5.3 times the model and that matmul's 20-24 times the one-step
model, so a machine's measured ratio priced them at a quarter of what they took;
counted, 6.0-7.5 times, 1.2-1.5 of copy's (the interpreter's BLAS on one thread too,
:func:`~sweeper.devices._interpret.one_thread`).

Counted as the built-ins count theirs (copy's step, 9: its loop's test, offsets, mask,
two addresses, load, store and the stride): each arithmetic operator, comparison,
subscript (``x[:, None]``) and call of the language or of a tensor's method is one; a
name, a constant or an attribute (``tl.float32``) none.  A ``for`` over ``range``,
``tl.range`` or ``tl.static_range`` runs its body (and a step) as many times as its
bounds say, evaluated over the config's meta-parameters and the problem's dimensions
where the function's arguments are named as they are (``range(0, K, BLOCK_K)``),
through the function's own names bound before the loop (``tiles = tl.cdiv(K,
BLOCK_K)``); a grid-stride loop (``range(pid * BLOCK, n, tl.num_programs(0) * BLOCK)``,
a persistent kernel's ``tl.range(tl.program_id(0), tiles, tl.num_programs(0))``) shares
its trips among the grid's programs, however many there are; an ``if`` whose test they
tell takes its branch, else the larger.  What cannot be told so (a ``while``, a bound
read from memory or from another axis's program id) counts its body once: the count is
then a floor, as the one-step default was.  A helper function the kernel calls is one
operation."""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sweeper.core import Config, Expr, cdiv, evaluate, parse
from sweeper.errors import SweeperError

#: The loops whose trips their bounds tell: ``range`` and Triton's own ranges.
RANGES = frozenset({"range", "static_range"})
#: Calls that are no operation of the interpreter's: Python's own on sizes and names.
NO_OPERATION = frozenset({"range", "len", "int", "float", "bool", "print", "constexpr",
                          "static_assert", "static_print", "isinstance"})
#: How deep the names a bound reads are followed into the names they were bound from.
MOST_SUBSTITUTIONS = 16
#: What a loop's bounds read for ``tl.program_id(0)`` and ``tl.num_programs(0)``, and for
#: the programs of the launch: names no argument of a function can have (its own are
#: substituted before them).
PROGRAM, PROGRAMS, GRID = "_program_id_", "_num_programs_", "_grid_"


@dataclass(frozen=True)
class Loop:
    """A loop of the body: its ``start``, ``stop`` and ``step`` over the function's
    arguments (``None``: its trips cannot be told), and what each trip runs (a ``for``'s
    step, a ``while``'s test included)."""

    bounds: tuple[Expr, Expr, Expr] | None
    body: Body

    def trips(self, env: Mapping[str, int]) -> float:
        """How many times it runs with the arguments ``env``, in a program of a launch
        of ``env[GRID]`` programs: a grid-stride loop's trips, which its programs share,
        on average (:meth:`strided`); once where that cannot be told (a bound naming what
        ``env`` does not hold, a step that is not positive)."""
        if self.bounds is None:
            return 1
        if any({PROGRAM, PROGRAMS} & e.names for e in self.bounds):
            return self.strided(env)
        try:
            start, stop, step = (int(evaluate(e, env)) for e in self.bounds)
        except SweeperError:
            return 1
        return max(0, cdiv(stop - start, step)) if step > 0 else 1

    def strided(self, env: Mapping[str, int]) -> float:
        """A grid-stride loop's trips per program: program ``p`` of ``G`` starts at
        ``first + p * each`` and steps ``G * each``, so the launch runs one trip for each
        of ``first, first + each, ...`` below the stop, whatever ``G`` is (programs past
        them run none): those trips over ``G``.  Once where the bounds take another form
        (a start that reads the program count, a step that is not it times the start's
        stride, a stop that reads either)."""
        assert self.bounds is not None
        start, stop, step = self.bounds
        if PROGRAMS in start.names or {PROGRAM, PROGRAMS} & stop.names or \
                PROGRAM in step.names:
            return 1
        try:
            first, second = (int(evaluate(start, {**env, PROGRAM: p})) for p in (0, 1))
            stride, twice = (int(evaluate(step, {**env, PROGRAMS: g})) for g in (1, 2))
            end = int(evaluate(stop, env))
        except SweeperError:
            return 1
        each = second - first
        if each <= 0 or (stride, twice) != (each, 2 * each):
            return 1
        return max(0, cdiv(end - first, each)) / max(1, env.get(GRID, 1))


@dataclass(frozen=True)
class Branch:
    """An ``if``: its test over the function's arguments (``None``: not told), and the
    bodies it chooses between."""

    test: Expr | None
    then: Body
    otherwise: Body

    def count(self, env: Mapping[str, int]) -> float:
        """The operations of the branch the test takes with the arguments ``env``; of
        the larger where it cannot be told."""
        if self.test is not None:
            try:
                return (self.then if evaluate(self.test, env) else self.otherwise).count(env)
            except SweeperError:
                pass
        return max(self.then.count(env), self.otherwise.count(env))


@dataclass(frozen=True)
class Body:
    """Statements in order: the operations they run each time (``ops``), and the loops
    and branches among them."""

    ops: int = 0
    loops: tuple[Loop, ...] = ()
    branches: tuple[Branch, ...] = ()

    def count(self, env: Mapping[str, int]) -> float:
        """The operations it runs with the arguments ``env``, each loop's as many times
        as it runs."""
        return self.ops + sum(loop.trips(env) * loop.body.count(env)
                              for loop in self.loops) + \
            sum(branch.count(env) for branch in self.branches)


@dataclass(frozen=True)
class FunctionOps:
    """A ``@triton.jit`` function's operations per program, and the arguments its
    loops' bounds read (the others are no dimension or meta-parameter of the config)."""

    name: str
    arguments: tuple[str, ...]
    body: Body
    where: str = ""

    def per_program(self, config: Config) -> float:
        """The operations one program of ``config``'s grid runs (on average, where a
        grid-stride loop shares its trips among them): its meta-parameters and its
        problem's dimensions (and ``n``) by the names of the function's arguments."""
        known = {**dict(config.problem.dims), "n": config.problem.n, **config.meta}
        return self.launched(known, config.grid)

    def launched(self, arguments: Mapping[str, int], grid: int) -> float:
        """The operations one program of a launch of ``grid`` programs runs, given
        ``arguments`` by name (those the function does not take are left out)."""
        env = {k: int(v) for k, v in arguments.items() if k in self.arguments}
        return self.body.count({**env, GRID: grid})


@dataclass(frozen=True)
class LaunchOps:
    """What one launch of a config runs: each program of its grid runs each function
    the launch launches (:class:`FunctionOps`); a classmethod of a kernel's stand-in, so
    ``plan`` reads it as it reads a built-in's declared count."""

    functions: tuple[FunctionOps, ...] = field(default_factory=tuple)

    def __call__(self, config: Config) -> int:
        return round(config.grid * sum(f.per_program(config) for f in self.functions))

    @property
    def named(self) -> str:
        """``matmul_kernel (matmul.py:13)``: the functions counted, as messages name them."""
        return ", ".join(f"{f.name} ({f.where})" if f.where else f.name
                         for f in self.functions)


def function_ops(node: ast.FunctionDef, where: str = "") -> FunctionOps:
    """The operations of ``node``, a ``@triton.jit`` function's definition."""
    args = node.args
    arguments = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
    return FunctionOps(node.name, arguments, _Counter(arguments).body(node.body), where)


class _Counter:
    """Counts a function's statements, keeping the names it binds (once, outside any
    loop or branch) for the bounds that read them."""

    def __init__(self, arguments: Sequence[str]) -> None:
        self.arguments = frozenset(arguments)
        self.bound: dict[str, ast.expr | None] = {}   # None: bound more than once

    def body(self, statements: Sequence[ast.stmt], *, top: bool = True) -> Body:
        ops, loops, branches = 0, [], []
        for stmt in statements:
            if isinstance(stmt, (ast.For, ast.AsyncFor)):    # a trip: its body and a step
                bounds = self.bounds(stmt.iter)
                self.unbind(stmt.target)
                inner = self.body(stmt.body + stmt.orelse, top=False)
                loops.append(Loop(bounds, Body(inner.ops + 1, inner.loops, inner.branches)))
            elif isinstance(stmt, ast.While):                 # a trip: its test and body
                inner = self.body(stmt.body, top=False)
                loops.append(Loop(None, Body(inner.ops + operations(stmt.test), inner.loops,
                                             inner.branches)))
            elif isinstance(stmt, ast.If):
                ops += operations(stmt.test)
                branches.append(Branch(self.expression(stmt.test),
                                       self.body(stmt.body, top=False),
                                       self.body(stmt.orelse, top=False)))
            elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)):
                inner = self.body([*stmt.body, *getattr(stmt, "finalbody", ())], top=top)
                ops, loops, branches = ops + inner.ops, [*loops, *inner.loops], \
                    [*branches, *inner.branches]
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            else:
                ops += operations(stmt)
                self.note(stmt, top)
        return Body(ops, tuple(loops), tuple(branches))

    def note(self, stmt: ast.stmt, top: bool) -> None:
        """Keep what ``stmt`` binds, where a bound may read it: a name bound once, at the
        function's top level (anywhere else, or again, it is not told)."""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            self.bound[name] = stmt.value if top and name not in self.bound else None
            return
        for target in getattr(stmt, "targets", [getattr(stmt, "target", None)]):
            if target is not None:
                self.unbind(target)

    def unbind(self, target: ast.expr) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self.bound[node.id] = None

    def bounds(self, iterated: ast.expr) -> tuple[Expr, Expr, Expr] | None:
        """A ``range``-like loop's start, stop and step as expressions over the
        function's arguments, and the program id and count of the grid's first axis
        (``PROGRAM``, ``PROGRAMS``: a grid-stride loop, :meth:`Loop.strided`); ``None``
        where it is none, or they cannot be told."""
        if not (isinstance(iterated, ast.Call) and last_name(iterated.func) in RANGES and
                1 <= len(iterated.args) <= 3):
            return None
        args: list[ast.expr] = list(iterated.args)
        start, stop, step = ([ast.Constant(0), args[0], ast.Constant(1)] if len(args) == 1
                             else [*args, ast.Constant(1)][:3])
        # tl.range's other keywords (num_stages=, loop_unroll_factor=) change no trip
        for keyword in iterated.keywords:
            if keyword.arg == "step" and len(args) < 3:
                step = keyword.value
        first, last, each = (self.expression(e, programs=True)
                             for e in (start, stop, step))
        if first is None or last is None or each is None:
            return None
        return first, last, each

    def expression(self, node: ast.expr, programs: bool = False) -> Expr | None:
        """``node`` as an expression over the function's arguments (``tl.cdiv`` as
        ``cdiv``, the names it binds as what they were bound to), and with ``programs``
        the grid's first axis's program id and count (``PROGRAM``, ``PROGRAMS``): a
        number, or where it is none a truth (an ``if``'s test); ``None`` where it is
        neither."""
        try:
            text = ast.unparse(self.substituted(node, MOST_SUBSTITUTIONS))
        except (_Untold, RecursionError, ValueError):
            return None
        for kind in ("number", "truth"):
            try:
                expr = parse(text, kind)
            except SweeperError:
                continue
            known = self.arguments | {PROGRAM, PROGRAMS} if programs else self.arguments
            return expr if expr.names <= known else None
        return None

    def substituted(self, node: ast.expr, depth: int) -> ast.expr:
        """A copy of ``node`` reading the function's arguments alone: each name it binds
        replaced by what it was bound to (at most ``depth`` deep), ``tl.cdiv`` by the
        expressions' ``cdiv``; :class:`_Untold` where a name is neither."""
        counter = self

        class Substitute(ast.NodeTransformer):
            def visit_Name(self, name: ast.Name) -> ast.AST:
                if name.id in counter.arguments:
                    return name
                bound = counter.bound.get(name.id)
                if bound is None or depth <= 0:
                    raise _Untold
                return counter.substituted(bound, depth - 1)

            def visit_Call(self, call: ast.Call) -> ast.AST:
                if last_name(call.func) == "cdiv":     # tl.cdiv, triton.cdiv: the module
                    call.func = ast.Name("cdiv", ast.Load())     # is no name to substitute
                    call.args = [self.visit(a) for a in call.args]
                    return call
                grid = {"program_id": PROGRAM, "num_programs": PROGRAMS}.get(
                    last_name(call.func) or "")
                if grid is not None and _first_axis(call):
                    return ast.Name(grid, ast.Load())
                self.generic_visit(call)
                return call

        substituted = Substitute().visit(copy.deepcopy(node))
        assert isinstance(substituted, ast.expr)
        return substituted


class _Untold(Exception):
    """A name a bound reads that is no argument, nor bound once before it."""


def operations(node: ast.AST) -> int:
    """The operations ``node`` (an expression, or a statement of no block) runs."""
    own = 0
    if isinstance(node, (ast.BinOp, ast.AugAssign, ast.Subscript)):
        own = 1
    elif isinstance(node, ast.UnaryOp):
        own = 0 if isinstance(node.operand, ast.Constant) else 1
    elif isinstance(node, ast.Compare):
        own = len(node.ops)
    elif isinstance(node, ast.BoolOp):
        own = len(node.values) - 1
    elif isinstance(node, ast.IfExp):
        return operations(node.test) + max(operations(node.body), operations(node.orelse))
    elif isinstance(node, ast.Call):
        own = 0 if last_name(node.func) in NO_OPERATION else 1
    # the callee (tl.load, acc.to), a name, a constant, an attribute add none of their own
    return own + sum(operations(child) for child in ast.iter_child_nodes(node))


def _first_axis(call: ast.Call) -> bool:
    """Whether ``call`` (``tl.program_id``, ``tl.num_programs``) asks of the grid's first
    axis, the one a config's ``grid`` sizes: ``(0)`` or ``(axis=0)``."""
    given = [*call.args, *(k.value for k in call.keywords if k.arg == "axis")]
    return len(given) == 1 and isinstance(given[0], ast.Constant) and given[0].value == 0


def last_name(node: ast.AST) -> str | None:
    """The name a name or attribute ends in: a call's callee (``tl.load`` -> ``load``), a
    declaration's type (``sweeper.kernels.Dim`` -> ``Dim``)."""
    return node.id if isinstance(node, ast.Name) else \
        node.attr if isinstance(node, ast.Attribute) else None


__all__ = ["Body", "Branch", "FunctionOps", "LaunchOps", "Loop", "function_ops", "last_name",
           "operations"]
