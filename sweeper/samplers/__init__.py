"""Samplers by name.  Each is an Optuna sampler, seeded from the space file."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import optuna

from sweeper.samplers._exhaustive import ExhaustiveSampler
from sweeper.space import SamplerSpec

Factory = Callable[[SamplerSpec, Sequence[Mapping[str, Any]]], optuna.samplers.BaseSampler]

SAMPLERS: dict[str, Factory] = {
    "exhaustive": lambda spec, choices: ExhaustiveSampler(choices, seed=spec.seed),
    "tpe": lambda spec, choices: optuna.samplers.TPESampler(
        seed=spec.seed, multivariate=True, n_startup_trials=min(10, max(1, len(choices) // 10))),
    "random": lambda spec, choices: optuna.samplers.RandomSampler(seed=spec.seed),
}


def make_sampler(spec: SamplerSpec, valid_choices: Sequence[Mapping[str, Any]]
                 ) -> optuna.samplers.BaseSampler:
    """The sampler ``spec`` names; ``valid_choices`` lists the configs constraints allow."""
    return SAMPLERS[spec.name](spec, valid_choices)


__all__ = ["SAMPLERS", "ExhaustiveSampler", "make_sampler"]
