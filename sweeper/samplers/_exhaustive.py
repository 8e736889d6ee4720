"""Exhaustive search as an Optuna sampler.

Optuna's ``GridSampler`` was not used: it proposes configs the constraints rule
out, scans every past trial on each proposal (quadratic), and calls
``study.stop()``, which raises outside ``study.optimize``.  This one walks the
*valid* configs in a fixed, seeded order and skips those already in the study,
in constant time per proposal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial

from sweeper.samplers._order import plan_order


class PlannedSampler(BaseSampler):
    """A sampler that decides a whole config in ``before_trial`` and hands it out param by
    param from ``sample_independent``; Optuna's relative-sampling hooks stay unused."""

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial
                                    ) -> dict[str, BaseDistribution]:
        return {}

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return {}


class ExhaustiveSampler(PlannedSampler):
    """Propose each of ``choices`` once, in an order shuffled by ``seed``.

    A shuffled order keeps slow drift (clocks, temperature) from lining up with one
    axis of the heatmap; ``seed=None`` keeps the given order.
    """

    #: the sweep records every config of the space the constraints rule out, up front
    records_invalid = True
    #: its proposals never depend on outcomes: a sweep with worker processes may ask for
    #: a worker's next config while its trial runs and hand it over the moment it ends
    asks_ahead = True
    #: how many upcoming configs :attr:`prefer` may choose among (0: the order is kept)
    PREFER_WINDOW = 32

    def __init__(self, choices: Sequence[Mapping[str, Any]], seed: int | None = 0) -> None:
        self._choices = plan_order([dict(c) for c in choices], seed)
        self._next = 0
        self._seen: set[tuple[tuple[str, Any], ...]] = set()
        #: set by a sweep that compiles ahead: whether a config can be measured without
        #: waiting for its compile; the first such config among the next
        #: ``PREFER_WINDOW`` is proposed first (the order is otherwise arbitrary)
        self.prefer: Callable[[dict[str, Any]], bool] | None = None

    @staticmethod
    def _key(params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
        return tuple(sorted(params.items()))

    def remaining(self, study: optuna.Study) -> int:
        """How many of the choices ``study`` does not have yet: 0 ends the sweep as
        complete, whatever its budget."""
        self._sync(study)
        return sum(1 for c in self._choices[self._next:] if self._key(c) not in self._seen)

    def upcoming(self, count: int) -> list[dict[str, Any]]:
        """The next ``count`` configs it will propose, in order (the one proposed last
        not among them): what a sweep compiles ahead."""
        out: list[dict[str, Any]] = []
        for choice in self._choices[self._next:]:
            if len(out) >= count:
                break
            if self._key(choice) not in self._seen:
                out.append(dict(choice))
        return out

    def _sync(self, study: optuna.Study) -> None:
        for t in study.get_trials(deepcopy=False):
            if t.state.is_finished():
                self._seen.add(self._key(t.params))

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if not self._seen:
            self._sync(study)
        while self._next < len(self._choices) and \
                self._key(self._choices[self._next]) in self._seen:
            self._next += 1
        if self._next < len(self._choices):   # proposed: never again, even while pending
            self._bring_forward()
            self._seen.add(self._key(self._choices[self._next]))

    def _bring_forward(self) -> None:
        """Swap the first upcoming config :attr:`prefer` accepts into the next place."""
        if self.prefer is None or self.PREFER_WINDOW < 2 or \
                self.prefer(self._choices[self._next]):
            return
        end = min(len(self._choices), self._next + self.PREFER_WINDOW)
        for j in range(self._next + 1, end):
            choice = self._choices[j]
            if self._key(choice) not in self._seen and self.prefer(choice):
                self._choices[self._next], self._choices[j] = choice, self._choices[self._next]
                return

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        if self._next >= len(self._choices):
            raise optuna.exceptions.OptunaError("exhaustive: every config has been proposed")
        return self._choices[self._next][param_name]

    def after_trial(self, study: optuna.Study, trial: FrozenTrial,
                    state: optuna.trial.TrialState, values: Sequence[float] | None) -> None:
        self._seen.add(self._key(trial.params))


def one_at_a_time(baseline: Mapping[str, str], axes: Mapping[str, Sequence[str]]
                  ) -> list[dict[str, str]]:
    """The baseline, then every other value of each axis with the rest at the baseline
    (control of variables: change one variable at a time, so each difference is that
    axis's effect).  An axis the baseline leaves out sits at its middle value."""
    baseline = {name: str(baseline.get(name, labels[(len(labels) - 1) // 2]))
                for name, labels in axes.items()}
    out = [dict(baseline)]
    for name, labels in axes.items():
        for label in labels:
            if label != baseline[name]:
                out.append({**baseline, name: label})
    return out


class OneAtATimeSampler(ExhaustiveSampler):
    """Proposes :func:`one_at_a_time`'s configs in order, each once.  Configs the
    constraints rule out are proposed too, so the sweep records them as skipped."""

    records_invalid = False      # only this plan's configs, not the whole space's
    PREFER_WINDOW = 0            # its order is the plan's: baseline, then axis by axis

    def __init__(self, plan: Sequence[Mapping[str, str]]) -> None:
        super().__init__(plan, seed=None)
        #: the configs it proposes, in order: how many the sweep's progress counts
        self.plan = [dict(c) for c in plan]
