"""Configs asked for ahead: with worker processes and a sampler that proposes while
configs are being measured, each worker's next config is handed over the moment its
outcome arrives, before the coordinator keeps that outcome; Ctrl-C drops what no worker
took, and every config is still measured exactly once.  A sampler that learns (``auto``,
``tpe``) then proposes from every outcome but the one measuring, never a config still
running, and the same seed gives the same sweep."""

from __future__ import annotations

import pytest

from sweeper.devices import open_device
from sweeper.store import StudyStore
from sweeper.sweep import StopFlag, _loop, _workers
from sweeper.sweep._workers import AskedAhead, Job
from sweeper.trial import TrialStatus
from tests.conftest import SMALL_SPACE, sweep_study


def _events(monkeypatch) -> list[tuple[str, int]]:
    """("submit", n) when job n goes to a worker, ("keep", n) when its outcome is kept."""
    from sweeper.sweep import _process

    events: list[tuple[str, int]] = []
    real_submit, real_keep = _process.ProcessWorker.submit, _loop.Sweep._keep

    def submit(self, job):
        events.append(("submit", job.number))
        return real_submit(self, job)

    def keep(self, run, worker, job, outcome):
        events.append(("keep", job.number))
        return real_keep(self, run, worker, job, outcome)

    monkeypatch.setattr(_process.ProcessWorker, "submit", submit)
    monkeypatch.setattr(_loop.Sweep, "_keep", keep)
    return events


def _measured(store: StudyStore):
    return [t for t in store.records()[0] if t.status is not TrialStatus.INVALID]


def test_a_worker_gets_its_next_config_before_its_last_outcome_is_kept(
        write_space, tmp_path, monkeypatch):
    """Slow (~8 s: the worker process imports torch).  One worker process, exhaustive:
    job n+1 goes to the worker before job n's outcome is kept, for every n; each config
    is measured once and the trials are numbered without a gap."""
    events = _events(monkeypatch)
    store, summary = sweep_study(write_space(SMALL_SPACE), open_device("interpret"),
                                 tmp_path / "s", processes=True, finals=False)
    measured = _measured(store)
    assert summary.measured == len(measured) == len({t.key() for t in measured}) == 6
    numbers = sorted(t.number for t in measured)
    assert numbers == list(range(numbers[0], numbers[0] + 6))
    for n in numbers[1:]:
        assert events.index(("submit", n)) < events.index(("keep", n - 1)), events


def test_ctrl_c_drops_the_config_asked_ahead_and_a_resume_measures_it_once(
        write_space, tmp_path, monkeypatch):
    """Slow (~16 s: two sweeps, each a worker process).  Ctrl-C while the first trial
    runs: that trial is kept, the config asked for behind it goes to no worker and is not
    journaled, and is counted among those left (it was told 5 of 6 configs were left
    for the next run, not 4); resuming measures every other config exactly once, under a
    trial budget that counts the configs asked ahead."""
    stop = StopFlag()
    real_next = _workers.Workers.next_outcome

    def next_outcome(self):
        stop.set = True                          # pressed while the first trial runs
        return real_next(self)

    monkeypatch.setattr(_workers.Workers, "next_outcome", next_outcome)
    path = write_space(SMALL_SPACE)
    store, summary = sweep_study(path, open_device("interpret"), tmp_path / "s",
                                 processes=True, stop=stop)
    assert summary.stopped_by == "interrupted (Ctrl-C)"
    assert summary.measured == len(_measured(store)) == 1
    assert summary.left == (5, True)
    monkeypatch.setattr(_workers.Workers, "next_outcome", real_next)
    events = _events(monkeypatch)
    from sweeper.kernels import load_kernel
    from sweeper.space import load_space
    from sweeper.sweep import Sweep

    space = load_space(path)
    again = Sweep(space, load_kernel(space.kernel), open_device("interpret"), store,
                  processes=True, max_trials=4, finals=False).run()
    measured = _measured(store)
    assert again.stopped_by == "budget: 4 trials"
    assert len(measured) == len({t.key() for t in measured}) == 4
    assert sorted(n for kind, n in events if kind == "submit") == \
        sorted(t.number for t in measured[1:])   # nothing asked ahead was left unmeasured
    last = Sweep(space, load_kernel(space.kernel), open_device("interpret"), store,
                 finals=False).run()
    assert last.stopped_by.startswith("complete")
    measured = _measured(store)
    assert len(measured) == len({t.key() for t in measured}) == 6


