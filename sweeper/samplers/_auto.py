"""``auto``: sweeper's default search, measured on recorded H200 tables against TPE.

1. **Priors**: winners of earlier studies of the same kernel (another footprint or
   dtype) are proposed first, when the space has them.
2. **Spread start**: a few points that cover every axis's range (each axis's levels
   in a seeded random order, like a Latin hypercube), so the first incumbent is not
   a lucky or unlucky corner.
3. Then one of two strategies, chosen by whether the kernel has a model
   (``Kernel.model``) that ranks the valid configs:

   - **with a kernel model** (``_auto_model.py``: :class:`ModelGuidedSearch`): the
     model's best guess first, the spread points moved into the configs it guesses
     best, then expected improvement over the whole space around the model, with
     every few proposals the model's own best unmeasured guess, and once its promised
     gains stop coming, every other proposal chosen without the model; each proposal
     weighed by its chance of running, learnt from the configs that failed;
   - **without** (``_auto_pattern.py``: :class:`PatternSearch`): a guided pattern search
     around the best point so far, along one axis at a time, then TPE, then a random
     unseen config when TPE only repeats itself.

   Each strategy's module gives its design; docs/search.md, what was tried and measured
   worse.
   Both read and draw from one :class:`SearchState` (``_auto_state.py``): the configs
   seen, their scores, the incumbent and the seeded random source.

Configs ruled out by constraints are never proposed; configs already measured are
skipped.  ``benchmarks/search_efficiency.py`` gives the figures (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState

from sweeper._environ import one_blas_thread
from sweeper.samplers._auto_model import ModelGuidedSearch
from sweeper.samplers._auto_pattern import PatternSearch
from sweeper.samplers._auto_state import Phase, Proposal, SearchState, Strategy
from sweeper.samplers._exhaustive import PlannedSampler


class AutoSampler(PlannedSampler):
    """``auto`` as an Optuna sampler: priors first, then the strategy the kernel model
    allows; every proposal valid and not yet in the study while any such config is
    left (then TPE's)."""

    def __init__(self, axes: Mapping[str, Sequence[str]], valid: Sequence[Mapping[str, str]],
                 seed: int = 0, priors: Sequence[Mapping[str, str]] = (),
                 start_points: int | None = None,
                 guesses: Sequence[float] | None = None) -> None:
        """``axes``: each axis's labels in the space file's order; ``valid``: the configs
        the constraints allow; ``priors``: configs to propose first; ``guesses``: the
        kernel model's guess for each of ``valid`` (same order), or None.
        ``start_points``: how many spread points start the search (default: the
        strategy's own, fewer after the model's best guess)."""
        #: The bookkeeping both strategies share.
        self.state = SearchState(axes, valid, seed)
        self._tpe = optuna.samplers.TPESampler(seed=seed, n_startup_trials=5,
                                               constant_liar=True)
        #: The search after the priors: around the kernel model where its guesses rank
        #: the configs, else the guided pattern search.
        self.strategy: Strategy = (
            ModelGuidedSearch(self.state, valid, guesses)
            if guesses is not None and ModelGuidedSearch.applies(valid, guesses)
            else PatternSearch(self.state))
        self._queue: list[Proposal] = [(dict(p), Phase.PRIOR) for p in priors]
        self._queue += self.strategy.start(start_points)
        #: The step that made each proposal, in order (what a diagnosis of the search reads).
        self.phases: list[Phase] = []
        self._pending: dict[str, str] | None = None

    def _next(self) -> Proposal | None:
        while self._queue:
            choice, phase = self._queue.pop(0)
            if self.state.usable(choice):
                return choice, phase
        return self.strategy.propose()

    # -- Optuna's sampler interface ---------------------------------------------------------
    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Decide the whole next config (or leave it to TPE) and note the step that chose
        it in :attr:`phases`.  Configs still being measured (asked ahead, or on another
        worker) are not proposed again; the search goes on from the outcomes told."""
        self.state.sync(study)
        self.state.note_pending(study, trial.number)
        with one_blas_thread():
            proposal = self._next()
        self._pending = None if proposal is None else proposal[0]
        self.phases.append(Phase.TPE if proposal is None else proposal[1])

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        """The decided config's label for ``param_name``, or TPE's when the strategy had
        nothing."""
        if self._pending is not None:
            return self._pending[param_name]
        # the strategy had nothing: one proposal from TPE, then the strategy is asked
        # again (a repeat is answered from the store, not measured)
        return self._tpe.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        """Take the finished trial into the shared bookkeeping."""
        self.state.record(trial.params, state, values)


__all__ = ["AutoSampler", "ModelGuidedSearch", "PatternSearch", "Phase", "SearchState"]
