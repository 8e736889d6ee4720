"""When a sweep stops: Ctrl-C, a trial or time budget, every valid config tried, a
sampler that only proposes what was measured, or the space file's ``budget.patience``
and ``budget.target`` met.  The loop asks before each proposal; the first rule that
holds names the reason, which the summary and the study's ``last_run`` keep.

A time budget covers the finals too: the loop stops early enough to leave them the time
their first ``MIN_ROUNDS`` rounds take (:func:`~sweeper.finals.final_bound_s`, from the
problems measured so far), and a problem's final starts only if the time left covers its
first round (the deadline stops the rounds that do not fit; a final cut short before
``MIN_ROUNDS``, or one that could not start, is measured again by the next run)."""

from __future__ import annotations

import bisect
import math
import re
import time
from collections.abc import Callable

import optuna

from sweeper.ceilings import Ceilings
from sweeper.core._spelling import given
from sweeper.drawn_maps import ProblemMaps
from sweeper.errors import one_line
from sweeper.finals import GPU_FINAL, MIN_ROUNDS, Round, chosen, final_bound_s, problem_of
from sweeper.measure import Duty
from sweeper.outcome import COMPLETE, reason_line
from sweeper.samplers import ExhaustiveSampler
from sweeper.space import Budget
from sweeper.store import ProblemKey, TrialRecord
from sweeper.trial import KERNEL_FAULTS

#: Proposals in a row that were all measured before: the sampler has converged.
MAX_REPEATED_PROPOSALS = 200
#: Why a sweep stops at a Ctrl-C (after the trial in flight; ``sweeper run`` exits 130).
INTERRUPTED = "interrupted (Ctrl-C)"
#: Why a sweep stops at a SIGTERM (a job scheduler's, ``kill``'s): as at a Ctrl-C, after
#: the trial in flight (``sweeper run`` exits 143, as a shell reports a process it ended).
TERMINATED = "interrupted (SIGTERM)"


def _medians(entrants: list[TrialRecord]) -> list[float]:
    """The sweep medians (ms) of a final's entrants that have them."""
    return [t.stats.median for t in entrants if t.stats]


class StopFlag:
    """Set by a front door's signal handler (:func:`sweeper.interrupt.stopping_on_signals`:
    Ctrl-C, SIGTERM); the sweep stops after the trial in flight, and says why it stopped
    as ``reason`` does."""

    def __init__(self) -> None:
        self.set = False
        self.reason = INTERRUPTED


