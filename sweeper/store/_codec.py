"""The journal forms of the value types records carry, where a form is not what msgspec
makes of the dataclass (see :mod:`sweeper.store._schema`): a flat config, statistics
whose fields may be left out, a problem's key as an object, and flags and stop reasons
that are objects with a kind and a text.

Each form is read by a function that checks the JSON value and builds the typed value
(raising :class:`~sweeper.store._schema.Invalid`), and a config and a problem's key are
written back by one more, so that a record read and written again is the line it was.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, make_dataclass
from typing import Any, NamedTuple

from sweeper.core import DTYPES, Config, Problem, Shape
from sweeper.measure import Note, Stats, StopReason, TrialFlag
from sweeper.store._schema import Invalid, decode, register_forms, show


class ProblemKey(NamedTuple):
    """What a config is measured on (dtype, footprint in bytes, cache mode, the kernel's
    dimensions): the key of every per-problem table, final and tuning entry, sorted in
    that order."""

    dtype: str
    footprint: int
    cache: str = "cold"
    dims: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, config: Config) -> ProblemKey:
        """The problem ``config`` is measured on."""
        p = config.problem
        return cls(p.dtype, p.footprint, config.cache, p.dims)

    @property
    def problem(self) -> Problem:
        """The problem without its cache mode."""
        return Problem(self.dtype, self.footprint, self.dims)

    def completed(self, shape: Shape) -> ProblemKey:
        """This key with the dimensions ``shape`` derives from the footprint where none
        were recorded (a journal older than dimensions); unchanged where that fails."""
        if self.dims or not self.dtype:
            return self
        try:
            return self._replace(dims=shape.from_size(self.dtype, self.footprint))
        except (ValueError, KeyError):
            return self


#: What is known of statistics must agree with itself: the times (and the spread) are
#: finite and not negative, the counts and the relative spreads not negative, and the
#: median lies within its interval, which lies within the samples' range.  Reports draw
#: ``median - ci_lo`` as an error bar: that must not be negative.
STATS_TIMES = ("mean", "median", "min", "max", "p95", "p99", "q1", "q3", "ci_lo", "ci_hi",
               "std")
STATS_ORDER = ("min", "ci_lo", "median", "ci_hi", "max")
#: Statistics as a trial has always kept them: every field a number (the counts too, as
#: their JSON gives them); a field a journal written by hand leaves out reads as NaN (0 for
#: counts), and one kept as NaN is not known either; readers that need the median or a
#: bound say so in their record's invariants.
_STATS = make_dataclass("Stats", [
    (f.name, int | float, field(default=0)) if f.type in ("int", int) else
    (f.name, float, field(default=math.nan)) for f in dataclasses.fields(Stats)])


def _stats_load(value: Any) -> Stats:
    if not isinstance(value, dict):
        raise Invalid(f" is {show(value)}, not an object of statistics")
    stats = Stats(**vars(decode(_STATS, value)))
    problem = _stats_disagree({k: v for k, v in value.items() if hasattr(stats, k)})
    if problem is not None:
        raise Invalid(problem)
    return stats


def _stats_disagree(value: dict[str, Any]) -> str | None:
    """How statistics (each a number, as written) contradict :data:`STATS_ORDER` and their
    ranges, or ``None``; fields left out or NaN are not known, and agree."""
    known = {k: v for k, v in value.items() if not math.isnan(v)}
    for name, v in known.items():
        if name in STATS_TIMES and not (math.isfinite(v) and v >= 0):
            return f"{name} {show(v)} is not a time (a finite number >= 0 ms)"
        if v < 0:
            return f"{name} {show(v)} is negative"
    order = [(name, known[name]) for name in STATS_ORDER if name in known]
    for (low, a), (high, b) in itertools.pairwise(order):
        if a > b:
            return (f"{low} {show(a)} is above {high} {show(b)}; statistics keep "
                    f"{' <= '.join(STATS_ORDER)}")
    return None


@dataclass
class _ProblemJson:
    """A problem as finals keep it: no ``dims`` for a problem without dimensions."""

    dtype: str
    footprint: int
    cache: str
    dims: dict[str, int] = field(default_factory=dict)


@dataclass
class _ConfigJson:
    """A resolved config as trial records keep it: flat, its problem's dtype, footprint
    and dimensions beside the launch values, ``num_warps`` written out (``block`` / 32);
    no ``dims`` for a problem without dimensions (:mod:`sweeper.store._upgrade` gives
    them), no ``grid_y`` or ``grid_z`` for a launch whose grid is 1 there (every launch
    before CUDA C's grids in y and z, and every Triton one)."""

    grid: int
    block: int
    num_warps: int
    meta: dict[str, int]
    dtype: str
    footprint: int
    cache: str
    dims: dict[str, int] = field(default_factory=dict)
    grid_y: int = 1
    grid_z: int = 1


#: The keys a config's JSON must hold.
_CONFIG_KEYS = tuple(f.name for f in dataclasses.fields(_ConfigJson)
                     if f.default is dataclasses.MISSING and
                     f.default_factory is dataclasses.MISSING)


def _config_load(value: Any) -> Config:
    if isinstance(value, dict):
        missing = [k for k in _CONFIG_KEYS if k not in value]
        if missing:
            raise Invalid(f" has no {', '.join(missing)}")
    form = decode(_ConfigJson, value)
    if form.dtype not in DTYPES:
        raise Invalid(f"dtype {show(form.dtype)} is not one of {', '.join(DTYPES)}")
    if form.num_warps != form.block // 32:
        raise Invalid(f"num_warps {form.num_warps} is not block / 32 ({form.block} threads)")
    low = next((k for k in ("grid_y", "grid_z") if getattr(form, k) < 1), None)
    if low is not None:
        raise Invalid(f"{low} {getattr(form, low)} is not a count of blocks (at least 1)")
    problem = Problem(form.dtype, form.footprint, tuple(form.dims.items()))
    return Config(problem=problem, grid=form.grid, block=form.block, meta=form.meta,
                  cache=form.cache, grid_y=form.grid_y, grid_z=form.grid_z)


def _config_dump(config: Config) -> dict[str, Any]:
    return {"grid": config.grid, **config.grid_extents, "block": config.block,
            "num_warps": config.num_warps, "meta": dict(config.meta),
            **_problem_key_dump(ProblemKey.of(config))}


def note_load(cls: type[Note[Any]]) -> Callable[[Any], Any]:
    """How a flag or a stop reason is read: ``{"kind": ..., "text": ...}``."""
    form = make_dataclass(cls.__name__, [("kind", cls.KINDS), ("text", str)])

    def load(value: Any) -> Any:
        if not isinstance(value, dict) or "kind" not in value or "text" not in value:
            raise Invalid(f" is {show(value)}, not an object with a kind and a text")
        note = decode(form, value)
        return cls(note.kind, note.text)

    return load


def _problem_key_load(value: Any) -> ProblemKey:
    form = decode(_ProblemJson, value)
    return ProblemKey(form.dtype, form.footprint, form.cache, tuple(form.dims.items()))


def _problem_key_dump(key: ProblemKey) -> dict[str, Any]:
    out: dict[str, Any] = {"dtype": key.dtype, "footprint": key.footprint, "cache": key.cache}
    if key.dims:
        out["dims"] = dict(key.dims)
    return out


register_forms({Stats: _stats_load, Config: _config_load, TrialFlag: note_load(TrialFlag),
                StopReason: note_load(StopReason), ProblemKey: _problem_key_load},
               {Config: _config_dump, ProblemKey: _problem_key_dump})
