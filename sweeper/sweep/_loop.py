"""The loop of a sweep: the sampler proposes, a trial measures, the journal keeps, the
sampler learns, until a budget says stop; then the drift check and the finals.

Each of those steps is a module of its own; this one only asks and tells.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

import optuna
import torch

from sweeper.ceilings import SUSPICIOUS, Ceilings
from sweeper.devices import Device
from sweeper.errors import ContextLost
from sweeper.finals import FinalRecord, Winners, finalists, problem_of, remeasure
from sweeper.kernels import Buffers, Kernel
from sweeper.measure import (
    DEFAULT_DUTY,
    Duty,
    Flag,
    Stop,
    StopReason,
    StopRule,
    TrialFlag,
    power_bound,
    summarize,
    throughput,
)
from sweeper.plugins import sampler_capabilities
from sweeper.space import Config, Invalid, Problem, Space
from sweeper.store import (
    BaselineRecord,
    DriftRecord,
    DutyRecord,
    FirstMeasurement,
    ProblemKey,
    StudyStore,
    TrialRecord,
)
from sweeper.study import Choice, enumerate_choices, finals_wanted, now
from sweeper.sweep._budget import Budgets, StopFlag, best_of
from sweeper.sweep._optuna import Distributions, key_of, model_guesses, rebuild_study, tell
from sweeper.sweep._summary import Reporter, SilentReporter, SweepSummary
from sweeper.sweep._watchdog import watchdog
from sweeper.trial import TrialResult, TrialStatus, run_trial

MAX_ROTATION = 16
RECHECKED = "after re-verifying and re-timing"


@dataclass
class _Run:
    """One ``Sweep.run`` as it goes: the Optuna study, what the journal holds by key, the
    budgets and the summary, and the number the next trial gets."""

    study: optuna.Study
    dists: Distributions
    done: dict[tuple[str, ...], TrialRecord]
    budgets: Budgets
    summary: SweepSummary
    number: int


class Sweep:
    """A sweep of ``space`` with ``kernel`` on ``device``, kept in ``store``.

    The settings (budgets, whether to run the finals, ...) are attributes that may be
    changed before :meth:`run`.
    """

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
        """Measure what the sampler proposes until a budget stops the sweep, then measure
        the baseline again (drift) and run the finals of each problem without a winner.
        Every trial is in the journal as soon as it is measured; a resumed run measures
        no finished config again."""
        t0 = time.perf_counter()
        run = self._start(t0)
        try:
            run.summary.stopped_by = self._loop(run)
            self._drift_and_finals(run)
        finally:
            self.reporter.finish()
            self.store.close()
        summary = run.summary
        summary.skipped = sum(1 for t in summary.trials[summary.resumed:]
                              if t.status is TrialStatus.INVALID)
        summary.wall_s = time.perf_counter() - t0
        return summary

    def _start(self, t0: float) -> _Run:
        """Read the journal, rebuild the sampler's study from it, record the ruled-out
        configs (for a sampler that records them) and start the reporter."""
        valid, invalid = enumerate_choices(self.space, self.facts.env(), self.facts.max_footprint)
        trials, baselines = self.store.records()
        self._baselines = {(b.dtype, b.footprint, b.cache): b for b in baselines}
        summary = SweepSummary(resumed=len(trials), trials=list(trials), best=best_of(trials))
        self._resume_duty(summary)
        study, dists = rebuild_study(self.space, valid, trials, priors=self.priors,
                                     guess=self._guesses)
        done = {t.key(): t for t in trials}
        number = max((t.number for t in trials), default=-1) + 1
        if getattr(study.sampler, "records_invalid", False):
            number = self._record_invalid(invalid, done, summary, number)
        measured = sum(1 for t in done.values() if t.status is not TrialStatus.INVALID)
        budgets = Budgets(self.space.budget, self.stop, max_trials=self.max_trials,
                          max_time_s=self.max_time_s, ceilings=self.ceilings,
                          valid=len(valid), measured=measured, t0=t0)
        planned = len(getattr(study.sampler, "plan", valid))
        total = planned if self.max_trials is None else min(planned, self.max_trials)
        self.reporter.start(total=total, done=min(measured, total))
        for t in done.values():
            self._note_best(t)
        return _Run(study, dists, done, budgets, summary, number)

    def _record_invalid(self, invalid: list[tuple[Choice, str]],
                        done: dict[tuple[str, ...], TrialRecord], summary: SweepSummary,
                        number: int) -> int:
        """Record each ruled-out config the journal lacks, once; it is never launched.
        Returns the number the next trial gets."""
        for choice, reason in invalid:
            if key_of(choice) not in done:
                record = TrialRecord(number=number, choice=choice, status=TrialStatus.INVALID,
                                     reason=reason, started=now())
                self.store.append(record)
                done[record.key()] = record
                summary.trials.append(record)
                number += 1
        return number

    def _loop(self, run: _Run) -> str:
        """Ask, measure, keep, tell, until a budget stops it; returns why it stopped."""
        summary = run.summary
        while not (stopped_by := run.budgets.stopped_by(run.study, summary.best)):
            trial = run.study.ask(run.dists)
            choice = self.space.expand({k: str(v) for k, v in trial.params.items()})
            if key_of(choice) in run.done:    # answered from the journal, never re-measured
                tell(run.study, trial, run.done[key_of(choice)])
                summary.repeated += 1
                run.budgets.repeated()
                continue
            run.budgets.proposed()
            record = self._trial(run, choice)
            tell(run.study, trial, record)
            if record.status is TrialStatus.INVALID:
                continue
            summary.measured += 1
            summary.saved_ms += record.saved_ms
            self._note_best(record)
            summary.best = run.budgets.counted(record, summary.best)
            self.reporter.trial(record, summary.best)
        return stopped_by

    def _trial(self, run: _Run, choice: Choice) -> TrialRecord:
        """Measure ``choice`` as the next trial under the watchdog and keep it.  A crash
        that left the device unusable is kept, then ends this process (ContextLost)."""
        number = run.number
        with watchdog(self.store, number, choice, self.measure.timeout_s,
                      None if self.device.replays else self.on_hang,
                      partial(self._resolved, choice)):
            record = self._power_check(number, choice, self._measure(number, choice),
                                       run.summary)
        lost = record.status is TrialStatus.CRASHED and not self.device.healthy()
        if lost:
            record = dataclasses.replace(record, reason=(
                f"{record.reason} (it left the CUDA context unusable; the sweep went "
                "on in a fresh process)"))
        run.number += 1
        self.store.append(record)
        run.done[record.key()] = record
        run.summary.trials.append(record)
        if lost:      # recorded; nothing more can run in this process
            self.reporter.trial(record, run.summary.best)
            raise ContextLost(record.number, record.reason or "")
        return record

    def _drift_and_finals(self, run: _Run) -> None:
        """Unless interrupted: the one-at-a-time baseline measured again (its drift over
        the study), then the finals of each problem without a current final, and no
        other."""
        summary, trials = run.summary, list(run.done.values())
        if self.run_drift and not self.stop.set and summary.measured and \
                self.sampler_caps.takes_baseline:
            summary.drift = self._remeasure_baseline(run.done)
        todo = Winners.of(self.store).missing(trials) \
            if self.run_finals and not self.stop.set else []
        if todo:
            t_finals = time.perf_counter()
            summary.finals = self._choose_winners(trials, todo)
            summary.finals_s = time.perf_counter() - t_finals

    def _guesses(self, valid: list[Choice]) -> list[float] | None:
        """The kernel model's guess for each valid config, or None when the kernel has no
        model or the sampler declares no use for it."""
        if not self.sampler_caps.uses_model or not valid:
            return None
        return model_guesses(self.kernel, self.space, self.facts, valid)

    def _resolved(self, choice: Choice) -> Config | None:
        """``choice``'s config, or None where a constraint or value rules it out."""
        try:
            return self.space.resolve(choice, self.facts.env(), self.facts.max_footprint)
        except Invalid:
            return None

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
        base = done.get(key_of(dict(self.space.sampler.baseline)))
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