class Budgets:
    """The stop rules of one run, and the counts they read: trials measured (those found
    in the journal included), proposals repeated in a row, trials since the best last
    improved beyond noise."""

    def __init__(self, budget: Budget, stop: StopFlag, *, max_trials: int | None,
                 max_time_s: float | None, ceilings: Ceilings | None, valid: int,
                 measured: int, t0: float, outside_s: float = 0.0) -> None:
        self.budget, self.stop, self.ceilings = budget, stop, ceilings
        self.max_trials, self.max_time_s = max_trials, max_time_s
        #: seconds of the time budget spent before the sweep's ``t0`` or kept for what
        #: follows it (a command's start-up and report)
        self.outside_s = outside_s
        #: the wall of this run's first trial, and the longest of its others (seconds;
        #: None before them): :attr:`trial_s`
        self._first_s: float | None = None
        self._later_s: float | None = None
        #: what the run's first trial is expected to take (a compile from a cold cache on
        #: a GPU; 0 where nothing compiles), kept in its place until a trial ran: the
        #: budget starts no trial it cannot finish
        self.first_trial_s = 0.0
        #: what the compile before the next trial takes (on the interpreter, the GPU check
        #: of each config, :attr:`~sweeper.sweep._gpu_check.GpuCheck.config_s`; 0 where
        #: nothing is compiled before a trial), kept with the trial in flight
        self.check_s: Callable[[], float] = lambda: 0.0
        #: this run's trials so far while each failed as the first did, the kernel's
        #: fault (:data:`~sweeper.trial.KERNEL_FAULTS`; status and reason, numbers aside);
        #: ``None`` once one did not
        self.alike: list[TrialRecord] | None = []
        #: the axes whose labels a config chooses among (launch and meta-parameters with
        #: more than one value): failures that all share a label on one of them may be
        #: that value's fault, not the kernel's
        self.chosen_axes: frozenset[str] = frozenset()
        self.valid, self.measured, self.t0 = valid, measured, t0
        #: proposals in a row answered from the journal (the loop counts them)
        self.repeats = 0
        self.since_improvement = 0
        #: trials handed to workers and not yet counted: they count against the budgets
        #: already, so two workers never measure past ``max_trials`` or the space
        self.in_flight = 0
        #: shared with other workers under a trial budget: the trials every worker has
        #: recorded in the study (``None``: this run alone), which the budget counts
        #: instead of :attr:`measured` (the study's budget is one for all its workers)
        self.recorded: int | None = None
        #: configs other workers hold, not yet recorded: they leave nothing new to ask
        #: (the space is complete once they are measured) but cost this worker no trial
        self.held = 0
        #: of :attr:`measured`, the study's trials of configs not among this run's valid
        #: ones (another ``-p``, a value ``--force`` dropped): they spend the trial budget
        #: but leave every valid config still to measure
        self.outside = 0
        #: configs asked for ahead and dropped unmeasured at a stop: the sampler counts
        #: them as proposed, a resume proposes them again
        self.dropped = 0
        #: of :attr:`measured`, this run's trials to be measured again (``retry``: their
        #: worker was killed from outside): no trial budget counts them, but their
        #: configs' next trials, which this run measures before any other where its
        #: budgets let it, else the next run
        self.retried = 0
        #: per problem measured: the medians (ms) and their 95 % intervals of its ``ok``
        #: trials, fastest first, whose finals the time budget keeps time for
        #: (:meth:`keep_for_finals`)
        self.problems: dict[ProblemKey, list[tuple[float, tuple[float, float]]]] = {}
        #: the duty schedule the finals will follow (it may switch during the sweep);
        #: ``None`` where the sweep runs no finals
        self.finals_duty: Callable[[], Duty | None] | None = None
        #: what each entrant of a final takes a round on this device, and the host's
        #: seconds beyond its launches as this machine's last finals measured them
        #: (``None``: ``FINALS_OVERHEAD_S``)
        self.finals_round = Round()
        #: the most finalists (and rounds) a final takes on this device
        self.final_size = GPU_FINAL
        self.finals_overhead_s: float | None = None
        #: what the report takes for a number of heatmaps and their cells (``None``: no
        #: report, or one kept for in ``outside_s``): the time budget keeps what a report
        #: of the trials so far takes (:meth:`keep_for_report`), not one of the whole space
        self.report_s: Callable[[int, int], float] | None = None
        #: per problem, its trials that hold a number: the heatmaps a report of them
        #: draws, by the rule the report draws and ``plan`` prices them by
        #: (:mod:`sweeper.drawn_maps`)
        self.maps: dict[ProblemKey, ProblemMaps] = {}
        #: the problems whose maps this run's report draws again: those this run measured
        #: a trial of, or whose final it owes (the report redraws only the maps whose
        #: numbers or marks changed; a study's other maps cost it next to nothing)
        self.redrawn: set[ProblemKey] = set()
        #: the sweep stopped and its trials in flight ended (the finals and the report
        #: follow): no trial more adds a map, so the report's time keeps none for one
        self.swept = False

    @property
    def trial_s(self) -> float:
        """What a trial of this run takes at most (seconds; 0 before the first): the
        first's wall until another ran, then the longest of the others (the first starts
        the compiler in its process: on the H200 0.98-1.73 s for a matmul, against at most
        0.27 s for any later one, and keeping it for the trial in flight at the end left
        1.5 s of a 20 s budget unused)."""
        return self._later_s if self._later_s is not None else self._first_s or 0.0

    def keep_for_finals(self) -> float:
        """Seconds the time budget keeps for the finals of the problems measured so far,
        and for the trial in flight when the sweep stops (it ends after the stop: as long
        as the longest of this run's trials so far, or before the first what that is
        expected to take, and the compile that precedes it where each config is compiled
        for a GPU first, :attr:`check_s`).  Each final is bounded from the finalists its
        trials give now (:func:`~sweeper.finals.chosen`), not from every trial measured:
        on the H200 a bound of twelve entrants a problem and 20 ms a round kept 6.3 s of a
        20 s budget for finals that took 0.1 s.  It keeps the ``MIN_ROUNDS`` rounds a final runs
        before it may stop, not all ``ROUNDS``: the rounds past them run as the time left
        allows (the deadline stops them), and most finals settle there (on the H200, 18 of
        23 after 3 or 4 rounds)."""
        trial_s = (self.trial_s or self.first_trial_s) + self.check_s()
        if self.finals_duty is None:
            return trial_s
        duty = self.finals_duty()
        return trial_s + sum(self._final_s([ranked[i][0] for i in chosen(
            [bounds for _, bounds in ranked], self.final_size)], duty, rounds=MIN_ROUNDS)
            for ranked in self.problems.values())

    def _final_s(self, medians_ms: list[float], duty: Duty | None,
                 rounds: int | None = None) -> float:
        """At most what the final of entrants of these medians takes (in ``rounds``
        rounds; ``None``: all it may run)."""
        return final_bound_s(medians_ms, duty, rounds, self.finals_round,
                             self.finals_overhead_s)

    def keep_for_report(self) -> float:
        """Seconds the time budget keeps for the report: what the heatmaps the trials so
        far draw take (:mod:`sweeper.drawn_maps`, the rule the report draws by: a problem
        where fewer than two of grid, block and the meta-parameters vary draws none), and
        those a trial more may draw (:meth:`~sweeper.drawn_maps.ProblemMaps.most_added`):
        it adds a cell to one problem's maps, so it may draw that problem's best-over-meta
        map where none is drawn, and one meta-parameter values' own map; the trial that
        first makes a problem vary on two axes may draw both; once the sweep stopped
        (:attr:`swept`), only the maps so far.  A run the
        budget cuts short draws a few of a space's maps: keeping time for all of them (90
        on spaces/matmul-shapes.yaml, 8 s) left a 12 s run on the H200 nothing to
        measure."""
        if self.report_s is None:
            return 0.0
        redrawn = [maps for key, maps in self.maps.items() if key in self.redrawn]
        drawn = sum(maps.drawn().count for maps in redrawn)
        cells = sum(maps.drawn_cells() for maps in redrawn)
        if self.swept:
            return self.report_s(drawn, cells)
        # a trial more adds to one problem: its maps, all drawn again if none were yet,
        # and a cell (all of its cells where its maps were not drawn)
        more = max((maps.most_added() + (key not in self.redrawn) * maps.drawn().count
                    for key, maps in self.maps.items()), default=0)
        more_cells = 1 + max((maps.cells for key, maps in self.maps.items()
                              if key not in self.redrawn), default=0)
        return self.report_s(drawn + more, cells + more_cells)

    def note(self, record: TrialRecord, measured_now: bool = False) -> None:
        """Count ``record`` (``measured_now``, or found in the journal with its problem's
        final owed) towards its problem's finals and the report's heatmaps, which this
        run's report draws again."""
        if record.ok and record.config is not None:
            self.note_kept(record)
            self.redrawn.add(problem_of(record))
        if measured_now and self._first_s is None:
            self._first_s = record.wall_s
        elif measured_now:
            self._later_s = max(self._later_s or 0.0, record.wall_s)
        if record.ok and record.stats:
            bisect.insort(self.problems.setdefault(problem_of(record), []),
                          (record.stats.median, record.stats.bounds()))

    def note_kept(self, record: TrialRecord) -> None:
        """Count ``record``, found in the journal, towards its problem's heatmaps: the
        report draws them again only if this run adds to that problem."""
        if record.ok and record.config is not None:
            self.maps.setdefault(problem_of(record), ProblemMaps()).add_trial(record)

    def covers(self, entrants: list[TrialRecord], duty: Duty | None) -> bool:
        """Whether the time left covers the first round of ``entrants``' final (one
        problem's), the allowance for a trial in flight included (the sweep stopped with it
        kept).  One round, not all: the deadline stops the rounds that do not fit
        (:func:`~sweeper.finals.remeasure`), and on the 2-core development machine under
        load the bound of every round grew with the trial in flight's finalist past the
        time the sweep had stopped to keep: the final it had kept that time for never ran
        (two runs of four)."""
        return self.first_round_s(entrants, duty) <= self.finals_time_left()

    def first_round_s(self, entrants: list[TrialRecord], duty: Duty | None) -> float:
        """At most what the first round of ``entrants``' final takes."""
        return self._final_s(_medians(entrants), duty, rounds=1)

    def finals_time_left(self) -> float:
        """The time left for a final to start in: the budget's, and the allowance for a
        trial in flight (the sweep stopped with it kept)."""
        return self.time_left() + self.trial_s

    def finals_room_s(self) -> float:
        """Seconds the time budget leaves the finals in a run of the same command that
        measures no trial before them (a resume keeps the time its owed finals take, and
        measures a trial only where more is left): the budget less this run's start-up
        and what it keeps for the report and what follows the finals (``inf`` without a
        budget)."""
        if self.max_time_s is None:
            return math.inf
        return self.max_time_s - self.outside_s - self.keep_for_report()

    def kept_after(self, entrants: list[TrialRecord], later: list[list[TrialRecord]],
                   duty: Duty | None) -> float:
        """Seconds the final of ``entrants`` leaves before the budget's end: the first
        ``MIN_ROUNDS`` rounds of the finals after it (``later``: the time the sweep kept
        for them), and its own confirmation under sustained load, which follows its
        rounds.  Its rounds past ``MIN_ROUNDS`` run in what is left over, not in theirs."""
        own = _medians(entrants)
        confirm = self._final_s(own, duty, rounds=0) if own else 0.0
        return confirm + sum(self._final_s(_medians(g), duty, rounds=MIN_ROUNDS)
                             for g in later if _medians(g))

    def time_left(self) -> float:
        """Seconds of the time budget left (``inf`` without one)."""
        return self.finals_room_s() - (time.perf_counter() - self.t0)

    def stopped_by(self, study: optuna.Study, best: TrialRecord | None, *,
                   again: bool = False) -> str:
        """Why the sweep stops now, or ``""`` to go on.  ``again``: a config to be
        measured again comes next (its worker process was killed from outside), which
        Ctrl-C, the trial and time budgets and failures alike stop, but neither every
        config tried (it is one of them), a sampler converged nor a goal met (it may be
        the best)."""
        return self._spent(study, again) or ("" if again else self._goal_reached(best))

    def halted(self) -> bool:
        """Whether no trial may start now, not even one asked for already: Ctrl-C, or the
        time budget spent.  (The other budgets only stop the asking: a config asked
        ahead counts against the trial budget already, and may be what completes the
        space.)"""
        return self.stop.set or self.time_left() <= self.keep_for_finals()

    def counted(self, record: TrialRecord, best: TrialRecord | None) -> TrialRecord | None:
        """Count a measured trial and return the best after it.  A faster trial becomes
        the best; it restarts ``budget.patience`` only if it beats the old best beyond
        noise."""
        self.measured += 1
        self.retried += record.retry
        self.note(record, measured_now=True)
        if self.alike is not None and not record.retry:   # a kill from outside: no news
            self.alike = _alike(self.alike, record)
        if record.ok and (best is None or record.score > best.score):
            if beyond_noise(best, record):
                self.since_improvement = 0
            best = record
        self.since_improvement += 1
        return best

    def left(self, study: optuna.Study, again: int = 0) -> tuple[int, bool]:
        """The configs a run of the same command would still measure under the trial
        budget, and whether that is exact: an exhaustive sampler's configs not yet in
        ``study``, and those asked ahead but dropped at the stop; for any other, the valid
        configs not yet measured (``False``: at most that many, as such a sampler may stop
        before it has tried them all).  Either way with the configs to be measured again
        that this run's trials left (``again``, of :attr:`retried`): the sampler counts
        them proposed, but the next run measures them, and its trial budget counts their
        next trials (an earlier run's such configs the sampler never had, nor
        :attr:`measured` counted)."""
        sampler = study.sampler
        exact = isinstance(sampler, ExhaustiveSampler)
        measured = self.measured - self.retried
        left = again + sampler.remaining(study) + self.dropped if isinstance(
            sampler, ExhaustiveSampler) else \
            max(0, self.valid - measured + self.outside - self.held)
        if self.max_trials is not None:
            left = min(left, max(0, self.max_trials - measured))
        return left, exact

    @property
    def spent_trials(self) -> int:
        """The trials the trial budget counts, those in flight aside: the study's (every
        worker's, shared), or this run's and those it resumed from, but for those to be
        measured again."""
        return self.measured - self.retried if self.recorded is None else self.recorded

    def _spent(self, study: optuna.Study, again: bool = False) -> str:
        if self.stop.set:
            return self.stop.reason
        taken = self.measured - self.retried + self.in_flight
        # a space with nothing left says so before a budget it also spent (a study
        # measured whole, run again under --trials 3, stopped at once for "budget: 3
        # trials"); configs other workers hold are left: a spent budget takes none over
        complete = not again and self._complete(study, taken)
        if complete and not self.held:
            return COMPLETE
        spent = self.spent_trials + self.in_flight
        if self.max_trials is not None and spent >= self.max_trials:
            return f"budget: {self.max_trials} trials"
        kept = self.keep_for_finals()
        if self.time_left() <= kept:
            # without finals (a worker's sweep, a replay) only the trial in flight is kept
            what = "the finals" if self.finals_duty is not None else "the trial in flight"
            return f"budget: {self.max_time_s:g} s" + (
                f" ({kept:.1f} s of it kept for {what})" if round(kept, 1) else "")
        if complete:                # the held configs taken over once free (the loop)
            return COMPLETE
        if self.repeats >= MAX_REPEATED_PROPOSALS and not again:
            return f"sampler converged: {self.repeats} proposals in a row were already measured"
        if self.alike is not None and len(self.alike) >= ALIKE_FAILURES and (
                len(self.alike) >= SHARED_FAILURES or not self._shared()):
            first = self.alike[0]
            return (f"{ALIKE_STOP} {len(self.alike)} configs all failed alike "
                    f"({first.status.value}: {reason_line(first)}): the kernel, not a config, "
                    f"is at fault; fix it and run again (with {given('force')}: a study "
                    "refuses a changed kernel or space without it)")
        return ""

    def _complete(self, study: optuna.Study, taken: int) -> bool:
        """Whether no valid config is left to propose: an exhaustive sampler has proposed
        each, or as many as the valid configs were measured, are measuring or are held by
        other workers (``taken``: measured and in flight)."""
        sampler = study.sampler
        if isinstance(sampler, ExhaustiveSampler):
            left: int = sampler.remaining(study)
            return left == 0
        return taken - self.outside + self.held >= self.valid

    def _shared(self) -> bool:
        """Whether the failures alike all have one label of a chosen axis."""
        assert self.alike
        return bool(set.intersection(*({(a, v) for a, v in t.choice.items()
                                        if a in self.chosen_axes} for t in self.alike)))

    def _goal_reached(self, best: TrialRecord | None) -> str:
        budget = self.budget
        if budget.patience is not None and self.since_improvement >= budget.patience:
            return (f"budget: the best did not improve beyond noise for {budget.patience} "
                    "trials")
        if budget.target is not None and best is not None and self.ceilings is not None and \
                self.ceilings.copy and best.config and best.gbps:
            ceiling = self.ceilings.bandwidth(best.config.problem.footprint, best.config.cache)
            if best.gbps >= budget.target * ceiling:
                return (f"budget: target {100 * budget.target:g}% of the ceiling reached "
                        f"({best.gbps:.4g} of {ceiling:.4g} GB/s)")
        return ""


