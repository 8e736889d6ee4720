import optuna
from optuna.distributions import CategoricalDistribution

from sweeper.samplers import ExhaustiveSampler, make_sampler
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


def test_registry_makes_seeded_optuna_samplers():
    for name in ("exhaustive", "tpe", "random"):
        sampler = make_sampler(SamplerSpec(name=name, seed=5), CHOICES)
        assert isinstance(sampler, optuna.samplers.BaseSampler)
