"""Time a full report of a recorded study: cold (no picture drawn yet), warm (nothing
changed: nothing drawn), and drawing in this process against a pool of processes.

    python benchmarks/report_speed.py [--table tests/data/replay/h200-copy.csv]
                                      [--space spaces/copy.yaml] [--repeat 3]
    python benchmarks/report_speed.py --tables STUDY [STUDY ...] [--repeat 5]
    python benchmarks/report_speed.py --pools [--state none|torch|cuda-init|cuda-context]

The study is replayed from the table into a temporary folder (no GPU needed); each row is
the median of ``--repeat`` runs.  ``sweeper report`` rows are whole processes (imports
included), as a user waits for them; ``write_report`` rows are in-process.  With
``--tables``: the report's tables alone (``study_tables``, what a time budget keeps for
beyond the pictures) of each study folder given, in this process, pandas imported first.
With ``--pools``: what a pool of forked drawing processes costs to start and to draw the
report's pictures in, by its size, in a process that has imported torch, initialized CUDA
or holds a CUDA context as the ``--state`` says (a run's coordinator forks its pool so).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(step: Callable[[], object], before: Callable[[], object], repeat: int) -> float:
    """Median wall seconds of ``step``, ``before`` run (untimed) ahead of each."""
    times = []
    for _ in range(repeat):
        before()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--table", default=str(ROOT / "tests/data/replay/h200-copy.csv"))
    parser.add_argument("--space", default=str(ROOT / "spaces/copy.yaml"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tables", nargs="+", metavar="STUDY",
                        help="time study_tables of these study folders instead")
    parser.add_argument("--pools", action="store_true",
                        help="time drawing pools by size instead (see --state)")
    parser.add_argument("--state", default="none",
                        choices=("none", "torch", "cuda-init", "cuda-context"))
    args = parser.parse_args()
    if args.pools:
        pools(args.table, args.space, args.state, args.repeat)
        return
    if args.tables:
        tables(args.tables, args.repeat)
        return

    from sweeper.cli import main as sweeper
    from sweeper.report import write_report
    from sweeper.store import StudyStore

    with tempfile.TemporaryDirectory() as tmp:
        assert sweeper(["run", args.space, "--device", f"replay:{args.table}", "--quiet",
                        "--no-report", "--studies-dir", tmp, "--study", "bench"]) == 0
        root = Path(tmp) / "bench"
        store = StudyStore(root)

        def clear() -> None:
            shutil.rmtree(root / "heatmaps", ignore_errors=True)

        def command(*extra: str) -> Callable[[], object]:
            return lambda: subprocess.run(
                [sys.executable, "-m", "sweeper", "report", str(root), *extra],
                check=True, capture_output=True, cwd=ROOT)

        def nothing() -> None:
            return None

        pictures = len(write_report(store, workers=1).images)
        rows = [
            ("sweeper report, cold (PNG)", timed(command(), clear, args.repeat)),
            ("sweeper report, cold (PNG and SVG)", timed(command("--svg"), clear, args.repeat)),
            ("sweeper report, warm (nothing changed)", timed(command(), nothing, args.repeat)),
            ("write_report, cold, drawn in this process",
             timed(lambda: write_report(store, workers=1), clear, args.repeat)),
            ("write_report, cold, drawn in a process pool",
             timed(lambda: write_report(store, workers=os.cpu_count()), clear, args.repeat)),
            ("write_report, warm", timed(lambda: write_report(store), nothing, args.repeat)),
        ]
    print(f"report of {Path(args.table).name} ({pictures} pictures), median of "
          f"{args.repeat}:")
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"  {name:<{width}}  {seconds:6.2f} s")


def tables(studies: list[str], repeat: int) -> None:
    """``study_tables`` of each of ``studies``: the median of ``repeat`` runs, after one
    untimed (imports and the journal's first read)."""
    from sweeper.report import study_tables
    from sweeper.store import StudyStore

    for folder in studies:
        store = StudyStore(Path(folder))
        built = study_tables(store)
        seconds = timed(lambda store=store: study_tables(store), lambda: None, repeat)
        print(f"{Path(folder).name}: study_tables {seconds:.3f} s (median of {repeat}; "
              f"{len(store.records()[0])} records, {len(built.heatmaps)} maps)")


def pools(table: str, space: str, state: str, repeat: int) -> None:
    """Pools of forked processes by size: their start (a no-op on each) and the report's
    pictures drawn in them, in a process in ``state``; the median of ``repeat``."""
    if state != "none":
        import torch
        if state == "cuda-init":
            torch.cuda.get_device_properties(0)
        elif state == "cuda-context":
            torch.zeros(1, device="cuda")
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from sweeper.cli import main as sweeper
    from sweeper.report import _draw, _figures, study_tables
    from sweeper.store import StudyStore

    with tempfile.TemporaryDirectory() as tmp:
        assert sweeper(["run", space, "--device", f"replay:{table}", "--quiet",
                        "--no-report", "--studies-dir", tmp, "--study", "bench"]) == 0
        figures = _figures.report_figures(study_tables(StudyStore(Path(tmp) / "bench")))
        _draw.matplotlib_imported()
        out = Path(tmp) / "pictures"

        def start(size: int) -> None:
            with ProcessPoolExecutor(size, mp_context=multiprocessing.get_context("fork")
                                     ) as pool:
                list(pool.map(abs, range(size)))

        def draw(size: int) -> None:
            _figures.render(figures, out, redraw=True, workers=size)

        rss = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGESIZE")
        print(f"state {state}: resident {rss / 2**20:.0f} MiB, {len(figures)} pictures, "
              f"{os.cpu_count()} CPUs, median of {repeat}")
        for size in sorted({1, 2, 4, 8, len(figures), os.cpu_count() or 1}):
            begun = timed(lambda size=size: start(size), lambda: None, repeat)
            drawn = timed(lambda size=size: draw(size), lambda: None, repeat)
            print(f"  pool of {size:>2}: started {begun:.3f} s, pictures drawn {drawn:.3f} s")


if __name__ == "__main__":
    main()
