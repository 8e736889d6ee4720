"""The loop of a sweep: the sampler proposes, a trial measures, the journal keeps, the
sampler learns, until a budget says stop; then the drift check and the finals.

Each of those steps is a module of its own; this one only asks and tells.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence

from sweeper.ceilings import Ceilings
from sweeper.devices import Device
from sweeper.finals import Winners
from sweeper.kernels import Kernel
from sweeper.plugins import sampler_capabilities
from sweeper.samplers._exhaustive import PlannedSampler
from sweeper.space import Config, Configs, Invalid, Space
from sweeper.store import (
    BaselineRecord,
    Claim,
    DutyRecord,
    GpuSlot,
    Storage,
    TrialRecord,
    key_of,
)
from sweeper.study import Choice, finals_wanted, now
from sweeper.sweep._asking import Asking, Run
from sweeper.sweep._bench import Bench
from sweeper.sweep._budget import Budgets, StopFlag, best_of
from sweeper.sweep._claims import Claims
from sweeper.sweep._compile_ahead import CompileAhead, CompileOptions
from sweeper.sweep._drift import measure_drift
from sweeper.sweep._finals import run_finals, run_finals_everywhere
from sweeper.sweep._limits import Limits
from sweeper.sweep._optuna import model_guesses, rebuild_study, tell
from sweeper.sweep._outbox import Outbox
from sweeper.sweep._summary import Reporter, SilentReporter, SweepSummary
from sweeper.sweep._timing import Timeline
from sweeper.sweep._workers import AskedAhead, InlineWorker, Job, Outcome, Worker, Workers
from sweeper.trial import TrialStatus


class Sweep(Asking):
    """A sweep of ``space`` with ``kernel`` on ``device``, kept in ``store``.

    The settings (budgets, whether to run the finals, ...) are attributes that may be
    changed before :meth:`run`.
    """

    def __init__(self, space: Space, kernel: Kernel, device: Device, store: Storage, *,
                 reporter: Reporter | None = None, stop: StopFlag | None = None,
                 max_trials: int | None = None, max_time_s: float | None = None,
                 ceilings: Ceilings | None = None, finals: bool = True,
                 priors: list[dict[str, str]] | None = None,
                 on_hang: Callable[[TrialRecord], None] | None = None,
                 gpus: Sequence[int] | None = None, processes: bool = False,
                 claims: Claims | None = None, compile: CompileOptions | None = None
                 ) -> None:
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
        self.priors = priors or []
        #: called (on a watchdog thread) after a trial ran past ``measure.timeout`` and was
        #: recorded as such; ``sweeper run`` re-executes itself there.  None: no watchdog.
        self.on_hang = on_hang
        #: one worker per GPU index (``--gpus``); None: one worker on the device as opened
        self.gpus = list(gpus) if gpus is not None else None
        #: each worker a process of its own (a crash or hang ends that worker, not the
        #: sweep), else measuring in this process
        self.processes = processes
        #: shared with other workers: each config is claimed before it is measured and
        #: kept through its claim (:mod:`sweeper.sweep._claims`).  None: this run alone.
        self.claims = claims
        #: how configs are compiled ahead (None: they are not)
        self.compile = compile or CompileOptions()
        self.ceilings = ceilings
        self.bounds = device.bounds()
        #: what the sampler declares it needs or offers (finals, a baseline, guesses)
        self.sampler_caps = sampler_capabilities(space.sampler.name)
        self.run_finals = finals and finals_wanted(space, device)
        self.run_drift = not device.replays

    def run(self) -> SweepSummary:
        """Measure what the sampler proposes until a budget stops the sweep, then measure
        the baseline again (drift) and run the finals of each problem without a winner
        (with worker processes: in them, on every GPU left at once, before they close).  Every
        trial is journaled as soon as it is measured; a resume measures none again."""
        t0 = time.perf_counter()
        try:
            run = self._start(t0)       # failing, it too ends the bar, closes the store
            try:
                run.summary.stopped_by = self._loop(run)
                run.summary.timing = run.timeline.breakdown(
                    time.perf_counter(), run.ahead.lines(t0) if run.ahead else [])
                run.summary.dropped = run.workers.dropped
                if run.workers.finals_in_workers:
                    self._finals(run, in_workers=True)
            finally:
                run.workers.close()
                if run.ahead is not None:
                    run.ahead.close()
            self._drift(run)
            if not run.workers.finals_in_workers:
                self._finals(run, in_workers=False)
        finally:
            self.reporter.finish()
            self.store.close()
        summary = run.summary
        summary.skipped = sum(1 for t in summary.trials[summary.resumed:]
                              if t.status is TrialStatus.INVALID)
        summary.wall_s = time.perf_counter() - t0
        summary.duty = run.bench.power.note
        return summary

    def _start(self, t0: float) -> Run:
        """Read the journal and start the workers; while their processes import and open
        their GPUs, set up the rest (:meth:`_set_up`); then wait until they are ready."""
        trials, baselines = self.store.records()
        bench = Bench(self.space, self.kernel, self.device, self.store, measure=self.measure,
                      facts=self.facts, limits=Limits(self.kernel, self.bounds, self.ceilings),
                      baselines=baselines)
        bench.power.resume()
        workers, run = self._workers(bench, baselines), None
        try:
            run = self._set_up(t0, trials, bench, workers)
            for index, worker in enumerate(workers.all):
                worker.wait_ready()
                run.timeline.ready(index, worker.launched, worker.started())
        except BaseException:
            workers.close()
            if run is not None and run.ahead is not None:
                run.ahead.close()
            raise
        return run

    def _set_up(self, t0: float, trials: list[TrialRecord], bench: Bench,
                workers: Workers) -> Run:
        """Rebuild the sampler's study from the journal, record the ruled-out configs (for
        a sampler that records them), start the reporter and the compile pool."""
        valid = Configs(self.space, self.facts.env(), self.facts.max_footprint)
        summary = SweepSummary(resumed=len(trials), trials=list(trials), best=best_of(trials))
        study, dists = rebuild_study(self.space, valid, trials, priors=self.priors,
                                     guess=lambda configs: self._guesses(configs.expanded_all))
        done = {t.key(): t for t in trials}
        number = max((t.number for t in trials), default=-1) + 1
        if self.sampler_caps.records_invalid:
            number = self._record_invalid(((c, str(why)) for c, why in valid.ruled_out()),
                                          done, summary, number)
        measured = sum(1 for t in done.values() if t.status is not TrialStatus.INVALID)
        budgets = Budgets(self.space.budget, self.stop, max_trials=self.max_trials,
                          max_time_s=self.max_time_s, ceilings=self.ceilings,
                          valid=len(valid), measured=measured, t0=t0)
        plan = self._plan(study.sampler)
        planned = plan.size if plan is not None else len(valid)
        total = planned if self.max_trials is None else min(planned, self.max_trials)
        self.reporter.start(total=total, done=min(measured, total))
        for t in done.values():
            bench.note_best(t)
        ahead = CompileAhead.start(self.space, plan, self.compile, len(self.gpus or [0]),
                                   self._resolved)
        timeline = Timeline(t0)
        outbox = Outbox(self.store, self.reporter, timeline,
                        defer=self.processes and self.claims is None)
        asked = AskedAhead(self.processes and self.claims is None and
                           self.sampler_caps.asks_ahead)
        return Run(study, dists, done, budgets, summary, number, bench, workers, timeline,
                    outbox, ahead, asked=asked)

    def _plan(self, sampler: object) -> PlannedSampler | None:
        """The sampler, where its factory declares a plan (``plans``); else None."""
        if not self.sampler_caps.plans:
            return None
        if not isinstance(sampler, PlannedSampler):
            raise TypeError(f"sampler {self.space.sampler.name!r} declares plans=True but "
                            f"is {type(sampler).__name__}, not a PlannedSampler")
        return sampler

    def _workers(self, bench: Bench, baselines: list[BaselineRecord]) -> Workers:
        """One worker per GPU: in this process (sharing ``bench``), or each a process of
        its own, launched side by side (not waited for)."""
        indices = self.gpus if self.gpus is not None else [0]
        if not self.processes:
            return Workers([InlineWorker(
                bench, self.store, self.measure.timeout_s, self.on_hang, self._resolved,
                None if self.gpus is None else GpuSlot(i, self.facts.name))
                for i in indices])
        from sweeper.sweep._process import ProcessWorker, Setup
        setup = Setup(self.space, self.device.opened_as or self.device.name, self.measure,
                      self.ceilings, [*baselines, *self.store.read(DutyRecord)],
                      list(sys.path))
        workers = [ProcessWorker(setup, i, gpu_env=self.device.measures_gpu,
                                 env=dict(self.device.sets_env), resolve=self._resolved)
                   for i in indices]
        try:
            for worker in workers:
                worker.launch()
        except BaseException:
            for worker in workers:
                worker.close()
            raise
        return Workers(workers, wait_on_close=self.sampler_caps.takes_baseline)

    def _record_invalid(self, invalid: Iterable[tuple[Choice, str]],
                        done: dict[tuple[str, ...], TrialRecord], summary: SweepSummary,
                        number: int) -> int:
        """Record each ruled-out config the journal lacks, once; it is never launched.
        Alone, they are journaled at one go (one fsync, not one per config); shared,
        each through its claim.  Returns the number the next trial gets."""
        fresh: list[TrialRecord] = []
        for choice, reason in invalid:
            if key_of(choice) in done:
                continue
            record = TrialRecord(number=number, choice=choice, reason=reason,
                                 status=TrialStatus.INVALID, started=now())
            if self.claims is not None:
                kept = self._record(record)
                if kept is None:        # another worker recorded it
                    continue
                record = kept
            fresh.append(record)
            done[record.key()] = record
            number += 1
        if self.claims is None:
            self.store.append_all(fresh)
        summary.trials.extend(fresh)
        return number

    def _loop(self, run: Run) -> str:
        """Give each free worker a config, keep each outcome as it comes, until a budget
        stops the sweep and the trials in flight are kept; returns why it stopped."""
        stopped_by = ""
        while True:
            try:
                self._hand_asked(run, run.workers.free())
                if not stopped_by:
                    stopped_by = self._dispatch(run)
            finally:
                run.outbox.flush()
            if not run.workers.busy():
                if not stopped_by and run.held and self.claims is not None:
                    with run.timeline.phase("wait"):    # others' claims outstanding
                        time.sleep(self.claims.poll_s)
                    continue
                self._drop_asked(run)
                run.outbox.defer = False        # the finals' records are journaled at once
                return stopped_by
            with run.timeline.phase("wait"):
                worker, job, outcome = run.workers.next_outcome()
            if not outcome.lost:                # it measures on while this one is kept
                self._hand_asked(run, [worker])
            run.timeline.job(run.workers.lane(worker), outcome.stamps)
            self._keep(run, worker, job, outcome)

    def _keep(self, run: Run, worker: Worker | None, job: Job, outcome: Outcome) -> None:
        """Keep ``job``'s outcome: the records measuring added, then the trial's; tell the
        sampler; count it; journal and report it (deferred: see :mod:`._outbox`).  A
        worker the trial lost is replaced, or its GPU dropped (:mod:`._drop`); in this
        process the trial is kept, then ContextLost ends it."""
        record, summary = outcome.record, run.summary
        self._keep_extras(run, outcome.extras)
        if self.claims is not None:     # the record keeps the number its claim gives it
            with run.timeline.phase("journal"):
                record = self._record(record) or record    # None: the claim was lost
        else:
            run.outbox.journal(record)
        run.done[record.key()] = record
        summary.trials.append(record)
        if run.ahead is not None:
            run.ahead.kept(record)
        with run.timeline.phase("tell"):
            for trial in run.waiting.pop(key_of(job.choice), []):
                tell(run.study, trial, record)
        if record.status is not TrialStatus.INVALID:
            summary.measured += 1
            summary.saved_ms += record.saved_ms
            run.bench.note_best(record)
            summary.best = run.budgets.counted(record, summary.best)
            run.outbox.report(record, summary.best)
        run.outbox.kept(at_once=outcome.lost)     # before a fresh worker starts
        if outcome.lost and worker is not None:
            with run.timeline.phase("restart"):
                run.workers.replace(worker, record)

    def _keep_extras(self, run: Run, extras: list[object]) -> None:
        """A worker process's baselines and duty switch, each kept once (two workers may
        both measure a baseline, or both see the power cap), ahead of the trial's record."""
        for extra in extras:
            if isinstance(extra, BaselineRecord):
                if extra.problem in run.bench.baselines.known:
                    continue
                run.bench.baselines.known[extra.problem] = extra
            elif isinstance(extra, DutyRecord):
                if run.bench.power.duty is not None:
                    continue
                run.bench.power.duty, run.bench.power.note = extra.duty, extra.note
            run.outbox.journal(extra)
        run.outbox.kept()

    def _record(self, record: TrialRecord) -> TrialRecord | None:
        """Append ``record``, or with claims record it through its claim (under the number
        the store gives it; None when the claim was lost or never taken)."""
        if self.claims is None:
            self.store.append(record)
            return record
        if record.status is TrialStatus.INVALID and \
                self.claims.take(record.key()) is not Claim.TAKEN:
            return None
        return self.claims.keep(record.key(), record)

    def _drift(self, run: Run) -> None:
        """Unless interrupted: the one-at-a-time baseline measured again (its drift over
        the study), by this process."""
        if self.run_drift and not self.stop.set and run.summary.measured and \
                self.sampler_caps.takes_baseline:
            run.summary.drift = measure_drift(self.space, run.done, run.bench, self.store)

    def _finals(self, run: Run, in_workers: bool) -> None:
        """Unless interrupted: the finals of each problem without a current final, in the
        workers (on every GPU left, at once, before they close) or in this process."""
        trials = list(run.done.values())
        todo = Winners.of(self.store).missing(trials) \
            if self.run_finals and not self.stop.set else []
        if not todo:
            return
        t_finals, summary, seed = time.perf_counter(), run.summary, self.space.sampler.seed
        if in_workers:
            summary.finals, summary.finals_lost = run_finals_everywhere(
                trials, todo, run.workers, self.store, seed, run.bench.power.duty,
                lambda extras: self._keep_extras(run, extras))
        else:
            summary.finals = run_finals(trials, todo, run.bench, self.store, seed)
        summary.finals_s = time.perf_counter() - t_finals

    def _guesses(self, valid: Sequence[Choice]) -> list[float] | None:
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
