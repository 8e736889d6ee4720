"""What a sampler factory is given: one frozen :class:`SamplerContext`.

A factory takes the context and returns an ``optuna.samplers.BaseSampler``.  One object
instead of positional arguments lets sweeper hand samplers more (a new field, with a
default) without breaking a plugin written against fewer: a factory reads the fields it
needs and ignores the rest.  The context is frozen and its collections read-only, so a
sampler cannot change what the sweep itself goes on to use.

This module imports neither optuna nor the space parser: a plugin may build a context in
its own tests as cheaply as sweeper does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sweeper.space import SamplerSpec

#: A config as a sampler sees it: axis -> label (zipped axes as one axis).
Labels = Mapping[str, str]


@dataclass(frozen=True, kw_only=True)
class SamplerContext:
    """Everything a sampler may use to propose configs, as the sweep knows it at the start.

    Built by keyword; the collections are copied into read-only ones (tuples, mapping
    proxies), whatever was passed in, but for a lazy sequence of choices (one with an
    ``index_of`` method, as a space's :class:`~sweeper.space.Configs`: read-only, its
    choices made when asked for, so 10⁶ of them cost nothing up front).  ``axes`` left
    empty is derived from ``choices`` in the order they show each label.  ``guesses``,
    when given, holds one value per choice: a sweep passes them only to a factory that
    declares ``uses_model``, and ``priors`` only to one that declares ``uses_priors``
    (:func:`sweeper.plugins.declares`).
    """

    #: The space file's ``sampler:`` setting: its name, seed and baseline.
    spec: SamplerSpec
    #: The configs the constraints allow, each once; every proposal must be one of them.
    choices: Sequence[Labels]
    #: Each axis's labels in the space file's order (an ordinal sampler's order).
    axes: Mapping[str, Sequence[str]] = field(default_factory=dict)
    #: Configs to propose first: winners of earlier studies of the kernel on this GPU.
    priors: Sequence[Labels] = ()
    #: The kernel model's guess of each of ``choices`` (same order; higher is faster), or
    #: None: no model, or no guess for some config.
    guesses: Sequence[float] | None = None

    def __post_init__(self) -> None:
        choices = self.choices if hasattr(self.choices, "index_of") else \
            tuple(_frozen(c) for c in self.choices)
        axes = self.axes or _axes_of(choices)
        guesses = None if self.guesses is None else tuple(float(g) for g in self.guesses)
        if guesses is not None and len(guesses) != len(choices):
            raise ValueError(f"guesses: one per choice, got {len(guesses)} for "
                             f"{len(choices)} choices")
        object.__setattr__(self, "choices", choices)
        object.__setattr__(self, "axes", MappingProxyType(
            {name: tuple(str(label) for label in labels) for name, labels in axes.items()}))
        object.__setattr__(self, "priors", tuple(_frozen(p) for p in self.priors))
        object.__setattr__(self, "guesses", guesses)

    @property
    def seed(self) -> int:
        """The space file's seed: the same seed must propose the same configs."""
        return self.spec.seed

    @property
    def baseline(self) -> Labels:
        """The config a sampler that declares ``takes_baseline`` varies around (every axis
        named, zipped axes as one); empty for any other sampler."""
        return MappingProxyType(dict(self.spec.baseline))


def _frozen(choice: Mapping[str, object]) -> Labels:
    return MappingProxyType({str(k): str(v) for k, v in choice.items()})


def _axes_of(choices: Sequence[Labels]) -> dict[str, list[str]]:
    """Each axis's labels in the order ``choices`` first show them."""
    axes: dict[str, list[str]] = {}
    for c in choices:
        for k, v in c.items():
            if v not in axes.setdefault(k, []):
                axes[k].append(v)
    return axes
