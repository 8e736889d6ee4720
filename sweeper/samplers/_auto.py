"""``auto``: sweeper's default search, measured on recorded H200 tables against TPE.

1. **Priors**: winners of earlier studies of the same kernel (another footprint or
   dtype) are proposed first, when the space has them.
2. **Spread start**: a few points that cover every axis's range (each axis's levels
   in a seeded random order, like a Latin hypercube), so the first incumbent is not
   a lucky or unlucky corner.
3. **Pattern search**: from the best point so far (it moves only for a gain above
   ``MIN_GAIN``), step one axis at a time to the
   neighbouring value (axes are ordered as the space file lists their values, so
   powers of two are neighbours), keep stepping in a direction that improved, widen to
   two steps when one-step moves are exhausted (the idea of Inductor's coordinate
   descent).
4. When the neighbourhood is exhausted, one proposal comes from TPE, then the pattern
   search resumes around whatever is best; when TPE proposes only configs already
   measured, a random unseen one instead, so the search always progresses.

Configs ruled out by constraints are never proposed; configs already measured are
skipped.  ``benchmarks/search_efficiency.py`` gives the figures (docs/benchmarks.md).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState

from sweeper.samplers._exhaustive import PlannedSampler

Key = tuple[tuple[str, str], ...]
#: After this many TPE proposals in a row that were already measured (free: answered from
#: the store), a random unseen one, so the sweep never stalls on repeats.
MAX_TPE_REPEATS = 50
#: The pattern search moves its centre only for a gain above this fraction: smaller ones
#: are noise-sized and would walk it along a plateau before its neighbours are tried.
MIN_GAIN = 0.01


def _key(params: Mapping[str, Any]) -> Key:
    return tuple(sorted((k, str(v)) for k, v in params.items()))


class AutoSampler(PlannedSampler):
    def __init__(self, axes: Mapping[str, Sequence[str]], valid: Sequence[Mapping[str, str]],
                 seed: int = 0, priors: Sequence[Mapping[str, str]] = (),
                 start_points: int = 6) -> None:
        self._axes = {name: list(labels) for name, labels in axes.items()}
        self._valid = {_key(c) for c in valid}
        self._rng = random.Random(seed)
        self._tpe = optuna.samplers.TPESampler(seed=seed, n_startup_trials=5)
        self._queue: list[dict[str, str]] = [dict(p) for p in priors]
        self._queue += self._spread(start_points)
        self._momentum: tuple[str, int] | None = None
        self._last_move: tuple[str, int] | None = None
        self._incumbent: tuple[float, dict[str, str]] | None = None
        self._pending: dict[str, str] | None = None
        self._seen: set[Key] = set()
        self._scores: list[tuple[dict[str, str], float]] = []
        self._jumped = False
        self._repeats = 0

    # -- the plan ----------------------------------------------------------------------------
    def _spread(self, count: int) -> list[dict[str, str]]:
        """``count`` points; along each axis the levels spread over its range, shuffled."""
        levels = {}
        for name, labels in self._axes.items():
            picks = [round(i * (len(labels) - 1) / max(count - 1, 1)) for i in range(count)]
            self._rng.shuffle(picks)
            levels[name] = picks
        return [{name: self._axes[name][levels[name][i]] for name in self._axes}
                for i in range(count)]

    def _neighbours(self, center: Mapping[str, str]) -> list[tuple[dict[str, str], str, int]]:
        """One-step moves along every axis; once those are used up, jumps to each axis's
        ends (monotone effects peak there), then two-step moves."""
        for ring in ("one", "ends", "two"):
            moves = []
            for name, labels in self._axes.items():
                index = labels.index(center[name])
                targets = {"one": (index + 1, index - 1), "two": (index + 2, index - 2),
                           "ends": (len(labels) - 1, 0)}[ring]
                for j in targets:
                    if 0 <= j < len(labels) and j != index:
                        moves.append(({**center, name: labels[j]}, name, j - index))
            if any(self._usable(m[0]) for m in moves):
                return moves
        return []

    def _usable(self, choice: Mapping[str, str]) -> bool:
        key = _key(choice)
        return key in self._valid and key not in self._seen

    def _next(self) -> tuple[dict[str, str] | None, tuple[str, int] | None]:
        while self._queue:
            choice = self._queue.pop(0)
            if self._usable(choice):
                return choice, None
        if self._incumbent is not None:
            if not self._jumped:
                self._jumped = True
                guess = self._marginal_best()
                if self._usable(guess):
                    return guess, None
            moves = [m for m in self._neighbours(self._incumbent[1]) if self._usable(m[0])]
            if moves:
                effects = self._effects()
                moves.sort(key=lambda m: -self._gain(effects, self._incumbent[1], m[1], m[0]))
                if self._momentum is not None:
                    moves.sort(key=lambda m: (m[1], m[2] > 0) != (self._momentum[0],
                                                                  self._momentum[1] > 0))
                choice, name, step = moves[0]
                return choice, (name, step)
        if self._repeats >= MAX_TPE_REPEATS:     # TPE keeps proposing measured configs
            unseen = sorted((dict(k) for k in self._valid - self._seen), key=_key)
            if unseen:
                return self._rng.choice(unseen), None
        return None, None

    def _effects(self) -> dict[str, dict[str, float]]:
        """Mean score of the trials at each value of each axis (a main-effects model)."""
        sums: dict[str, dict[str, list[float]]] = {n: {} for n in self._axes}
        for params, value in self._scores:
            for name in self._axes:
                sums[name].setdefault(params[name], []).append(value)
        return {n: {v: sum(xs) / len(xs) for v, xs in by.items()} for n, by in sums.items()}

    def _gain(self, effects: dict[str, dict[str, float]], center: Mapping[str, str],
              name: str, choice: Mapping[str, str]) -> float:
        known = effects[name]
        mean = sum(known.values()) / len(known) if known else 0.0
        return known.get(choice[name], mean) - known.get(center[name], mean)

    def _marginal_best(self) -> dict[str, str]:
        """Each axis at the value whose trials scored best on average (unseen: the mean)."""
        effects = self._effects()
        out = {}
        for name, labels in self._axes.items():
            known = effects[name]
            mean = sum(known.values()) / len(known) if known else 0.0
            out[name] = max(labels, key=lambda v: known.get(v, mean))
        return out

    # -- Optuna's sampler interface ---------------------------------------------------------
    def _sync(self, study: optuna.Study) -> None:
        if self._seen:
            return
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,
                                                          TrialState.FAIL)):
            params = {k: str(v) for k, v in t.params.items()}
            self._seen.add(_key(params))
            if t.state is TrialState.COMPLETE and t.value is not None:
                self._scores.append((params, t.value))
            if t.state is TrialState.COMPLETE and t.value is not None and (
                    self._incumbent is None or t.value > self._incumbent[0]):
                self._incumbent = (t.value, params)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self._sync(study)
        self._pending, self._last_move = self._next()

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        if self._pending is not None:
            return self._pending[param_name]
        # the neighbourhood is exhausted: one proposal from TPE, then the pattern search
        # resumes around the best point (a repeat is answered from the store, not measured)
        return self._tpe.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        params = {k: str(v) for k, v in trial.params.items()}
        self._repeats = self._repeats + 1 if _key(params) in self._seen else 0
        self._seen.add(_key(params))
        if state is TrialState.COMPLETE and values:
            self._scores.append((params, values[0]))
            if self._incumbent is None or values[0] > self._incumbent[0] * (1 + MIN_GAIN):
                self._incumbent = (values[0], params)
                self._momentum = self._last_move
