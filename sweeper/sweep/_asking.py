"""Asking the sampler for configs and handing them to the workers: the first half of the
sweep's loop (:mod:`._loop` keeps the outcomes), and the state one run of it carries.

Each free worker gets the sampler's next new config.  A sampler whose proposals never
depend on outcomes (``asks_ahead``) is also asked for one more per busy worker, kept by
the coordinator and handed over the moment that worker's outcome arrives
(:class:`~sweeper.sweep._workers.AskedAhead`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import optuna
from optuna.trial import TrialState

from sweeper.space import Space
from sweeper.store import Claim, TrialRecord, key_of
from sweeper.study import Choice
from sweeper.sweep._bench import Bench
from sweeper.sweep._budget import COMPLETE, Budgets
from sweeper.sweep._claims import Claims, Held
from sweeper.sweep._compile_ahead import CompileAhead
from sweeper.sweep._optuna import Distributions, tell
from sweeper.sweep._outbox import Outbox
from sweeper.sweep._summary import SweepSummary
from sweeper.sweep._timing import Timeline
from sweeper.sweep._workers import AskedAhead, Job, Outcome, Worker, Workers


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
    #: repeat made before its outcome came), told its record when it comes
    waiting: dict[tuple[str, ...], list[optuna.trial.Trial]] = field(default_factory=dict)
    #: configs asked for before a worker is free (none unless the sampler asks ahead)
    asked: AskedAhead = field(default_factory=lambda: AskedAhead(False))
    #: configs another live worker holds (shared sweeps only), by key: measured by this
    #: one if their holder lets them go unrecorded (:meth:`Asking._take_over`)
    held: dict[tuple[str, ...], Held] = field(default_factory=dict)


class Asking:
    """The asking half of :class:`~sweeper.sweep.Sweep`'s loop (a mixin: it reads the
    sweep's space and claims, and keeps a config the compiler refused through the
    sweep's ``_keep``)."""

    space: Space
    claims: Claims | None

    def _keep(self, run: Run, worker: Worker | None, job: Job, outcome: Outcome) -> None:
        raise NotImplementedError

    def _hand_asked(self, run: Run, workers: Sequence[Worker]) -> None:
        """Unless Ctrl-C was pressed or the time budget is spent, hand the configs asked
        for ahead to ``workers``, with the best so far and the duty schedule as they are
        now."""
        if not run.budgets.halted():
            run.asked.hand(workers, lambda job: dataclasses.replace(
                job, best=dict(run.bench.best), duty=run.bench.power.duty))

    def _drop_asked(self, run: Run) -> None:
        """The configs asked for ahead that no worker took (Ctrl-C, the time budget) are
        told failed to the sampler and never journaled: a resume proposes them again."""
        for job in run.asked.drop():
            for trial in run.waiting.pop(key_of(job.choice), []):
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
        """The sampler's next new config as a job, or why none is asked now (why the sweep
        stops, or ``""``).  A config the journal has is answered from it; one in flight is
        told its outcome when it comes, and until then no more is asked (the sampler needs
        news), so no config is measured twice.  Shared with other workers: a config another
        worker recorded is told failed here (it is not this worker's to learn from); one
        another live worker holds is kept (:attr:`Run.held`) for :meth:`_take_over` once
        the sampler has nothing new, so the sweep is not complete while it is only held."""
        while True:
            run.budgets.in_flight = len(run.workers.busy()) + len(run.asked)
            run.budgets.held = len(run.held)
            stopped_by = run.budgets.stopped_by(run.study, run.summary.best)
            if stopped_by == COMPLETE and run.held:
                return self._take_over(run)
            if stopped_by:
                return stopped_by
            with run.timeline.phase("ask"):
                trial = run.study.ask(run.dists)
            with run.timeline.phase("expand"):
                choice = self.space.expand(trial.params)
            key = key_of(choice)
            if key in run.held:         # proposed again while another worker holds it
                run.held[key].trials.append(trial)
                run.budgets.repeated()
                continue
            if key not in run.done and key not in run.waiting:
                run.budgets.proposed()
                claim = Claim.TAKEN if self.claims is None else self.claims.take(key)
                if claim is Claim.TAKEN and not self._refused_ahead(run, trial, choice):
                    break
                if key in run.done:     # refused by the compiler, kept as such
                    continue
                if claim is Claim.HELD:     # another live worker measures it
                    run.held[key] = Held(choice, [trial])
                    continue
                with run.timeline.phase("tell"):   # another worker recorded it
                    run.study.tell(trial, state=TrialState.FAIL)
                run.budgets.measured += 1
                continue
            run.summary.repeated += 1
            run.budgets.repeated()
            if key in run.done:     # answered from the journal, never re-measured
                with run.timeline.phase("tell"):
                    tell(run.study, trial, run.done[key])
            else:                   # in flight: the sampler needs its outcome first
                run.waiting[key].append(trial)
                return ""
        return self._job(run, choice, [trial])

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
            with run.timeline.phase("tell"):
                for trial in held.trials:
                    run.study.tell(trial, state=TrialState.FAIL)
            run.budgets.measured += 1
        return "" if run.held else COMPLETE

    def _job(self, run: Run, choice: Choice, trials: list[optuna.trial.Trial]) -> Job:
        """The job measuring ``choice``, its ``trials`` told its outcome when it comes."""
        run.waiting[key_of(choice)] = trials
        run.number += 1
        return Job(run.number - 1, choice, dict(run.bench.best), run.bench.power.duty)

    def _refused_ahead(self, run: Run, trial: optuna.trial.Trial, choice: Choice) -> bool:
        """Whether the compile pool found ``choice`` refused by the compiler: then its
        trial is kept as that ``compile_error`` (as the worker would have recorded it)
        and no worker launches it."""
        record = run.ahead.refused(run.number, choice) if run.ahead is not None else None
        if record is None:
            return False
        run.waiting[key_of(choice)] = [trial]
        self._keep(run, None, Job(run.number, choice), Outcome(record))
        run.number += 1
        return True
