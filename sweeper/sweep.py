"""The sweep: a sampler proposes, a trial measures, the store keeps, until a budget ends it.

Optuna drives the search from an in-memory study rebuilt from the journal, so a
resumed sweep never measures a finished config again and the sampler still sees
every past result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import optuna
import torch
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState

from sweeper.ceilings import SUSPICIOUS, Ceilings
from sweeper.devices import Device
from sweeper.errors import ContextLost, SweeperError, TrialHung, WriteError
from sweeper.finals import FinalRecord, Winners, finalists, problem_of, remeasure
from sweeper.kernels import Buffers, Kernel
from sweeper.measure import (
    DEFAULT_DUTY, Duty, Flag, Stop, StopReason, StopRule, TrialFlag, power_bound, summarize,
    throughput)
from sweeper.plugins import sampler_capabilities
from sweeper.samplers import ExhaustiveSampler, make_sampler
from sweeper.space import Config, Invalid, Problem, Space
from sweeper.store import (
    BaselineRecord, DriftRecord, DutyRecord, FirstMeasurement, ProblemKey, StudyStore,
    TrialRecord)
from sweeper.study import (  # noqa: F401 - part of this module's interface
    MAX_ENUMERATED, Choice, enumerate_choices, finals_wanted, fingerprint, fingerprint_diff,
    now, open_study)
from sweeper.trial import TrialResult, TrialStatus, run_trial

MAX_REPEATED_PROPOSALS = 200
MAX_ROTATION = 16
RECHECKED = "after re-verifying and re-timing"


class Reporter(Protocol):
    """What the sweep tells whoever is watching (the CLI's progress bar, or nobody)."""

    def start(self, total: int, done: int) -> None: ...
    def trial(self, record: TrialRecord, best: TrialRecord | None) -> None: ...
    def finish(self) -> None: ...


class SilentReporter:
    def start(self, total: int, done: int) -> None: ...
    def trial(self, record: TrialRecord, best: TrialRecord | None) -> None: ...
    def finish(self) -> None: ...


class StopFlag:
    """Set by the CLI's Ctrl-C handler; the sweep stops after the trial in flight."""

    def __init__(self) -> None:
        self.set = False


@dataclass
class SweepSummary:
    measured: int = 0          # trials measured by this invocation
    skipped: int = 0           # configs ruled out by constraints or values
    resumed: int = 0           # trials found in the store
    repeated: int = 0          # proposals answered from the store
    stopped_by: str = ""
    wall_s: float = 0.0
    best: TrialRecord | None = None
    trials: list[TrialRecord] = field(default_factory=list)
    finals: list[FinalRecord] = field(default_factory=list)
    finals_s: float = 0.0      # of wall_s, spent re-measuring finalists
    drift: DriftRecord | None = None   # one-at-a-time: the baseline measured again
    saved_ms: float = 0.0      # GPU time early abandonment did not spend
    duty: str = ""             # why and how power-bound problems were measured, if they were


class Sweep:
    def __init__(self, space: Space, kernel: Kernel, device: Device, store: StudyStore, *,
                 reporter: Reporter | None = None, stop: StopFlag | None = None,
                 max_trials: int | None = None, max_time_s: float | None = None,
                 ceilings: Ceilings | None = None, finals: bool = True,
                 priors: list[dict[str, str]] | None = None,
                 on_hang: Callable[[TrialRecord], None] | None = None) -> None:
        self.space = space
        self.kernel = kernel
        self.device = device
        self.store = store
        self.reporter = reporter or SilentReporter()
        self.stop = stop or StopFlag()
        self.max_trials = max_trials if max_trials is not None else space.budget.trials
        self.max_time_s = max_time_s if max_time_s is not None else space.budget.time_s
        self.facts = device.facts()
        self.measure = device.measure_spec(space.measure)
        self._buffers: dict[tuple[Problem, int], list[Buffers]] = {}
        self.priors = priors or []
        #: called (on a watchdog thread) after a trial ran past ``measure.timeout`` and was
        #: recorded as such; ``sweeper run`` re-executes itself there.  None: no watchdog.
        self.on_hang = on_hang
        self._best_by_problem: dict[tuple[Problem, str], tuple[float, float]] = {}
        self.ceilings = ceilings
        self.bounds = device.bounds()
        #: what the sampler declares it needs or offers (finals, a baseline, guesses)
        self.sampler_caps = sampler_capabilities(space.sampler.name)
        self.run_finals = finals and finals_wanted(space, device)
        self.run_drift = not device.replays
        self._buffer_bytes = 0
        #: what precedes each config's samples: the space's schedule, else none until a
        #: trial shows the problem power-bound (``measure.duty: auto``; see _power_check)
        self.duty: Duty | None = self.measure.fixed_duty()

    def run(self) -> SweepSummary:
        t0 = time.perf_counter()
        valid, invalid = enumerate_choices(self.space, self.facts.env(), self.facts.max_footprint)
        trials, baselines = self.store.records()
        done: dict[tuple[str, ...], TrialRecord] = {t.key(): t for t in trials}
        self._baselines = {(b.dtype, b.footprint, b.cache): b for b in baselines}
        summary = SweepSummary(resumed=len(trials), trials=list(trials))
        summary.best = _best(trials)
        self._resume_duty(summary)
        study, dists = self._optuna_study(valid, trials)
        number = max((t.number for t in trials), default=-1) + 1
        if getattr(study.sampler, "records_invalid", False):
            for choice, reason in invalid:    # recorded once, never launched
                if _key(choice) not in done:
                    record = self._record_invalid(number, choice, reason)
                    done[record.key()] = record
                    summary.trials.append(record)
                    number += 1
        measured_before = sum(1 for t in done.values() if t.status is not TrialStatus.INVALID)
        planned = len(getattr(study.sampler, "plan", valid))
        total = planned if self.max_trials is None else min(planned, self.max_trials)
        self.reporter.start(total=total, done=min(measured_before, total))
        repeats = since_improvement = 0
        for t in done.values():
            self._note_best(t)
        try:
            while True:
                measured = measured_before + summary.measured
                summary.stopped_by = self._should_stop(study, t0, measured, len(valid),
                                                       repeats) or self._goal_reached(
                                                           summary.best, since_improvement)
                if summary.stopped_by:
                    break
                trial = study.ask(dists)
                choice = self.space.expand({k: str(v) for k, v in trial.params.items()})
                if _key(choice) in done:      # answered from the store, never re-measured
                    _tell(study, trial, done[_key(choice)])
                    summary.repeated += 1
                    repeats += 1
                    continue
                repeats = 0
                with self._watchdog(number, choice):
                    record = self._power_check(number, choice, self._measure(number, choice),
                                               summary)
                lost = record.status is TrialStatus.CRASHED and not self.device.healthy()
                if lost:
                    record = dataclasses.replace(record, reason=(
                        f"{record.reason} (it left the CUDA context unusable; the sweep went "
                        "on in a fresh process)"))
                number += 1
                self.store.append(record)
                done[record.key()] = record
                summary.trials.append(record)
                _tell(study, trial, record)
                if lost:      # recorded; nothing more can run in this process
                    self.reporter.trial(record, summary.best)
                    raise ContextLost(record.number, record.reason or "")
                if record.status is TrialStatus.INVALID:
                    continue
                summary.measured += 1
                summary.saved_ms += record.saved_ms
                self._note_best(record)
                if record.ok and (summary.best is None or record.score > summary.best.score):
                    if self._beyond_noise(summary.best, record):
                        since_improvement = 0
                    summary.best = record
                since_improvement += 1
                self.reporter.trial(record, summary.best)
            if self.run_drift and not self.stop.set and summary.measured and \
                    self.sampler_caps.takes_baseline:
                summary.drift = self._remeasure_baseline(done)
            todo = Winners.of(self.store).missing(list(done.values())) \
                if self.run_finals and not self.stop.set else []
            if todo:                      # each problem without a current final, and no other
                t_finals = time.perf_counter()
                summary.finals = self._choose_winners(list(done.values()), todo)
                summary.finals_s = time.perf_counter() - t_finals
        finally:
            self.reporter.finish()
            self.store.close()
        summary.skipped = sum(1 for t in summary.trials[summary.resumed:]
                              if t.status is TrialStatus.INVALID)
        summary.wall_s = time.perf_counter() - t0
        return summary

    @contextlib.contextmanager
    def _watchdog(self, number: int, choice: Choice) -> Iterator[None]:
        """Record the trial as timed out and call ``on_hang`` if it runs past
        ``measure.timeout``: a hung kernel cannot be interrupted from its own process."""
        timeout = self.measure.timeout_s
        if self.on_hang is None or timeout is None or self.device.replays:
            yield
            return
        lock, state, started = threading.Lock(), {"done": False}, now()

        def fire() -> None:
            with lock:
                if state["done"]:
                    return
                state["hung"] = True
                result = TrialResult(TrialStatus.TIMEOUT, (
                    f"no result after {timeout:g} s (measure.timeout): a hung kernel, or a "
                    "compile longer than that; the sweep went on in a fresh process"))
                try:
                    config = self.space.resolve(choice, self.facts.env(),
                                                self.facts.max_footprint)
                except Invalid:
                    config = None
                record = TrialRecord.from_result(number, choice, config, result, started,
                                                 timeout)
                try:
                    self.store.append(record)
                except WriteError as err:      # on this thread no one else can report it
                    print(f"sweeper: {err}", file=sys.stderr, flush=True)
                    os._exit(1)                # the main thread is stuck in the kernel
                self.on_hang(record)           # sweeper run: never returns

        timer = threading.Timer(timeout, fire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            with lock:
                state["done"] = True
                hung = state.get("hung", False)
        if hung:
            raise TrialHung(number)

    def _resume_duty(self, summary: SweepSummary) -> None:
        """A study found power-bound before goes on under the schedule it switched to."""
        found = self.store.read(DutyRecord)
        if self.duty is None and self.measure.duty == "auto" and found:
            self.duty = found[-1].duty
            summary.duty = found[-1].note

    def _power_check(self, number: int, choice: Choice, record: TrialRecord,
                     summary: SweepSummary) -> TrialRecord:
        """Under ``measure.duty: auto``, the first trial whose sampling window shows the
        power cap (or board power near its limit) makes the study power-bound: from then
        on every config's samples, the baselines' and the finals' follow
        ``DEFAULT_DUTY``, and that trial is measured again under it.  Trials measured
        before showed no cap, so they ran from the cool state the schedule restores."""
        if self.duty is not None or self.measure.duty != "auto" or not record.clocks:
            return record
        why = power_bound(record.clocks.reasons, record.clocks.power_w_max,
                          self.device.power_limit_w())
        if why is None:
            return record
        self.duty = DEFAULT_DUTY
        summary.duty = (f"power-bound from trial #{number} ({why}); from then on "
                        f"{DEFAULT_DUTY.describe()}, in the finals too (measure.duty: auto)")
        self.store.append(DutyRecord(
            trial=number, reason=why, note=summary.duty, duty=DEFAULT_DUTY,
            first_measurement=FirstMeasurement(
                median_ms=record.stats.median if record.stats else None, clocks=record.clocks)))
        return self._measure(number, choice)

    def _note_best(self, t: TrialRecord) -> None:
        """Remember the fastest (median, CI high) per problem, for early abandonment."""
        if not t.ok or not t.config or not t.stats:
            return
        key = (t.config.problem, t.config.cache)
        have = self._best_by_problem.get(key)
        if have is None or t.stats.median < have[0]:
            self._best_by_problem[key] = (t.stats.median, t.stats.bounds()[1])

    @staticmethod
    def _beyond_noise(old: TrialRecord | None, new: TrialRecord) -> bool:
        """Is ``new`` faster than ``old`` by more than their medians' CIs allow?"""
        if old is None or not old.stats or not new.stats:
            return True
        return new.stats.bounds()[1] < old.stats.bounds()[0]

    def _goal_reached(self, best: TrialRecord | None, since_improvement: int) -> str:
        budget = self.space.budget
        if budget.patience is not None and since_improvement >= budget.patience:
            return (f"budget: the best did not improve beyond noise for {budget.patience} "
                    "trials")
        if budget.target is not None and best is not None and self.ceilings is not None and \
                self.ceilings.copy and best.config and best.gbps:
            ceiling = self.ceilings.bandwidth(best.config.problem.footprint, best.config.cache)
            if best.gbps >= budget.target * ceiling:
                return (f"budget: target {100 * budget.target:g}% of the ceiling reached "
                        f"({best.gbps:.4g} of {ceiling:.4g} GB/s)")
        return ""

    def _should_stop(self, study: optuna.Study, t0: float, measured: int, valid: int,
                     repeats: int) -> str:
        if self.stop.set:
            return "interrupted (Ctrl-C)"
        if self.max_trials is not None and measured >= self.max_trials:
            return f"budget: {self.max_trials} trials"
        if self.max_time_s is not None and time.perf_counter() - t0 >= self.max_time_s:
            return f"budget: {self.max_time_s:g} s"
        sampler = study.sampler
        if isinstance(sampler, ExhaustiveSampler):
            if sampler.remaining(study) == 0:
                return "complete: every valid config measured"
        elif measured >= valid:
            return "complete: every valid config measured"
        if repeats >= MAX_REPEATED_PROPOSALS:
            return f"sampler converged: {repeats} proposals in a row were already measured"
        return ""

    def _optuna_study(self, valid: list[Choice], trials: list[TrialRecord]
                      ) -> tuple[optuna.Study, dict[str, CategoricalDistribution]]:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        view = self._sampler_view
        spec = self.space.sampler
        if spec.baseline:
            base = view(dict(spec.baseline))
            if base is None:
                raise SweeperError("the sampler's baseline matches no row of the zipped "
                                   "axes; pick a baseline row")
            spec = dataclasses.replace(spec, baseline=tuple(base.items()))
        shown = [(c, v) for c, v in ((c, view(c)) for c in valid) if v is not None]
        sampler = make_sampler(spec, [v for _, v in shown], axes=self.space.choices(),
                               priors=[c for c in map(view, self.priors) if c is not None],
                               guesses=self._guesses([c for c, _ in shown]))
        study = optuna.create_study(direction="maximize", sampler=sampler)
        dists = {name: CategoricalDistribution(labels)
                 for name, labels in self.space.choices().items()}
        for t in trials:
            params = view(t.choice)
            if params is None or set(params) != set(dists) or any(
                    params[k] not in dists[k].choices for k in dists):
                continue   # a value the space no longer has (resumed with --force)
            study.add_trial(optuna.trial.create_trial(
                params=params, distributions=dists,
                state=TrialState.COMPLETE if t.ok else TrialState.FAIL,
                value=t.score if t.ok else None))
        return study, dists

    def _guesses(self, valid: list[Choice]) -> list[float] | None:
        """The kernel model's guess for each valid config (``auto``'s prior mean), or None
        when the kernel has no model or the sampler declares no use for it."""
        if not self.sampler_caps.uses_model or not valid:
            return None
        env = self.facts.env()
        guesses = [self.kernel.model(self.space.resolve(c, env, self.facts.max_footprint),
                                     self.facts.sms) for c in valid]
        return None if any(g is None for g in guesses) else [float(g) for g in guesses]

    def _sampler_view(self, choice: Mapping[str, str]) -> dict[str, str] | None:
        """A stored (per-axis) choice as the sampler sees it: zipped axes as one label."""
        try:
            return self.space.contract(self.space._complete(choice))
        except KeyError:
            return None

    def _record_invalid(self, number: int, choice: Choice, reason: str) -> TrialRecord:
        record = TrialRecord(number=number, choice=choice, status=TrialStatus.INVALID,
                             reason=reason, started=now())
        self.store.append(record)
        return record

    def _measure(self, number: int, choice: Choice) -> TrialRecord:
        started, t0 = now(), time.perf_counter()
        config: Config | None = None
        try:
            config = self.space.resolve(choice, self.facts.env(), self.facts.max_footprint)
        except Invalid as err:
            result = TrialResult(TrialStatus.INVALID, str(err))
        else:
            if self.device.replays:
                result = self._replay(choice, config)
            else:
                result = self._run(config, number)
            if result.status is TrialStatus.OK:
                result = self._check_limits(config, number, result)
        return TrialRecord.from_result(number, choice, config, result, started,
                                       time.perf_counter() - t0)

    def _replay(self, choice: Choice, config: Config) -> TrialResult:
        """A recorded result; nothing is launched."""
        row = self.device.lookup(choice)  # type: ignore[attr-defined]
        if row is None:
            return TrialResult(TrialStatus.MISSING,
                               f"not in the replay table {self.device.path}")  # type: ignore
        if row.get("status", "ok") != "ok":
            return TrialResult(TrialStatus(row["status"]), "recorded as failed")
        samples = [float(x) for x in (row.get("samples_ms") or "").split()] or \
            [float(row["median_ms"])]
        stats = summarize(samples)
        seconds = stats.median * 1e-3
        return TrialResult(
            TrialStatus.OK, samples_ms=samples, stats=stats,
            stop_reason=StopReason(Stop.REPLAYED, "replayed"),
            gbps=throughput(self.kernel.bytes_moved(config.problem), seconds) / 1e9,
            gflops=throughput(self.kernel.flops(config.problem), seconds) / 1e9)

    def _run(self, config: Config, number: int) -> TrialResult:
        try:
            sets = self._buffer_sets(config)
        except torch.cuda.OutOfMemoryError as err:
            return TrialResult(TrialStatus.OUT_OF_RESOURCES, f"allocating the inputs: {err}")
        generator = torch.Generator(device=self.device.torch_device)
        generator.manual_seed(self.space.sampler.seed * 1_000_003 + number)
        return run_trial(self.kernel, sets, config, self.device, self.measure, generator,
                         l2_bytes=self._l2_bytes, best=self._best_by_problem.get(
                             (config.problem, config.cache)), duty=self.duty)

    def _check_limits(self, config: Config, number: int, result: TrialResult) -> TrialResult:
        """A result beyond the device's physical bounds or the calibrated ceiling is
        re-verified and re-timed once.  If it is still beyond a physical bound, the trial
        fails as impossible; still above the ceiling, it is flagged and cannot win."""
        first = self._beyond(config, result)
        if first is None:
            return result
        again = self._run(config, number)
        if again.status is not TrialStatus.OK:
            return again
        still = self._beyond(config, again)
        if still is None:
            again.flags.append(TrialFlag(
                Flag.RETIMED, f"re-timed: the first run was beyond a limit ({first[0]})"))
        elif still[1]:
            again.status = TrialStatus.IMPOSSIBLE
            again.reason = f"{still[0]}; still beyond {RECHECKED}"
        else:
            again.flags.append(TrialFlag(
                Flag.SUSPICIOUS, f"suspicious: {still[0]}, {RECHECKED}; it cannot win"))
        return again

    def _beyond(self, config: Config, result: TrialResult) -> tuple[str, bool] | None:
        """(why, whether physically impossible) for a result beyond a limit, else None."""
        problem = config.problem
        if result.stats is not None:
            why = self.bounds.beyond(self.kernel.bytes_moved(problem),
                                     self.kernel.flops(problem), problem.dtype,
                                     result.stats.median * 1e-3)
            if why is not None:
                return why, True
        if self.ceilings is None or not self.ceilings.copy or not result.gbps:
            return None
        ceiling = self.ceilings.bandwidth(problem.footprint, config.cache)
        if result.gbps <= SUSPICIOUS * ceiling:
            return None
        return (f"{result.gbps:.4g} GB/s is above the calibrated {ceiling:.4g} GB/s ceiling "
                "at this footprint"), False

    def _choose_winners(self, trials: list[TrialRecord], problems: list[ProblemKey]
                        ) -> list[FinalRecord]:
        """The finals of ``problems``, one record each as soon as it is done: a run stopped
        halfway keeps those finished, and the next one measures the rest."""
        groups: dict[ProblemKey, list[TrialRecord]] = {}
        for t in trials:
            if t.ok and problem_of(t) in problems:
                groups.setdefault(problem_of(t), []).append(t)
        newest = max(t.number for t in trials)
        finals = []
        for key in problems:
            chosen = finalists(groups.get(key, []))
            if not chosen:
                continue
            record = remeasure(chosen, self._measure_again, self._bytes_of,
                               seed=self.space.sampler.seed,
                               baseline=self._baseline_again(chosen[0]),
                               duty=self.duty.describe() if self.duty else "")
            record.after_trial = newest
            self.store.append(record)
            finals.append(record)
        return finals

    def _remeasure_baseline(self, done: Mapping[tuple[str, ...], TrialRecord]
                            ) -> DriftRecord | None:
        """Measure the one-at-a-time baseline again at the end: its drift over the study."""
        base = done.get(_key(dict(self.space.sampler.baseline)))
        if base is None or not base.ok or base.stats is None:
            return None
        samples = self._measure_again(base, self.measure.rule())
        stats = summarize(samples)
        record = DriftRecord(
            number=base.number, samples_ms=samples, stats=stats,
            drift_pct=100 * (stats.median - base.stats.median) / base.stats.median)
        self.store.append(record)
        return record

    def _config_of(self, t: TrialRecord) -> Config:
        return self.space.resolve(t.choice, self.facts.env(), self.facts.max_footprint)

    def _bytes_of(self, t: TrialRecord) -> int:
        return self.kernel.bytes_moved(self._config_of(t).problem)

    def _measure_again(self, t: TrialRecord, rule: StopRule) -> list[float]:
        config = self._config_of(t)
        sets = self._buffer_sets(config)
        rotation = itertools.cycle(sets)
        return self.device.measure(lambda: self.kernel.launch(next(rotation), config),
                                   warmup=2, rule=rule, flush=config.cache == "cold",
                                   batch=self.measure.batch, graph=self.measure.graph,
                                   duty=self.duty).timing.samples

    def _baseline_again(self, t: TrialRecord
                        ) -> tuple[str, Callable[[StopRule], list[float]]] | None:
        """The torch baseline of ``t``'s problem as one more entrant of the finals' rounds,
        so "% of torch" compares two measurements taken under the same conditions."""
        if self.kernel.baseline_name is None:
            return None
        config = self._config_of(t)
        buffers = self._buffer_sets(config)[0]

        def measure(rule: StopRule) -> list[float]:
            return self.device.measure(lambda: self.kernel.baseline(buffers), warmup=2,
                                       rule=rule, flush=config.cache == "cold",
                                       duty=self.duty).timing.samples
        return self.kernel.baseline_name, measure

    @property
    def _l2_bytes(self) -> int:
        """The L2 size that decides 'L2-resident' (0 where there is no GPU L2 to speak of)."""
        return self.facts.l2_bytes if self.device.torch_device == "cuda" else 0

    def _buffer_sets(self, config: Config) -> list[Buffers]:
        """One set of buffers; for warm runs of an L2-sized footprint, enough sets to
        cover twice the L2, so launches rotate instead of replaying the cache."""
        problem = config.problem
        count = 1
        working_set = self.kernel.working_set(problem)
        if config.cache == "warm" and self._l2_bytes and working_set <= self._l2_bytes:
            count = min(MAX_ROTATION, -(-2 * self._l2_bytes // max(working_set, 1)) + 1)
        key = (problem, count)
        if key not in self._buffers:
            size = count * working_set
            if self._buffer_bytes + size > _buffer_budget(self.device):
                self._buffers.clear()          # one problem at a time when memory is short
                self._buffer_bytes = 0
            self._buffers[key] = [self.kernel.allocate(problem, self.device.torch_device)
                                  for _ in range(count)]
            generator = torch.Generator(device=self.device.torch_device)
            for buffers in self._buffers[key][1:]:
                self.kernel.randomize(buffers, generator)
            self._buffer_bytes += size
        self._measure_baseline(self._buffers[key][0], config.cache)
        return self._buffers[key]

    def _measure_baseline(self, buffers: Buffers, cache: str) -> None:
        problem = buffers.problem
        key = (problem.dtype, problem.footprint, cache)
        if self.kernel.baseline_name is None or key in self._baselines:
            return
        generator = torch.Generator(device=self.device.torch_device)
        generator.manual_seed(self.space.sampler.seed)
        self.kernel.randomize(buffers, generator)
        measured = self.device.measure(lambda: self.kernel.baseline(buffers),
                                       warmup=self.measure.warmup, rule=self.measure.rule(),
                                       flush=cache == "cold", duty=self.duty)
        samples = measured.timing.samples
        stats = summarize(samples)
        gbps = throughput(self.kernel.bytes_moved(problem), stats.median * 1e-3) / 1e9
        record = BaselineRecord.from_samples(
            self.kernel.baseline_name, problem.dtype, problem.footprint, samples, stats, gbps,
            cache=cache, stop_reason=measured.timing.stop_reason)
        self.store.append(record)
        self._baselines[key] = record


def _buffer_budget(device: Device) -> int:
    if device.torch_device == "cuda":
        return int(torch.cuda.get_device_properties(0).total_memory * 0.4)
    return 1 << 30


def _key(choice: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(f"{k}={v}" for k, v in sorted(choice.items()))


def _tell(study: optuna.Study, trial: optuna.Trial, record: TrialRecord) -> None:
    if record.ok:
        study.tell(trial, record.score)
    else:
        study.tell(trial, state=TrialState.FAIL)


def _best(trials: list[TrialRecord]) -> TrialRecord | None:
    ok = [t for t in trials if t.ok]
    return max(ok, key=lambda t: t.score) if ok else None
