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
from collections.abc import Mapping, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution
from optuna.trial import TrialState

from sweeper.devices import DeviceFacts
from sweeper.kernels import Kernel
from sweeper.samplers import SamplerContext, make_sampler
from sweeper.space import Configs, Space
from sweeper.store import TrialRecord
from sweeper.study import Choice
from sweeper.trial import TrialStatus

#: Each axis (zipped axes as one) and its labels, as Optuna asks for them.
Distributions = dict[str, BaseDistribution]


class Labels(CategoricalDistribution):
    """An axis's labels as the sweep asks Optuna for them, at a cost per trial that does
    not grow with their number.

    On every ask Optuna compares each param's distribution with the one the study holds
    (label by label) and looks the value up among the labels; on every tell and every
    trial added it deep-copies the trial's distributions.  An axis of 4,000 labels made
    each of those 4,000 steps.  The labels never change, so this distribution is equal
    to itself at once, is copied by reference, and finds a label by hash; it is equal
    to no plain ``CategoricalDistribution``, whatever its labels.
    """

    __slots__ = ("_places",)

    def __init__(self, choices: Sequence[str]) -> None:
        super().__init__(choices)
        self._places = {c: i for i, c in reversed(list(enumerate(self.choices)))}

    def __eq__(self, other: object) -> bool:
        return other is self or super().__eq__(other)

    __hash__ = CategoricalDistribution.__hash__

    def __deepcopy__(self, memo: dict[int, object]) -> Labels:
        return self

    def to_internal_repr(self, param_value_in_external_repr: Any) -> float:
        """A label's place, found by hash (Optuna's own finds it by a scan)."""
        place = self._places.get(param_value_in_external_repr) \
            if isinstance(param_value_in_external_repr, str) else None
        if place is not None:
            return place
        return super().to_internal_repr(param_value_in_external_repr)


def build_sampler(space: Space, valid: Configs, *, priors: list[dict[str, str]],
                  guesses: list[float] | None) -> optuna.samplers.BaseSampler:
    """The space file's sampler, built by its factory and checked
    (:func:`~sweeper.samplers.make_sampler`): a run builds it before it writes anything, so
    a factory that fails leaves no study behind.

    The sampler gets ``valid`` as it is (lazy: a sampler that walks it costs nothing per
    config it has not reached); ``priors`` are the configs it tries first; ``guesses``
    are the kernel model's value of each valid config, or None (no model, or a sampler
    without use for it).
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    spec = space.sampler
    if spec.baseline:
        base = sampler_view(space, dict(spec.baseline))
        assert base is not None, "the parser refuses a baseline that is no zipped row"
        spec = dataclasses.replace(spec, baseline=tuple(base.items()))
    return make_sampler(SamplerContext(
        spec=spec, choices=valid, axes=space.choices(),
        priors=[c for c in (sampler_view(space, p) for p in priors) if c is not None],
        guesses=guesses))


def rebuild_study(space: Space, sampler: optuna.samplers.BaseSampler,
                  trials: list[TrialRecord]) -> tuple[optuna.Study, Distributions]:
    """A new Optuna study with ``sampler`` (:func:`build_sampler`), told every trial of
    the journal."""
    study = optuna.create_study(direction="maximize", sampler=sampler)
    axes = space.choices()
    dists: Distributions = {name: Labels(labels) for name, labels in axes.items()}
    for t in trials:
        params = sampler_view(space, t.choice)
        if params is None or not holds(axes, params):
            continue   # a value the space no longer has (resumed with --force)
        value = searched(t)
        study.add_trial(optuna.trial.create_trial(
            params=params, distributions=dists,
            state=TrialState.FAIL if value is None else TrialState.COMPLETE, value=value))
    return study, dists


def waiting_on(study: optuna.Study, space: Space, dists: Distributions,
               choice: Mapping[str, str]) -> list[optuna.trial.Trial | int]:
    """A trial of ``study`` running ``choice`` (a stored choice), added without asking the
    sampler: the proposal the journal's trial of it whose worker process was killed from
    outside stands for, told the outcome of its next trial, so the sampler learns that
    outcome as it learns its own proposals' (``after_trial``) and, meanwhile, sees the
    config running.  Its number (``study.tell`` takes one), or none for a choice the
    space no longer holds."""
    params = sampler_view(space, choice)
    if params is None or not holds(space.choices(), params):
        return []
    number = len(study.get_trials(deepcopy=False))
    study.add_trial(optuna.trial.create_trial(params=params, distributions=dists,
                                              state=TrialState.RUNNING))
    return [number]


def model_guesses(kernel: Kernel, space: Space, facts: DeviceFacts, valid: Sequence[Choice]
                  ) -> list[float] | None:
    """The kernel model's guess for each valid config (``auto``'s prior mean), or None
    when the model has no guess for some config."""
    env = facts.env()
    guesses = [kernel.model(space.resolve(c, env, facts.max_footprint), facts)
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


def holds(axes: Mapping[str, Sequence[str]], params: Mapping[str, str]) -> bool:
    """Whether ``params`` (a choice as the sampler sees it) names every one of ``axes``
    (each dimension's labels) and only them, each by one of its labels: false for a trial
    of a space before a resume with ``--force`` that dropped a value or an axis."""
    return set(params) == set(axes) and all(params[k] in axes[k] for k in axes)


def in_space(space: Space, choice: Mapping[str, str]) -> bool:
    """Whether a stored (per-axis) ``choice`` is one of ``space``'s choices (its
    constraints aside)."""
    params = sampler_view(space, choice)
    return params is not None and holds(space.choices(), params)


def tell(study: optuna.Study, trial: optuna.Trial | int, record: TrialRecord) -> None:
    """Tell the sampler how a proposal (``trial``, or its number) went: its score
    (:func:`searched`), else a failure."""
    value = searched(record)
    if value is not None:
        study.tell(trial, value)
    else:
        study.tell(trial, state=TrialState.FAIL)


def searched(record: TrialRecord) -> float | None:
    """What the sampler is told a trial scored: an ``ok`` trial's score, and an
    ``abandoned`` one's from the samples it got (clearly slower than the best: told as a
    failure, ``auto`` read it as a config that cannot run and weighed its neighbours down
    as unlikely to, and TPE learned nothing of the region); ``None`` for a failure."""
    if record.ok:
        return record.score
    if record.status is TrialStatus.ABANDONED and record.stats is not None:
        return record.samples_score
    return None
