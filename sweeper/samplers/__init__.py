"""Samplers by name.  Each is an Optuna sampler, seeded from the space file.

A sampler plugin is a factory: called with one :class:`SamplerContext` (the sampler spec
and seed, the valid configs, each axis's labels in the space file's order, priors and the
kernel model's guesses), it returns an ``optuna.samplers.BaseSampler``.  What it needs or
offers beyond that it declares as attributes (:class:`sweeper.plugins.SamplerCapabilities`):
``auto`` uses the priors and the guesses; ``one-at-a-time`` takes a baseline and leaves
out the finals; ``exhaustive``, ``one-at-a-time`` and ``random`` may be asked for the next
config while one is measured.

The built-in factories below import optuna only when called: the space parser reads
their capabilities without it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

from sweeper import plugins
from sweeper._lazy import lazy
from sweeper.errors import SweeperError, user_line
from sweeper.plugins import declares
from sweeper.samplers._context import Labels, SamplerContext
from sweeper.samplers._order import one_at_a_time

if TYPE_CHECKING:
    import optuna

#: What a sampler plugin is: the context in, an Optuna sampler out.
Factory = Callable[[SamplerContext], "optuna.samplers.BaseSampler"]

#: The built-in samplers (name -> ``module:attr`` of the factory).
SAMPLERS: dict[str, str] = plugins.SAMPLER.builtins


# Not asked ahead: one outcome behind, it needed more trials to 98 % in 126 of the 187
# paired replays that differed, fewer in 61 (50 tables, 20 seeds; docs/search.md, "Asking
# ahead").  With several workers it still proposes around the configs they measure
# (``SearchState.pending``).
@declares(uses_model=True, uses_priors=True)
def auto_sampler(context: SamplerContext) -> optuna.samplers.BaseSampler:
    """sweeper's own search (``_auto.py``): priors, a spread start, then a search around
    the kernel model's guesses, or a guided pattern search where there is no model."""
    from sweeper.samplers._auto import AutoSampler

    return AutoSampler(context.axes, context.choices, seed=context.seed,
                       priors=context.priors, guesses=context.guesses)


@declares(plans=True, asks_ahead=True, records_invalid=True)
def exhaustive_sampler(context: SamplerContext) -> optuna.samplers.BaseSampler:
    """Every valid config once, in an order shuffled by the seed."""
    from sweeper.samplers._exhaustive import ExhaustiveSampler

    return ExhaustiveSampler(context.choices, seed=context.seed)


# it answers another question than which config wins; its plan is only these configs
@declares(needs_finals=False, takes_baseline=True, plans=True, asks_ahead=True,
          proposes=one_at_a_time)
def one_at_a_time_sampler(context: SamplerContext) -> optuna.samplers.BaseSampler:
    """The baseline, then each axis varied alone around it: how much each axis matters,
    not which config wins, so no finals."""
    from sweeper.samplers._exhaustive import OneAtATimeSampler

    return OneAtATimeSampler(one_at_a_time(context.baseline, context.axes))


