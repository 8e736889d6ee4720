"""Workers: what measures a trial, or a problem's finals, for the sweep's coordinator.

The coordinator (``_loop``) chooses a config, hands it to a free worker as a :class:`Job`
and records the :class:`Outcome` it gets back; only the coordinator writes the journal.
The finals stage (``_finals``) hands a worker a :class:`FinalsJob` the same way, measured
by :func:`final_of`, and gets a :class:`FinalsOutcome` back.  A worker owns what
measuring needs: the device, the kernel, the buffers, the baselines and the limits (a
:class:`~sweeper.sweep._bench.Bench`).  Two kinds stand behind one interface:

- :class:`InlineWorker` measures in the coordinator's own process (the interpreter and
  replay devices, the library's default).  A hang is recorded by the watchdog, which
  hands over to ``on_hang``; a trial that broke the CUDA context ends the sweep
  (:class:`~sweeper.errors.ContextLost`): the engine goes on with worker processes.
- :class:`~sweeper.sweep._process.ProcessWorker` is a persistent process per GPU: a
  crash or a hang ends that worker only, and the coordinator starts a fresh one.

:class:`Workers` dispatches jobs to whichever worker is free and returns outcomes as they
come, a hung worker's included once its trial's ``measure.timeout`` has passed.
"""

from __future__ import annotations

import abc
import dataclasses
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.connection import Connection, wait
from typing import Any, NamedTuple

from sweeper.errors import ContextLost
from sweeper.finals import FinalRecord, confirm, remeasure
from sweeper.measure import DEFAULT_DUTY, Duty
from sweeper.space import Config, Problem
from sweeper.store import GpuSlot, Storage, TrialRecord
from sweeper.study import Choice
from sweeper.sweep._bench import Bench
from sweeper.sweep._drop import Dropped, NotStarted
from sweeper.sweep._timing import Stamps
from sweeper.sweep._watchdog import watchdog
from sweeper.trial import TrialResult, TrialStatus

#: The fastest (median, CI high) per (problem, cache) so far, as the coordinator knows it.
Best = dict[tuple[Problem, str], tuple[float, float]]


@dataclass(frozen=True)
class Job:
    """One trial to measure: its number and config, what early abandonment compares
    against, the duty schedule the study follows now (``None``: none), and the kernel
    source it is recorded under."""

    number: int
    choice: Choice
    best: Best = field(default_factory=dict)
    duty: Duty | None = None
    #: the kernel source hash the trial is recorded under, which a worker process holds
    #: against its own kernel's (None: not checked)
    source: str | None = None
    #: the earlier trial of this config whose worker process was killed from outside, to
    #: be measured again (``retry``); None: none.  Killed so again, the trial is recorded
    #: as the config's crash.
    killed_before: int | None = None


@dataclass
class Outcome:
    """What a worker gives back for a job: the trial's record, the records measuring it
    added (a baseline, a duty switch; the coordinator keeps them first), whether the
    worker can measure nothing more (a sticky CUDA error, a crash, a hang), when it
    got the job and finished it (``None``: it gave no outcome itself), and whether its
    kernel's source was edited meanwhile."""

    record: TrialRecord
    extras: list[Any] = field(default_factory=list)
    lost: bool = False
    stamps: Stamps | None = None
    #: which of the kernel's files was edited since the sweep took its source hash, as
    #: the worker's process found ("": none): the record is not kept, the sweep stops
    edited: str = ""


def failed(job: Job, status: TrialStatus, reason: str, started: str, wall_s: float,
           resolve: Callable[[Choice], Config | None]) -> Outcome:
    """The outcome of a job whose worker gave no record (it died or hung): the trial
    recorded with ``status`` and ``reason``; the worker is lost."""
    record = TrialRecord.from_result(job.number, job.choice, resolve(job.choice),
                                     TrialResult(status, reason), started, wall_s)
    return Outcome(record, lost=True)


@dataclass(frozen=True)
class FinalsJob:
    """The second kind of work a worker does: measure one problem's ``finalists`` (and
    the problem's torch baseline) again in interleaved rounds shuffled by ``seed``, under
    the schedule of the study's duty for the finals (``None``: the worker's own), and give
    back the samples as a final."""

    finalists: list[TrialRecord]
    seed: int
    duty: Duty | None = None
    #: when the time budget ends (``time.monotonic()``, one clock for every process of
    #: the machine); None: no time budget
    deadline: float | None = None
    #: the kernel source hash the finalists were measured on, which a worker process
    #: holds against its own kernel's (None: not checked)
    source: str | None = None


