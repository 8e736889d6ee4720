import dataclasses

import optuna
import pytest
from optuna.distributions import CategoricalDistribution

from sweeper.samplers import ExhaustiveSampler, SamplerContext, make_sampler
from sweeper.space import SamplerSpec

CHOICES = [{"a": a, "b": b} for a in ("1", "2", "3") for b in ("x", "y")]
DISTS = {"a": CategoricalDistribution(["1", "2", "3"]), "b": CategoricalDistribution(["x", "y"])}


def propose_all(sampler, study=None):
    study = study or optuna.create_study(sampler=sampler)
    seen = []
    while sampler.remaining(study):
        trial = study.ask(DISTS)
        seen.append(dict(trial.params))
        study.tell(trial, 1.0)
    return seen


def test_exhaustive_proposes_each_valid_choice_once():
    seen = propose_all(ExhaustiveSampler(CHOICES, seed=3))
    assert sorted(map(str, seen)) == sorted(map(str, CHOICES))


def test_exhaustive_order_is_seeded():
    assert propose_all(ExhaustiveSampler(CHOICES, seed=1)) == \
        propose_all(ExhaustiveSampler(CHOICES, seed=1))
    assert propose_all(ExhaustiveSampler(CHOICES, seed=None)) == CHOICES


def test_exhaustive_skips_what_the_study_already_has():
    sampler = ExhaustiveSampler(CHOICES, seed=None)
    study = optuna.create_study(sampler=sampler)
    for done in CHOICES[:4]:
        study.add_trial(optuna.trial.create_trial(params=done, distributions=DISTS, value=1.0))
    assert propose_all(sampler, study) == CHOICES[4:]


def test_exhaustive_proposes_first_what_it_is_told_can_go_without_waiting():
    """``prefer`` (a sweep compiling ahead: is this config's binary built?): the first
    config it accepts among the next ``PREFER_WINDOW`` goes first; none accepted, the
    order is kept; every config is still proposed once."""
    built = {"2"}
    sampler = ExhaustiveSampler(CHOICES, seed=None)
    sampler.prefer = lambda c: c["a"] in built
    seen = propose_all(sampler)
    assert seen[:2] == [{"a": "2", "b": "x"}, {"a": "2", "b": "y"}]
    assert sorted(map(str, seen)) == sorted(map(str, CHOICES))
    kept = ExhaustiveSampler(CHOICES, seed=None)
    kept.prefer = lambda c: False
    assert propose_all(kept) == CHOICES
    narrow = ExhaustiveSampler(CHOICES, seed=None)
    narrow.PREFER_WINDOW, narrow.prefer = 2, (lambda c: c["a"] == "3")
    assert propose_all(narrow)[0] == CHOICES[0]          # "3" lies beyond the window


def test_one_at_a_time_keeps_its_plan_order_whatever_it_is_told():
    from sweeper.samplers._exhaustive import OneAtATimeSampler

    sampler = OneAtATimeSampler(CHOICES)
    sampler.prefer = lambda c: c["a"] == "3"
    assert propose_all(sampler) == CHOICES


def test_registry_makes_seeded_optuna_samplers():
    for name in ("exhaustive", "tpe", "random"):
        sampler = make_sampler(SamplerContext(spec=SamplerSpec(name=name, seed=5),
                                              choices=CHOICES))
        assert isinstance(sampler, optuna.samplers.BaseSampler)


def test_a_sampler_context_is_frozen_read_only_and_checked():
    spec = SamplerSpec(name="tpe", seed=9, baseline=(("a", "2"), ("b", "y")))
    given = [dict(c) for c in CHOICES]
    context = SamplerContext(spec=spec, choices=given, priors=[{"a": "3", "b": "x"}],
                             guesses=range(6))
    given[0]["a"] = "9"                                   # the caller's lists are copied
    assert context.choices[0] == {"a": "1", "b": "x"} and len(context.choices) == 6
    assert dict(context.axes) == {"a": ("1", "2", "3"), "b": ("x", "y")}  # as choices show
    assert context.seed == 9 and dict(context.baseline) == {"a": "2", "b": "y"}
    assert context.priors == ({"a": "3", "b": "x"},)
    assert context.guesses == (0.0, 1.0, 2.0, 3.0, 4.0, 5.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.guesses = None                            # type: ignore[misc]
    with pytest.raises(TypeError):
        context.choices[0]["a"] = "2"                     # type: ignore[index]
    with pytest.raises(TypeError):
        context.axes["c"] = ("1",)                        # type: ignore[index]
    with pytest.raises(ValueError, match=r"^guesses: one per choice, got 2 for 6 choices$"):
        SamplerContext(spec=spec, choices=CHOICES, guesses=[1.0, 2.0])
    with pytest.raises(TypeError):
        SamplerContext(spec, CHOICES)                     # type: ignore[misc]  # by keyword
    axes = {"b": ["y", "x"], "a": ["3", "2", "1"]}
    ordered = SamplerContext(spec=SamplerSpec(), choices=CHOICES, axes=axes)
    assert dict(ordered.axes) == {"b": ("y", "x"), "a": ("3", "2", "1")}   # the file's order
    assert ordered.guesses is None and ordered.priors == () and dict(ordered.baseline) == {}


def test_the_auto_factory_reads_the_priors_and_the_guesses_of_its_context():
    from sweeper.samplers._auto import Phase

    guesses = [1.0, 2.0, 3.0, 4.0, 9.0, 5.0]               # the model's best: a=3, b=x
    sampler = make_sampler(SamplerContext(spec=SamplerSpec("auto", seed=1), choices=CHOICES,
                                          priors=[{"a": "2", "b": "y"}], guesses=guesses))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    seen = []
    for _ in range(2):
        trial = study.ask(DISTS)
        seen.append(dict(trial.params))
        study.tell(trial, 1.0)
    assert seen == [{"a": "2", "b": "y"}, {"a": "3", "b": "x"}]
    assert sampler.phases == [Phase.PRIOR, Phase.BEST_GUESS]
