"""The order the exhaustive sampler walks its configs, importable without optuna: a run
that compiles ahead before its own imports hands its compile pool the configs in the
order they will be measured."""

from __future__ import annotations

import random
from collections.abc import Sequence
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
