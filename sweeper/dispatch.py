"""Dispatch by shape: which tuned configs a problem that was not tuned gets.

One implementation serves :func:`sweeper.tuned`, :func:`sweeper.tuned_kernel`, the module
``sweeper export --format triton`` writes (it carries this file's functions as source,
since it runs without sweeper) and ``benchmarks/dispatch_regret.py``.  Standard library
only, for that reason.

The rule, chosen on the recorded H200 tables (``benchmarks/dispatch_regret.py`` prints
every rule tried, per family):

- **pick**: the winner of the nearest tuned problem (least sum over dimensions of
  ``|log2(tuned / asked)|``; ties to the first listed).  Interpolating each config's time
  between neighbours, minimax regret and one config for all shapes were no better offline:
  a matmul's best tiles at an untuned size turn on wave quantization, which no neighbour's
  times predict.
- **candidates**: the union of the top :data:`TOP_K` configs of the *bracketing* tuned
  problems (per orthant around the asked shape, the nearest one: below and above in 1-D),
  the pick first, then by their slowdown interpolated in log(shape).  Measuring these at
  the first call of a new shape (``@triton.autotune(configs=mod.configs(M=..., ...))``)
  met the goal (geomean regret <= 2 %, worst <= 5 %) on every recorded family; a tuned
  problem gets its own top-k.  ``TOP_K`` = 8: 4 missed the worst-case goal on the bf16
  matmuls, 8 met it, and 8 configs with their slowdowns keep a tuning entry small.

A tuned problem is a mapping of dimension names to sizes (``{"footprint": bytes}`` for a
1-D kernel); its *top* is a list of ``(config id, slowdown)``, the problem's winner first,
then the fastest first, slowdown being the config's sweep median over the problem's
fastest (1.0 for that one; a winner the finals chose among configs tied within noise may
be a little above it: ``sweeper.export.problem_tops``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

#: Configs kept per tuned problem with their slowdowns (see the module's docstring).
TOP_K = 8


def log_distance(tuned: Mapping[str, int], asked: Mapping[str, int]) -> float:
    """Sum over ``asked``'s dimensions of ``|log2(tuned / asked)|``: 0 when equal."""
    return sum(abs(math.log2(tuned[d] / v)) for d, v in asked.items())


def nearest_index(problems: Sequence[Mapping[str, int]], asked: Mapping[str, int]) -> int:
    """The position of the problem nearest ``asked`` by :func:`log_distance` (the first
    of equals); ``problems`` must not be empty."""
    return min(range(len(problems)), key=lambda i: (log_distance(problems[i], asked), i))


def bracketing(problems: Sequence[Mapping[str, int]], asked: Mapping[str, int]
               ) -> list[tuple[int, float]]:
    """The tuned problems around ``asked`` and the weight of each (summing to 1): per
    orthant (the sign of ``log(tuned / asked)`` in each dimension), the nearest; an exact
    match alone.  Weights fall with log distance (inverse distance), so a shape half way
    in log space between two tuned ones weighs them equally."""
    exact = [i for i, p in enumerate(problems) if log_distance(p, asked) == 0]
    if exact:
        return [(exact[0], 1.0)]
    best: dict[tuple[bool, ...], int] = {}          # per orthant, its nearest: the first
    for i in sorted(range(len(problems)), key=lambda i: (log_distance(problems[i], asked), i)):
        best.setdefault(tuple(problems[i][d] >= v for d, v in asked.items()), i)
    inverse = {i: 1 / log_distance(problems[i], asked) for i in sorted(best.values())}
    total = sum(inverse.values())
    return [(i, w / total) for i, w in inverse.items()]


def candidates(problems: Sequence[Mapping[str, int]],
               tops: Sequence[Sequence[tuple[Hashable, float]]],
               asked: Mapping[str, int]) -> list[Hashable]:
    """The configs to measure for ``asked``: the nearest problem's winner first, then the
    rest of the bracketing problems' tops by interpolated slowdown (a config missing from
    a top counts as that top's last slowdown, its best possible)."""
    around = bracketing(problems, asked)
    rows = [(dict(tops[i]), w) for i, w in around if tops[i]]

    def predicted(config: Hashable) -> float:
        return sum(w * math.log(row.get(config, max(row.values()))) for row, w in rows)

    pool = {c for row, _ in rows for c in row}
    pick = tops[nearest_index(problems, asked)]
    first = [pick[0][0]] if pick else []
    return first + sorted((c for c in pool if c not in first),
                          key=lambda c: (predicted(c), str(c)))


__all__ = ["TOP_K", "bracketing", "candidates", "log_distance", "nearest_index"]
