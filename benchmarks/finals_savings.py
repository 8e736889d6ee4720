"""What the finals' early stop and pruning save, replayed on recorded finals.

    python benchmarks/finals_savings.py STUDY_DIR [STUDY_DIR ...]

Each study's recorded finals (5 full rounds of 10 samples per entrant, measured on a GPU)
are run again through :func:`sweeper.finals.remeasure`, each entrant answering a round
with the samples it gave in that round: a finalist no longer in contention leaves, and
the rounds stop once the winner and the tied set are settled.  Printed per final: the
winner and tied set of the full rounds and of the shortened ones, and the entrant-rounds
(the baseline's included) each took.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sweeper.finals import FinalRecord, remeasure
from sweeper.measure import StopRule
from sweeper.store import StudyStore, TrialRecord


def replayed(final: FinalRecord, trials: dict[int, TrialRecord]) -> tuple[FinalRecord, int]:
    """``final`` run again on its recorded rounds; and the entrant-rounds that took."""
    def split(samples: list[float]) -> list[list[float]]:
        """A recorded entrant's samples by round (a cool-down schedule takes fewer than
        ``samples_per_round``: one burst a round)."""
        per = len(samples) // final.rounds
        return [samples[i * per:(i + 1) * per] for i in range(final.rounds)]

    rounds = {f.number: split(f.samples_ms) for f in final.finalists}
    taken = {n: 0 for n in rounds}
    used = [0]

    def measure_one(t: TrialRecord, rule: StopRule) -> list[float]:
        taken[t.number] += 1
        used[0] += 1
        return rounds[t.number][taken[t.number] - 1]

    base = final.baseline
    base_rounds = split(base.samples_ms) if base else []

    def measure_base(rule: StopRule) -> list[float]:
        used[0] += 1
        return base_rounds.pop(0)

    group = [trials[f.number] for f in final.finalists]
    again = remeasure(group, measure_one, lambda t: 0,
                      baseline=(base.name, measure_base) if base else None)
    return again, used[0]


def main(argv: list[str]) -> None:
    full_total = short_total = 0
    for root in map(Path, argv):
        store = StudyStore(root)
        trials = {t.number: t for t in store.records(warn=False)[0]}
        for final in store.read(FinalRecord):
            again, used = replayed(final, trials)
            full = final.rounds * (len(final.finalists) + (1 if final.baseline else 0))
            full_total, short_total = full_total + full, short_total + used
            same = (again.winner, sorted(again.tied)) == (final.winner, sorted(final.tied))
            print(f"{root.name}: {len(final.finalists)} finalists; full: #{final.winner} "
                  f"tied {sorted(final.tied)}, {full} entrant-rounds; shortened: "
                  f"#{again.winner} tied {sorted(again.tied)} after {again.rounds} rounds, "
                  f"{used} entrant-rounds ({100 * used / full:.0f}%); "
                  f"{'the same' if same else 'DIFFERENT'}")
    print(f"all: {short_total} of {full_total} entrant-rounds "
          f"({100 * short_total / max(full_total, 1):.0f}%)")


if __name__ == "__main__":
    main(sys.argv[1:])
