"""``auto`` with a kernel model: expected improvement over the whole space, around the
model (measured on recorded H200 tables against TPE).

A kernel model (``Kernel.model``) is a first-principles guess from the launch shape,
e.g. spilled registers, too few bytes in flight, programs too small to hide their start.

1. **Start**: after the priors, the model's best guess is measured first, then
   ``MODEL_START_POINTS`` spread points (``SearchState.spread``), each moved to the
   nearest config the model guesses within ``MODEL_POOL`` of its best.  Where the model
   is sharp (at most ``SHARP_MAX`` configs guessed within ``SHARP_POOL`` of its best:
   matmul and softmax at most sizes), the spread points after the first go to those
   configs instead: a sharp model's second to tenth favourites hold a config within 2 %
   of the best on most tables it misses at once, and the first point still spreads over
   ``MODEL_POOL`` (docs/search.md, "A sharp model's favourites", has the figures).
2. **Expected improvement around the model.**  A Gaussian process (``_surrogate.py``) is
   fitted to the measured log throughput minus ``b`` × the log of the model's guess;
   ``b`` is the slope the measurements give the guesses, pulled towards 1 as if the
   model were worth ``MODEL_WEIGHT`` measured configs (``model_slope``), so a model the
   data contradict counts for less as measurements come in.  Each proposal is the valid
   unmeasured config with the highest expected improvement under guess + residual: the
   model says where throughput should be, the residual process learns where it is
   wrong, and expected improvement weighs the two.
3. **Model turns**: every ``MODEL_TURN``-th proposal is instead the unmeasured config the
   model guesses best, as long as the fitted slope ``b`` is at least ``TURN_SLOPE`` (the
   data still back the model): one surprising measurement next to the best config (on
   the H200, a 128 × 64 tile at 8 warps measured 13-30 % slower than at 4, though neither
   the model nor 64 × 128 tiles say so) can make the residual process write off its
   neighbours for dozens of trials; the model's own ranking is still walked at a third
   of the pace.  Where the model guesses several unmeasured configs as well as its best,
   it cannot rank them, and the turn takes the one of the highest expected improvement
   around the model (``TURN_TIES``), not the first in key order: the matmul model rated
   12-32 configs alike at its top, which differ in what it does not model (epilogue
   subtiling, flattened loops, the tile order; TMA too until the model priced it), and the
   measurements tell them apart (docs/search.md, "The model's favourites alike").
   **The model's top flattened**: guesses within
   ``FLAT_TOP`` of the best count as the best, both in the prior mean of step 2 and as
   the favourites a turn chooses among, since the model's order there is no ranking (on
   matmul 2304³ its twelve configs guessed within 0.3 % of its best measure 0.74-0.94
   of the table's best, and the seven within 2 % of it are guessed 0.978-0.984): the
   residual process and the measurements choose among them (docs/search.md, "A
   flattened top of the model").
4. **Exploring without the model**: once ``PATIENCE`` measured configs in a row brought
   no gain above ``MIN_GAIN`` (the gains the model and its residual process promised
   did not come), every ``EXPLORE_EVERY``-th proposal is the config with the highest
   expected improvement under a Gaussian process of the measured log throughput alone.
   A region the model rates middling is never reached through the model: its prior
   keeps expected improvement near the model's favourites, and the residual process
   sees nothing wrong until a config there is measured.  The first gain above
   ``MIN_GAIN`` gives the model back every proposal.
5. **Next door after a contradiction**: when a config the model guesses at least as well
   as the incumbent measures below ``CONTRADICTED`` of it, the next proposal is the
   incumbent's unmeasured neighbour (one axis, one level) of the highest expected
   improvement, not the next favourite elsewhere: on a short-K matmul (2048 × 8192 ×
   1024 bf16) the model rates non-TMA configs as well as the best, they measure 0.39-0.43
   of it, and the search spent 21 trials elsewhere before it reached the incumbent's
   neighbour along ``GROUP_M`` that was the best (docs/search.md, "Next door after a
   contradiction", has the figures, and those of other thresholds).
6. **Where configs fail**: configs that fail (out of shared memory, a wrong answer)
   cluster (tiles too large), and a model can be wrong about where.  Every proposal
   above is weighed by its chance of running (``SearchState.chance``: a Gaussian process
   of the failures, near 0 beside one, 1 far from all): expected improvement is
   multiplied by it, the model's turns take the best guess plus its log, and a config the
   model guesses 0 (cannot launch) counts as unlikely too (``HEED_REFUSALS``), step 4
   included (docs/search.md, "Where configs fail", has the figures).

What was tried and measured worse on the recorded tables, by design: docs/search.md,
"What was tried and measured worse".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from sweeper.samplers._auto_state import (
    MIN_GAIN,
    MODEL_AFTER,
    Key,
    Phase,
    Proposal,
    SearchState,
    key_of,
)
from sweeper.samplers._surrogate import (
    FEASIBLE_FLOOR,
    OrdinalGP,
    expected_improvement,
    model_slope,
)

#: Spread points after the model's best guess (the model already says where to look; the
#: points give the residual process a spread of measurements).
MODEL_START_POINTS = 3
#: Configs guessed within this fraction of the model's best guess are where the search
#: starts.
MODEL_POOL = 0.8
#: Where at most ``SHARP_MAX`` configs are guessed within ``SHARP_POOL`` of the model's
#: best, the model is sharp: the spread points after the first are moved among those
#: configs (step 1).  The recorded tables' sharp models have 3-12 such configs (matmul and
#: softmax); matmul at 1152³-2304³ has 14-22 and the add and copy model 23-81.  At 16
#: the replayed counts are those at 12; at 8 matmul 1024³ misses again; at 24 the add
#: counterfactuals of 23 took 5-7 trials longer at the median.
SHARP_POOL = 0.95
SHARP_MAX = 12
#: How many measured configs' worth of evidence the model's slope of 1 is worth.
MODEL_WEIGHT = 2.0
#: Every ``MODEL_TURN``-th proposal after the start is the unmeasured config the model
#: guesses best, whatever the residual process says ...
MODEL_TURN = 3
#: ... while the measurements still back the model: its fitted slope is at least this.
TURN_SLOPE = 0.5
#: Guesses below this fraction of the best count as this fraction (a guess of 0, a launch
#: the model says cannot run, still gets a finite prior and is still proposed in turn).
GUESS_FLOOR = 0.01
#: After this many measured configs in a row without a gain above ``MIN_GAIN`` (the gains
#: the model and its residual process promised did not come) ...
PATIENCE = 12
#: ... every ``EXPLORE_EVERY``-th proposal is chosen without the model: by expected
#: improvement under a Gaussian process of the measured log throughput alone.
EXPLORE_EVERY = 2
#: Configs still being measured (asked ahead) count as measured at the process's mean
#: there (a "kriging believer"): their uncertainty is gone, so the next proposal is not
#: their neighbour for the same reason they were chosen.  False: they are only left out.
BELIEVE_PENDING = True
#: A config the model guesses at least as well as the incumbent that measures below this
#: fraction of it contradicts the model there: the next proposal is the incumbent's
#: unmeasured neighbour (one axis, one level) of the highest expected improvement
#: around the model (step 5).  0: off.
CONTRADICTED = 0.5
#: Whether a config the model says cannot launch (a guess of 0) counts as unlikely to run
#: in every proposal, step 4's included (step 6).
HEED_REFUSALS = True
#: Whether a model turn among several unmeasured configs the model guesses as well as its
#: best takes the one of the highest expected improvement around the model (step 3), not
#: the first in key order.
TURN_TIES = True
#: Log guesses this close count as alike (a model's rounding, not a ranking).
TIE = 1e-9
#: Guesses within this fraction of the model's best count as its best, in the process
#: around the model and in a model turn (step 3): the model's order among them is no
#: ranking (on matmul bf16 2304³ its twelve configs guessed within 0.3 % of its best measure
#: 0.74-0.94 of the table's best, the seven within 2 % of it are guessed 0.978-0.984).
#: 1: the guesses as they are.
FLAT_TOP = 0.98


class ModelGuidedSearch:
    """Search ``state``'s valid configs around the kernel model's ``guesses`` (one per
    config of ``valid``, same order).  Only for guesses :meth:`applies` to."""

    def __init__(self, state: SearchState, valid: Sequence[Mapping[str, str]],
                 guesses: Sequence[float]) -> None:
        self.state = state
        top = max(guesses)
        #: The configs guessed within ``MODEL_POOL`` of the best guess, in key order.
        self.pool: list[Key] = sorted(key_of(c) for c, g in zip(valid, guesses, strict=True)
                                      if g >= MODEL_POOL * top)
        #: Those guessed within ``SHARP_POOL`` of it, where there are at most ``SHARP_MAX``
        #: (a sharp model's favourites), else none.
        sharp = sorted(key_of(c) for c, g in zip(valid, guesses, strict=True)
                       if g >= SHARP_POOL * top)
        self.favourites: list[Key] = sharp if len(sharp) <= SHARP_MAX else []
        #: Each valid config's log guess relative to the best (floored).
        self.prior = {key_of(c): float(np.log(max(g / top, GUESS_FLOOR)))
                      for c, g in zip(valid, guesses, strict=True)}
        #: The configs the model says cannot launch (a guess of 0: e.g. more shared memory
        #: than a program may have).
        self.refused = {key_of(c) for c, g in zip(valid, guesses, strict=True) if g <= 0}
        self._at = {k: np.array(state.position(dict(k))) for k in state.valid}
        #: one level's step along each axis of :meth:`SearchState.position`
        self._step = np.array([1.0 / (len(labels) - 1) for labels in state.axes.values()
                               if len(labels) > 1])
        self._every_guess = np.array(list(self.prior.values()))
        self._turns = 0     # proposals made around the model

    @staticmethod
    def applies(valid: Sequence[Mapping[str, str]], guesses: Sequence[float] | None) -> bool:
        """Whether ``guesses`` can guide a search: one per valid config, some positive,
        not all equal (a flat model ranks nothing)."""
        return (guesses is not None and len(guesses) == len(valid)
                and max(guesses, default=0) > 0 and min(guesses) < max(guesses))

    def start(self, points: int | None) -> list[Proposal]:
        """The model's best guess, then ``points`` (default ``MODEL_START_POINTS``) spread
        points moved into the pool (after the first, among a sharp model's favourites)."""
        top = max(self.pool, key=self.prior.__getitem__)
        best = dict(top)
        count = MODEL_START_POINTS if points is None else points
        spread = self.state.spread(count)
        first = self._snap(spread[:1], [best], self.pool)
        chosen = first + self._snap(spread[1:], [best, *first], self.favourites or self.pool)
        return [(best, Phase.BEST_GUESS)] + [(s, Phase.SPREAD) for s in chosen]

    def _snap(self, points: list[dict[str, str]], taken: list[dict[str, str]],
              pool: list[Key]) -> list[dict[str, str]]:
        """Each point moved to its nearest config in ``pool`` not ``taken`` nor already
        chosen (seeded ties)."""
        out: list[dict[str, str]] = []
        for point in points:
            here = np.array(self.state.position(point))
            dist = {k: float(np.abs(self._at[k] - here).sum()) for k in pool
                    if dict(k) not in out and dict(k) not in taken}
            if dist:
                near = min(dist.values())
                out.append(dict(self.state.rng.choice([k for k in dist if dist[k] == near])))
        return out

    def propose(self) -> Proposal | None:
        """The unmeasured config with the highest expected improvement of log throughput
        under the model's guess plus a Gaussian process fitted to what the guess got
        wrong, or in turn the best unmeasured guess, or once the search is stale
        (``PATIENCE``) in turn the best by expected improvement without the model.
        Before there are ``MODEL_AFTER`` measurements: the best guess."""
        state = self.state
        unseen = state.unseen()
        if not unseen:
            return None
        # configs outside this space (measured under an older space file) have no guess
        scored = [(k, v) for k, v in ((key_of(p), v) for p, v in state.scores)
                  if v > 0 and k in self.prior]
        candidates = np.array([self._at[k] for k in unseen])
        # learnt from the failures, and the model's word where it says a config cannot
        # launch: step 4's proposals, made without the model's ranking, still heed that
        chance = state.chance(candidates) * np.array(
            [FEASIBLE_FLOOR if HEED_REFUSALS and k in self.refused else 1.0 for k in unseen])
        guesses = np.array([self.prior[k] for k in unseen])
        # the best guess among the configs likely to run: the model's claim that a config
        # launches is taken back where its neighbours failed
        best_guess = dict(unseen[int(np.argmax(guesses + np.log(chance)))])
        if len(scored) < MODEL_AFTER:
            return best_guess, Phase.TURN
        y = np.log([v for _, v in scored])
        at = np.array([self._at[k] for k, _ in scored])
        pending = np.array([self._at[k] for k in sorted(state.pending) if k in self._at]
                           if BELIEVE_PENDING else []).reshape(-1, at.shape[1])
        stale = stale_for([v for _, v in state.scores])
        if stale >= PATIENCE and (stale - PATIENCE) % EXPLORE_EVERY == 0:
            mean, std = believing(at, y, pending).predict(candidates)
            gain = expected_improvement(mean, std, float(y.max())) * chance
            return dict(unseen[int(np.argmax(gain))]), Phase.EXPLORE
        # the model's top flattened: its order there is no ranking
        top = float(np.log(FLAT_TOP))
        guesses = np.minimum(guesses, top)
        guess = np.minimum([self.prior[k] for k, _ in scored], top)
        slope = model_slope(guess, y, np.minimum(self._every_guess, top), MODEL_WEIGHT)
        near = self._contradicted(candidates)
        turn = False
        if near is None:
            self._turns += 1
            turn = self._turns % MODEL_TURN == 0 and slope >= TURN_SLOPE
            # the model's favourites (guessed within FLAT_TOP of its best) left
            # unmeasured: it cannot rank them, what was measured can
            favourites = TURN_TIES and float(guesses.max()) >= top - TIE
            if turn and not favourites:
                return best_guess, Phase.TURN
        mean, std = believing(at, y - slope * guess, pending).predict(candidates)
        mean = mean + slope * guesses
        gain = expected_improvement(mean, std, float(y.max())) * chance
        if turn:
            rated = guesses + np.log(chance)
            alike = rated >= rated.max() - TIE
            return dict(unseen[int(np.argmax(np.where(alike, gain, -np.inf)))]), Phase.TURN
        if near is not None:
            gain = np.where(near, gain, -np.inf)
            return dict(unseen[int(np.argmax(gain))]), Phase.NEIGHBOUR
        return dict(unseen[int(np.argmax(gain))]), Phase.MODEL_EI

    def _contradicted(self, candidates: np.ndarray) -> np.ndarray | None:
        """Where the last config measured was a favourite of the model (guessed at least
        as well as the incumbent) and measured below ``CONTRADICTED`` of it: which of the
        unseen configs at ``candidates`` (their positions) are the incumbent's neighbours
        (one axis, one level apart); else ``None``."""
        state = self.state
        if not CONTRADICTED or state.incumbent is None or not state.scores:
            return None
        (last, value), (best, inc) = state.scores[-1], state.incumbent
        lk, ik = key_of(last), key_of(inc)
        if lk not in self.prior or ik not in self.prior or \
                self.prior[lk] < self.prior[ik] or value >= CONTRADICTED * best:
            return None
        moved = np.abs(candidates - self._at[ik])
        axis = np.argmax(moved > 1e-9, axis=1)          # the one axis a neighbour moves on
        near = ((moved > 1e-9).sum(axis=1) == 1) & (
            np.abs(moved.max(axis=1) - self._step[axis]) < 1e-9)
        return near if near.any() else None


def believing(at: np.ndarray, y: np.ndarray, pending: np.ndarray) -> OrdinalGP:
    """A Gaussian process of ``y`` measured at ``at``, and of the configs at ``pending``
    (still being measured) as if measured at its mean there."""
    if not len(pending):
        return OrdinalGP(at, y)
    believed, _ = OrdinalGP(at, y).predict(pending)
    return OrdinalGP(np.vstack([at, pending]), np.concatenate([y, believed]))


def stale_for(values: list[float]) -> int:
    """How many of ``values`` (in order) came since the last one above the best before it
    by more than ``MIN_GAIN``."""
    best, since = -np.inf, 0
    for v in values:
        since = 0 if v > best * (1 + MIN_GAIN) else since + 1
        best = max(best, v)
    return since
