"""Samplers by name.  Each is an Optuna sampler, seeded from the space file."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import optuna

from sweeper.samplers._auto import AutoSampler
from sweeper.samplers._exhaustive import ExhaustiveSampler, OneAtATimeSampler, one_at_a_time
from sweeper.space import SamplerSpec

Factory = Callable[..., optuna.samplers.BaseSampler]

SAMPLERS: dict[str, Factory] = {
    "auto": lambda spec, choices, axes=None, priors=(): AutoSampler(
        axes or _axes_of(choices), choices, seed=spec.seed, priors=priors),
    "exhaustive": lambda spec, choices: ExhaustiveSampler(choices, seed=spec.seed),
    "one-at-a-time": lambda spec, choices, axes=None: OneAtATimeSampler(
        one_at_a_time(dict(spec.baseline), axes or _axes_of(choices))),
    "tpe": lambda spec, choices: optuna.samplers.TPESampler(
        seed=spec.seed, multivariate=True, n_startup_trials=min(10, max(1, len(choices) // 10))),
    "random": lambda spec, choices: optuna.samplers.RandomSampler(seed=spec.seed),
    # a Gaussian process over the (categorical) axes; ~0.1-0.5 s per proposal
    "gp": lambda spec, choices: optuna.samplers.GPSampler(seed=spec.seed,
                                                          n_startup_trials=min(10, len(choices))),
}


def _axes_of(choices: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    axes: dict[str, list[str]] = {}
    for c in choices:
        for k, v in c.items():
            if str(v) not in axes.setdefault(k, []):
                axes[k].append(str(v))
    return axes


def make_sampler(spec: SamplerSpec, valid_choices: Sequence[Mapping[str, Any]],
                 axes: Mapping[str, Sequence[str]] | None = None,
                 priors: Sequence[Mapping[str, str]] = ()) -> optuna.samplers.BaseSampler:
    """The sampler ``spec`` names; ``valid_choices`` lists the configs constraints allow,
    ``axes`` each axis's labels in the space file's order, ``priors`` configs to try first
    (winners of earlier studies of the same kernel; only ``auto`` uses them)."""
    if spec.name == "auto":
        return SAMPLERS["auto"](spec, valid_choices, axes=axes, priors=priors)
    if spec.name == "one-at-a-time":
        return SAMPLERS["one-at-a-time"](spec, valid_choices, axes=axes)
    return SAMPLERS[spec.name](spec, valid_choices)


__all__ = ["SAMPLERS", "ExhaustiveSampler", "make_sampler"]
