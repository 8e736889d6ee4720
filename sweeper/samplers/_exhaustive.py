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
    param from ``sample_independent``; Optuna's relative-sampling hooks stay unused.  Its
    factory declares ``plans`` (:class:`sweeper.plugins.SamplerCapabilities`): it says
    how many configs it will propose (``size``), which come next (``upcoming``), and
    takes a ``prefer`` hook from a sweep that compiles ahead."""

    #: set by a sweep that compiles ahead: whether a config can be measured without
    #: waiting for its compile (None: no preference)
    prefer: Callable[[dict[str, Any]], bool] | None = None

    @property
    def size(self) -> int:
        """How many configs it proposes in all."""
        raise NotImplementedError

    def upcoming(self, count: int) -> list[dict[str, Any]]:
        """The next ``count`` configs it will propose, in order."""
        raise NotImplementedError

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

    Its bookkeeping costs the same per proposal whatever the number of choices: it keeps
    the order as positions (:func:`plan_order` of their indices, the same permutation
    as shuffling the choices), reads a choice only when it reaches it, counts what is
    left as it goes, and reads the study's trials once, at its first proposal (those
    added to the study later, other than through this sampler, it does not see).
    ``choices`` may be a lazy sequence: one with an ``index_of(choice)`` method (the
    position of a choice, ``None`` for one it lacks) is never walked whole.
    """

    #: how many upcoming configs :attr:`prefer` may choose among (0: the order is kept):
    #: the first config it accepts among them is proposed first (the order is otherwise
    #: arbitrary)
    PREFER_WINDOW = 32

    def __init__(self, choices: Sequence[Mapping[str, Any]], seed: int | None = 0) -> None:
        self._choices = choices if hasattr(choices, "index_of") else \
            [dict(c) for c in choices]
        self._order = plan_order(range(len(self._choices)), seed)
        self._next = 0
        self._seen: set[tuple[tuple[str, Any], ...]] = set()
        self._left = len(self._choices)     # choices neither proposed nor in the study
        self._synced = False
        self._positions: dict[tuple[tuple[str, Any], ...], int] | None = None

    @staticmethod
    def _key(params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
        return tuple(sorted(params.items()))

    def _at(self, place: int) -> Mapping[str, Any]:
        """The choice proposed ``place``-th (before any :attr:`prefer` swap)."""
        return self._choices[self._order[place]]

    def _is_choice(self, params: Mapping[str, Any]) -> bool:
        """Whether ``params`` is one of the choices (a study may hold others: configs
        ruled out, values the space no longer has)."""
        index_of = getattr(self._choices, "index_of", None)
        if index_of is not None:
            return index_of(params) is not None
        if self._positions is None:
            self._positions = {self._key(c): i for i, c in enumerate(self._choices)}
        return self._key(params) in self._positions

    def _mark(self, params: Mapping[str, Any], *, choice: bool | None = None) -> None:
        """Note ``params`` as proposed or in the study; ``choice``: known to be one of
        the choices (None: look it up)."""
        key = self._key(params)
        if key in self._seen:
            return
        self._seen.add(key)
        if choice if choice is not None else self._is_choice(params):
            self._left -= 1

    def remaining(self, study: optuna.Study) -> int:
        """How many of the choices ``study`` does not have yet: 0 ends the sweep as
        complete, whatever its budget."""
        self._sync(study)
        return self._left

    @property
    def size(self) -> int:
        return len(self._choices)

    def upcoming(self, count: int) -> list[dict[str, Any]]:
        """The next ``count`` configs it will propose, in order (the one proposed last
        not among them): what a sweep compiles ahead."""
        out: list[dict[str, Any]] = []
        place = self._next
        while len(out) < count and place < len(self._order):
            choice = self._at(place)
            if self._key(choice) not in self._seen:
                out.append(dict(choice))
            place += 1
        return out

    def _sync(self, study: optuna.Study) -> None:
        """Read the trials the study holds, once: those it was given before this sampler
        proposed anything (a resumed sweep's journal)."""
        if self._synced:
            return
        self._synced = True
        for t in study.get_trials(deepcopy=False):
            if t.state.is_finished():
                self._mark(t.params)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self._sync(study)
        while self._next < len(self._order) and \
                self._key(self._at(self._next)) in self._seen:
            self._next += 1
        if self._next < len(self._order):   # proposed: never again, even while pending
            self._bring_forward()
            self._mark(self._at(self._next), choice=True)

    def _bring_forward(self) -> None:
        """Swap the first upcoming config :attr:`prefer` accepts into the next place."""
        if self.prefer is None or self.PREFER_WINDOW < 2 or \
                self.prefer(dict(self._at(self._next))):
            return
        end = min(len(self._order), self._next + self.PREFER_WINDOW)
        order = self._order
        for j in range(self._next + 1, end):
            choice = self._at(j)
            if self._key(choice) not in self._seen and self.prefer(dict(choice)):
                order[self._next], order[j] = order[j], order[self._next]
                return

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        if self._next >= len(self._order):
            raise optuna.exceptions.OptunaError("exhaustive: every config has been proposed")
        return self._at(self._next)[param_name]

    def after_trial(self, study: optuna.Study, trial: FrozenTrial,
                    state: optuna.trial.TrialState, values: Sequence[float] | None) -> None:
        self._mark(trial.params)


class OneAtATimeSampler(ExhaustiveSampler):
    """Proposes :func:`~sweeper.samplers._order.one_at_a_time`'s configs in order, each
    once.  Configs the constraints rule out are proposed too, so the sweep records them as
    skipped."""

    PREFER_WINDOW = 0            # its order is the plan's: baseline, then axis by axis

    def __init__(self, plan: Sequence[Mapping[str, str]]) -> None:
        super().__init__(plan, seed=None)
        #: the configs it proposes, in order: how many the sweep's progress counts
        self.plan = [dict(c) for c in plan]