@dataclass
class FinalsOutcome:
    """What a worker gives back for a :class:`FinalsJob`: the final (``None`` when the
    worker died or hung first, ``error`` says how, or found its kernel's source edited)
    and the records measuring added (a baseline the worker had not measured)."""

    record: FinalRecord | None
    extras: list[Any] = field(default_factory=list)
    error: str = ""
    #: which of the kernel's files the worker found edited since the sweep took its
    #: source hash ("": none): the final is not kept
    edited: str = ""


class FinalRound(NamedTuple):
    """A worker process's word that a round of its final ended: its number, and how many
    finalists are still in (the progress display shows it while the final runs)."""

    round: int
    finalists: int


#: Hears each round of a final as it ends: its number, the finalists still in.
OnRound = Callable[[int, int], None]


def final_of(bench: Bench, job: FinalsJob, on_round: OnRound | None = None) -> FinalRecord:
    """``job``'s finalists and baseline measured on ``bench``, interleaved (each round
    told to ``on_round``)."""
    if job.duty is not None:
        bench.power.duty = job.duty
    duty = bench.power.duty = bench.power.finals_duty()
    baseline = bench.baseline_again(job.finalists[0])
    final = remeasure(job.finalists, bench.again, bench.bytes_of, seed=job.seed,
                      baseline=baseline, duty=duty.describe() if duty else "",
                      on_round=on_round, per_round=bench.round.samples,
                      deadline=job.deadline, most_rounds=bench.final_size.rounds)
    if duty is not None and duty.kind == "sustained":
        # a race under sustained load chose the winner; what is stated of it comes from
        # rounds whose figures hold from run to run
        bench.power.duty = DEFAULT_DUTY
        winner = next(t for t in job.finalists if t.number == final.winner)
        final.confirmed = confirm(winner, bench.again, baseline, DEFAULT_DUTY.describe(),
                                  seed=job.seed, per_round=bench.round.samples)
        bench.power.duty = duty
    return final


class Worker(abc.ABC):
    """Measures one job at a time.  ``slot`` is the GPU it measures on, written into each
    record (``None``: the device as opened, not named)."""

    slot: GpuSlot | None = None
    #: the job in flight, if any
    job: Job | None = None
    #: when the worker was started (``perf_counter``)
    launched: float = 0.0

    def wait_ready(self) -> None:  # noqa: B027 - a worker in this process is ready at once
        """Wait until the worker can measure."""

    def started(self) -> dict[str, float]:
        """When each of its start-up steps ended (``perf_counter``), in order; the last
        is when it was ready.  Empty: ready when launched."""
        return {}

    @abc.abstractmethod
    def submit(self, job: Job) -> None:
        """Start measuring ``job``."""

    @abc.abstractmethod
    def done(self) -> bool:
        """Whether the job in flight has its outcome."""

    @abc.abstractmethod
    def result(self) -> Outcome:
        """The outcome of the job in flight, once :meth:`done`; the worker is free."""

    def connection(self) -> Connection | None:
        """What becomes readable when the outcome arrives (``None``: it never waits)."""
        return None

    def deadline(self) -> float | None:
        """The ``time.monotonic()`` by which the job in flight must be done."""
        return None

    def expire(self) -> Outcome:
        """The job in flight ran past its deadline: stop it, and its outcome."""
        raise NotImplementedError

    @abc.abstractmethod
    def submit_finals(self, job: FinalsJob) -> None:
        """Start measuring a problem's finals on this worker's GPU (never while a trial
        is in flight: the finals come after the sweep)."""

    @abc.abstractmethod
    def finals_result(self, on_round: OnRound | None = None) -> FinalsOutcome:
        """Wait for the finals :meth:`submit_finals` started and give them back, telling
        ``on_round`` each round as it ends."""

    @abc.abstractmethod
    def restart(self, record: TrialRecord) -> None:
        """After ``record``'s outcome lost the worker (recorded before this is called): a
        fresh worker in this one's place."""

    def finish(self) -> None:  # noqa: B027 - a worker in this process has nothing to end
        """Ask the worker to end on its own; :meth:`close` then waits for it."""

    def close(self, wait: bool = True) -> None:  # noqa: B027 - nothing to end in this process
        """Let go of the device (and the process, if any: ``wait``, until it has exited)."""


