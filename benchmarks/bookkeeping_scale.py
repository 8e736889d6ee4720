"""Bookkeeping against the size of the space: what a sweep and a report cost beyond the
trials themselves, from 200 to 10⁶ configs, on replayed timings (no GPU).

    python benchmarks/bookkeeping_scale.py [--rates 200,10000,100000] [--trials 400]
                                           [--first 1000000] [--report 100000]
                                           [--only rates|first|report] [--keep DIR]

For each size it writes a space (the copy kernel: ``grid`` a range, ``block`` six values,
``BLOCK`` powers of two, ``BLOCK >= block``) and a replay table of its valid configs with
made-up medians, then measures, each in a fresh process so the peak RSS is its own:

- **rates**: an exhaustive ``sweeper run`` stopped after ``--trials`` trials; trials/s
  over the trials after the first (the bookkeeping per trial: ask, tell, journal);
- **first**: time from the command's start to its first trial kept, and the peak RSS
  then, at ``--first`` configs (the up-front costs: enumerating, ordering, the ruled-out
  configs recorded);
- **report**: ``sweeper report`` of a study holding ``--report`` trials, its wall time
  and peak RSS.  The study is made by a one-trial run, then its journal filled with the
  other trials' records, written as the journal writes them (a sweep of 10⁵ trials
  would take minutes of its own).

Goals (issue #25, item 10): trials/s independent of the size; the first trial of 10⁶
configs within 5 s; the report of 10⁵ trials within 60 s and 1 GB.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = (32, 64, 128, 256, 512, 1024)
MAX_GRIDS = 4096            # values of one axis, at most (the space parser's cap)
MAX_CONFIGS = 1_000_000


def shape_of(n: int) -> tuple[int, int]:
    """(grids, BLOCK values) for a space of about ``n`` configs (never more than 10⁶)."""
    powers = max(8, math.ceil(n / (len(BLOCKS) * MAX_GRIDS)))
    grids = max(1, round(n / (len(BLOCKS) * powers)))
    while grids * len(BLOCKS) * powers > MAX_CONFIGS:
        grids -= 1
    return grids, powers


def median_of(grid: int, block: int, power: int) -> float:
    """A made-up median (ms), the same for the same config: a bowl with some ripple."""
    ripple = ((grid * 7919 + block * 31 + power * 104729) % 997) / 997
    return 0.5 + 0.01 * abs(power - 5) + 0.001 * abs(block - 256) / 32 + 0.05 * ripple


def write_case(folder: Path, n: int) -> tuple[Path, Path, int]:
    """The space file and replay table for about ``n`` configs; returns them and the
    space's size."""
    grids, powers = shape_of(n)
    lo = 256
    hi = lo << (powers - 1)
    space = folder / f"copy-{n}.yaml"
    space.write_text(
        f"# {grids} grids x {len(BLOCKS)} blocks x {powers} BLOCKs, written by "
        "benchmarks/bookkeeping_scale.py\n"
        f"study: scale-{n}\nkernel: copy\nsampler: exhaustive\nseed: 0\n"
        f"params:\n  grid: {{range: [1, {grids}]}}\n"
        f"  block: [{', '.join(map(str, BLOCKS))}]\n"
        f"  BLOCK: {{pow2: [{lo}, {hi}]}}\n"
        "  dtype: [float32]\n  footprint: [1GiB]\n"
        'constraints: ["BLOCK >= block"]\n'
        "measure: {warmup: 10, repeat: 50, cache: cold}\n"
        "budget: {trials: 2000000}\n")
    table = folder / f"copy-{n}.csv"
    with open(table, "w") as out:
        out.write("# sweeper replay table v1\n# gpu: NVIDIA H200\n# sms: 132\n"
                  "# l2_bytes: 62914560\n# kernel: copy\n"
                  "BLOCK,block,cache,dtype,footprint,grid,status,median_ms,samples_ms\n")
        for power in range(powers):
            block_elems = lo << power
            for block in BLOCKS:
                if block_elems < block:
                    continue
                for grid in range(1, grids + 1):
                    out.write(f"{block_elems},{block},cold,float32,1GiB,{grid},ok,"
                              f"{median_of(grid, block, power):.6f},\n")
    return space, table, grids * len(BLOCKS) * powers


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    """This process's CPU seconds so far: steadier than wall time on a shared machine."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_run(space: Path, table: Path, studies: Path, trials: int) -> dict[str, float]:
    """In this process: ``sweeper run`` of ``trials`` trials, each kept trial timed."""
    from sweeper.cli import main as sweeper
    from sweeper.devices._replay import ReplayDevice
    from sweeper.sweep._loop import Sweep

    kept: list[float] = []
    rss: list[float] = []
    table_s: list[float] = []
    keep, open_table = Sweep._keep, ReplayDevice.__init__

    def timed_keep(self, run, worker, job, outcome):    # type: ignore[no-untyped-def]
        keep(self, run, worker, job, outcome)
        kept.append(time.perf_counter())
        if len(kept) == 1:
            rss.append(peak_rss_mb())
            rss.append(cpu_s() - cpu0)

    def timed_open(self, path):                         # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        open_table(self, path)
        table_s.append(time.perf_counter() - t0)

    Sweep._keep = timed_keep          # type: ignore[method-assign]
    ReplayDevice.__init__ = timed_open                  # type: ignore[method-assign]
    cpu0 = cpu_s()
    start = time.perf_counter()
    code = sweeper(["run", str(space), "--device", f"replay:{table}", "--quiet",
                    "--no-report", "--studies-dir", str(studies), "--study", "bench",
                    "--trials", str(trials)])
    end = time.perf_counter()
    assert code == 0, f"sweeper run exited {code}"
    rate = (len(kept) - 1) / (kept[-1] - kept[0]) if len(kept) > 1 else 0.0
    return {"trials": len(kept), "trials_per_s": rate, "first_trial_s": kept[0] - start,
            "rss_at_first_mb": rss[0], "cpu_at_first_s": rss[1], "table_s": sum(table_s),
            "run_s": end - start, "peak_rss_mb": peak_rss_mb()}


def fill_journal(studies: Path, space: Path, table: Path, count: int) -> None:
    """Append to the one-trial study ``bench`` the records of ``count - 1`` more trials,
    each as a sweep of the table would have kept it, in the exhaustive order."""
    from sweeper.devices import open_device
    from sweeper.kernels import load_kernel
    from sweeper.samplers._order import plan_order
    from sweeper.space import load_space
    from sweeper.store import StudyStore, TrialRecord, key_of
    from sweeper.study import enumerate_choices
    from sweeper.sweep._replay import replayed

    loaded = load_space(space)
    device = open_device(f"replay:{table}")
    kernel = load_kernel(loaded.kernel)
    store = StudyStore(studies / "bench")
    trials, _ = store.records()
    have = {t.key() for t in trials}
    number = max(t.number for t in trials) + 1
    facts = device.facts()
    valid, _ = enumerate_choices(loaded, facts.env())
    lines = []
    for choice in plan_order(valid, loaded.sampler.seed):
        if len(have) >= count:
            break
        if key_of(choice) in have:
            continue
        config = loaded.resolve(choice, facts.env())
        result = replayed(device, kernel, choice, config)
        record = TrialRecord.from_result(number, choice, config, result,
                                         "2026-12-01T00:00:00+00:00", 0.001)
        lines.append(json.dumps(record.to_json(), separators=(",", ":")) + "\n")
        have.add(key_of(choice))
        number += 1
    with open(store.journal_path, "a") as out:
        out.writelines(lines)


def measure_report(studies: Path) -> dict[str, float]:
    """In this process: ``sweeper report`` of the study ``bench``."""
    from sweeper.cli import main as sweeper

    start, cpu0 = time.perf_counter(), cpu_s()
    code = sweeper(["report", "bench", "--studies-dir", str(studies)])
    assert code == 0, f"sweeper report exited {code}"
    return {"report_s": time.perf_counter() - start, "cpu_s": cpu_s() - cpu0,
            "peak_rss_mb": peak_rss_mb()}


def child(args: list[str]) -> None:
    """One measurement, in this fresh process; prints its figures as one JSON line."""
    kind, space, table, studies, count = args
    if kind == "run":
        out = measure_run(Path(space), Path(table), Path(studies), int(count))
    elif kind == "fill":
        fill_journal(Path(studies), Path(space), Path(table), int(count))
        out = {}
    else:
        out = measure_report(Path(studies))
    print(json.dumps(out))


def in_child(kind: str, space: Path, table: Path, studies: Path, count: int
             ) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get(
        "PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, __file__, "--child", kind, str(space), str(table),
                           str(studies), str(count)], env=env, capture_output=True,
                          text=True, check=False)
    if proc.returncode:
        raise SystemExit(f"{kind} at {space.name} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1:])
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rates", default="200,10000,100000",
                        help="space sizes whose trials/s are measured")
    parser.add_argument("--trials", type=int, default=400, help="trials per rate run")
    parser.add_argument("--first", type=int, default=1_000_000,
                        help="space size whose first trial is timed")
    parser.add_argument("--report", type=int, default=100_000,
                        help="trials in the study whose report is timed")
    parser.add_argument("--only", choices=("rates", "first", "report"))
    parser.add_argument("--keep", help="write the spaces, tables and studies here "
                        "(default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)

        def case(n: int) -> tuple[Path, Path, Path]:
            space, table, size = write_case(folder, n)
            studies = folder / f"studies-{n}"
            if studies.exists():
                import shutil
                shutil.rmtree(studies)
            print(f"  ({size} configs: {space.name})", flush=True)
            return space, table, studies

        if args.only in (None, "rates"):
            print(f"trials/s over {args.trials} exhaustive trials:")
            for n in (int(x) for x in args.rates.split(",")):
                space, table, studies = case(n)
                got = in_child("run", space, table, studies, args.trials)
                print(f"  {n:>8} configs: {got['trials_per_s']:8.1f} trials/s, first trial "
                      f"after {got['first_trial_s']:.2f} s, peak RSS "
                      f"{got['peak_rss_mb']:.0f} MB", flush=True)
        if args.only in (None, "first"):
            space, table, studies = case(args.first)
            got = in_child("run", space, table, studies, 1)
            print(f"first trial at {args.first} configs: {got['first_trial_s']:.2f} s after "
                  f"the command's start ({got['cpu_at_first_s']:.1f} CPU s; reading the "
                  f"replay table, which a GPU run has not: {got['table_s']:.2f} s), peak "
                  f"RSS then {got['rss_at_first_mb']:.0f} MB", flush=True)
        if args.only in (None, "report"):
            space, table, studies = case(args.report)
            in_child("run", space, table, studies, 1)
            in_child("fill", space, table, studies, args.report)
            got = in_child("report", space, table, studies, 0)
            print(f"report of {args.report} trials: {got['report_s']:.1f} s "
                  f"({got['cpu_s']:.1f} CPU s), peak RSS {got['peak_rss_mb']:.0f} MB",
                  flush=True)


if __name__ == "__main__":
    main()
