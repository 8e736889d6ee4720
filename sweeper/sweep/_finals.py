"""The finals at the end of a sweep: each problem's finalists measured again in
interleaved rounds, the torch baseline among them, to choose its winner
(:mod:`sweeper.finals` says how).

The sweep's workers measure them (:func:`run_finals`): the one in the coordinator's own
process, or with worker processes each worker the same finalists on its own GPU, all at
once (a :class:`~sweeper.sweep._workers.FinalsJob`); with several GPUs each final is
recorded with its GPU, and how they agree is read from those records
(:mod:`sweeper.consensus`).

Only problems without a current final take part, and each problem's finals are appended
to the journal as soon as they are done: a run stopped halfway keeps those finished, and
the next one measures the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sweeper.finals import GPU_FINAL, FinalRecord, FinalSize, finalists_by_problem, problem_of
from sweeper.measure import Duty
from sweeper.outcome import problem_text
from sweeper.store import ProblemKey, Storage, TrialRecord
from sweeper.sweep._summary import Reporter
from sweeper.sweep._workers import FinalsJob, Workers

#: Whether a problem's final (its entrants) may start now; by default, every one may.
Covered = Callable[[list[TrialRecord]], bool]
#: Seconds a final of these finalists leaves before the deadline, given the later finals'.
KeptAfter = Callable[[list[TrialRecord], list[list[TrialRecord]]], float]


def run_finals(trials: list[TrialRecord], problems: list[ProblemKey], workers: Workers,
               store: Storage, seed: int, duty: Duty | None,
               keep_extras: Callable[[list[Any]], None], reporter: Reporter,
               covered: Covered = lambda entrants: True, deadline: float | None = None,
               kept_after: KeptAfter = lambda entrants, later: 0.0,
               source: str | None = None, edited: Callable[[str], bool] = lambda said: False,
               size: FinalSize = GPU_FINAL) -> tuple[list[FinalRecord], list[str]]:
    """The finals of ``problems`` among ``trials``, measured by every worker at once (each
    on its own GPU) with the sampler's ``seed`` (which shuffles the rounds), one record per
    GPU (naming it where there are several), appended problem by problem, the first
    worker's rounds told to ``reporter``; ``keep_extras`` keeps the records the workers'
    measuring added.  Returns the finals and, for a GPU whose worker died or hung during a
    final, what happened (its other GPUs' finals are kept; where none is, the next run
    measures the problem's final, and the line says so).  A problem whose final is not
    ``covered`` (by the time budget) is left for the next run; one that runs takes no
    round past ``deadline`` (:func:`~sweeper.finals.remeasure`) less what it must leave
    (``kept_after`` of its finalists and the later problems' finalists: their first rounds,
    its own confirmation), so that its rounds past ``MIN_ROUNDS`` do not take the time
    the budget kept for the finals after it.  ``source``: the kernel source hash the
    finalists were measured on, which a worker process holds against its own kernel's;
    ``edited`` of what a worker found ("": nothing) says whether the kernel's source was
    edited since: a final measured past an edit is not kept, and none starts after.
    ``size``: the most finalists a final takes on the workers' device (and rounds, which
    the workers keep to)."""
    newest = max(t.number for t in trials)
    finals: list[FinalRecord] = []
    lost: list[str] = []
    chosen_by = finalists_by_problem((t for t in trials if problem_of(t) in problems), size)
    groups = [chosen_by[problem] for problem in problems if problem in chosen_by]
    for at, chosen in enumerate(groups):
        if edited(""):
            break
        if not covered(chosen):
            continue
        job = FinalsJob(chosen, seed, duty, None if deadline is None else
                        deadline - kept_after(chosen, groups[at + 1:]), source)
        for worker in workers.all:
            worker.submit_finals(job)
        kept, errors = False, []
        for i, worker in enumerate(workers.all):
            outcome = worker.finals_result(None if i else reporter.final_round)
            if edited(outcome.edited):      # it may have measured the edited kernel
                continue
            keep_extras(outcome.extras)
            if outcome.record is None:
                errors.append(f"{worker.slot or 'a worker'}, "
                              f"{problem_text(problem_of(chosen[0]))}: {outcome.error}")
                continue
            kept = True
            # one GPU's final names none
            outcome.record.gpu = worker.slot if workers.several else None
            outcome.record.after_trial = newest
            store.append(outcome.record)
            finals.append(outcome.record)
        if errors and not kept:             # no GPU's final: the problem has none yet
            errors[-1] += ("; its final is left for the next run (run the same command to "
                           "measure it)")
        lost.extend(errors)
        reporter.final_done()
    return finals, lost
