"""The Optuna study a sweep asks and tells, rebuilt from the journal at every start.

Optuna keeps its study in memory only; the journal is the record.  Every trial found
there is added back (``ok`` ones with their score, the others as failed), so a resumed
sweep never measures a finished config again and the sampler still learns from every
past result.  A stored choice with a value the space no longer has (resumed with
``--force``) is left out of the rebuilt study; the journal keeps it.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution
from optuna.trial import TrialState

from sweeper.devices import DeviceFacts
from sweeper.errors import SweeperError
from sweeper.kernels import Kernel
from sweeper.samplers import SamplerContext, make_sampler
from sweeper.space import Space
from sweeper.store import TrialRecord
from sweeper.study import Choice

#: Each axis (zipped axes as one) and its labels, as Optuna asks for them.
Distributions = dict[str, BaseDistribution]


def rebuild_study(space: Space, valid: list[Choice], trials: list[TrialRecord], *,
                  priors: list[dict[str, str]],
                  guess: Callable[[list[Choice]], list[float] | None]
                  ) -> tuple[optuna.Study, Distributions]:
    """A new Optuna study with the space file's sampler, told every trial of the journal.

    ``priors`` are the configs the sampler tries first; ``guess`` gives the kernel
    model's value of each valid config, or None (no model, or a sampler without use
    for it).
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    spec = space.sampler
    if spec.baseline:
        base = sampler_view(space, dict(spec.baseline))
        if base is None:
            raise SweeperError("the sampler's baseline matches no row of the zipped "
                               "axes; pick a baseline row")
        spec = dataclasses.replace(spec, baseline=tuple(base.items()))
    axes = space.choices()
    shown = [(c, v) for c, v in ((c, sampler_view(space, c)) for c in valid) if v is not None]
    sampler = make_sampler(SamplerContext(
        spec=spec, choices=[v for _, v in shown], axes=axes,
        priors=[c for c in (sampler_view(space, p) for p in priors) if c is not None],
        guesses=guess([c for c, _ in shown])))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    dists: Distributions = {name: CategoricalDistribution(labels)
                            for name, labels in axes.items()}
    for t in trials:
        params = sampler_view(space, t.choice)
        if params is None or set(params) != set(axes) or any(
                params[k] not in axes[k] for k in axes):
            continue   # a value the space no longer has (resumed with --force)
        study.add_trial(optuna.trial.create_trial(
            params=params, distributions=dists,
            state=TrialState.COMPLETE if t.ok else TrialState.FAIL,
            value=t.score if t.ok else None))
    return study, dists


def model_guesses(kernel: Kernel, space: Space, facts: DeviceFacts, valid: list[Choice]
                  ) -> list[float] | None:
    """The kernel model's guess for each valid config (``auto``'s prior mean), or None
    when the model has no guess for some config."""
    env = facts.env()
    guesses = [kernel.model(space.resolve(c, env, facts.max_footprint), facts.sms)
               for c in valid]
    if any(g is None for g in guesses):
        return None
    return [float(g) for g in guesses if g is not None]


def sampler_view(space: Space, choice: Mapping[str, str]) -> dict[str, str] | None:
    """A stored (per-axis) choice as the sampler sees it: zipped axes as one label."""
    try:
        return space.contract(space._complete(choice))
    except KeyError:
        return None


def tell(study: optuna.Study, trial: optuna.Trial, record: TrialRecord) -> None:
    """Tell the sampler how a proposal went: an ``ok`` trial's score, else a failure."""
    if record.ok:
        study.tell(trial, record.score)
    else:
        study.tell(trial, state=TrialState.FAIL)
