"""The finals at the end of a sweep: each problem's finalists measured again in
interleaved rounds, the torch baseline among them, to choose its winner
(:mod:`sweeper.finals` says how).

Only problems without a current final take part, and each final is appended to the
journal as soon as it is done: a run stopped halfway keeps those finished, and the next
one measures the rest.
"""

from __future__ import annotations

from sweeper.finals import FinalRecord, finalists, problem_of, remeasure
from sweeper.store import ProblemKey, Storage, TrialRecord
from sweeper.sweep._bench import Bench


def run_finals(trials: list[TrialRecord], problems: list[ProblemKey], bench: Bench,
               store: Storage, seed: int) -> list[FinalRecord]:
    """The finals of ``problems`` among ``trials``, measured on ``bench`` with the
    sampler's ``seed`` (which shuffles the rounds), one record each."""
    groups: dict[ProblemKey, list[TrialRecord]] = {}
    for t in trials:
        if t.ok and problem_of(t) in problems:
            groups.setdefault(problem_of(t), []).append(t)
    newest = max(t.number for t in trials)
    finals = []
    for problem in problems:
        chosen = finalists(groups.get(problem, []))
        if not chosen:
            continue
        duty = bench.power.duty
        record = remeasure(chosen, bench.again, bench.bytes_of, seed=seed,
                           baseline=bench.baseline_again(chosen[0]),
                           duty=duty.describe() if duty else "")
        record.after_trial = newest
        store.append(record)
        finals.append(record)
    return finals
