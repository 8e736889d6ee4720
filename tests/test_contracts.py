"""Contract tests: the same promises checked against every sampler, every device and every
store sweeper has, so a new one (built in or a plugin) is held to them by adding it to the
lists below.

- A sampler proposes only valid configs, never one already measured, and a resumed study
  goes on where it stopped.  Built by its factory from a ``SamplerContext``, it proposes
  configs of the context's axes, the same ones for the same seed.
- A device that measures returns one positive sample per sample asked, poisons and checks
  the outputs around the timed samples, and states its facts, bounds and environment; a
  device that replays answers from its table and refuses to time a launch.
- A store gives back every record it was given, in order, across a close and a reopen.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sweeper import plugins
from sweeper.bounds import Bounds
from sweeper.devices import Device, open_device
from sweeper.errors import SweeperError
from sweeper.kernels import load_kernel
from sweeper.measure import StopRule, summarize
from sweeper.samplers import SamplerContext, make_sampler
from sweeper.space import Config, Problem, SamplerSpec, load_space
from sweeper.store import StudyStore, TrialRecord
from sweeper.sweep import Sweep, enumerate_choices, open_study
from sweeper.trial import TrialStatus

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tests" / "data" / "replay" / "h200-copy.csv"
SPACE = ROOT / "spaces" / "copy.yaml"

SAMPLERS = list(plugins.SAMPLER.builtins)
MEASURING_DEVICES = ["interpret", pytest.param("cuda", marks=pytest.mark.gpu)]
STORES = [StudyStore]


# -- samplers ---------------------------------------------------------------------------------
def _replayed_sweep(root: Path, sampler: str, trials: int) -> tuple[Sweep, StudyStore]:
    device = open_device(f"replay:{TABLE}")
    space = load_space(SPACE)
    space = dataclasses.replace(space, sampler=dataclasses.replace(
        SamplerSpec(name=sampler, seed=3), baseline=space.sampler.baseline or (
            tuple((a.name, a.labels[0]) for a in space.axes)
            if sampler == "one-at-a-time" else ())))
    kernel = load_kernel(space.kernel)
    store = StudyStore(root)
    open_study(store, space, kernel, device, command="test", force=True)
    return Sweep(space, kernel, device, store, max_trials=trials, priors=[]), store


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_a_sampler_proposes_valid_configs_once_and_resumes(tmp_path, sampler):
    sweep, store = _replayed_sweep(tmp_path / "s", sampler, 10)
    sweep.run()
    space, facts = sweep.space, sweep.device.facts()
    valid, _ = enumerate_choices(space, facts.env(), facts.max_footprint)
    valid_keys = {tuple(sorted(c.items())) for c in valid}
    measured = [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]
    keys = [tuple(sorted(t.choice.items())) for t in measured]
    assert len(keys) == len(set(keys)) and set(keys) <= valid_keys
    assert 0 < len(keys) <= 10
    again, _ = _replayed_sweep(tmp_path / "s", sampler, 14)
    again.run()
    resumed = [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]
    assert resumed[:len(measured)] == measured                # nothing measured again
    keys = [tuple(sorted(t.choice.items())) for t in resumed]
    assert len(keys) == len(set(keys)) and len(keys) <= 14
    if plugins.sampler_capabilities(sampler).needs_finals:
        assert len(keys) == min(14, len(valid_keys))          # the budget is used up


SMALL_AXES = {"a": ["1", "2", "3", "4"], "b": ["x", "y", "z"]}
SMALL = [{"a": a, "b": b} for a in SMALL_AXES["a"] for b in SMALL_AXES["b"]
         if (a, b) != ("4", "z")]


def _proposals(sampler: str, seed: int, count: int) -> list[dict[str, str]]:
    """What ``sampler``, built from a context of ``SMALL`` (with priors, guesses and a
    baseline), proposes in ``count`` ask-and-tell rounds."""
    import optuna
    from optuna.distributions import CategoricalDistribution

    takes = plugins.sampler_capabilities(sampler).takes_baseline
    context = SamplerContext(
        spec=SamplerSpec(sampler, seed=seed, baseline=(("a", "2"), ("b", "y")) if takes
                         else ()),
        choices=SMALL, axes=SMALL_AXES, priors=[{"a": "3", "b": "x"}],
        guesses=[float(int(c["a"]) + (c["b"] == "z")) for c in SMALL])
    study = optuna.create_study(direction="maximize", sampler=make_sampler(context))
    dists = {k: CategoricalDistribution(v) for k, v in SMALL_AXES.items()}
    out = []
    for _ in range(count):
        trial = study.ask(dists)
        out.append(dict(trial.params))
        study.tell(trial, float(int(trial.params["a"]) * 10 + ord(trial.params["b"])))
    return out


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_a_sampler_built_from_its_context_is_seeded_and_proposes_its_axes(sampler):
    first = _proposals(sampler, 7, 6)       # one-at-a-time plans 6
    assert all(p["a"] in SMALL_AXES["a"] and p["b"] in SMALL_AXES["b"] for p in first)
    assert _proposals(sampler, 7, 6) == first


# -- devices ----------------------------------------------------------------------------------
class _Check:
    """Counts the poison and the check around the timed samples."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def poison(self) -> None:
        self.calls.append("poison")

    def check(self) -> str | None:
        self.calls.append("check")
        return None


