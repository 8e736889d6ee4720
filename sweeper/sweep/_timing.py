"""Where a sweep's wall time goes: each worker's start, busy and idle time, the
coordinator's time per trial, and the tail.

Workers stamp each job with ``time.perf_counter()`` when they get it and when its outcome
is ready (:class:`Stamps`), and their start-up steps in the ``Ready`` message; the
coordinator times its own phases.  Worker processes run on the coordinator's host, where
``perf_counter`` reads one system-wide monotonic clock, so the stamps compare directly.
:class:`Timeline` collects them; :meth:`Timeline.breakdown` computes the figures (pure,
testable); :meth:`Breakdown.lines` writes them out.  For each worker
``ready + busy + idle + tail`` is the loop's span from the sweep's start.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sweeper.measure import Spent

#: The coordinator's phases per trial, in the order shown.
PHASES = ("ask", "expand", "journal", "tell", "reporter", "restart", "wait")


@dataclass(frozen=True)
class Stamps:
    """When a worker got a job and when its outcome was ready (``perf_counter``), and the
    seconds of that job it spent on work every worker repeats per problem (its buffers,
    its torch baseline)."""

    got: float
    sent: float
    repeated: dict[str, float] = field(default_factory=dict)


@dataclass
class _Lane:
    """One worker as the timeline saw it."""

    launched: float
    ready: float
    steps: dict[str, float] = field(default_factory=dict)
    jobs: int = 0
    busy_s: float = 0.0
    idle_s: float = 0.0
    free_at: float = 0.0
    repeated: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkerTimes:
    """One worker's share of the sweep (seconds): ``start_s`` from its launch to ready,
    then busy measuring, idle waiting for a job, idle in the tail (after its last
    outcome, while others still measured); ``steps`` splits the start, ``repeated`` the
    per-problem work inside its trials."""

    index: int
    launched_s: float
    start_s: float
    jobs: int
    busy_s: float
    idle_s: float
    tail_s: float
    steps: dict[str, float]
    repeated: dict[str, float]


@dataclass(frozen=True)
class Breakdown:
    """A sweep's time: ``setup_s`` from its start to the first job handed out, the loop's
    ``span_s`` from the start to the last outcome kept, the coordinator's seconds per
    phase (``phases``; ``per_trial_ms`` divides by ``trials``), each worker's share, and
    ``tail_s`` from the first worker running out of work to the loop's end."""

    setup_s: float
    span_s: float
    trials: int
    phases: dict[str, float]
    workers: list[WorkerTimes]
    tail_s: float
    #: more lines from the sweep's parts (what the compile pool did)
    notes: list[str] = field(default_factory=list)

    def per_trial_ms(self, phase: str) -> float:
        """Milliseconds of ``phase`` per trial kept."""
        return 1e3 * self.phases.get(phase, 0.0) / max(self.trials, 1)

    def lines(self) -> list[str]:
        """The breakdown as lines of text."""
        coord = ", ".join(f"{p} {self.per_trial_ms(p):.2f}" for p in PHASES
                          if p in self.phases)
        out = [f"loop {self.span_s:.2f} s: set-up {self.setup_s:.2f} s, {self.trials} "
               f"trials, tail {self.tail_s:.2f} s",
               f"coordinator per trial (ms): {coord or 'nothing timed'}"]
        for w in self.workers:
            steps = ", ".join(f"{k} {v:.2f}" for k, v in w.steps.items())
            repeated = ", ".join(f"{k} {v:.2f}" for k, v in sorted(w.repeated.items()))
            out.append(
                f"worker {w.index}: launched at {w.launched_s:.2f} s, ready after "
                f"{w.start_s:.2f} s{f' ({steps})' if steps else ''}; {w.jobs} jobs, busy "
                f"{w.busy_s:.2f} s, idle {w.idle_s:.2f} s, tail {w.tail_s:.2f} s"
                f"{f'; repeated per problem: {repeated}' if repeated else ''}")
        return out + self.notes


class Timeline:
    """Collects a sweep's timestamps as it runs (all ``perf_counter``)."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        #: the coordinator's seconds per phase (``phases.on(name)`` counts a block's time)
        self.phases = Spent()
        self.first_job: float | None = None
        self.trials = 0
        self._lanes: dict[int, _Lane] = {}

    def ready(self, index: int, launched: float, steps: dict[str, float]) -> None:
        """Worker ``index`` was launched then; ``steps``: the ``perf_counter`` at which
        each of its start-up steps ended, in order, the last when it was ready (empty:
        ready when launched).  A fresh worker in a lost one's place is not started
        anew here: its start counts as that worker's busy time."""
        if index in self._lanes:
            return
        named, before = {}, launched
        for name, at in steps.items():
            named[name], before = at - before, at
        self._lanes[index] = _Lane(launched, before, named, free_at=before)

    def job(self, index: int, stamps: Stamps | None) -> None:
        """Worker ``index`` gave back an outcome (stamped, or ``None``: it died or hung,
        and was busy from when it was last free until now)."""
        lane = self._lanes[index]
        if stamps is None:
            stamps = Stamps(got=lane.free_at, sent=time.perf_counter())
        if self.first_job is None or stamps.got < self.first_job:
            self.first_job = stamps.got
        lane.idle_s += max(0.0, stamps.got - lane.free_at)
        lane.busy_s += stamps.sent - max(stamps.got, lane.free_at)
        lane.free_at, lane.jobs = max(stamps.sent, lane.free_at), lane.jobs + 1
        for name, s in stamps.repeated.items():
            lane.repeated[name] = lane.repeated.get(name, 0.0) + s
        self.trials += 1

    def breakdown(self, end: float, notes: list[str] | None = None) -> Breakdown:
        """The figures, for a loop that ended at ``end`` (``notes``: lines to add)."""
        lanes = sorted(self._lanes.items())
        workers = [WorkerTimes(
            index=i, launched_s=lane.launched - self.t0, start_s=lane.ready - lane.launched,
            jobs=lane.jobs, busy_s=lane.busy_s, idle_s=lane.idle_s,
            tail_s=max(0.0, end - lane.free_at), steps=lane.steps, repeated=lane.repeated)
            for i, lane in lanes]
        free = [lane.free_at for _, lane in lanes if lane.jobs]
        first = self.first_job if self.first_job is not None else end
        return Breakdown(setup_s=first - self.t0, span_s=end - self.t0, trials=self.trials,
                         phases=dict(self.phases), workers=workers,
                         tail_s=end - min(free) if free else 0.0, notes=list(notes or []))