class InlineWorker(Worker):
    """Measures in this process with ``bench`` (``--workers inline``), under the watchdog."""

    def __init__(self, bench: Bench, store: Storage, timeout_s: float | None,
                 on_hang: Callable[[TrialRecord, str], None] | None,
                 resolve: Callable[[Choice], Config | None],
                 slot: GpuSlot | None = None, edited: Callable[[], str] | None = None
                 ) -> None:
        self.bench, self.store, self.timeout_s = bench, store, timeout_s
        self.on_hang, self.resolve, self.slot = on_hang, resolve, slot
        #: which of the kernel's files was edited since the sweep began ("": none), asked
        #: by the watchdog before it records a hung trial
        self.edited = edited
        self.launched = time.perf_counter()
        self._outcome: Outcome | None = None
        self._finals_job: FinalsJob | None = None
        #: what a trial the watchdog records as timed out names as its kernel's source
        self.source_hash = bench.kernel.source_hash()

    def submit(self, job: Job) -> None:
        self.job, got = job, time.perf_counter()
        self.bench.merge_best(job.best)
        with watchdog(self.store, job.number, job.choice, self.timeout_s,
                      None if self.bench.device.replays else self.on_hang,
                      partial(self.resolve, job.choice),
                      sampler=self.bench.space.sampler.name, source_hash=self.source_hash,
                      edited=self.edited):
            record = self.bench.trial(job.number, job.choice)
        lost = record.status is TrialStatus.CRASHED and not self.bench.device.healthy()
        if lost:
            # no worker process can import a kernel in __main__: the engine stops there
            after = "stopped" if type(self.bench.kernel).__module__ == "__main__" else \
                "went on in worker processes"
            record = dataclasses.replace(record, reason=(
                f"{record.reason} (it left the CUDA context unusable; the sweep {after})"))
        self._outcome = Outcome(record, lost=lost, stamps=self.bench.stamps(got))

    def done(self) -> bool:
        return self._outcome is not None

    def result(self) -> Outcome:
        assert self._outcome is not None, "result() before done()"
        outcome, self._outcome, self.job = self._outcome, None, None
        return outcome

    def submit_finals(self, job: FinalsJob) -> None:
        self._finals_job = job          # measured in finals_result, which hears the rounds

    def finals_result(self, on_round: OnRound | None = None) -> FinalsOutcome:
        job, self._finals_job = self._finals_job, None
        assert job is not None, "finals_result() before submit_finals()"
        return FinalsOutcome(final_of(self.bench, job, on_round))

    def restart(self, record: TrialRecord) -> None:
        """Nothing more can run in this process: the engine goes on with worker processes."""
        raise ContextLost(record.number, record.reason or "")


