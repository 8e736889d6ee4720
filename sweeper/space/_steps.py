"""The steps of resolving a choice into a config (:meth:`Space.resolve`), each with what
it reads: the labels of which dimensions, which names.

``resolve`` runs them in order on one choice; the first that raises :class:`Invalid`
gives the reason.  Knowing what each step reads lets :class:`sweeper.space.Configs`
run each over only the labels it reads (a constraint ``BLOCK >= block`` over BLOCK's
and block's, not over every config of the space), so a space of 10⁶ configs is sorted
out in a fraction of a second where resolving each took minutes.
"""

from __future__ import annotations

from collections.abc import Mapping

from sweeper.errors import ExpressionError
from sweeper.space._expr import evaluate, quoted
from sweeper.space._model import Constraint, Invalid, Resolving, Space, Step, StepRun
from sweeper.space._problem import SizeError
from sweeper.space._units import DTYPES

#: What a launch may have: threads per program.
BLOCK_TEXT = "32, 64, 128, 256, 512, 1024"


def make_steps(space: Space, max_footprint: int | None) -> list[Step]:
    """The steps of ``space.resolve`` with problems capped at ``max_footprint``: the
    dtype's item size; each axis's value in dependency order, the problem once its size
    axes are known; each constraint; the grid and the block a launch can take."""
    dtype_dim = frozenset({space.dimension_of("dtype")})

    def itemsize(choice: Mapping[str, str], state: Resolving) -> None:
        state.env["itemsize"] = DTYPES[str(space.constant("dtype", choice))]

    out = [Step(dtype_dim, frozenset(), frozenset({"itemsize"}), itemsize)]
    sizes, given = space.sizes, set()
    for name in space.order:
        if name in ("dtype", "cache"):
            continue
        reads = frozenset().union(*(v.expr.names for v in space.axis(name).values
                                    if v.expr is not None))
        out.append(Step(frozenset({space.dimension_of(name)}), reads, frozenset({name}),
                        _value_step(space, name)))
        given.add(name)
        if name in sizes and given.issuperset(sizes):
            out.append(Step(dtype_dim, frozenset(sizes),
                            frozenset({"footprint", "n", *space.shape.names}),
                            _problem_step(space, max_footprint)))
    for c in space.constraints:
        out.append(Step(frozenset(), c.expr.names, frozenset(), _constraint_step(c)))
    out.append(Step(frozenset(), frozenset({"grid"}), frozenset(), _grid_step))
    out.append(Step(frozenset(), frozenset({"block"}), frozenset(), _block_step))
    return out


def _value_step(space: Space, name: str) -> StepRun:
    axis = space.axis(name)

    def value_of(choice: Mapping[str, str], state: Resolving) -> None:
        value = state.chosen[name] = axis.value(choice[name])
        if value.expr is not None:
            try:
                result = evaluate(value.expr, state.env)
            except ExpressionError as err:
                raise Invalid(f"{name}: {err}", value.origin) from None
        else:
            result = value.constant  # type: ignore[assignment]
        state.env[name] = int(result)
    return value_of


def _problem_step(space: Space, max_footprint: int | None) -> StepRun:
    by_footprint = "footprint" in space.sizes

    def problem_of(choice: Mapping[str, str], state: Resolving) -> None:
        dtype = str(space.constant("dtype", choice))
        try:
            problem = space.shape.problem(dtype, state.env, max_footprint,
                                          by_footprint=by_footprint)
        except SizeError as err:
            raise Invalid(str(err), state.chosen[err.axis].origin) from None
        state.problem = problem
        state.env.update(problem.dims)
        state.env.update(footprint=problem.footprint, n=problem.n)
    return problem_of


def _constraint_step(c: Constraint) -> StepRun:
    def holds(choice: Mapping[str, str], state: Resolving) -> None:
        env = state.env
        try:
            ok = evaluate(c.expr, env)
        except ExpressionError as err:
            raise Invalid(f"constraint {quoted(c.text)}: {err}", c.origin) from None
        if not ok:
            shown = ", ".join(f"{k}={env[k]}" for k in sorted(c.expr.names))
            if c.condition_of is not None:
                axis, when = c.condition_of
                raise Invalid(f"{axis} only varies when {when!r}; otherwise it stays at "
                              f"its first value ({shown})", c.origin)
            raise Invalid(f"constraint {quoted(c.text)} is false ({shown})", c.origin)
    return holds


def _grid_step(choice: Mapping[str, str], state: Resolving) -> None:
    grid = state.env["grid"]
    if grid < 1:
        raise Invalid(f"grid: {grid} programs; a launch needs at least 1",
                      state.chosen["grid"].origin)


def _block_step(choice: Mapping[str, str], state: Resolving) -> None:
    block = state.env["block"]
    if block < 32 or block > 1024 or block & (block - 1) or block % 32:
        raise Invalid(f"block: {block} threads; allowed: {BLOCK_TEXT}",
                      state.chosen["block"].origin)
