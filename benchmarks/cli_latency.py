"""How long the commands that measure nothing take, each a fresh process as a user runs it:
``--help``, ``plan``, ``schema``, ``kernels`` and refusing a bad space file (goal: 0.5 s
each on a two-core machine, none importing torch, triton, optuna or pandas).

    python benchmarks/cli_latency.py [--repeat 5] [--goal 0.5]

Each row is the median wall of ``--repeat`` runs of the installed ``sweeper`` executable
(``python -m sweeper`` where none is on the PATH), with the modules it imported checked
through ``python -X importtime``; the exit status is 1 when a command misses the goal or
imports one of the heavy libraries.
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
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What the commands that answer at once must not import.
HEAVY = ("torch", "triton", "optuna", "pandas")
BAD_SPACE = "study: bad\nkernel: copy\nparams:\n  grid: [sms]\n  block: [lots]\n"


def commands(bad_space: Path) -> dict[str, list[str]]:
    """Each command timed, by its name in the table, and the exit status it must give."""
    return {
        "sweeper --help": ["--help"],
        "sweeper plan spaces/copy.yaml": ["plan", str(ROOT / "spaces/copy.yaml")],
        "sweeper plan spaces/matmul-8k.yaml": ["plan", str(ROOT / "spaces/matmul-8k.yaml")],
        "sweeper schema": ["schema"],
        "sweeper kernels": ["kernels"],
        "sweeper run (a bad space file)": ["run", str(bad_space)],
    }


def executable() -> list[str]:
    """The ``sweeper`` a user runs, else this interpreter's ``-m sweeper``."""
    found = shutil.which("sweeper")
    return [found] if found else [sys.executable, "-m", "sweeper"]


def heavy_imports(args: Sequence[str], cwd: Path) -> list[str]:
    """The heavy libraries ``sweeper args`` imports (``-X importtime`` on stderr)."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "sweeper", *args],
                         cwd=cwd, capture_output=True, text=True, check=False)
    names = imported(run.stderr)
    return [h for h in HEAVY if h in names]


def imported(report: str) -> set[str]:
    """The modules an ``-X importtime`` report names."""
    return {line.rsplit("|", 1)[-1].strip() for line in report.splitlines()
            if line.startswith("import time:")}


def wall(args: Sequence[str], cwd: Path, repeat: int) -> tuple[float, int]:
    """Median wall seconds of ``repeat`` runs, and the exit status of the last."""
    times, status = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        status = subprocess.run([*executable(), *args], cwd=cwd, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, check=False).returncode
        times.append(time.perf_counter() - start)
    return statistics.median(times), status


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--goal", type=float, default=0.5, help="seconds a command may take")
    args = parser.parse_args(argv)
    missed = 0
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "bad.yaml"
        bad.write_text(BAD_SPACE)
        print(f"{os.cpu_count()} CPUs; {' '.join(executable())}; median of {args.repeat}")
        print("| command | wall s | exit | heavy imports |\n|---|---|---|---|")
        for name, cmd in commands(bad).items():
            seconds, status = wall(cmd, Path(tmp), args.repeat)
            heavy = heavy_imports(cmd, Path(tmp))
            expected = 2 if cmd[0] == "run" else 0
            ok = seconds <= args.goal and not heavy and status == expected
            missed += not ok
            print(f"| {name} | {seconds:.3f} | {status} | {', '.join(heavy) or 'none'} |"
                  f"{'' if ok else ' MISSED'}")
    print(f"goal: each <= {args.goal:g} s, importing none of {', '.join(HEAVY)}: "
          f"{'met' if not missed else f'{missed} missed'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