@pytest.mark.parametrize("name", MEASURING_DEVICES)
def test_a_measuring_device_times_what_it_is_asked_and_states_its_facts(name):
    device = open_device(name)
    assert isinstance(device, Device) and not device.replays
    facts = device.facts()
    assert facts.name and facts.sms >= 1 and facts.l2_bytes >= 0
    assert isinstance(device.flushes_l2, bool) and isinstance(device.bounds(), Bounds)
    env = device.environment()
    assert env["device"] == device.name and env["gpu"] == facts.name
    kernel = load_kernel("copy")
    problem = Problem("float32", 4096)
    buffers = kernel.allocate(problem, device.torch_device)
    config = Config(problem=problem, grid=1, block=32, meta={"BLOCK": 1024})
    check = _Check()
    measured = device.measure(lambda: kernel.launch(buffers, config), warmup=1,
                              rule=StopRule(kind="fixed", repeat=3), flush=True, verify=check)
    samples = measured.timing.samples
    assert len(samples) == 3 and all(s > 0 for s in samples)
    assert check.calls == ["poison", "check"] and measured.wrong_after is None
    assert summarize(samples).median > 0


def test_a_replaying_device_answers_from_its_table_and_times_nothing():
    device = open_device(f"replay:{TABLE}")
    assert device.replays and device.facts().sms == 132
    space = load_space(SPACE)
    valid, _ = enumerate_choices(space, device.facts().env())
    row = device.lookup(valid[0])
    assert row is not None and float(row["median_ms"]) > 0
    with pytest.raises(SweeperError, match="cannot time a launch"):
        device.time(lambda: None, warmup=0, repeat=1, flush=False)


# -- stores -----------------------------------------------------------------------------------
def _record(number: int) -> TrialRecord:
    median = 1.0 + number
    return TrialRecord(number=number, status=TrialStatus.OK,
                       choice={"grid": "sms", "block": "32", "BLOCK": str(256 << number)},
                       config=Config(Problem("float32", 1 << 20, (("n", 1 << 18),)), grid=132,
                                     block=32, meta={"BLOCK": 256 << number}),
                       samples_ms=[median] * 3, stats=summarize([median] * 3), gbps=1.0)


@pytest.mark.parametrize("store_type", STORES)
def test_a_store_gives_back_every_record_in_order_across_a_reopen(tmp_path, store_type):
    store = store_type(tmp_path / "s")
    store.create({"study": "s", "kernel": "copy", "command": "test"})
    for n in range(3):
        store.append(_record(n))
    store.close()
    again = store_type(tmp_path / "s")
    assert again.exists() and again.meta()["study"] == "s"
    trials, baselines = again.records()
    assert [t.number for t in trials] == [0, 1, 2] and baselines == []
    assert trials == [_record(n) for n in range(3)]
    again.append(_record(3))
    again.close()
    assert [t.number for t in store_type(tmp_path / "s").records()[0]] == [0, 1, 2, 3]
