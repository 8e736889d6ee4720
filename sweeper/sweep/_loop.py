"""The loop of a sweep: the sampler proposes, a trial measures, the journal keeps, the
sampler learns, until a budget says stop; then the drift check and the finals.

:meth:`Sweep._loop` is the loop, read top to bottom: hand each free worker a config
(:meth:`Sweep._dispatch`: ask the sampler, or take over a config another worker let go),
wait for the next outcome, keep it (:meth:`Sweep._keep`: journal, report, tell the
sampler), until a budget says stop.  A config whose worker process was killed from outside
(``retry``: no fault of the kernel's) is measured again once, before the sampler's next
proposal: those an earlier run left at the start, this run's once a worker is free (after
a config asked for ahead), so a trial budget spends its trials on them first and the
finals choose among them.  A sampler that may be asked while configs are being measured
(``asks_ahead``) is also asked for one more config per busy worker, kept by the
coordinator and handed over the moment that worker's outcome arrives
(:class:`~sweeper.sweep._workers.AskedAhead`); one that learns then proposes from every
outcome but the one still measuring.  What measures, keeps, reports, compiles ahead and
claims is a module of its own each; this one only asks and tells.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import optuna
from optuna.trial import TrialState

from sweeper.busy import busy
from sweeper.ceilings import Ceilings
from sweeper.core import bulk
from sweeper.core._model import PROBLEM_AXES
from sweeper.core._units import counted
from sweeper.devices import Device, DeviceFacts
from sweeper.errors import RefusalFailed, SourceEdited
from sweeper.finals import problem_of
from sweeper.kernels import Kernel
from sweeper.kernels._watch import SourceWatch
from sweeper.outcome import COMPLETE, problem_text, tried_all_but
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
from sweeper.study import Choice, finals_wanted, measure_edited, now
from sweeper.sweep._bench import Bench
from sweeper.sweep._budget import Budgets, StopFlag, best_of
from sweeper.sweep._claims import Claims, Held
from sweeper.sweep._compile_ahead import (
    CompileAhead,
    CompileOptions,
    ModelHints,
    SpreadHints,
)
from sweeper.sweep._drift import measure_drift
from sweeper.sweep._finals import run_finals
from sweeper.sweep._gpu_check import GpuCheck
from sweeper.sweep._limits import Limits
from sweeper.sweep._optuna import (
    Distributions,
    build_sampler,
    in_space,
    model_guesses,
    rebuild_study,
    sampler_view,
    tell,
    waiting_on,
)
from sweeper.sweep._outbox import Outbox
from sweeper.sweep._summary import Reporter, SilentReporter, SweepSummary
from sweeper.sweep._timing import Timeline
from sweeper.sweep._workers import AskedAhead, InlineWorker, Job, Outcome, Worker, Workers
from sweeper.trial import TrialStatus, trials_counted
from sweeper.winners import Sources, Winners


@dataclass(frozen=True)
class Sampling:
    """The sampler a sweep asks, with what it was built from: the valid configs and the
    kernel model's guess of each (None: no model, or a sampler without use for it), which
    also order the compiles ahead.  The engine builds it before it writes the study, so a
    sampler factory that fails leaves no new study behind and a resumed one unchanged."""

    valid: Configs
    guesses: list[float] | None
    sampler: optuna.samplers.BaseSampler

    @classmethod
    def build(cls, space: Space, kernel: Kernel, facts: DeviceFacts,
              priors: list[dict[str, str]]) -> Sampling:
        """The sampler of ``space`` over its configs valid on a device with ``facts``,
        starting from ``priors``; a :class:`SweeperError` where its factory fails."""
        valid = Configs(space, facts.env(), facts.max_footprint)
        # the kernel model's guesses: none where the sampler declares no use for them
        uses = sampler_capabilities(space.sampler.name).uses_model and valid.expanded_all
        guesses = model_guesses(kernel, space, facts, valid.expanded_all) if uses else None
        return cls(valid, guesses, build_sampler(space, valid, priors=priors, guesses=guesses))


@dataclass
class Run:
    """One ``Sweep.run`` as it goes: the Optuna study, what the journal holds by key, the
    budgets, the summary, the number the next trial gets, what measures it, where the
    time goes, and what was kept but is not yet journaled or reported."""

    study: optuna.Study
    dists: Distributions
    done: dict[tuple[str, ...], TrialRecord]
    budgets: Budgets
    summary: SweepSummary
    number: int
    bench: Bench
    workers: Workers
    timeline: Timeline
    outbox: Outbox
    #: compiles the configs the sampler will propose next (``None``: the worker compiles)
    ahead: CompileAhead | None = None
    #: the sampler's trials waiting on each config in flight (its first proposal and any
    #: repeat made before its outcome came; a trial or its number), told its record when
    #: it comes
    waiting: dict[tuple[str, ...], list[optuna.trial.Trial | int]] = field(
        default_factory=dict)
    #: configs asked for before a worker is free (none unless the sampler asks ahead)
    asked: AskedAhead = field(default_factory=lambda: AskedAhead(False))
    #: configs another live worker holds (shared sweeps only), by key: measured by this
    #: one if their holder lets them go unrecorded (:meth:`Sweep._take_over`)
    held: dict[tuple[str, ...], Held] = field(default_factory=dict)
    #: the study's trials measured on an earlier kernel source, which its trial budget
    #: does not count (:class:`~sweeper.winners.Sources`)
    earlier: int = 0
    #: which of the kernel's files was edited since the sweep took its source hash
    #: (None: none): no trial is kept after, and the sweep stops (:meth:`Sweep._keep`)
    edited: str | None = None
    #: the study's trials of this run's valid configs whose worker process was killed
    #: from outside, earlier runs' and this one's, by config key: their configs are
    #: measured again (``retry``), and a second such kill is the config's crash
    killed: dict[tuple[str, ...], TrialRecord] = field(default_factory=dict)
    #: of :attr:`killed`, the configs no worker was handed again yet, in the order they
    #: were killed, with the sampler's trials waiting on their outcome: measured before
    #: the sampler is asked for more (:meth:`Sweep._next_job`)
    retries: dict[tuple[str, ...], Held] = field(default_factory=dict)
    #: configs another worker recorded (shared sweeps only), which this run told the
    #: sampler failed and does not hold
    elsewhere: set[tuple[str, ...]] = field(default_factory=set)

    def pending(self) -> list[TrialRecord]:
        """The trials to be measured again (:attr:`killed`) whose config no worker
        measured again: those the next run measures first."""
        return [t for key, t in self.killed.items()
                if key not in self.done and key not in self.elsewhere]

    def again(self, *, here: bool = False) -> int:
        """How many configs :meth:`pending` holds; ``here``: only those this run's own
        trials left (the sampler proposed them: its records of them, ``retry``)."""
        own = {t.key() for t in self.summary.trials[self.summary.resumed:] if t.retry}
        return sum(1 for t in self.pending() if not here or t.key() in own)


class Sweep:
    """A sweep of ``space`` with ``kernel`` on ``device``, kept in ``store``.

    The settings (budgets, whether to run the finals, ...) are attributes that may be
    changed before :meth:`run`.
    """

    def __init__(self, space: Space, kernel: Kernel, device: Device, store: Storage, *,
                 reporter: Reporter | None = None, stop: StopFlag | None = None,
                 max_trials: int | None = None, max_time_s: float | None = None,
                 ceilings: Ceilings | None = None, finals: bool = True,
                 priors: list[dict[str, str]] | None = None,
                 on_hang: Callable[[TrialRecord, str], None] | None = None,
                 gpus: Sequence[int] | None = None, processes: bool = False,
                 claims: Claims | None = None, compile: CompileOptions | None = None,
                 gpu_check: GpuCheck | None = None, sampling: Sampling | None = None,
                 source_hash: str | None = None) -> None:
        self.space = space
        self.kernel = kernel
        self.device = device
        self.store = store
        self.reporter = reporter or SilentReporter()
        self.stop = stop or StopFlag()
        self.max_trials = max_trials if max_trials is not None else space.budget.trials
        self.max_time_s = max_time_s if max_time_s is not None else space.budget.time_s
        #: seconds of the time budget spent before :meth:`run` or kept for what follows it
        #: (a command's start-up): the budget bounds the whole command
        self.outside_s = 0.0
        #: what the command's report will take for a number of heatmaps and their cells
        #: (None: no report): the time budget keeps it for the heatmaps of the trials so far
        self.report_s: Callable[[int, int], float] | None = None
        #: what the first trial is expected to take (a compile from a cold cache), which the
        #: time budget keeps before it starts one
        self.first_trial_s = 0.0
        #: a final's host seconds per entrant-round beyond its launches, as this machine's
        #: last finals measured them (None: the finals' own figure), which the time budget
        #: keeps for the finals to come
        self.finals_overhead_s: float | None = None
        self.facts = device.facts()
        self.measure = device.measure_spec(space.measure)
        self.priors = priors or []
        #: called (on a watchdog thread) after a trial ran past ``measure.timeout``, with its
        #: record and the kernel's file edited since the sweep began ("": none, the trial
        #: recorded as timed out; else not recorded); ``sweeper run`` re-executes itself
        #: there.  None: no watchdog.
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
        #: on the interpreter, compiles configs for a GPU too and records a refusal as a
        #: GPU would (None: nothing compiled for a GPU)
        self.gpu_check = gpu_check
        self.ceilings = ceilings
        #: the sampler, built before the study was written (:meth:`Sampling.build`); None:
        #: built when the run starts.  A run takes it: the next one builds its own.
        self.sampling = sampling
        self.bounds = device.bounds()
        #: what the sampler declares it needs or offers (finals, a baseline, guesses)
        self.sampler_caps = sampler_capabilities(space.sampler.name)
        #: the kernel's source hash, which each trial records as the one it was measured on:
        #: ``source_hash`` (the one a sweep before this one in the run recorded, which a
        #: worker process holds its own kernel against), else the kernel's now
        self.source_hash = source_hash or kernel.source_hash()
        #: the files that source is read from, from now on: a trial that ends after one
        #: was edited may have been compiled from the edited text, and is not kept
        self.watch = SourceWatch(kernel.source_files())
        self.run_finals = finals and finals_wanted(space, device)
        self.run_drift = not device.replays
        #: ask for each busy worker's next config while its trial runs (the sampler
        #: declares ``asks_ahead``; worker processes, not shared).  An inline worker
        #: measures a config the moment it gets it, so there it gains nothing and only
        #: orders the asks as a worker process sees them: a replay benchmark sets it to
        #: count a search's trials as they go with worker processes.
        self.ask_ahead = (processes and claims is None and self.sampler_caps.asks_ahead)
        #: what the kernel said of each config asked before it is compiled ahead or for
        #: a GPU (:meth:`_launchable`), by key: its refusal, or None (it launches)
        self._refusals: dict[tuple[str, ...], str | None] = {}

    def run(self) -> SweepSummary:
        """Measure what the sampler proposes until a budget stops the sweep, then measure
        the baseline again (drift) and run the finals of each problem without a winner
        (with worker processes: in them, on every GPU left at once, before they close).  Every
        trial is journaled as soon as it is measured; a resume measures none again, but for
        those measured on an earlier kernel source and those whose worker process was
        killed from outside (:meth:`~sweeper.winners.Sources.done`), which it measures
        first, as it measures its own such trials' configs before the sampler's next
        proposal (their worker process killed again, the config's crash).
        An edit of the kernel's source while it runs stops it after the trials in flight,
        none of them kept, nor any later trial or final, nor the drift check:
        :class:`SourceEdited`, every trial and final before kept."""
        t0 = time.perf_counter()
        try:
            run = self._start(t0)       # failing, it too ends the bar, closes the store
            try:
                run.summary.stopped_by = self._loop(run)
                if self.stop.set:       # Ctrl-C or SIGTERM: the next run measures the rest
                    run.summary.left = run.budgets.left(run.study,
                                                        again=run.again(here=True))
                run.summary.again = run.again()
                spent = run.budgets.spent_trials
                if run.summary.again and self.max_trials is not None and \
                        spent >= self.max_trials:   # before them: a larger one measures them
                    run.summary.trials_for_again = spent + run.summary.again
                if run.summary.stopped_by == COMPLETE and run.summary.again:
                    # "complete" only where nothing is left: these are the next run's
                    run.summary.stopped_by = tried_all_but(run.summary.again)
                if run.edited is not None:
                    raise self._edited(run, run.edited)
                run.budgets.swept = True
                run.summary.timing = run.timeline.breakdown(
                    time.perf_counter(), (run.ahead.lines(t0) if run.ahead else []) +
                    (self.gpu_check.lines() if self.gpu_check else []))
                run.summary.compiles_s = run.ahead.compiled_s if run.ahead else []
                run.summary.dropped = run.workers.dropped
                if run.workers.finals_in_workers:
                    self._finals(run)
            finally:
                run.workers.close()
                if run.ahead is not None:
                    run.ahead.close()
            if not self._source_moved(run):
                self._drift(run)
            if not run.workers.finals_in_workers:
                self._finals(run)
            if run.edited is not None:          # during the finals, or before the drift
                raise self._edited(run, run.edited)
        finally:
            self.reporter.finish()
            self.store.close()
        summary = run.summary
        if self.max_time_s is not None and self.report_s is not None:
            summary.report_kept_s = run.budgets.keep_for_report()
        summary.skipped = sum(1 for t in summary.trials[summary.resumed:]
                              if t.status is TrialStatus.INVALID)
        summary.wall_s = time.perf_counter() - t0
        summary.duty = run.bench.power.note
        if not self.device.replays:
            summary.busy = busy(
                summary.trials[summary.resumed:], summary.finals, wall_s=summary.wall_s,
                finals_wall_s=summary.finals_s, gpus=len(run.workers.all),
                warmup=self.measure.warmup, warmup_time_s=self.measure.warmup_time_s,
                batch=self.measure.batch,
                repeated_s=sum(sum(w.repeated.values()) for w in
                               (summary.timing.workers if summary.timing else [])),
                label="gpu" if self.device.measures_gpu else self.device.name)
        return summary

    def _start(self, t0: float) -> Run:
        """Read the journal and start the workers; while their processes import and open
        their GPUs, set up the rest (:meth:`_set_up`); then wait until they are ready."""
        trials, baselines = self.store.records()
        bench = Bench(self.space, self.kernel, self.device, self.store, measure=self.measure,
                      facts=self.facts, limits=Limits(self.kernel, self.bounds, self.ceilings),
                      baselines=baselines)
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
        sampling = self.sampling or Sampling.build(self.space, self.kernel, self.facts,
                                                   self.priors)
        self.sampling = None
        valid, guessed = sampling.valid, sampling.guesses
        # a config measured only on an earlier kernel source (a resume with --force after
        # an edit) is not done: it is proposed, counted and measured again on this one
        sources = Sources.of(self.store.study_meta())
        kept = sources.done(trials)
        if self.claims is not None and sources.changed:
            self.claims.source = sources.now
        summary = SweepSummary(resumed=len(trials), trials=list(trials), best=best_of(kept))
        study, dists = rebuild_study(self.space, sampling.sampler, kept)
        done = {t.key(): t for t in kept}
        number = max((t.number for t in trials), default=-1) + 1
        if self.sampler_caps.records_invalid:
            with bulk():                    # a space of 10⁶ configs may rule out 10⁵
                number = self._record_invalid(((c, str(why)) for c, why in
                                               valid.ruled_out()), done, summary, number)
        measured = trials_counted(done.values())
        budgets = Budgets(self.space.budget, self.stop, max_trials=self.max_trials,
                          max_time_s=self.max_time_s, ceilings=self.ceilings,
                          valid=len(valid), measured=measured, t0=t0,
                          outside_s=self.outside_s)
        budgets.outside = measured - trials_counted(
            t for t in done.values() if valid.index_of(sampler_view(self.space, t.choice) or {})
            is not None)
        budgets.report_s, budgets.first_trial_s = self.report_s, self.first_trial_s
        if self.gpu_check is not None:
            check = self.gpu_check
            budgets.check_s = lambda: check.config_s
        budgets.chosen_axes = frozenset(a for a, labels in self.space.choices().items()
                                        if len(labels) > 1 and a not in PROBLEM_AXES)
        if self.run_finals:           # the time budget keeps time for the finals to come
            budgets.finals_duty, budgets.finals_round = bench.power.finals_duty, bench.round
            budgets.final_size = bench.final_size
            budgets.finals_overhead_s = self.finals_overhead_s
            entrants = self._in_space(kept)     # finalists on the kernel's source now
            missing = set(Winners.of(self.store).missing(entrants)) if entrants else set()
            owed = [t for t in entrants if problem_of(t) in missing]
        else:
            owed = []
        for t in owed:
            budgets.note(t)
        owed_ids = {id(t) for t in owed}
        for t in kept:         # the maps the report draws again if this run adds to them
            if id(t) not in owed_ids:
                budgets.note_kept(t)
        # the sampler, where its factory declares a plan (``plans``; checked when built)
        plan = study.sampler if self.sampler_caps.plans and \
            isinstance(study.sampler, PlannedSampler) else None
        planned = plan.size if plan is not None else len(valid)
        # the bar counts the valid configs measured, or the trial budget where it is less
        # and leaves some unmeasured (a study measured whole shows whole under --trials 3)
        total = planned if self.max_trials is None or \
            measured - budgets.outside >= planned else min(planned, self.max_trials)
        shown = measured if total < planned else measured - budgets.outside
        # the bar's best is in the kernel's headline unit: across a matmul's shapes the
        # highest TFLOP/s is another trial than the highest score (GB/s)
        self.reporter.start(total=total, done=min(shown, total), best=max(
            (t for t in kept if t.ok), key=lambda t: t.rate(self.kernel.headline), default=None))
        for t in done.values():
            bench.note_best(t)
        def named(config: dict[str, str]) -> dict[str, str]:
            """A valid config as the sampler names it (zipped axes by their row's label)."""
            return self.space.contract(config) or config

        hints: ModelHints | SpreadHints | None = None
        if plan is None and guessed is not None:
            hints = ModelHints([named(c) for c in valid.expanded_all], guessed)
        elif plan is None:
            hints = SpreadHints(valid.expanded_all, self.space.sampler.seed, named)
        if self.compile.pool is not None:   # started with the workers, before the kernel
            self.compile.pool.withdraw(self._turns_down)
        ahead = CompileAhead.start(self.space, plan or hints, self.compile,
                                   len(self.gpus or [0]), self._launchable)
        if ahead is not None:
            ahead.source = self.source_hash
        timeline = Timeline(t0)
        outbox = Outbox(self.store, self.reporter, timeline,
                        defer=self.processes and self.claims is None)
        asked = AskedAhead(self.ask_ahead)
        # the configs earlier runs left to measure again, first: each a trial of the study
        # running, which their next trial's outcome is told to
        killed = {t.key(): t for t in trials if t.retry and sources.current(t)
                  and valid.index_of(sampler_view(self.space, t.choice) or {}) is not None}
        retries = {key: Held(t.choice, waiting_on(study, self.space, dists, t.choice))
                   for key, t in killed.items()}
        return Run(study, dists, done, budgets, summary, number, bench, workers, timeline,
                   outbox, ahead, asked=asked, earlier=sources.earlier(trials), killed=killed,
                   retries=retries)

    def _workers(self, bench: Bench, baselines: list[BaselineRecord]) -> Workers:
        """One worker per GPU: in this process (sharing ``bench``), or each a process of
        its own, launched side by side (not waited for)."""
        indices = self.gpus if self.gpus is not None else [0]
        if not self.processes:
            return Workers([InlineWorker(
                bench, self.store, self.measure.timeout_s, self.on_hang, self._resolved,
                None if self.gpus is None else GpuSlot(i, self.facts.name),
                edited=lambda: self.watch.differs(None))
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
                                 status=TrialStatus.INVALID, started=now(),
                                 sampler=self.space.sampler.name,
                                 source_hash=self.source_hash)
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
                    with run.timeline.phases.on("wait"):    # others' claims outstanding
                        time.sleep(self.claims.poll_s)
                    continue
                self._drop_asked(run)
                run.outbox.defer = False        # the finals' records are journaled at once
                return stopped_by
            with run.timeline.phases.on("wait"):
                worker, job, outcome = run.workers.next_outcome()
            if not outcome.lost:                # it measures on while this one is kept
                self._hand_asked(run, [worker])
            run.timeline.job(run.workers.lane(worker), outcome.stamps)
            self._keep(run, worker, job, outcome)
            if run.edited is not None and not stopped_by:
                stopped_by = f"edited: {run.edited}"

    def _hand_asked(self, run: Run, workers: Sequence[Worker]) -> None:
        """Unless Ctrl-C was pressed or the time budget is spent, hand the configs asked
        for ahead to ``workers``, with the best so far and the duty schedule as they are
        now."""
        if not run.budgets.halted():
            run.asked.hand(workers, lambda job: dataclasses.replace(
                job, best=dict(run.bench.best), duty=run.bench.power.duty))

    def _drop_asked(self, run: Run) -> None:
        """The configs asked for ahead that no worker took (Ctrl-C, the time budget) are
        told failed to the sampler and never journaled: a resume proposes them again, or
        measures them again first, those to be (:attr:`Run.killed`, which count them)."""
        for job in run.asked.drop():
            key = key_of(job.choice)
            run.budgets.dropped += key not in run.killed
            for trial in run.waiting.pop(key, []):
                run.study.tell(trial, state=TrialState.FAIL)

    def _dispatch(self, run: Run) -> str:
        """Ask the sampler for one new config per free worker and hand it over (and, for a
        sampler that asks ahead, one more per busy worker, kept for when it is free).
        Returns why the sweep stops, or ``""``."""
        for worker in run.workers.free():
            job = self._next_job(run)
            if isinstance(job, str):
                return job
            worker.submit(job)
        while run.asked.wanted(len(run.workers.busy())):
            job = self._next_job(run)
            if isinstance(job, str):
                return job
            run.asked.add(job)
        if run.ahead is not None:
            run.ahead.look_ahead(run.done, run.waiting)
        return ""

    def _next_job(self, run: Run) -> Job | str:
        """The next config to measure as a job, or why none is asked now (why the sweep
        stops, or ``""``): one to measure again (:attr:`Run.retries`) while any is left,
        which the trial and time budgets, Ctrl-C and failures alike stop but neither a
        complete space, a converged sampler nor a goal met; then the sampler's next new
        config.  A config the journal has is answered from it; one in flight is
        told its outcome when it comes, and until then no more is asked (the sampler needs
        news), so no config is measured twice.  Shared with other workers: a config another
        worker recorded is told failed here (it is not this worker's to learn from), and
        the trial budget counts every worker's trials (the study's); one
        another live worker holds is kept (:attr:`Run.held`) for :meth:`_take_over` once
        the sampler has nothing new, so the sweep is not complete while it is only held."""
        while True:
            if run.edited is not None:
                return f"edited: {run.edited}"
            run.budgets.in_flight = len(run.workers.busy()) + len(run.asked)
            run.budgets.held = len(run.held)
            if self.claims is not None and self.max_trials is not None:
                # the study's trial budget is shared: every worker's trials count
                run.budgets.recorded = self.store.trials_counted() - run.earlier
            stopped_by = run.budgets.stopped_by(run.study, run.summary.best,
                                                again=bool(run.retries))
            if stopped_by == COMPLETE and run.held:
                return self._take_over(run)
            if stopped_by:
                return stopped_by
            if run.retries:             # before the sampler's proposals
                key = next(iter(run.retries))
                again = run.retries.pop(key)
                taken = self._take(run, again.choice, again.trials)
                if taken is None:       # not this worker's to measure: the next one
                    continue
                return taken
            with run.timeline.phases.on("ask"):
                trial = run.study.ask(run.dists)
            with run.timeline.phases.on("expand"):
                choice = self.space.expand(trial.params)
            key = key_of(choice)
            if key in run.held:         # proposed again while another worker holds it
                run.held[key].trials.append(trial)
                run.budgets.repeats += 1
                continue
            if key not in run.done and key not in run.waiting:
                run.budgets.repeats = 0     # a new proposal ends a run of repeats
                taken = self._take(run, choice, [trial])
                if taken is None:
                    continue
                return taken
            run.summary.repeated += 1
            run.budgets.repeats += 1
            if key in run.done:     # answered from the journal, never re-measured
                with run.timeline.phases.on("tell"):
                    tell(run.study, trial, run.done[key])
            else:                   # in flight: the sampler needs its outcome first
                run.waiting[key].append(trial)
                return ""

    def _take(self, run: Run, choice: Choice, trials: list[optuna.trial.Trial | int]
              ) -> Job | str | None:
        """The job measuring ``choice`` (neither measured nor in flight), its ``trials``
        told its outcome when it comes; or why the sweep stops (the compile for a GPU
        before it ran to the time budget's end); or None where it is not this worker's
        to measure: the compiler refused it ahead (kept as such), another live worker
        holds it (:attr:`Run.held`), or recorded it (told failed here, counted)."""
        key = key_of(choice)
        claim = Claim.TAKEN if self.claims is None else self.claims.take(key)
        if claim is Claim.TAKEN and not self._refused_ahead(run, trials, choice):
            if self.gpu_check is not None and self.gpu_check.cut:
                # its compile ran to the time budget's end: nothing more is measured
                with run.timeline.phases.on("tell"):
                    for trial in trials:
                        run.study.tell(trial, state=TrialState.FAIL)
                return (f"budget: {self.max_time_s:g} s (the compile of the next "
                        f"config for {self.gpu_check.target} ran to its end)")
            return self._job(run, choice, trials)
        if key in run.done or run.edited is not None:   # refused by the compiler,
            return None                                 # kept as such (or not)
        if claim is Claim.HELD:     # another live worker measures it
            run.held[key] = Held(choice, trials)
            return None
        self._recorded_elsewhere(run, key, trials)
        return None

    @staticmethod
    def _recorded_elsewhere(run: Run, key: tuple[str, ...],
                            trials: list[optuna.trial.Trial | int]) -> None:
        """Another worker recorded the config of ``key``: its ``trials`` are told failed
        here (it is not this worker's to learn from), and the trial budget counts it."""
        with run.timeline.phases.on("tell"):
            for trial in trials:
                run.study.tell(trial, state=TrialState.FAIL)
        run.budgets.measured += 1
        run.elsewhere.add(key)

    def _take_over(self, run: Run) -> Job | str:
        """Ask again for the configs other workers hold: the first one free now (its holder
        died, or hung past its lease) becomes this worker's job; those recorded meanwhile
        are told failed here and counted.  ``""`` while some are held still (the loop asks
        again after :attr:`Claims.poll_s`), :data:`COMPLETE` once none is left."""
        assert self.claims is not None
        for key, held in list(run.held.items()):
            claim = self.claims.take(key)
            if claim is Claim.HELD:
                continue
            del run.held[key]
            if claim is Claim.TAKEN:
                return self._job(run, held.choice, held.trials)
            self._recorded_elsewhere(run, key, held.trials)
        return "" if run.held else COMPLETE

    def _job(self, run: Run, choice: Choice, trials: list[optuna.trial.Trial | int]) -> Job:
        """The job measuring ``choice``, its ``trials`` told its outcome when it comes."""
        key = key_of(choice)
        run.waiting[key] = trials
        run.number += 1
        killed = run.killed.get(key)
        return Job(run.number - 1, choice, dict(run.bench.best), run.bench.power.duty,
                   self.source_hash, killed.number if killed is not None else None)

    def _refused_ahead(self, run: Run, trials: list[optuna.trial.Trial | int],
                       choice: Choice) -> bool:
        """Whether the compile pool (or, on the interpreter, the GPU check) found
        ``choice`` refused by the compiler: then its trial is kept as that
        ``compile_error`` (as the worker would have recorded it) and no worker launches
        it.  A config the kernel turns down is neither: it is compiled for neither, and
        its worker records it skipped by the kernel, as without them."""
        if (run.ahead is not None or self.gpu_check is not None) and \
                self._launchable(choice) is None:
            return False
        record = run.ahead.refused(run.number, choice) if run.ahead is not None else None
        if record is None and self.gpu_check is not None:
            # the compile may take the time the budget keeps for it and what is left over
            left = run.budgets.time_left() - run.budgets.keep_for_finals()
            within = left + self.gpu_check.config_s if math.isfinite(left) else None
            record = self.gpu_check.refused(run.number, choice, self._resolved(choice),
                                            None if within is None else max(0.0, within))
        if record is None:
            return False
        run.waiting[key_of(choice)] = trials
        self._keep(run, None, Job(run.number, choice), Outcome(record))
        run.number += 1
        return True

    def _keep(self, run: Run, worker: Worker | None, job: Job, outcome: Outcome) -> None:
        """Keep ``job``'s outcome: the records measuring added, then the trial's; tell the
        sampler; count it; journal and report it (deferred: see :mod:`._outbox`).  A
        worker the trial lost is replaced, or its GPU dropped (:mod:`._drop`); in this
        process the trial is kept, then ContextLost ends it.  Shared with other workers,
        a trial whose claim was lost (this worker stalled past its lease) is not kept:
        the config is the worker's that took it over, as one recorded before it was
        proposed here (:meth:`_recorded_elsewhere`).  Once the kernel's source
        was edited (:attr:`Run.edited`) no outcome is kept: its trial may have been
        compiled from the edited text, not the source the study records."""
        if self._source_moved(run, outcome.edited):
            with run.timeline.phases.on("tell"):
                for trial in run.waiting.pop(key_of(job.choice), []):
                    run.study.tell(trial, state=TrialState.FAIL)
            self._drop_asked(run)           # none is handed to a worker any more
            return
        record, summary = outcome.record, run.summary
        record.sampler, record.source_hash = self.space.sampler.name, self.source_hash
        self._keep_extras(run, outcome.extras)
        if self.claims is not None:     # the record keeps the number its claim gives it
            with run.timeline.phases.on("journal"):
                kept = self._record(record)
            if kept is None:    # the claim was lost: the config is another worker's
                self._recorded_elsewhere(run, key_of(job.choice),
                                         run.waiting.pop(key_of(job.choice), []))
                run.outbox.kept(at_once=outcome.lost)
                if outcome.lost and worker is not None:
                    with run.timeline.phases.on("restart"):
                        run.workers.replace(worker, record)
                return
            record = kept
        else:
            run.outbox.journal(record)
        key = record.key()
        if record.retry:    # killed from outside: measured again, the sampler told then
            run.killed[key] = record
            run.retries[key] = Held(job.choice, run.waiting.pop(key_of(job.choice), []))
        else:
            run.done[key] = record
        summary.trials.append(record)
        if run.ahead is not None:
            run.ahead.kept(record)
            if run.ahead.pool is not None:
                self.reporter.compiling(len(run.ahead.pool.built), run.ahead.pool.pending())
        with run.timeline.phases.on("tell"):
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
            with run.timeline.phases.on("restart"):
                run.workers.replace(worker, record)

    def _source_moved(self, run: Run, said: str = "") -> bool:
        """Whether the kernel's source may no longer be the one the sweep records: an edit
        seen before, one a worker process ``said`` it found (its file; "": none), or one
        of the kernel's files edited since the sweep began.  The first is kept in
        :attr:`Run.edited`."""
        if run.edited is None:
            run.edited = said or self.watch.differs(None) or None
        return run.edited is not None

    def _edited(self, run: Run, edited: str) -> SourceEdited:
        """The error a sweep stopped by an edit of its kernel's source (``edited``, the
        file) ends in: what was kept, and how to measure the edited kernel."""
        n = run.summary.measured
        return SourceEdited(
            f"{self.store.root}: stopped, its kernel's source changed during the sweep "
            f"({edited} was edited); the {counted(n, 'trial')} it measured before "
            f"{'is' if n == 1 else 'are'} kept in the study; {measure_edited()}")

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
        """Record ``record`` through its claim (under the number the store gives it; None
        when the claim was lost or never taken)."""
        assert self.claims is not None
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

    def _finals(self, run: Run) -> None:
        """Unless interrupted: the finals of each problem without a current final, measured
        by the workers (worker processes on every GPU left, at once, before they close; the
        one in this process after the drift check); none after an edit of the kernel's
        source, nor any measured past one (:meth:`_source_moved`)."""
        if run.edited is not None:
            return
        winners = Winners.of(self.store)      # finalists measured on the source there is now
        trials = winners.sources.measured_now(self._in_space(run.done.values()))
        todo = winners.missing(trials) if self.run_finals else []
        if todo and self.stop.set:      # Ctrl-C before the finals: the next run holds them
            run.summary.finals_stopped = len(todo)
            return
        if not todo:
            return
        t_finals, summary, seed = time.perf_counter(), run.summary, self.space.sampler.seed
        duty = run.bench.power.finals_duty()
        self.reporter.finals(len(todo), run.bench.final_size.rounds)

        def covered(entrants: list[TrialRecord]) -> bool:
            """Whether the time budget covers this problem's final (else it waits for the
            next run); the display says which final runs."""
            if self.stop.set:       # Ctrl-C during the finals: the next run measures these
                summary.finals_stopped += 1
                summary.stopped_by = self.stop.reason
                return False
            if not run.budgets.covers(entrants, duty):
                summary.finals_deferred.append(problem_of(entrants[0]))
                summary.finals_needed_s += run.budgets.first_round_s(entrants, duty)
                summary.finals_left_s = run.budgets.finals_time_left()
                summary.finals_room_s = run.budgets.finals_room_s()
                return False
            self.reporter.final_started(problem_text(problem_of(entrants[0])), len(entrants))
            return True

        left = run.budgets.time_left()
        summary.finals, summary.finals_lost = run_finals(
            trials, todo, run.workers, self.store, seed, duty,
            lambda extras: self._keep_extras(run, extras), self.reporter, covered,
            deadline=time.monotonic() + left if math.isfinite(left) else None,
            kept_after=lambda entrants, later: run.budgets.kept_after(entrants, later, duty),
            source=self.source_hash, edited=lambda said: self._source_moved(run, said),
            size=run.bench.final_size)
        summary.finals_s = time.perf_counter() - t_finals
        # a config left to measure again (a budget stopped the sweep first) that no final
        # met: its next trial makes its problem's final out of date, and the next run's
        pending = {problem_of(t) for t in run.pending()}
        summary.finals_before_again = len({f.problem for f in summary.finals} & pending)
        if self.stop.set:      # Ctrl-C in the last final: it ended, the run was interrupted
            summary.stopped_by = self.stop.reason

    def _in_space(self, trials: Iterable[TrialRecord]) -> list[TrialRecord]:
        """The measured ``trials`` whose configs this space still holds: a study resumed
        with ``--force`` keeps the trials of its earlier space in the journal and the
        report, but a config the space no longer has (a value dropped, a constraint added)
        cannot be measured again, so it enters no final."""
        return [t for t in trials if t.ok and self._resolved(t.choice) is not None]

    def _launchable(self, choice: Choice) -> Config | None:
        """``choice``'s config (:meth:`_resolved`), or None where the kernel turns it down
        on this device too (:meth:`~sweeper.kernels.Kernel.cannot_launch`, asked once a
        config, and so once a problem where the kernel allocates to answer): what may be
        compiled ahead or for a GPU.  Each worker asks again before it launches one, and
        records a refusal skipped by the kernel (one that failed: crashed)."""
        config = self._resolved(choice)
        return None if config is None or self._turns_down(key_of(choice), config) else config

    def _turns_down(self, key: tuple[str, ...], config: Config) -> bool:
        """Whether the kernel turns down ``config`` (keyed ``key``) on this device (one
        whose answer raises is not: its worker meets that as it would without compiling
        ahead).  A refusal that failed (:class:`~sweeper.errors.RefusalFailed`: a
        ``refuse=`` or ``prune_configs_by`` with a bug) counts as one here, recording
        nothing: the config is compiled neither ahead nor for a GPU, and its worker asks
        again and records the trial failed with that bug, not a compiler's error.  On a
        GPU only what it tells without allocating there (``ahead``)."""
        if key not in self._refusals:
            try:
                said = self.kernel.cannot_launch(config, self.device.torch_device,
                                                 ahead=self.device.measures_gpu)
            except RefusalFailed as err:      # never launched: the worker's to record
                said = str(err)
            except Exception:  # noqa: BLE001 - the worker's to record, as before
                said = None
            self._refusals[key] = said
        return self._refusals[key] is not None

    def _resolved(self, choice: Choice) -> Config | None:
        """``choice``'s config, or None where a constraint or value rules it out, or where
        it names a label the space does not have (a trial of the space before a resume
        with ``--force``)."""
        if not in_space(self.space, choice):
            return None
        try:
            return self.space.resolve(choice, self.facts.env(), self.facts.max_footprint)
        except Invalid:
            return None
