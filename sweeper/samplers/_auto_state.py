"""What both of ``auto``'s strategies read and keep: one search's bookkeeping.

:class:`SearchState` holds the axes in the space file's order, the valid configs, the
seeded random source every random choice of the search draws from, the configs the
study already has, every measured score and the incumbent.  The sampler
(:class:`~sweeper.samplers._auto.AutoSampler`) updates it from Optuna's study; a strategy
(``_auto_model.py``, ``_auto_pattern.py``) reads it to propose and draws from its random
source, so a seed fixes the whole search whichever strategy runs.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import optuna
from optuna.trial import TrialState

from sweeper.samplers._surrogate import feasibility

#: A config as a hashable key: its (axis, label) pairs, sorted.
Key = tuple[tuple[str, str], ...]
#: The incumbent (the pattern search's centre) moves only for a gain above this fraction:
#: smaller ones are noise-sized and would walk it along a plateau before its neighbours
#: are tried.
MIN_GAIN = 0.01
#: A Gaussian process ranks proposals once this many configs have been measured.
MODEL_AFTER = 3
#: Whether proposals are weighed by their chance of running, learnt from the configs that
#: failed (:meth:`SearchState.chance`).
FEASIBILITY = True


class Phase(enum.Enum):
    """Which step of the search made a proposal (``AutoSampler.phases``)."""

    PRIOR = "prior"                    # an earlier study's winner
    BEST_GUESS = "best guess"          # the model's best guess, first
    SPREAD = "spread"                  # a spread start point
    TURN = "model turn"                # the best unmeasured guess, every MODEL_TURN-th
    MODEL_EI = "expected improvement"  # over the whole space, around the model
    EXPLORE = "without the model"      # expected improvement of the measurements alone
    NEIGHBOUR = "incumbent's neighbour"  # after a favourite of the model measured far below
    MOVE = "move"                      # without a model: the pattern search
    TPE = "tpe"                        # without a model, the neighbourhoods used up
    RANDOM = "random"                  # TPE only repeats itself


#: One proposal: the config and the step that chose it.
Proposal = tuple[dict[str, str], Phase]


def key_of(params: Mapping[str, Any]) -> Key:
    """``params`` as a :data:`Key` (labels as strings), equal for equal configs."""
    return tuple(sorted((k, str(v)) for k, v in params.items()))


class SearchState:
    """The bookkeeping of one search over ``valid`` (configs of ``axes``), seeded by
    ``seed``: what has been measured and how it scored, and what the search may still
    propose."""

    def __init__(self, axes: Mapping[str, Sequence[str]], valid: Sequence[Mapping[str, str]],
                 seed: int) -> None:
        #: Each axis's labels in the space file's order (powers of two are neighbours).
        self.axes = {name: list(labels) for name, labels in axes.items()}
        #: The configs the constraints allow: nothing else is proposed.
        self.valid = {key_of(c) for c in valid}
        #: The one random source of the search (spread points, ties, random proposals).
        self.rng = random.Random(seed)
        #: Every config the study has, measured or failed.
        self.seen: set[Key] = set()
        #: Every measured config and its score, in the order they were told.
        self.scores: list[tuple[dict[str, str], float]] = []
        #: Every config that failed (out of resources, a wrong answer, a crash), in order:
        #: where failures cluster (tiles too large for shared memory), the search learns
        #: to stay away (:func:`~sweeper.samplers._surrogate.feasibility`).
        self.failed: list[dict[str, str]] = []
        #: The best score and config so far, moved only for a gain above ``MIN_GAIN``.
        self.incumbent: tuple[float, dict[str, str]] | None = None
        #: Proposals in a row that the study already had (answered from the store).
        self.repeats = 0
        #: Configs proposed and still being measured (asked ahead, or on another worker):
        #: never proposed again, and not yet scored.
        self.pending: set[Key] = set()

    def usable(self, choice: Mapping[str, str]) -> bool:
        """Whether ``choice`` may be proposed: valid, not yet in the study nor pending."""
        key = key_of(choice)
        return key in self.valid and key not in self.seen and key not in self.pending

    def unseen(self) -> list[Key]:
        """The configs that may be proposed (:meth:`usable`), in key order."""
        return sorted(self.valid - self.seen - self.pending)

    def position(self, choice: Mapping[str, str]) -> list[float]:
        """Where ``choice`` sits on each axis of more than one value, in [0, 1]: the
        coordinates the Gaussian processes work in."""
        return [labels.index(str(choice[name])) / (len(labels) - 1)
                for name, labels in self.axes.items() if len(labels) > 1]

    def chance(self, candidates: np.ndarray) -> np.ndarray:
        """Each config at ``candidates`` (rows of :meth:`position`)'s chance of running,
        learnt from the configs that ran and those that :attr:`failed`
        (:func:`~sweeper.samplers._surrogate.feasibility`); all 1 while none failed.
        Configs outside the space (a study resumed under another space file) are left
        out."""
        failed = [self.position(p) for p in self.failed if key_of(p) in self.valid]
        if not FEASIBILITY or not failed:
            return np.ones(len(candidates))
        ran = [self.position(p) for p, _ in self.scores if key_of(p) in self.valid]
        return feasibility(np.array(ran), np.array(failed), candidates)

    def spread(self, count: int) -> list[dict[str, str]]:
        """``count`` points; along each axis the levels spread over its range, shuffled
        (like a Latin hypercube), so the first incumbent is no lucky or unlucky corner."""
        levels = {}
        for name, labels in self.axes.items():
            picks = [round(i * (len(labels) - 1) / max(count - 1, 1)) for i in range(count)]
            self.rng.shuffle(picks)
            levels[name] = picks
        return [{name: self.axes[name][levels[name][i]] for name in self.axes}
                for i in range(count)]

    def sync(self, study: optuna.Study) -> None:
        """Take in the trials the study had before the first proposal (a resumed sweep):
        each is seen, each ``ok`` one scored, the best the incumbent."""
        if self.seen:
            return
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,
                                                          TrialState.FAIL)):
            params = {k: str(v) for k, v in t.params.items()}
            self.seen.add(key_of(params))
            if t.state is TrialState.COMPLETE and t.value is not None:
                self.scores.append((params, t.value))
                if self.incumbent is None or t.value > self.incumbent[0]:
                    self.incumbent = (t.value, params)
            elif t.state is TrialState.FAIL:
                self.failed.append(params)

    def note_pending(self, study: optuna.Study, number: int) -> None:
        """Take the study's trials still running, other than trial ``number`` (the one
        being proposed), as :attr:`pending`."""
        self.pending = {key_of(t.params) for t in study.get_trials(
            deepcopy=False, states=(TrialState.RUNNING,)) if t.number != number and t.params}

    def record(self, params: Mapping[str, Any], state: TrialState,
               values: Sequence[float] | None) -> None:
        """Take in one finished proposal: count it as a repeat if the study had it, score
        it if it completed (note it if it failed), and move the incumbent for a gain above
        ``MIN_GAIN``."""
        params = {k: str(v) for k, v in params.items()}
        repeat = key_of(params) in self.seen
        self.repeats = self.repeats + 1 if repeat else 0
        self.seen.add(key_of(params))
        if state is TrialState.FAIL and not repeat:
            self.failed.append(params)
        if state is TrialState.COMPLETE and values:
            self.scores.append((params, values[0]))
            if self.incumbent is None or values[0] > self.incumbent[0] * (1 + MIN_GAIN):
                self.incumbent = (values[0], params)


class Strategy(Protocol):
    """How ``auto`` searches after its priors: the start points, then one proposal at a
    time from the shared :class:`SearchState`."""

    def start(self, points: int | None) -> list[Proposal]:
        """The start points after the priors; ``points`` spread points, or the strategy's
        own number where None."""

    def propose(self) -> Proposal | None:
        """The next config to measure and the step that chose it; None when the strategy
        has nothing left (the sampler then asks TPE)."""
