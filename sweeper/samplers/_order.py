"""The order the exhaustive sampler walks its configs and the configs one-at-a-time
proposes, importable without optuna: a run that compiles ahead before its own imports
hands its compile pool the configs in the order they will be measured, and
``sweeper plan`` counts what one-at-a-time will measure."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")


def plan_order(items: Sequence[T], seed: int | None) -> list[T]:
    """``items`` shuffled by ``seed`` (``None``: as given).  The permutation depends only
    on how many there are and the seed, so any list as long as the sampler's valid
    configs is put in the order the sampler proposes them."""
    order = list(items)
    if seed is not None:
        random.Random(seed).shuffle(order)
    return order


def one_at_a_time(baseline: Mapping[str, str], axes: Mapping[str, Sequence[str]]
                  ) -> list[dict[str, str]]:
    """The baseline, then every other value of each axis with the rest at the baseline
    (control of variables: change one variable at a time, so each difference is that
    axis's effect).  An axis the baseline leaves out sits at its middle value."""
    baseline = {name: str(baseline.get(name, labels[(len(labels) - 1) // 2]))
                for name, labels in axes.items()}
    return [dict(baseline)] + [{**baseline, name: label} for name, labels in axes.items()
                               for label in labels if label != baseline[name]]
