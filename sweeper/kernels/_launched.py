"""Which Triton kernels a short kernel's launch ran, on how many programs and with how many
warps: what its first launch of each config is checked against, so that a launch that
ignores the config's grid or block (a grid lambda of its own, ``num_warps`` left out) fails
its trial instead of measuring one launch under the names of many configs, whose winner
would then be exported with a grid or block it never ran on.  A launch through a
``@triton.heuristics`` or a ``@triton.autotune`` is checked as a plain one: each ends in
the jitted function's ``run``, which is where launches are recorded."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

#: Triton's own default ``num_warps``, which a launch that passes none runs with.
TRITON_NUM_WARPS = 4


@dataclass(frozen=True)
class Launched:
    """One ``fn[grid](...)``: the function's name, its programs in x (the grid's first
    extent: a launch may add y and z of its own, ``(config.grid, heads)``; ``None`` where a
    grid function could not be evaluated here), its ``num_warps`` (``None`` where none
    was given) and whether a ``@triton.autotune`` chose them (its ``run``: its own best
    config, not the one swept)."""

    name: str
    programs: int | None
    num_warps: int | None
    autotuned: bool = False


#: A Triton function's launch as its ``run`` takes it: ``run(fn, *args, grid=, warmup=,
#: **kwargs)``.
Run = Callable[..., Any]


@contextmanager
def runs_patched(wrappers: Mapping[type, Callable[[Run], Run]]) -> Iterator[None]:
    """Within it, each launch of a function of each class of ``wrappers`` goes through
    the ``run`` its wrapper makes of the launch as it was: the class's own ``run`` where it
    has one (``fn[grid](...)``, and a ``@triton.heuristics`` or ``@triton.autotune``
    around the function, all end there), else its own ``fn[grid]`` (an older
    interpreter's, which launches without ``run``).  Everything is put back after."""
    saved: list[tuple[type, str, Any]] = []
    for cls, wrap in wrappers.items():
        if "run" in cls.__dict__:
            saved.append((cls, "run", cls.__dict__["run"]))
            setattr(cls, "run", wrap(cls.__dict__["run"]))  # noqa: B010
            continue
        saved.append((cls, "__getitem__", cls.__dict__.get("__getitem__")))
        getitem = getattr(cls, "__getitem__")  # noqa: B009  any class's, typed or not
        setattr(cls, "__getitem__", _item_through(getitem, wrap))  # noqa: B010
    try:
        yield
    finally:
        for cls, name, original in reversed(saved):
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)


def _item_through(getitem: Callable[[Any, Any], Any], wrap: Callable[[Run], Run]
                  ) -> Callable[[Any, Any], Any]:
    """A ``__getitem__`` whose ``fn[grid](...)`` goes through the ``run`` ``wrap`` makes
    of ``getitem``'s launch (one compiling only launches nothing)."""
    def launched(fn: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        return None if warmup else getitem(fn, grid)(*args, **kwargs)

    run = wrap(launched)

    def item(fn: Any, grid: Any) -> Any:
        return lambda *args, **kwargs: run(fn, *args, grid=grid, warmup=False, **kwargs)
    return item


@contextmanager
def recording() -> Iterator[list[Launched]]:
    """Within it, every launch of a ``@triton.jit`` function (compiled or interpreted) is
    recorded, then made as ever (:func:`runs_patched`): ``fn[grid](...)`` and one through
    what wraps it, a ``@triton.heuristics`` (its values given) or a ``@triton.autotune``
    (the config it chose; the launches it benchmarks to choose are not recorded), each
    once.  Everything is put back after."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    seen: list[Launched] = []

    def recorded(original: Run) -> Run:
        def run(fn: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not warmup:
                seen.append(_launched(fn, grid, args, kwargs))
            return original(fn, *args, grid=grid, warmup=warmup, **kwargs)
        return run

    tuned_run = Autotuner.__dict__["run"]

    def tuned(tuner: Any, *args: Any, **kwargs: Any) -> Any:
        start = len(seen)
        try:
            return tuned_run(tuner, *args, **kwargs)
        finally:                # its last launch is the one it ran; those before, its bench
            if len(seen) > start:
                seen[start:] = [replace(seen[-1], autotuned=True)]

    with runs_patched({JITFunction: recorded, InterpretedFunction: recorded}):
        Autotuner.run = tuned
        try:
            yield seen
        finally:
            Autotuner.run = tuned_run


def _launched(fn: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Launched:
    """What one launch ran, its grid function evaluated on its arguments by name as
    Triton evaluates it."""
    name = getattr(fn, "__name__", None) or type(fn).__name__
    warps = kwargs.get("num_warps")
    try:
        if callable(grid):
            grid = grid({**dict(zip(getattr(fn, "arg_names", ()), args, strict=False)),
                         **kwargs})
        extents = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
        programs: int | None = int(extents[0])
    except Exception:  # noqa: BLE001  a grid function this cannot evaluate: nothing to compare
        programs = None
    return Launched(name, programs, warps if isinstance(warps, int) else None)


def mismatch(launched: list[Launched], grid: int, num_warps: int) -> str | None:
    """Why ``launched`` (a launch's Triton kernels) did not run the config of ``grid``
    programs and ``num_warps``: ``None`` where one of them ran on that grid and one with
    those warps (a second kernel, a split-K reduction, may run on a grid of its own), or
    where no Triton kernel ran (a CUDA C or torch launch).  A kernel a
    ``@triton.autotune`` launched ran the config it chose: the fix is its ``.fn``."""
    if not launched:
        return None
    tuned = next((k.name for k in launched if k.autotuned), None)
    instead = "" if tuned is None else (
        f"; {tuned} was launched through its @triton.autotune, which runs the config it "
        f"chose, not the swept one: launch {tuned}.fn (the function it wraps) and name "
        "the autotuner with autotuned= to sweep its configs")
    if not any(k.programs in (None, grid) for k in launched):
        ran = ", ".join(f"{k.name} on {k.programs}" for k in launched)
        return (f"ran {ran} programs, never on the config's grid of {grid}: pass "
                "(config.grid,) as the grid (fn[(config.grid,)](...)), or sweep the grid "
                "the launch computes as params.grid (an expression, e.g. "
                f"\"cdiv(n, BLOCK)\"){instead}")
    used = [TRITON_NUM_WARPS if k.num_warps is None else k.num_warps for k in launched]
    if num_warps not in used:
        given = launched[0].num_warps
        ran = f"num_warps={used[0]}" + (" (Triton's default: the launch gave none)"
                                         if given is None else "")
        return (f"ran {launched[0].name} with {ran}, not the config's block of "
                f"{32 * num_warps} threads (num_warps={num_warps}): pass "
                f"num_warps=config.num_warps{instead}")
    return None
