"""``auto`` without a kernel model: a guided pattern search (measured on recorded H200
tables against TPE).

1. **Start**: after the priors, ``START_POINTS`` spread points (``SearchState.spread``).
2. **Guided pattern search**: first one config with each axis at the value whose trials
   scored best on average.  Then, around the best point so far (the incumbent: it moves
   only for a gain above ``MIN_GAIN``), the candidates are the moves along one axis at a
   time: one and two steps either way and the axis's two ends (axes are ordered as the
   space file lists their values, so powers of two are neighbours; the idea of
   Inductor's coordinate descent).  Which move goes first is decided by the Gaussian
   process over the axes' positions (``_surrogate.py``), by expected improvement.  When
   the neighbourhood is exhausted, the search goes on around the best measured config
   that still has unmeasured moves; when every measured config's neighbourhood is
   exhausted, one proposal comes from TPE (the sampler asks it when this search has
   nothing); when TPE proposes only configs already measured (``MAX_TPE_REPEATS`` in a
   row), a random unseen one instead, so the search always progresses.

What was tried and measured worse on the recorded tables (30 seeds each,
``benchmarks/search_efficiency.py``), by design: expected improvement over the whole
space instead of the neighbourhood (long tails on copy: a global model smooths over the
narrow peak at one program per tile), best-first search from every measured point,
diagonal moves (two axes at once), moving the centre on any gain, more or fewer start
points.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from sweeper.samplers._auto_model import stale_for
from sweeper.samplers._auto_state import MODEL_AFTER, Phase, Proposal, SearchState, key_of
from sweeper.samplers._surrogate import OrdinalGP, expected_improvement

#: After this many TPE proposals in a row that were already measured (free: answered from
#: the store), a random unseen one, so the sweep never stalls on repeats.
MAX_TPE_REPEATS = 50
#: Points spread over the axes that start the search.
START_POINTS = 6
#: (variant switch) Whether spread points the constraints rule out are moved to the
#: nearest valid config (else they are skipped).
SNAP = False
#: (variant switch) Whether the marginal-best config is proposed once after the start.
JUMP = True
#: (variant switch) What proposes after the start: "moves" (one-axis moves around the
#: incumbent), "global" (expected improvement over every valid unmeasured config),
#: "region" (the same over the configs within ``REGION`` steps of the incumbent on every
#: axis, widened until one is left), "alternate" (global and moves in turn).
PROPOSER = "moves"
#: (variant switch) The region's half-width, in steps of each axis's list of values.
REGION = 1
#: (variant switch) With "moves": after this many measured configs in a row without a
#: gain above ``MIN_GAIN``, every ``STALE_EVERY``-th proposal is "global"'s.
STALE_AFTER = 10**9
STALE_EVERY = 2
#: (variant switch) When the incumbent's moves are used up: "next" (the moves around the
#: best measured config with moves left) or "global" (expected improvement over every
#: valid unmeasured config).
FALLBACK = "next"
#: (variant switch) The moves along an axis: "near" (one and two steps, the ends) or
#: "all" (every value of the axis).
MOVES = "near"
#: (variant switch) The standard deviation of a normal prior on the Gaussian process's log
#: length scales (0: none, maximum likelihood).
SCALE_PRIOR = 0.0
#: (variant switch) The Gaussian process models what an additive main-effects fit of the
#: log throughput leaves (the fit is its prior mean) instead of the log throughput.
RESIDUAL = False

#: A move: the config it leads to and the axis it moves along.
Move = tuple[dict[str, str], str]


class PatternSearch:
    """Search ``state``'s valid configs by moves along one axis around the incumbent,
    ranked by a Gaussian process over the axes' positions."""

    def __init__(self, state: SearchState) -> None:
        self.state = state
        #: Whether the one marginal-best proposal (each axis at its best mean) was made.
        self.jumped = False
        self._calls = 0

    def start(self, points: int | None) -> list[Proposal]:
        """``points`` (default ``START_POINTS``) spread points."""
        count = START_POINTS if points is None else points
        spread = self.state.spread(count)
        if SNAP:
            spread = self._snap(spread)
        return [(s, Phase.SPREAD) for s in spread]

    def _snap(self, points: list[dict[str, str]]) -> list[dict[str, str]]:
        """(variant) Each point the constraints rule out moved to its nearest valid config
        not already chosen (seeded ties)."""
        state = self.state
        valid = sorted(state.valid)
        at = {k: np.array(state.position(dict(k))) for k in valid}
        out: list[dict[str, str]] = []
        for point in points:
            if key_of(point) in state.valid and point not in out:
                out.append(point)
                continue
            here = np.array(state.position(point))
            dist = {k: float(np.abs(at[k] - here).sum()) for k in valid if dict(k) not in out}
            if dist:
                near = min(dist.values())
                out.append(dict(state.rng.choice([k for k in dist if dist[k] == near])))
        return out

    def propose(self) -> Proposal | None:
        """The marginal best once, then the most promising move around the incumbent, or
        around the best config with moves left; a random unseen config once TPE only
        repeats itself; None when it is TPE's turn."""
        state = self.state
        if state.incumbent is not None:
            if not self.jumped:
                self.jumped = True
                guess = self._marginal_best()
                if JUMP and state.usable(guess):
                    return guess, Phase.MOVE
            self._calls += 1
            stale = stale_for([v for _, v in state.scores])
            if ((PROPOSER != "moves" and not (PROPOSER == "alternate" and self._calls % 2))
                    or (stale >= STALE_AFTER and (stale - STALE_AFTER) % STALE_EVERY == 0)):
                choice = self._expected_best(state.incumbent[1])
                if choice is not None:
                    return choice, Phase.MOVE
            move = self._move(state.incumbent[1])
            if move is not None:
                return move, Phase.MOVE
            if FALLBACK == "global":
                choice = self._expected_best(state.incumbent[1])
                if choice is not None:
                    return choice, Phase.MOVE
            for params, _ in sorted(state.scores, key=lambda pv: -pv[1]):
                move = self._move(params)     # the best config with moves left
                if move is not None:
                    return move, Phase.MOVE
        if state.repeats >= MAX_TPE_REPEATS:     # TPE keeps proposing measured configs
            unseen = [dict(k) for k in state.unseen()]
            if unseen:
                return state.rng.choice(unseen), Phase.RANDOM
        return None

    def _neighbours(self, center: Mapping[str, str]) -> list[Move]:
        """Moves along one axis: one and two steps either way, and the axis's ends
        (monotone effects peak there)."""
        moves = []
        for name, labels in self.state.axes.items():
            index = labels.index(center[name])
            near = (index + 1, index - 1, index + 2, index - 2, len(labels) - 1, 0)
            for j in dict.fromkeys(near if MOVES == "near" else range(len(labels))):
                if 0 <= j < len(labels) and j != index:
                    moves.append(({**center, name: labels[j]}, name))
        return moves

    def _move(self, center: Mapping[str, str]) -> dict[str, str] | None:
        """The most promising unmeasured move from ``center``: by the surrogate's
        expected improvement, its ties broken by main effects."""
        moves = [m for m in self._neighbours(center) if self.state.usable(m[0])]
        if not moves:
            return None
        effects = self._effects()     # breaks the surrogate's ties, and ranks before it
        moves.sort(key=lambda m: -self._gain(effects, center, m[1], m[0]))
        return self._rank(moves)[0][0]

    def _rank(self, moves: list[Move]) -> list[Move]:
        """``moves`` by the model's expected improvement of log throughput, best first."""
        state = self.state
        scored = [(p, v) for p, v in state.scores if v > 0]
        if len(scored) < MODEL_AFTER or not state.position(moves[0][0]):
            return moves
        y = np.log([v for _, v in scored])
        model = OrdinalGP(np.array([state.position(p) for p, _ in scored]), y,
                          SCALE_PRIOR or None)
        mean, std = model.predict(np.array([state.position(m[0]) for m in moves]))
        gain = expected_improvement(mean, std, float(y.max()))
        return [moves[i] for i in np.argsort(-gain, kind="stable")]

    def _expected_best(self, center: Mapping[str, str]) -> dict[str, str] | None:
        """(variant) The unmeasured config of highest expected improvement over the whole
        space, or within ``REGION`` steps of ``center``; None before the model."""
        state = self.state
        scored = [(p, v) for p, v in state.scores if v > 0]
        unseen = state.unseen()
        if len(scored) < MODEL_AFTER or not unseen or not state.position(center):
            return None
        if PROPOSER == "region":
            index = {n: labels.index(center[n]) for n, labels in state.axes.items()}
            steps = [max(abs(state.axes[n].index(v) - index[n]) for n, v in k) for k in unseen]
            width = max(REGION, min(steps))
            unseen = [k for k, d in zip(unseen, steps, strict=True) if d <= width]
        y = np.log([v for _, v in scored])
        at = np.array([state.position(p) for p, _ in scored])
        cand = np.array([state.position(dict(k)) for k in unseen])
        prior_at = prior_cand = 0.0
        if RESIDUAL:
            prior_at, prior_cand = _additive(at, y, cand)
        model = OrdinalGP(at, y - prior_at, SCALE_PRIOR or None)
        mean, std = model.predict(cand)
        gain = expected_improvement(mean + prior_cand, std, float(y.max()))
        return dict(unseen[int(np.argmax(gain))])

    def _effects(self) -> dict[str, dict[str, float]]:
        """Mean score of the trials at each value of each axis (a main-effects model)."""
        sums: dict[str, dict[str, list[float]]] = {n: {} for n in self.state.axes}
        for params, value in self.state.scores:
            for name in self.state.axes:
                sums[name].setdefault(params[name], []).append(value)
        return {n: {v: sum(xs) / len(xs) for v, xs in by.items()} for n, by in sums.items()}

    @staticmethod
    def _gain(effects: dict[str, dict[str, float]], center: Mapping[str, str],
              name: str, choice: Mapping[str, str]) -> float:
        known = effects[name]
        mean = sum(known.values()) / len(known) if known else 0.0
        return known.get(choice[name], mean) - known.get(center[name], mean)

    def _marginal_best(self) -> dict[str, str]:
        """Each axis at the value whose trials scored best on average (unseen: the mean)."""
        effects = self._effects()
        out = {}
        for name, labels in self.state.axes.items():
            known = effects[name]
            mean = sum(known.values()) / len(known) if known else 0.0
            out[name] = max(labels, key=lambda v: known.get(v, mean))
        return out


def _additive(at: np.ndarray, y: np.ndarray, cand: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """(variant) A ridge fit of ``y`` on each axis's position and its square, evaluated at
    the measured points ``at`` and at ``cand``."""
    def features(x: np.ndarray) -> np.ndarray:
        return np.hstack([np.ones((len(x), 1)), x, x * x])
    f = features(at)
    ridge = 0.1 * np.eye(f.shape[1])
    ridge[0, 0] = 0.0
    coef = np.linalg.solve(f.T @ f + ridge, f.T @ y)
    fitted: tuple[np.ndarray, np.ndarray] = (f @ coef, features(cand) @ coef)
    return fitted