class AskedAhead:
    """Configs asked for before a worker is free to take them, for a sampler that may be
    asked while configs are being measured (``asks_ahead``) and worker processes: one per
    busy worker, handed to the first that ends its trial the moment its outcome arrives,
    so it measures on while the coordinator keeps that outcome, tells the sampler and
    journals (2 ms a trial on the H200, a worker waiting all the while).  The configs stay
    with the coordinator until handed over: Ctrl-C or the time budget drops them
    unmeasured, and one whose worker died goes to the fresh worker or another."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.jobs: deque[Job] = deque()

    def __len__(self) -> int:
        return len(self.jobs)

    def wanted(self, busy: int) -> bool:
        """Whether to ask for one more, with ``busy`` workers measuring."""
        return self.enabled and len(self.jobs) < busy

    def add(self, job: Job) -> None:
        """Keep ``job`` until a worker is free."""
        self.jobs.append(job)

    def hand(self, workers: Sequence[Worker], refresh: Callable[[Job], Job]) -> None:
        """Hand the oldest configs to ``workers`` (free ones), each job ``refresh``-ed
        (what early abandonment compares against, the duty schedule: as they are now)."""
        for worker in workers:
            if not self.jobs:
                return
            worker.submit(refresh(self.jobs.popleft()))

    def drop(self) -> list[Job]:
        """The configs no worker took, forgotten."""
        jobs, self.jobs = list(self.jobs), deque()
        return jobs


class Workers:
    """The sweep's workers: jobs go to a free one, outcomes come back as they arrive.
    ``all`` are those still measuring; a GPU whose worker could not be replaced is
    dropped from it (:mod:`._drop`) while others are left."""

    def __init__(self, workers: Sequence[Worker], *, wait_on_close: bool = True) -> None:
        self.started = list(workers)
        self.all = list(workers)
        #: the GPUs dropped in this run, in order
        self.dropped: list[Dropped] = []
        #: whether :meth:`close` waits for worker processes to exit (it must where the
        #: coordinator measures afterwards: a context torn down beside a measurement)
        self.wait_on_close = wait_on_close

    @property
    def processes(self) -> bool:
        """Whether the workers are processes of their own (none measures in this one)."""
        return not any(isinstance(w, InlineWorker) for w in self.started)

    @property
    def finals_in_workers(self) -> bool:
        """Whether the finals run in the workers: with several GPUs on each of them; with
        one worker process in it, which holds the kernels compiled and the buffers, so the
        coordinator measures nothing of its own."""
        return self.several or self.processes

    @property
    def several(self) -> bool:
        """Whether the sweep started with more than one worker (one per GPU): then the
        finals run on every GPU left, and records name their GPU."""
        return len(self.started) > 1

    def lane(self, worker: Worker) -> int:
        """``worker``'s place among those the sweep started with (dropped or not)."""
        return self.started.index(worker)

    def replace(self, worker: Worker, record: TrialRecord) -> None:
        """A fresh worker in the place of the one ``record``'s trial lost.  If it does
        not start and other workers are left, its GPU is dropped (not retried in this
        run) and the sweep goes on with them; if none is left, :class:`NotStarted` says
        so, naming the GPUs dropped before."""
        try:
            worker.restart(record)
        except NotStarted as err:
            worker.close()
            self.all.remove(worker)
            if not self.all:
                before = "".join(f"; GPU {d.index} was dropped after trial {d.after}"
                                 for d in self.dropped)
                raise NotStarted(f"{err}{before}", err.index, err.why) from err
            left = [w.slot.index if w.slot else self.lane(w) for w in self.all]
            self.dropped.append(Dropped(err.index, record.number, record.status.value,
                                        err.why, tuple(left)))

    def free(self) -> list[Worker]:
        """The workers with no job in flight."""
        return [w for w in self.all if w.job is None]

    def busy(self) -> list[Worker]:
        """The workers with a job in flight."""
        return [w for w in self.all if w.job is not None]

    def next_outcome(self) -> tuple[Worker, Job, Outcome]:
        """Wait for the first job in flight to end, or to pass its deadline (then its
        worker is stopped and the trial's outcome says so); needs a busy worker."""
        while True:
            busy = self.busy()
            assert busy, "next_outcome() with no job in flight"
            for worker in busy:
                if worker.done():
                    return self._take(worker, worker.result)
            now = time.monotonic()
            for worker in busy:
                limit = worker.deadline()
                if limit is not None and now >= limit:
                    return self._take(worker, worker.expire)
            limits = [d for w in busy if (d := w.deadline()) is not None]
            conns = [c for w in busy if (c := w.connection()) is not None]
            wait(conns, timeout=max(0.0, min(limits) - now) if limits else None)

    @staticmethod
    def _take(worker: Worker, get: Callable[[], Outcome]) -> tuple[Worker, Job, Outcome]:
        job = worker.job
        assert job is not None
        outcome = get()
        worker.job = None
        if worker.slot is not None:
            outcome.record = dataclasses.replace(outcome.record, gpu=worker.slot)
        return worker, job, outcome

    def close(self) -> None:
        """Let go of every worker: all are asked to end first, so they exit side by side;
        without ``wait_on_close`` their processes end on their own while the command goes
        on (reaped in the background, ended at exit at the latest)."""
        for worker in self.all:
            worker.finish()
        for worker in self.all:
            worker.close(wait=self.wait_on_close)
        if self.processes:
            from sweeper._processes import WORKER, release

            release(WORKER)     # spares started after a lost worker, no longer needed
