"""An exhaustive sweep on one GPU against the same sweep on two, one worker process each.

Run on a machine with two GPUs:  python benchmarks/multi_gpu.py [spaces/copy.yaml]

The workers' start-up (3.4-3.7 s of imports on the H200 machine) is a fixed cost of each
sweep: on copy's 14 s of trials it alone keeps two GPUs at 0.6x of one or more, however
well the trials split; a space of long trials (``python benchmarks/multi_gpu.py
spaces/matmul-8k.yaml --brief``: 108 configs, 3 minutes on one H200) shows the scaling of
a sweep, and the measuring time alone is printed too.

A first sweep on both GPUs compiles every config (the Triton cache is then warm for
both sides, and discarded); then the space is swept with ``--gpus 0``, with ``--gpus 1``
(each GPU's own pace: a trial slower on two GPUs than on one may be the second GPU's) and
with ``--gpus 0,1``, each into a fresh study.  Printed: each sweep's wall time without its
finals (on two GPUs the finals run on both), the ratio (goal <= 0.55), how the trials
split between the GPUs, whether both studies end with the same winner per problem
(or, where not, how far apart the two winners' medians are: within noise, the finals may
name either), and per problem whether one config serves both GPUs (sweeper.consensus).
For each timed sweep, where its time went (sweeper.sweep._timing): each worker's launch,
start-up steps, busy, idle and tail time, the coordinator's milliseconds per trial, and
what came after the loop (closing the workers, the drift check).  Last, the whole
``sweeper run --no-report`` command with ``--gpus 0`` and ``--gpus 0,1``, timed from the
shell (imports, worker start-up and finals included), with its own time line.

``SWEEPER_NVML_PERIOD_MS=200 python benchmarks/multi_gpu.py`` polls each GPU's state ten
times less often (the workers inherit it): on two GPUs a trial took 75.3 ms against 66.7
ms on one, and NVML's calls may wait on the driver's locks with the other worker's (on
one GPU the poll period moved no trial: 20, 200 and 1000 ms alike).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

from sweeper.devices import open_device
from sweeper.kernels import load_kernel
from sweeper.outcome import problem_text
from sweeper.space import load_space
from sweeper.store import StudyStore
from sweeper.sweep import Sweep, SweepSummary, open_study
from sweeper.winners import Winners


def sweep(space_path: str, root: Path, gpus: list[int]) -> tuple[float, StudyStore]:
    """Sweep ``space_path`` into a study at ``root`` with one worker process per GPU of
    ``gpus``, and print where its time went; the sweep's wall time without the finals,
    and the store (its measuring time, from the first job to the last outcome, is
    ``measuring[gpus]``)."""
    space = load_space(space_path)
    device = open_device("cuda")
    kernel = load_kernel(space.kernel, space.kernel_options)
    store = StudyStore(root)
    open_study(store, space, kernel, device, command=f"multi_gpu.py --gpus {gpus}")
    summary = Sweep(space, kernel, device, store, gpus=gpus, processes=True).run()
    show_timing(f"--gpus {','.join(map(str, gpus))}", summary)
    if summary.timing is not None:
        measuring[tuple(gpus)] = summary.timing.span_s - summary.timing.setup_s
    return summary.wall_s - summary.finals_s, StudyStore(root)


#: Each timed sweep's measuring seconds: its loop less the workers' start-up (their
#: imports: a fixed cost, which ``sweeper run`` spends beside its own imports).
measuring: dict[tuple[int, ...], float] = {}


def show_timing(label: str, summary: SweepSummary) -> None:
    """Print the sweep's breakdown, and its time outside the loop and the finals."""
    if summary.timing is None:
        return
    after = summary.wall_s - summary.finals_s - summary.timing.span_s
    print(f"{label}: {summary.wall_s:.2f} s, finals {summary.finals_s:.2f} s, after the "
          f"loop {after:.2f} s")
    for line in summary.timing.lines():
        print(f"  {line}")


