"""``sweeper plan``: the size of a space, what its constraints remove, and a time estimate.

Nothing is launched.  The estimate is a model with its assumptions printed next
to it: a compile per config, then (warmup + repeat + 2) launches of at least the
launch floor, each moving the kernel's bytes at an assumed bandwidth and doing its
FLOPs at an assumed peak per dtype; then each problem's finals
(:func:`sweeper.finals.finals_estimate_s`).  A study already run gives a better one:
its last run's seconds per trial (``sweeper plan`` prints both).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sweeper.devices import DeviceFacts, PlanCosts
from sweeper.finals import finals_estimate_s
from sweeper.space import Config, Invalid, MeasureSpec, Problem, Space
from sweeper.study import RuledOut, resolved


def _expected_samples(measure: MeasureSpec, launch_s: float) -> int:
    """Samples a trial will take: ``repeat`` when fixed; for adaptive rules, assume the
    minimum is enough unless ``min_time`` asks for more."""
    if measure.stop == "fixed":
        return measure.repeat
    by_time = int(measure.min_time_s / (launch_s * measure.batch)) + 1
    return min(max(measure.min_samples, by_time),
               int(measure.max_time_s / (launch_s * measure.batch)) + 1)


@dataclass
class Plan:
    """What ``sweeper plan`` reports: configs in the space, how many are valid, why the
    others were removed (reason -> count, and the reasons' examples in ``ruled_out``), how
    many trials the budget lets run and what they would cost, with the costs assumed."""

    size: int
    valid: int
    removed: Counter[str] = field(default_factory=Counter)     # reason -> count
    estimate_s: float = 0.0
    #: of ``estimate_s``, the finals of each problem (none where the run takes none)
    finals_s: float = 0.0
    assumptions: Mapping[str, float | bool] = field(default_factory=dict)
    trials: int = 0                                       # what the budget lets run
    ruled_out: RuledOut = field(default_factory=RuledOut)


def make_plan(space: Space, bytes_moved: Callable[[Problem], int], facts: DeviceFacts,
              costs: PlanCosts, measure: MeasureSpec, *,
              flops: Callable[[Problem], int] | None = None, finals: bool = False) -> Plan:
    """The plan, from one pass over the space that keeps no list of configs: memory stays
    flat however large the space (up to the parser's limit) is.  ``costs``: what the
    device declares a trial costs (a replay's: the GPU's its table was recorded on).
    ``bytes_moved`` and ``flops``: the kernel's, per problem (a built-in's from its
    declaration); ``finals``: whether the run takes each problem's finals."""
    ruled_out = RuledOut()
    valid = 0
    budget = space.budget.trials
    seconds = 0.0
    problems: dict[tuple[Problem, str], tuple[int, float]] = {}   # configs, fastest launch
    for _, outcome in resolved(space, facts.env(), facts.max_footprint):
        if isinstance(outcome, Invalid):
            ruled_out.add(outcome)
            continue
        valid += 1
        if budget is None or valid <= budget:
            launch = _launch_seconds(outcome, bytes_moved, flops, costs)
            seconds += _trial_seconds(outcome, launch, facts, costs, measure)
            key = (outcome.problem, outcome.cache)
            count, fastest = problems.get(key, (0, launch))
            problems[key] = (count + 1, min(fastest, launch))
    finals_s = sum(finals_estimate_s(count, 1e3 * launch, None)
                   for count, launch in problems.values()) if finals else 0.0
    seconds += finals_s
    if space.budget.time_s is not None:
        seconds = min(seconds, space.budget.time_s)
    return Plan(size=space.size, valid=valid, removed=ruled_out.by_reason(), estimate_s=seconds,
                finals_s=finals_s, assumptions=dataclasses.asdict(costs),
                trials=valid if budget is None else min(valid, budget),
                ruled_out=ruled_out)


def _launch_seconds(config: Config, bytes_moved: Callable[[Problem], int],
                    flops: Callable[[Problem], int] | None, costs: PlanCosts) -> float:
    """One launch: its bytes at the assumed bandwidth, its FLOPs at the assumed peak of
    its dtype (where one is assumed), at least the launch floor."""
    problem = config.problem
    peak = costs.flops.get(problem.dtype)
    computing = flops(problem) / peak if flops is not None and peak else 0.0
    return max(bytes_moved(problem) / costs.bandwidth, computing, costs.launch_s)


def _trial_seconds(config: Config, launch: float, facts: DeviceFacts, costs: PlanCosts,
                   measure: MeasureSpec) -> float:
    samples = _expected_samples(measure, launch)
    launches = measure.warmup + 2 + samples * measure.batch
    flushes = costs.flush and config.cache == "cold"
    flush = 2 * facts.l2_bytes / costs.bandwidth if flushes else 0.0
    return costs.compile_s + launches * launch + samples * flush
