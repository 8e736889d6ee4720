"""The journal forms of the value types records carry, where a form is not simply the
dataclass's fields (see :mod:`sweeper.store._schema`).

Each :class:`Codec` checks a JSON value (``problem``: why it is not one, naming the
field), builds the typed value from a checked one (``load``) and writes it back
(``dump``), so that a record read and written again is the line it was.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from sweeper.core import DTYPES, Config, Problem, Shape
from sweeper.measure import Note, Stats, StopReason, TrialFlag
from sweeper.store._schema import register_codecs, show, values_problem


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



@dataclass(frozen=True)
class Codec:
    """How one value type is checked in, read from and written to a journal line."""

    problem: Callable[[Any, str], str | None]
    load: Callable[[Any], Any]
    dump: Callable[[Any], Any]


#: Statistics as a trial has always kept them: every field a number; a field a journal
#: written by hand leaves out reads as NaN (0 for counts), and one kept as NaN is not known
#: either; readers that need the median or a bound say so in their record's invariants.
STATS_FIELDS = {f.name: f for f in dataclasses.fields(Stats)}
#: What is known of statistics must agree with itself: the times (and the spread) are
#: finite and not negative, the counts and the relative spreads not negative, and the
#: median lies within its interval, which lies within the samples' range.  Reports draw
#: ``median - ci_lo`` as an error bar: that must not be negative.
STATS_TIMES = ("mean", "median", "min", "max", "p95", "p99", "q1", "q3", "ci_lo", "ci_hi",
               "std")
STATS_ORDER = ("min", "ci_lo", "median", "ci_hi", "max")


def _stats_problem(value: Any, key: str) -> str | None:
    if not isinstance(value, dict):
        return f"{key} is {show(value)}, not an object of statistics"
    problem = values_problem(value, {name: float for name in STATS_FIELDS}) or \
        _stats_disagree(value)
    return None if problem is None else f"{key}: {problem}"


def _stats_disagree(value: dict[str, Any]) -> str | None:
    """How statistics whose fields are numbers contradict :data:`STATS_ORDER` and their
    ranges, or ``None``; fields left out or NaN are not known, and agree."""
    known = {k: v for k, v in value.items() if k in STATS_FIELDS and not math.isnan(v)}
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


def _stats_load(value: dict[str, Any]) -> Stats:
    missing = {name: 0 if f.type in ("int", int) else math.nan
               for name, f in STATS_FIELDS.items() if name not in value}
    return Stats(**{**missing, **{k: v for k, v in value.items() if k in STATS_FIELDS}})


#: A resolved config as trial records keep it: flat, its problem's dtype, footprint and
#: dimensions beside the launch values, ``num_warps`` written out (``block`` / 32); no
#: ``dims`` for a problem without dimensions (:mod:`sweeper.store._upgrade` gives them).
PROBLEM_TYPES: dict[str, Any] = {"dtype": str, "footprint": int, "cache": str,
                                 "dims": dict[str, int]}
CONFIG_TYPES: dict[str, Any] = {"grid": int, "block": int, "num_warps": int,
                                "meta": dict[str, int], **PROBLEM_TYPES}
OPTIONAL = ("dims",)


def _config_problem(value: Any, key: str) -> str | None:
    if not isinstance(value, dict):
        return f"{key} is {show(value)}, not an object"
    missing = [k for k in CONFIG_TYPES if k not in OPTIONAL and k not in value]
    if missing:
        return f"{key} has no {', '.join(missing)}"
    problem = values_problem(value, CONFIG_TYPES)
    if problem is None and value["dtype"] not in DTYPES:
        problem = f"dtype {show(value['dtype'])} is not one of {', '.join(DTYPES)}"
    if problem is None and value["num_warps"] != value["block"] // 32:
        problem = (f"num_warps {value['num_warps']} is not block / 32 "
                   f"({value['block']} threads)")
    return None if problem is None else f"{key}: {problem}"


def _config_load(value: dict[str, Any]) -> Config:
    key = _problem_key_load(value)
    return Config(problem=key.problem, grid=value["grid"], block=value["block"],
                  meta=dict(value["meta"]), cache=key.cache)


def _config_dump(config: Config) -> dict[str, Any]:
    return {"grid": config.grid, "block": config.block, "num_warps": config.num_warps,
            "meta": dict(config.meta), **_problem_key_dump(ProblemKey.of(config))}


def note_codec(cls: type[Note[Any]]) -> Codec:
    """A flag or a stop reason: ``{"kind": ..., "text": ...}``."""

    def problem(value: Any, key: str) -> str | None:
        if not isinstance(value, dict) or "kind" not in value or "text" not in value:
            return f"{key} is {show(value)}, not an object with a kind and a text"
        found = values_problem(value, {"kind": cls.KINDS, "text": str})
        return None if found is None else f"{key}: {found}"

    return Codec(problem, lambda value: cls(cls.KINDS(value["kind"]), value["text"]),
                 lambda note: {"kind": note.kind.value, "text": note.text})


def _problem_key_problem(value: Any, key: str) -> str | None:
    if not isinstance(value, dict):
        return f"{key} is {show(value)}, not an object"
    problem = values_problem(value, PROBLEM_TYPES)
    missing = [k for k in PROBLEM_TYPES if k not in OPTIONAL and k not in value]
    if problem is None and missing:
        problem = f"no {', '.join(missing)}"
    return None if problem is None else f"{key}: {problem}"


def _problem_key_load(value: dict[str, Any]) -> ProblemKey:
    return ProblemKey(value["dtype"], value["footprint"], value["cache"],
                      tuple(value.get("dims", {}).items()))


def _problem_key_dump(key: ProblemKey) -> dict[str, Any]:
    out: dict[str, Any] = {"dtype": key.dtype, "footprint": key.footprint, "cache": key.cache}
    if key.dims:
        out["dims"] = dict(key.dims)
    return out


#: A problem as finals keep it: ``{"dtype", "footprint", "cache", "dims"}``, no ``dims``
#: for a problem without dimensions.
PROBLEM_CODEC = Codec(_problem_key_problem, _problem_key_load, _problem_key_dump)

CODECS: dict[type, Codec] = {
    Stats: Codec(_stats_problem, _stats_load, Stats.to_dict),
    Config: Codec(_config_problem, _config_load, _config_dump),
    TrialFlag: note_codec(TrialFlag),
    StopReason: note_codec(StopReason),
    ProblemKey: PROBLEM_CODEC,
}
register_codecs(CODECS)