#: A run whose first trials all fail alike stops after this many: the kernel is broken
#: (a typo, a wrong answer everywhere), and the rest of the space would fail the same way.
ALIKE_FAILURES = 5


#: How the stop for failures alike begins (:func:`stopped_alike` reads it back).
ALIKE_STOP = "the first"


def stopped_alike(stopped_by: str) -> int | None:
    """How many configs failed alike where ``stopped_by`` (a run's stop, as study.json's
    ``last_run`` keeps it) is the stop for failures alike; None where it is another."""
    said = re.match(rf"{ALIKE_STOP} (\d+) configs all failed alike \(", stopped_by)
    return int(said.group(1)) if said else None


#: ... or after this many where they all share a label of a chosen axis (a value the
#: failures may owe to, not the kernel: the sampler's next configs will tell).
SHARED_FAILURES = 4 * ALIKE_FAILURES


def _masked(record: TrialRecord) -> tuple[str, str]:
    """A failure's status and whole reason, on one line (:func:`one_line`), with its
    numbers masked: what failures alike share whatever config they ran.  The line is
    masked before any cut for the terminal, whose place would move with the numbers'
    widths."""
    line = one_line(record.reason or "") or "no reason recorded"
    return record.status.value, re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", line)


def _alike(seen: list[TrialRecord], record: TrialRecord) -> list[TrialRecord] | None:
    """``seen`` with ``record`` added while it failed as they did, the kernel's fault;
    ``None`` from the first that did not."""
    if record.status not in KERNEL_FAULTS:
        return None
    return [*seen, record] if not seen or _masked(seen[0]) == _masked(record) else None


def beyond_noise(old: TrialRecord | None, new: TrialRecord) -> bool:
    """Is ``new`` faster than ``old`` by more than their medians' CIs allow?  Compared on
    the search's score (a rate, the inverse of a median times its problem's work), each
    median's interval scaled to it: the trials of a space over several problems (shapes,
    footprints) have medians of different problems, which their times cannot compare;
    within one problem this is the times' comparison."""
    if old is None or not old.stats or not new.stats:
        return True
    new_lo = new.score * new.stats.median / new.stats.bounds()[1]
    old_hi = old.score * old.stats.median / old.stats.bounds()[0]
    return new_lo > old_hi


def best_of(trials: list[TrialRecord]) -> TrialRecord | None:
    """The fastest ``ok`` trial by score, or None."""
    ok = [t for t in trials if t.ok]
    return max(ok, key=lambda t: t.score) if ok else None
