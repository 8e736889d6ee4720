"""What a sweep tells the outside: progress while it runs, a summary when it ends."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Protocol

from sweeper.busy import Busy
from sweeper.finals import FinalRecord
from sweeper.store import DriftRecord, ProblemKey, TrialRecord
from sweeper.sweep._drop import Dropped
from sweeper.sweep._timing import Breakdown


class Reporter(Protocol):
    """What the sweep tells whoever is watching (the CLI's progress bar, or nobody)."""

    def start(self, total: int, done: int, best: TrialRecord | None = None) -> None:
        """The sweep begins: ``total`` trials it may measure, ``done`` of them already in
        the journal (a resumed study), ``best`` the one of those of the highest rate in
        the kernel's headline unit, if any."""

    def trial(self, record: TrialRecord, best: TrialRecord | None) -> None:
        """A trial was measured and kept; ``best`` is the best so far by the search's
        score (:attr:`~sweeper.store.TrialRecord.score`), if any: a display of the
        kernel's headline rate keeps its own best, as across problems the two differ."""

    def compiling(self, built: int, waiting: int) -> None:
        """The compile pool has ``built`` binaries so far and ``waiting`` compiles queued
        or running ahead of the trials (said after each trial while a pool works)."""

    def finals(self, problems: int, rounds: int) -> None:
        """The trials are done and the finals begin: ``problems`` finals of at most
        ``rounds`` interleaved rounds each."""

    def final_started(self, problem: str, finalists: int) -> None:
        """The final of ``problem`` (as the terminal names it) starts, with ``finalists``
        configs and the torch baseline."""

    def final_round(self, round_: int, finalists: int) -> None:
        """Round ``round_`` of the current final ended; ``finalists`` are still in it (with
        finals on several GPUs, the first GPU's rounds)."""

    def final_done(self) -> None:
        """The current final ended (after however many rounds it needed)."""

    def report(self) -> contextlib.AbstractContextManager[None]:
        """While the block runs, the report is written (after :meth:`finish`)."""

    def finish(self) -> None:
        """The sweep ended, however it ended (also when its workers did not start,
        perhaps before :meth:`start`): nothing more will be reported."""


class SilentReporter:
    """A reporter that shows nothing (``sweeper run --quiet``, tests, benchmarks)."""

    def start(self, total: int, done: int, best: TrialRecord | None = None) -> None: ...
    def trial(self, record: TrialRecord, best: TrialRecord | None) -> None: ...
    def compiling(self, built: int, waiting: int) -> None: ...
    def finals(self, problems: int, rounds: int) -> None: ...
    def final_started(self, problem: str, finalists: int) -> None: ...
    def final_round(self, round_: int, finalists: int) -> None: ...
    def final_done(self) -> None: ...
    def finish(self) -> None: ...

    def report(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


@dataclass
class SweepSummary:
    """What one ``Sweep.run`` did; every trial it counts is also in the journal."""

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
    #: each GPU whose worker died or hung during a final, and how
    finals_lost: list[str] = field(default_factory=list)
    #: problems whose finals the time budget did not cover: the next run measures them
    finals_deferred: list[ProblemKey] = field(default_factory=list)
    #: the seconds the first rounds of the deferred finals need, together, the time left
    #: for finals when the last of them was deferred, and what the time budget leaves the
    #: finals in a run of the same command that measures no trial
    #: (:meth:`~sweeper.sweep._budget.Budgets.finals_room_s`)
    finals_needed_s: float = 0.0
    finals_left_s: float = 0.0
    finals_room_s: float = 0.0
    #: problems whose finals a Ctrl-C (or SIGTERM) left for the next run, during the
    #: finals or before them
    finals_stopped: int = 0
    #: configs a Ctrl-C (or SIGTERM) during the trials left for the next run, and whether
    #: that count is exact (``False``: at most that many;
    #: :meth:`~sweeper.sweep._budget.Budgets.left`)
    left: tuple[int, bool] = (0, True)
    #: configs whose trial the next run measures again (``retry``: its worker process was
    #: killed from outside), this run's and those of earlier runs, that a budget or a
    #: signal left it no trial to measure again; a Ctrl-C (or SIGTERM) counts them among
    #: :attr:`left` too
    again: int = 0
    #: the problems whose finals this run ran though a config of theirs is among
    #: :attr:`again`: they chose without it, and the next run, which measures it, runs
    #: them again where it measures a number
    finals_before_again: int = 0
    #: where the trial budget was spent before the configs of :attr:`again` were measured
    #: again, the budget that measures them (a run of the same command measures none):
    #: the trials it counts and theirs; 0: none was spent so
    trials_for_again: int = 0
    #: what the time budget keeps for the report after the sweep (seconds; ``None``
    #: without a time budget or a report): the command writes none the time left does
    #: not cover
    report_kept_s: float | None = None
    #: with several GPUs: each GPU dropped because no fresh worker started on it
    dropped: list[Dropped] = field(default_factory=list)
    drift: DriftRecord | None = None   # one-at-a-time: the baseline measured again
    saved_ms: float = 0.0      # GPU time early abandonment did not spend
    duty: str = ""             # why and how power-bound problems were measured, if they were
    #: where the loop's time went (each worker's start, busy and idle time, the
    #: coordinator's per trial, the tail); ``None`` for a sweep that did not loop
    timing: Breakdown | None = None
    #: seconds each compile of the compile processes took (what a binary costs here)
    compiles_s: list[float] = field(default_factory=list)
    #: how busy it kept its GPUs, and where the rest of its time went; ``None`` for a
    #: replay, which launches nothing
    busy: Busy | None = None
