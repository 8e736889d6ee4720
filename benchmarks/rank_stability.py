"""Do two studies of the same space rank their best configs the same way?

    python benchmarks/rank_stability.py STUDY_A STUDY_B [--top 10] [--per-clock]

Over the configs measured in both studies, takes the ``--top`` fastest of study A by
sweep median and prints the Spearman rank correlation of their medians in A and B, each
config's two medians, and from each study's interleaved final the winner, its median,
and its speed against the torch baseline measured in the same rounds, and each final's
winner as the other study's sweep measured it (against that sweep's fastest).  Used to show
that a power-bound problem's ranking does not depend on when each config was measured.
``--per-clock`` scales each of B's medians to the highest SM clock B's trials ran at
(median x the trial's mean SM clock from NVML / that clock), as if a kernel's time went
as one over the clock: whether B's ranking under sustained load, so scaled, is A's
under cool-downs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sweeper.measure import spearman
from sweeper.store import StudyStore
from sweeper.winners import Winners


def medians(store: StudyStore, per_clock: bool = False
            ) -> dict[tuple[str, ...], tuple[int, float]]:
    """Each ok trial's config -> (its number, its median in ms); with ``per_clock``, the
    median scaled to the highest mean SM clock among the trials (trials without a clock
    reading kept as they are)."""
    trials = [t for t in store.records()[0] if t.ok and t.stats]
    clocks = [t.clocks.sm_mhz_mean for t in trials if t.clocks and t.clocks.sm_mhz_mean]
    top = max(clocks, default=0.0)

    def scaled(t) -> float:
        mhz = t.clocks.sm_mhz_mean if t.clocks else None
        return t.stats.median * mhz / top if per_clock and mhz and top else t.stats.median

    return {t.key(): (t.number, scaled(t)) for t in trials}


def problems(store: StudyStore) -> dict[tuple[str, ...], object]:
    """Each measured config's problem: a winner is compared with its own problem's best."""
    return {t.key(): t.problem for t in store.records()[0] if t.ok and t.stats}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--per-clock", action="store_true",
                        help="B's medians scaled to its highest SM clock (docstring)")
    args = parser.parse_args()
    stores = [StudyStore(args.a), StudyStore(args.b)]
    ma, mb = medians(stores[0]), medians(stores[1], args.per_clock)
    common = sorted((k for k in ma if k in mb), key=lambda k: ma[k][1])[:args.top]
    rho = spearman([ma[k][1] for k in common], [mb[k][1] for k in common])
    print(f"{len(ma)} and {len(mb)} configs measured; {len(set(ma) & set(mb))} in both")
    print("| rank in A | A # | A median ms | B median ms | B/A |")
    print("|---|---|---|---|---|")
    for i, k in enumerate(common, 1):
        print(f"| {i} | {ma[k][0]} | {ma[k][1]:.4f} | {mb[k][1]:.4f} | "
              f"{mb[k][1] / ma[k][1]:.4f} |")
    for name, store in zip("AB", stores, strict=True):
        for final in Winners.of(store).finals.values():
            row = final.winner_row()
            ratio, against = final.baseline_ratio(), final.compared_baseline()
            cool = (f", {final.confirmed.stats.median:.4f} ms after cool-downs"
                    if final.confirmed else "")
            base = (f", {against.name} {against.stats.median:.4f} ms in "
                    f"the same rounds: winner at {ratio:.3f}x" if ratio and against else "")
            print(f"{name}: winner #{final.winner} {row.stats.median:.4f} ms over "
                  f"{len(final.finalists)} finalists{cool}{base}; "
                  f"{final.duty or 'no duty schedule'}")
    # each final's winner as the other study's sweep measured it: a policy that decides
    # differently is judged by what its winner costs under the other's conditions
    keys = [{n: k for k, (n, _) in m.items()} for m in (ma, mb)]
    of = problems(stores[0]) | problems(stores[1])
    for (name, store, own), (other_name, other) in zip(
            zip("AB", stores, keys, strict=True), (("B", mb), ("A", ma)), strict=True):
        for final in Winners.of(store).finals.values():
            key = own.get(final.winner)
            if key in other:
                fastest = min(ms for k, (_, ms) in other.items() if of[k] == of[key])
                print(f"{name}'s winner #{final.winner} in {other_name}'s sweep: "
                      f"{other[key][1]:.4f} ms, {other[key][1] / fastest:.4f}x "
                      f"{other_name}'s fastest {fastest:.4f} ms")
    print(f"Spearman over A's top {len(common)} configs measured in both: {rho:.3f}")


if __name__ == "__main__":
    main()