def test_which_samplers_are_asked_ahead_is_declared_with_the_sampler():
    """Declared where the sampler is registered (its factory), read from there alone:
    those that propose with configs still running, not the others."""
    from sweeper.plugins import sampler_capabilities

    for ahead in ("exhaustive", "one-at-a-time", "random"):
        assert sampler_capabilities(ahead).asks_ahead, ahead
    for waits in ("auto", "tpe", "gp", "qmc", "cmaes"):
        assert not sampler_capabilities(waits).asks_ahead, waits


class _Fake:
    def __init__(self) -> None:
        self.got: list[Job] = []

    def submit(self, job: Job) -> None:
        self.got.append(job)


def test_configs_asked_ahead_go_oldest_first_one_per_free_worker_and_refreshed():
    asked = AskedAhead(True)
    assert asked.wanted(busy=1) and not AskedAhead(False).wanted(busy=1)
    asked.add(Job(1, {"a": "1"}))
    assert not asked.wanted(busy=1) and asked.wanted(busy=2)
    asked.add(Job(2, {"a": "2"}))
    a, b, c = _Fake(), _Fake(), _Fake()
    best = {("p", "cold"): (1.0, 1.1)}
    asked.hand([a], lambda job: Job(job.number, job.choice, best))
    assert [j.number for j in a.got] == [1] and a.got[0].best == best and len(asked) == 1
    asked.hand([b, c], lambda job: job)
    assert [j.number for j in b.got] == [2] and c.got == [] and len(asked) == 0
    asked.add(Job(3, {"a": "3"}))
    assert [j.number for j in asked.drop()] == [3] and len(asked) == 0


@pytest.mark.parametrize("sampler", ["gp"])
def test_a_sampler_not_declared_to_ask_ahead_is_never_asked_ahead(
        write_space, tmp_path, monkeypatch, sampler):
    """Slow (~8 s).  A sampler that does not declare ``asks_ahead`` is told each outcome
    before it is asked again: job n+1 goes out only after job n's outcome was kept."""
    events = _events(monkeypatch)
    text = SMALL_SPACE.replace("sampler: exhaustive", f"sampler: {sampler}")
    store, _ = sweep_study(write_space(text), open_device("interpret"), tmp_path / "s",
                           processes=True, finals=False)
    numbers = sorted(t.number for t in _measured(store))
    for n in numbers[1:]:
        assert events.index(("submit", n)) > events.index(("keep", n - 1)), events


def test_configs_asked_ahead_are_not_handed_over_after_ctrl_c_or_the_time_budget():
    """Ctrl-C and a spent time budget halt even what was asked already; the trial budget
    and the space's end only stop the asking (an asked config counts, and may be the
    last the space holds)."""
    import time
    from types import SimpleNamespace

    from sweeper.space import Budget
    from sweeper.sweep._budget import Budgets
    from sweeper.sweep._loop import Sweep

    def budgets(stop=None, time_s=None, started=0.0):
        return Budgets(Budget(), stop or StopFlag(), max_trials=1, max_time_s=time_s,
                       ceilings=None, valid=1, measured=1, t0=time.perf_counter() - started)

    assert not budgets().halted()                        # out of trials: asking stops only
    assert not budgets(time_s=60, started=1).halted()
    assert budgets(time_s=60, started=61).halted()
    flag = StopFlag()
    flag.set = True
    assert budgets(stop=flag).halted()
    for spent, handed in ((budgets(), 1), (budgets(time_s=1, started=2), 0)):
        asked = AskedAhead(True)
        asked.add(Job(7, {"a": "1"}))
        worker = _Fake()
        run = SimpleNamespace(asked=asked, budgets=spent,
                              bench=SimpleNamespace(best={}, power=SimpleNamespace(duty=None)))
        Sweep._hand_asked(object.__new__(Sweep), run, [worker])
        assert len(worker.got) == handed and len(asked) == 1 - handed