# Not asked ahead, as auto: one outcome behind, it needed more trials to 98 % in 358 of
# the 543 paired replays that differed, fewer in 185 (docs/search.md, "Asking ahead").
def tpe_sampler(context: SamplerContext) -> optuna.samplers.BaseSampler:
    """Optuna's multivariate TPE over the axes as categories, after a tenth of the space
    (at most 10, at least 1) in random configs.  A constant liar: a config another
    worker still measures counts as one of the worst, so a proposal goes elsewhere."""
    import optuna

    return optuna.samplers.TPESampler(
        seed=context.seed, multivariate=True, constant_liar=True,
        n_startup_trials=min(10, max(1, len(context.choices) // 10)))


@declares(asks_ahead=True)      # its draws do not depend on outcomes
def random_sampler(context: SamplerContext) -> optuna.samplers.BaseSampler:
    """Optuna's seeded random search: the baseline any guided search must beat."""
    import optuna

    return optuna.samplers.RandomSampler(seed=context.seed)


def gp_sampler(context: SamplerContext) -> optuna.samplers.BaseSampler:
    """A Gaussian process over the axes' indices, after 10 random configs; on the design
    tables it beat the same GP over categorical axes (median 11.5 trials to 98 %, worst
    41, against 13 and some seeds never), in a third of the wall time."""
    import optuna

    return _over_indices(context, optuna.samplers.GPSampler(
        seed=context.seed, n_startup_trials=min(10, len(context.choices)),
        warn_independent_sampling=False))


def qmc_sampler(context: SamplerContext) -> optuna.samplers.BaseSampler:
    """Scrambled Sobol points over the axes' indices: a seeded space-filling design."""
    import optuna

    with warnings.catch_warnings():      # QMCSampler is marked experimental
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        inner = optuna.samplers.QMCSampler(qmc_type="sobol", scramble=True,
                                           seed=context.seed, warn_independent_sampling=False)
    return _over_indices(context, inner)


def cmaes_sampler(context: SamplerContext) -> optuna.samplers.BaseSampler:
    """CMA-ES over the axes' indices, starting from the middle of every axis."""
    import optuna

    return _over_indices(context, optuna.samplers.CmaEsSampler(
        seed=context.seed, warn_independent_sampling=False))


def _over_indices(context: SamplerContext, inner: optuna.samplers.BaseSampler
                  ) -> optuna.samplers.BaseSampler:
    """``inner`` searching the axes' indices (``_ordinal.py`` says why)."""
    from sweeper.samplers._ordinal import OrdinalSampler

    return OrdinalSampler(inner, context.axes, context.choices, seed=context.seed)


def make_sampler(context: SamplerContext) -> optuna.samplers.BaseSampler:
    """The sampler ``context.spec`` names, built from ``context`` by its factory.  The
    factory is checked when loaded (a callable of one argument); one that raises, or
    returns no Optuna sampler, is a :class:`SweeperError` naming the plugin (and the line
    of the plugin's own code that raised), as any plugin's failure is, not a traceback.
    So is one that declares a plan (``plans``) but returns another kind of sampler."""
    import optuna

    from sweeper.samplers._exhaustive import PlannedSampler

    plugin = plugins.load(plugins.SAMPLER, context.spec.name)
    try:
        sampler = plugin.obj(context)
    except Exception as err:
        at = user_line(err)
        raise SweeperError(f"{plugin}: its factory raised {type(err).__name__}: {err}"
                           f"{f' (at {at})' if at else ''}") from err
    if not isinstance(sampler, optuna.samplers.BaseSampler):
        raise SweeperError(f"{plugin}: its factory returned {type(sampler).__name__}, not "
                           "an optuna.samplers.BaseSampler")
    if plugins.sampler_capabilities(context.spec.name).plans and \
            not isinstance(sampler, PlannedSampler):
        raise SweeperError(f"sampler {context.spec.name!r} declares plans=True but its "
                           f"factory returned {type(sampler).__name__}, not a "
                           "sweeper.samplers._exhaustive.PlannedSampler")
    return sampler


#: The sampler classes, imported (with optuna) only when asked for.
__getattr__ = lazy(__name__, {"AutoSampler": "._auto", "ExhaustiveSampler": "._exhaustive",
                              "OneAtATimeSampler": "._exhaustive", "OrdinalSampler": "._ordinal"})


__all__ = ["SAMPLERS", "AutoSampler", "ExhaustiveSampler", "Factory", "Labels",
           "OneAtATimeSampler", "OrdinalSampler", "SamplerContext", "auto_sampler",
           "cmaes_sampler", "exhaustive_sampler", "gp_sampler", "make_sampler",
           "one_at_a_time_sampler", "qmc_sampler", "random_sampler", "tpe_sampler"]
