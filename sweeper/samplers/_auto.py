"""``auto``: sweeper's default search, measured on recorded H200 tables against TPE.

1. **Priors**: winners of earlier studies of the same kernel (another footprint or
   dtype) are proposed first, when the space has them.
2. **Spread start**: a few points that cover every axis's range (each axis's levels
   in a seeded random order, like a Latin hypercube), so the first incumbent is not
   a lucky or unlucky corner.  When the kernel has a model (``Kernel.model``: a
   first-principles guess from the launch shape, e.g. spilled registers, too few
   bytes in flight, programs too small to hide their start), the model's best guess
   is measured first, then ``MODEL_START_POINTS`` (instead of ``START_POINTS``) spread
   points, each moved to the nearest config the model guesses within ``MODEL_POOL`` of
   its best.
3. **With a kernel model: expected improvement over the whole space, around the
   model.**  A Gaussian process (``_surrogate.py``) is fitted to the measured log
   throughput minus ``b`` × the log of the model's guess; ``b`` is the slope the
   measurements give the guesses, pulled towards 1 as if the model were worth
   ``MODEL_WEIGHT`` measured configs (``model_slope``), so a model the data
   contradict counts for less as measurements come in.  Each proposal is the valid
   unmeasured config with the highest expected improvement under guess + residual:
   the model says where throughput should be, the residual process learns where it
   is wrong, and expected improvement weighs the two.  Every ``MODEL_TURN``-th
   proposal is instead the unmeasured config the model guesses best, as long as the
   fitted slope ``b`` is at least ``TURN_SLOPE`` (the data still back the model): one
   surprising measurement next to the best config (on the H200, a 128 × 64 tile at 8
   warps measured 13-30 % slower than at 4, though neither the model nor 64 × 128 tiles
   say so) can make the residual process write off its neighbours for dozens of
   trials; the model's own ranking is still walked at a third of the pace.
4. **Without a model: guided pattern search**: around the best point so far (it moves
   only for a gain above ``MIN_GAIN``), the candidates are the moves along one axis at
   a time: one and two steps either way and the axis's two ends (axes are ordered as
   the space file lists their values, so powers of two are neighbours; the idea of
   Inductor's coordinate descent).  Which move goes first is decided by the Gaussian
   process over the axes' positions, by expected improvement.  When the neighbourhood
   is exhausted, the search goes on around the best measured config that still has
   unmeasured moves; when every measured config's neighbourhood is exhausted, one
   proposal comes from TPE; when TPE proposes only configs already measured, a random
   unseen one instead, so the search always progresses.

What was tried and measured worse on the recorded tables (30 seeds each,
``benchmarks/search_efficiency.py``), by design:

- Without a model: expected improvement over the whole space instead of the
  neighbourhood (long tails on copy: a global model smooths over the narrow peak at one
  program per tile), best-first search from every measured point, diagonal moves (two
  axes at once), moving the centre on any gain, more or fewer start points.
- With the model only ordering moves (configs within ``MODEL_POOL`` of its best first):
  start points spread over the pool by maximin distance, a surrogate over derived
  features (bytes per thread, tiles per program), the surrogate's mean or UCB instead of
  expected improvement, moves of two power-of-two axes together, moving around every
  config within 1-2 % of the best at once.
- With the model as the surrogate's prior mean: proposals restricted to the incumbent's
  neighbourhood, alternating neighbourhood and global proposals, a neighbourhood move
  first after each new incumbent, three or four start points instead of six (better
  medians, longer tails on matmul), ``MODEL_WEIGHT`` 0.5 or 8, start points left where
  the spread put them (not moved into the pool), an upper-confidence-bound proposal every
  third or fifth trial.
- With the model's best guess measured first: a model turn every second or fourth
  proposal (seed noise), a Gaussian process that fits its own noise level (no change).
  Spread points after the best guess, over 37 tables and 30 seeds (mean / 99th percentile
  / worst trials, tables missing the goal): none 4.7 / 17 / 17, 5 tables (with no spread
  point every seed runs the same search, so a table is missed by all or none); one
  5.3 / 24 / 24, 7; two 4.0 / 20 / 22, 2; three 3.9 / 21 / 23, 1; six 4.3 / 20 / 28, 3.
- When the best few configs lie where the model does not put them
  (``benchmarks/search_robustness.py``: counterfactual tables; median / worst trials to
  98 %): as is (10 seeds), add-1g ``box`` 23 / 40 and copy-1g ``spill`` never within 100.
  On six of the hardest, 5 seeds: capping every guess at the best measured config's guess once two
  configs the model rates higher measured 1 % below it (and no model turns from then
  on) gave 15-35 medians on those tables but worst cases of 39 and 43 trials on the
  recorded matmul-1536 tables (11 and 13 without); model turns stopped after two turns
  in a row that did not beat the best: worse everywhere (medians 19-43); a model-free
  expected-improvement proposal in the turn slot after six trials without a gain:
  worse (medians 25-44, copy ``spill`` 91 / never).  On these tables auto spends a third
  of its trials on model turns and most of the rest on expected improvement that the
  prior keeps near the model's favourites; the counterfactuals stay a known weakness.

Configs ruled out by constraints are never proposed; configs already measured are
skipped.  ``benchmarks/search_efficiency.py`` gives the figures (docs/benchmarks.md).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState

from sweeper.samplers._exhaustive import PlannedSampler
from sweeper.samplers._surrogate import OrdinalGP, expected_improvement, model_slope

Key = tuple[tuple[str, str], ...]
#: After this many TPE proposals in a row that were already measured (free: answered from
#: the store), a random unseen one, so the sweep never stalls on repeats.
MAX_TPE_REPEATS = 50
#: The pattern search moves its centre only for a gain above this fraction: smaller ones
#: are noise-sized and would walk it along a plateau before its neighbours are tried.
MIN_GAIN = 0.01
#: Points spread over the axes that start the search; with a kernel model, fewer follow
#: its best guess (the model already says where to look; the points give the residual
#: process a spread of measurements).
START_POINTS = 6
MODEL_START_POINTS = 3
#: The surrogate ranks moves once this many configs have been measured.
MODEL_AFTER = 3
#: With a kernel model: configs guessed within this fraction of its best guess are where
#: the search starts.
MODEL_POOL = 0.8
#: How many measured configs' worth of evidence the model's slope of 1 is worth.
MODEL_WEIGHT = 2.0
#: With a kernel model, every ``MODEL_TURN``-th proposal after the start is the unmeasured
#: config the model guesses best, whatever the residual process says.
MODEL_TURN = 3
#: ... while the measurements still back the model: its fitted slope is at least this.
TURN_SLOPE = 0.5
#: Guesses below this fraction of the best count as this fraction (a guess of 0, a launch
#: the model says cannot run, still gets a finite prior and is still proposed in turn).
GUESS_FLOOR = 0.01


class Phase(enum.Enum):
    """Which step of the search made a proposal (``AutoSampler.phases``)."""

    PRIOR = "prior"                    # an earlier study's winner
    BEST_GUESS = "best guess"          # the model's best guess, first
    SPREAD = "spread"                  # a spread start point
    TURN = "model turn"                # the best unmeasured guess, every MODEL_TURN-th
    MODEL_EI = "expected improvement"  # over the whole space, around the model
    MOVE = "move"                      # without a model: the pattern search
    TPE = "tpe"                        # without a model, the neighbourhoods used up
    RANDOM = "random"                  # TPE only repeats itself


def _key(params: Mapping[str, Any]) -> Key:
    return tuple(sorted((k, str(v)) for k, v in params.items()))


class AutoSampler(PlannedSampler):
    def __init__(self, axes: Mapping[str, Sequence[str]], valid: Sequence[Mapping[str, str]],
                 seed: int = 0, priors: Sequence[Mapping[str, str]] = (),
                 start_points: int | None = None,
                 guesses: Sequence[float] | None = None) -> None:
        """``guesses``: the kernel model's guess for each of ``valid`` (same order).
        ``start_points``: how many spread points start the search (default
        ``START_POINTS``, or ``MODEL_START_POINTS`` after the model's best guess)."""
        self._axes = {name: list(labels) for name, labels in axes.items()}
        self._valid = {_key(c) for c in valid}
        self._rng = random.Random(seed)
        self._tpe = optuna.samplers.TPESampler(seed=seed, n_startup_trials=5)
        self._prior: dict[Key, float] = {}     # log of the guess relative to the best
        self._at: dict[Key, np.ndarray] = {}   # each valid config's _position, with a model
        pool: list[Key] = []
        if (guesses is not None and len(guesses) == len(valid)
                and max(guesses, default=0) > 0 and min(guesses) < max(guesses)):
            top = max(guesses)
            pool = sorted(_key(c) for c, g in zip(valid, guesses) if g >= MODEL_POOL * top)
            self._prior = {_key(c): float(np.log(max(g / top, GUESS_FLOOR)))
                           for c, g in zip(valid, guesses)}
            self._at = {k: np.array(self._position(dict(k))) for k in self._valid}
        self._every_guess = np.array(list(self._prior.values()))
        self._queue = [(dict(p), Phase.PRIOR) for p in priors]
        starts = [dict(max(pool, key=self._prior.__getitem__))] if pool else []
        if start_points is None:
            start_points = MODEL_START_POINTS if pool else START_POINTS
        self._queue += [(s, Phase.BEST_GUESS) for s in starts] + [
            (s, Phase.SPREAD) for s in self._snap(self._spread(start_points), pool, starts)]
        #: The step that made each proposal, in order (what a diagnosis of the search reads).
        self.phases: list[Phase] = []
        self._incumbent: tuple[float, dict[str, str]] | None = None
        self._pending: dict[str, str] | None = None
        self._seen: set[Key] = set()
        self._scores: list[tuple[dict[str, str], float]] = []
        self._jumped = False
        self._repeats = 0
        self._turns = 0     # proposals made around the model

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

    def _snap(self, points: list[dict[str, str]], pool: list[Key],
              taken: list[dict[str, str]]) -> list[dict[str, str]]:
        """Each point moved to its nearest config in the model's ``pool`` not ``taken``
        nor already chosen (seeded ties)."""
        if not pool:
            return points
        out: list[dict[str, str]] = []
        for point in points:
            here = np.array(self._position(point))
            dist = {k: float(np.abs(self._at[k] - here).sum()) for k in pool
                    if dict(k) not in out and dict(k) not in taken}
            if dist:
                near = min(dist.values())
                out.append(dict(self._rng.choice([k for k in dist if dist[k] == near])))
        return out

    def _neighbours(self, center: Mapping[str, str]) -> list[tuple[dict[str, str], str]]:
        """Moves along one axis: one and two steps either way, and the axis's ends
        (monotone effects peak there)."""
        moves = []
        for name, labels in self._axes.items():
            index = labels.index(center[name])
            for j in dict.fromkeys((index + 1, index - 1, index + 2, index - 2,
                                    len(labels) - 1, 0)):
                if 0 <= j < len(labels) and j != index:
                    moves.append(({**center, name: labels[j]}, name))
        return moves

    def _usable(self, choice: Mapping[str, str]) -> bool:
        key = _key(choice)
        return key in self._valid and key not in self._seen

    def _next(self) -> tuple[dict[str, str], Phase] | None:
        while self._queue:
            choice, phase = self._queue.pop(0)
            if self._usable(choice):
                return choice, phase
        if self._prior:
            return self._around_model()
        if self._incumbent is not None:
            if not self._jumped:
                self._jumped = True
                guess = self._marginal_best()
                if self._usable(guess):
                    return guess, Phase.MOVE
            move = self._move(self._incumbent[1])
            if move is not None:
                return move, Phase.MOVE
            for params, _ in sorted(self._scores, key=lambda pv: -pv[1]):
                move = self._move(params)     # the best config with moves left
                if move is not None:
                    return move, Phase.MOVE
        if self._repeats >= MAX_TPE_REPEATS:     # TPE keeps proposing measured configs
            unseen = sorted((dict(k) for k in self._valid - self._seen), key=_key)
            if unseen:
                return self._rng.choice(unseen), Phase.RANDOM
        return None

    def _around_model(self) -> tuple[dict[str, str], Phase] | None:
        """The unmeasured config with the highest expected improvement of log throughput
        under the kernel model's guess plus a Gaussian process fitted to what the guess
        got wrong (step 3).  Before there are ``MODEL_AFTER`` measurements: the best
        guess."""
        unseen = sorted(self._valid - self._seen)
        if not unseen:
            return None
        best_guess = dict(max(unseen, key=self._prior.__getitem__))
        # configs outside this space (measured under an older space file) have no guess
        scored = [(k, v) for k, v in ((_key(p), v) for p, v in self._scores)
                  if v > 0 and k in self._prior]
        if len(scored) < MODEL_AFTER:
            return best_guess, Phase.TURN
        y = np.log([v for _, v in scored])
        guess = np.array([self._prior[k] for k, _ in scored])
        slope = model_slope(guess, y, self._every_guess, MODEL_WEIGHT)
        self._turns += 1
        if self._turns % MODEL_TURN == 0 and slope >= TURN_SLOPE:
            return best_guess, Phase.TURN
        residual = OrdinalGP(np.array([self._at[k] for k, _ in scored]), y - slope * guess)
        mean, std = residual.predict(np.array([self._at[k] for k in unseen]))
        mean = mean + slope * np.array([self._prior[k] for k in unseen])
        gain = expected_improvement(mean, std, float(y.max()))
        return dict(unseen[int(np.argmax(gain))]), Phase.MODEL_EI

    def _move(self, center: Mapping[str, str]) -> dict[str, str] | None:
        """The most promising unmeasured move from ``center``: by the surrogate's
        expected improvement, its ties broken by main effects."""
        moves = [m for m in self._neighbours(center) if self._usable(m[0])]
        if not moves:
            return None
        effects = self._effects()     # breaks the surrogate's ties, and ranks before it
        moves.sort(key=lambda m: -self._gain(effects, center, m[1], m[0]))
        return self._rank(moves)[0][0]

    def _position(self, choice: Mapping[str, str]) -> list[float]:
        """Where ``choice`` sits on each axis of more than one value, in [0, 1]."""
        return [labels.index(str(choice[name])) / (len(labels) - 1)
                for name, labels in self._axes.items() if len(labels) > 1]

    def _rank(self, moves: list[tuple[dict[str, str], str]]) -> list[tuple[dict[str, str], str]]:
        """``moves`` by the model's expected improvement of log throughput, best first."""
        scored = [(p, v) for p, v in self._scores if v > 0]
        if len(scored) < MODEL_AFTER or not self._position(moves[0][0]):
            return moves
        y = np.log([v for _, v in scored])
        model = OrdinalGP(np.array([self._position(p) for p, _ in scored]), y)
        mean, std = model.predict(np.array([self._position(m[0]) for m in moves]))
        gain = expected_improvement(mean, std, float(y.max()))
        return [moves[i] for i in np.argsort(-gain, kind="stable")]

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
        proposal = self._next()
        self._pending = None if proposal is None else proposal[0]
        self.phases.append(Phase.TPE if proposal is None else proposal[1])

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