def winners(store: StudyStore) -> dict[object, tuple[str, float]]:
    """Each problem's winner: its config's key and median (ms)."""
    trials = {t.number: t for t in store.records()[0]}
    out: dict[object, tuple[str, float]] = {}
    for problem, final in Winners.of(store).current(list(trials.values())).items():
        t = trials[final.winner]
        out[problem] = (" ".join(t.key()), t.stats.median if t.stats else float("nan"))
    return out


def main(argv: list[str] | None = None) -> int:
    """Time the sweeps (and the commands), print what they show; 0."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("space", nargs="?", default="spaces/copy.yaml")
    p.add_argument("--brief", action="store_true",
                   help="only the sweeps on GPU 0 and on both (a space of long trials)")
    args = p.parse_args(argv)
    space_path = args.space
    from sweeper.devices._nvml import poll_period_s

    print(f"NVML polled every {1e3 * poll_period_s():g} ms")
    with tempfile.TemporaryDirectory() as tmp:
        sweep(space_path, Path(tmp) / "warm", [0, 1])
        one_s, one = sweep(space_path, Path(tmp) / "one", [0])
        other_s = float("nan") if args.brief else \
            sweep(space_path, Path(tmp) / "other", [1])[0]         # is GPU 1 alone slower?
        two_s, two = sweep(space_path, Path(tmp) / "two", [0, 1])
        split = collections.Counter(t.gpu.index for t in two.records()[0] if t.gpu)
        print(f"{space_path}: --gpus 0: {one_s:.1f} s; --gpus 1: {other_s:.1f} s; "
              f"--gpus 0,1: {two_s:.1f} s "
              f"(trials per GPU: {dict(sorted(split.items()))}); ratio {two_s / one_s:.3f} "
              f"(goal <= 0.55)")
        m1, m2 = measuring.get((0,)), measuring.get((0, 1))
        if m1 and m2:
            print(f"{space_path}: measuring alone (first job to last outcome): --gpus 0: "
                  f"{m1:.1f} s; --gpus 0,1: {m2:.1f} s; ratio {m2 / m1:.3f}")
        a, b = winners(one), winners(two)
        agree = True
        for problem in sorted(set(a) | set(b), key=str):
            if problem not in a or problem not in b:
                agree = False
                print(f"{problem}: a winner on {'one' if problem in a else 'two'} GPU(s) only")
                continue
            (ka, ma), (kb, mb) = a[problem], b[problem]
            if ka != kb:
                agree = False
                print(f"{problem}: winners differ: {ka} ({ma:.4g} ms) on one GPU, {kb} "
                      f"({mb:.4g} ms) on two: {100 * abs(ma - mb) / ma:.2f} % apart")
        print("winners agree" if agree else "winners differ (see above)")
        trials = two.records()[0]
        for problem, agreed in sorted(Winners.of(two).agreements(trials).items()):
            print(f"{problem_text(problem)}, across GPUs: {agreed.headline()}")
        if args.brief:
            return 0
        walls = {gpus: command(space_path, gpus, Path(tmp) / f"cmd-{gpus}")
                 for gpus in ("0", "0,1")}
        print(f"{space_path}: the whole command (finals included, no report): --gpus 0: "
              f"{walls['0']:.1f} s; --gpus 0,1: {walls['0,1']:.1f} s; ratio "
              f"{walls['0,1'] / walls['0']:.3f}")
        return 0


def command(space_path: str, gpus: str, studies: Path) -> float:
    """``sweeper run SPACE --gpus GPUS --no-report`` timed from the shell (its imports,
    workers and finals included); prints its time line and returns its wall seconds."""
    import subprocess
    import time

    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "sweeper", "run", space_path, "--gpus", gpus,
                           "--no-report", "--quiet", "--studies-dir", str(studies)],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    for line in done.stdout.splitlines():
        if line.startswith("time: "):
            print(f"sweeper run --gpus {gpus}: {wall:.2f} s from the shell; {line}")
    return wall


if __name__ == "__main__":
    sys.exit(main())