def _replay_sweep(root, sampler: str, *, ask_ahead: bool, trials: int, seed: int = 3):
    """A sweep of the recorded matmul 1024³ table (no GPU) with ``sampler``, asked ahead
    or not, as a worker process would be; returns the (submit/keep) events, each trial's
    config in order, and the Sweep."""
    import dataclasses

    from sweeper.kernels import load_kernel
    from sweeper.space import SamplerSpec, load_space
    from sweeper.sweep import Sweep, open_study
    from tests.conftest import ROOT

    device = open_device(f"replay:{ROOT / 'tests/data/replay/h200-matmul-1k.csv'}")
    space = load_space(ROOT / "benchmarks/spaces/matmul-1k.yaml")
    space = dataclasses.replace(space, sampler=SamplerSpec(name=sampler, seed=seed))
    kernel = load_kernel(space.kernel)
    store = StudyStore(root)
    open_study(store, space, kernel, device, command="test")
    sweep = Sweep(space, kernel, device, store, max_trials=trials, finals=False, priors=[])
    sweep.ask_ahead = ask_ahead
    events: list[tuple[str, int]] = []
    make_workers, keep = sweep._workers, sweep._keep

    def workers(bench, baselines):
        made = make_workers(bench, baselines)
        for worker in made.all:
            real = worker.submit

            def traced(job, real=real):
                events.append(("submit", job.number))
                return real(job)
            worker.submit = traced
        return made

    def kept(run, worker, job, outcome):
        events.append(("keep", job.number))
        return keep(run, worker, job, outcome)

    sweep._workers, sweep._keep = workers, kept
    sweep.run()
    configs = [tuple(sorted(t.choice.items())) for t in _measured(store)]
    return events, configs, sweep


@pytest.mark.parametrize("sampler", ["auto", "tpe"])
def test_a_sampler_that_learns_can_be_asked_for_the_next_config_before_it_is_told(
        tmp_path, sampler):
    """Replayed, one worker, ``ask_ahead`` as a worker process would have it (neither
    declares it, for their trials to 98 %, but both propose around configs other workers
    measure alike, and the benchmark measures them so): job n+1 goes to the worker before
    job n's outcome is kept, for every n past the first, so no proposal was a config
    still running; each is measured once, and the same seed gives the same configs in
    the same order."""
    events, configs, sweep = _replay_sweep(tmp_path / "a", sampler, ask_ahead=True,
                                           trials=16)
    assert not sweep.sampler_caps.asks_ahead
    assert len(configs) == len(set(configs)) == 16
    numbers = sorted(n for kind, n in events if kind == "keep")
    for n in numbers[1:]:
        assert events.index(("submit", n)) < events.index(("keep", n - 1)), events
    again = _replay_sweep(tmp_path / "b", sampler, ask_ahead=True, trials=16)[1]
    assert again == configs


def test_asking_ahead_is_off_without_worker_processes_and_then_no_ask_comes_early(tmp_path):
    """Measuring in this process the sweep asks ahead of nothing (it would gain nothing):
    every outcome is kept before the next config goes out."""
    import dataclasses

    from sweeper.kernels import load_kernel
    from sweeper.space import SamplerSpec, load_space
    from sweeper.sweep import Sweep
    from tests.conftest import ROOT

    space = load_space(ROOT / "benchmarks/spaces/matmul-1k.yaml")
    space = dataclasses.replace(space, sampler=SamplerSpec(name="random", seed=0))
    sweep = Sweep(space, load_kernel(space.kernel), open_device("interpret"),
                  StudyStore(tmp_path / "x"))
    assert sweep.sampler_caps.asks_ahead and not sweep.ask_ahead
    events, _, _ = _replay_sweep(tmp_path / "s", "random", ask_ahead=False, trials=8)
    numbers = sorted(n for kind, n in events if kind == "keep")
    for n in numbers[1:]:
        assert events.index(("submit", n)) > events.index(("keep", n - 1)), events


def test_auto_takes_a_config_still_measuring_as_measured_at_its_processs_mean():
    """Its Gaussian process with a pending config believed: the mean everywhere as
    without it, the uncertainty there gone, so expected improvement moves elsewhere."""
    import numpy as np

    from sweeper.samplers._auto_model import believing
    from sweeper.samplers._surrogate import OrdinalGP

    at = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = np.array([0.0, 0.5, 0.2, 0.9])
    pending = np.array([[0.5, 0.5]])
    where = np.array([[0.5, 0.5], [0.25, 0.75]])
    plain, believed = OrdinalGP(at, y).predict(where), believing(at, y, pending).predict(where)
    assert believed[0][0] == pytest.approx(plain[0][0], abs=1e-3)
    assert believed[1][0] < plain[1][0] and believed[1][1] < plain[1][1]
    assert believing(at, y, np.empty((0, 2))).predict(where)[0] == pytest.approx(plain[0])
