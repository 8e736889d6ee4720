"""Search on the GPU itself, with its real noise (the replayed figures come from
``search_efficiency.py``).

    python benchmarks/search_live.py [--space spaces/copy.yaml] [--seeds 5] [--budget 25]

1. The space exhaustively, the reference: its best median defines "98 % of the best".
2. ``auto`` with seeds 0..N-1, each for ``--budget`` measured trials: the trial at which
   it first measured a config within 98 % of the reference's best, and the best it found
   (as a fraction of the reference's best: above 1 is noise in its favour).
3. The exhaustive sweep again with ``measure.abandon: 1.5``: how many trials were
   abandoned, the GPU sampling time saved, and whether the best is the same config.

Finals (interleaved re-measurement) and priors (earlier studies' winners, which ``sweeper
run`` would hand ``auto``; here the other seeds' runs of the same problem) are left out:
this measures search alone.  Wall
times include Triton's compile of each config the first time it is launched: the
reference compiles all of them, later runs find them in Triton's cache, so compare GPU
sampling time saved, not wall times across runs.  Prints a table last; the studies stay
under ``--out`` for inspection.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from search_efficiency import StopAtGoal  # noqa: E402  (this folder)

from sweeper.devices import open_device  # noqa: E402
from sweeper.kernels import load_kernel  # noqa: E402
from sweeper.space import SamplerSpec, load_space  # noqa: E402
from sweeper.store import StudyStore  # noqa: E402
from sweeper.sweep import Sweep, open_study  # noqa: E402


def short(choice, space) -> str:
    """The choice's values on the axes that vary."""
    return " ".join(f"{a.name}={choice[a.name]}" for a in space.axes if len(a.labels) > 1)


def sweep(space, kernel, device, root: Path, name: str, best: float = float("inf"),
          max_trials: int | None = None):
    """Run ``space``; the watch notes the first trial within GOAL of ``best``."""
    store = StudyStore(root / name)
    open_study(store, space, kernel, device, command="benchmarks/search_live.py", force=True)
    watch = StopAtGoal(best, stop=None)
    t0 = time.perf_counter()
    summary = Sweep(space, kernel, device, store, reporter=watch, finals=False,
                    max_trials=max_trials, priors=[]).run()
    return summary, watch, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--space", default="spaces/copy.yaml")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=25)
    parser.add_argument("--out", default="/tmp/search-live")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    root = Path(args.out)
    device = open_device(args.device)
    space = load_space(ROOT / args.space)
    kernel = load_kernel(space.kernel, space.kernel_options)
    unlimited = dataclasses.replace(space.budget, trials=None, time_s=None)

    exhaustive = dataclasses.replace(space, sampler=SamplerSpec(name="exhaustive", seed=0),
                                     budget=unlimited)
    ref, _, ref_s = sweep(exhaustive, kernel, device, root, "reference")
    best = ref.best.score
    print(f"reference: exhaustive, {ref.measured} configs in {ref_s:.1f} s; best "
          f"#{ref.best.number} {short(ref.best.choice, space)} {best:.4g}")

    rows = []
    for seed in range(args.seeds):
        auto = dataclasses.replace(space, sampler=SamplerSpec(name="auto", seed=seed),
                                   budget=unlimited)
        summary, watch, wall = sweep(auto, kernel, device, root, f"auto-{seed}",
                                     best=best, max_trials=args.budget)
        rows.append((f"auto seed {seed}", watch.count, watch.reached,
                     summary.best.score / best, wall, summary.best.choice))
        print(f"auto seed {seed}: {watch.count} trials, 98 % at "
              f"{watch.reached or 'never'}, best {short(summary.best.choice, space)} "
              f"{summary.best.score:.4g} ({summary.best.score / best:.4f} of the reference)")

    abandon = dataclasses.replace(exhaustive, measure=dataclasses.replace(space.measure,
                                                                          abandon=1.5))
    ab, _, ab_s = sweep(abandon, kernel, device, root, "abandon")
    abandoned = [t for t in ab.trials if t.status.value == "abandoned"]
    same = ab.best.choice == ref.best.choice
    print(f"abandon 1.5: {len(abandoned)} of {ab.measured} trials abandoned, "
          f"{ab.saved_ms:.0f} ms of sampling saved; wall {ab_s:.1f} s against {ref_s:.1f} s; "
          f"best #{ab.best.number} {short(ab.best.choice, space)} {ab.best.score:.4g} "
          f"({'the same config' if same else 'another config'}, "
          f"{ab.best.score / best:.4f} of the reference)")

    print()
    print("| run | trials | first within 98 % | best found / reference best | wall s "
          "(first run compiles) |")
    print("|---|---|---|---|---|")
    print(f"| exhaustive | {ref.measured} | – | 1 | {ref_s:.1f} |")
    for name, count, reached, ratio, wall, _ in rows:
        print(f"| {name} | {count} | {reached or 'never'} | {ratio:.4f} | {wall:.1f} |")
    print(f"| exhaustive, abandon 1.5 | {ab.measured} ({len(abandoned)} abandoned) | – | "
          f"{ab.best.score / best:.4f} | {ab_s:.1f} |")


if __name__ == "__main__":
    main()
