"""Dispatch by shape: what a config taken from the nearest tuned shape costs on shapes that
were not tuned, against tuning each of them exhaustively.

    python benchmarks/dispatch_regret.py                       # the recorded H200 tables
    python benchmarks/dispatch_regret.py --tuned T.csv [...] --held-out H.csv [...]

Each argument is a replay table (``sweeper export STUDY --format csv``), one or many
problems in it.  A tuned problem's winner is its fastest median; each held-out problem
gets the winner of the nearest tuned problem by the rule ``sweeper.tuned`` and
``sweeper.tuned_kernel`` use (``sweeper.matching``: least sum of |log2| distances over
the dimensions, or of the footprint when the table has no dimension columns), looked up
among its own measurements: regret = that config's median / the problem's best - 1.
Printed: one row per held-out problem, then the geometric mean and worst regret against
the goals (geomean <= 2 %, worst <= 5 %).

Default (no arguments): bf16 square matmuls recorded on an H200, tuned at 1024, 1536,
2048, 3072 and 4096, held out 1152, 1280, 1792, 2304, 2560 and 3584.  The measurement
on a GPU over non-square shapes (9 tuned, 5 held out; about 4 minutes on an H200, most of
it compiling, since the matmul's M, N and K are constexprs):

    sweeper run benchmarks/spaces/dispatch-tuned.yaml --quiet --studies-dir /tmp/d
    sweeper run benchmarks/spaces/dispatch-heldout.yaml --quiet --studies-dir /tmp/d
    sweeper export dispatch-tuned --studies-dir /tmp/d --format csv -o /tmp/d/tuned.csv
    sweeper export dispatch-heldout --studies-dir /tmp/d --format csv -o /tmp/d/heldout.csv
    python benchmarks/dispatch_regret.py --tuned /tmp/d/tuned.csv --held-out /tmp/d/heldout.csv
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sweeper.devices._replay import read_table
from sweeper.kernels._catalog import describe
from sweeper.matching import nearest
from sweeper.space import parse_size

REPLAY = Path(__file__).resolve().parent.parent / "tests" / "data" / "replay"
DEFAULT_TUNED = ["1k", "1536", "2k", "3k", ""]
DEFAULT_HELD_OUT = ["1152", "1280", "1792", "2304", "2560", "3584"]
GOAL_GEOMEAN, GOAL_WORST = 0.02, 0.05
#: Columns that say which problem a row measured (besides the kernel's dimensions).
PROBLEM_COLUMNS = ("dtype", "footprint", "cache")

Config = tuple[tuple[str, str], ...]


class Problem(NamedTuple):
    """One measured problem of a table: its size by name, and each config's median."""

    label: str
    size: dict[str, int]             # the dimensions, else {"footprint": bytes}
    medians: dict[Config, float]

    def best(self) -> tuple[Config, float]:
        """The fastest config and its median."""
        config = min(self.medians, key=lambda c: self.medians[c])
        return config, self.medians[config]


def problems(path: Path) -> list[Problem]:
    """The problems of a replay table, ok rows only."""
    header, columns, rows = read_table(path)
    dims = [d for d in describe(header.get("kernel", "")).dims if d in columns]
    keys = [c for c in columns if c in PROBLEM_COLUMNS or c in dims]
    config_columns = [c for c in columns if c not in keys and
                      c not in ("status", "median_ms", "samples_ms")]
    found: dict[tuple[str, ...], Problem] = {}
    for row in rows:
        if row["status"] != "ok":
            continue
        key = tuple(row[k] for k in keys)
        if key not in found:
            size = {d: int(row[d]) for d in dims} or \
                {"footprint": parse_size(row["footprint"])}
            label = " ".join(f"{k}={row[k]}" for k in keys if k != "cache")
            found[key] = Problem(label, size, {})
        found[key].medians[tuple((c, row[c]) for c in config_columns)] = \
            float(row["median_ms"])
    return list(found.values())


class Regret(NamedTuple):
    """One held-out problem: the tuned problem it was dispatched to, the config, and the
    regret (``None``: the config was not measured on the held-out problem)."""

    problem: Problem
    tuned: Problem
    config: Config
    regret: float | None


def regrets(tuned: Sequence[Problem], held_out: Sequence[Problem]) -> list[Regret]:
    """Each held-out problem's regret under dispatch to the nearest tuned problem."""
    out = []
    for problem in held_out:
        at, _ = nearest([t.size for t in tuned], problem.size)
        config, _ = tuned[at].best()
        _, best = problem.best()
        mine = problem.medians.get(config)
        out.append(Regret(problem, tuned[at], config,
                          None if mine is None else mine / best - 1))
    return out


def table(rows: Sequence[Regret]) -> str:
    """The per-problem rows and the summary, as markdown."""
    lines = ["| held-out problem | dispatched from | config | regret |", "|---|---|---|---|"]
    for r in rows:
        config = " ".join(f"{k}={v}" for k, v in r.config)
        regret = "not measured there" if r.regret is None else f"{100 * r.regret:.2f} %"
        lines.append(f"| {r.problem.label} | {r.tuned.label} | {config} | {regret} |")
    measured = [r.regret for r in rows if r.regret is not None]
    if not measured:
        return "\n".join([*lines, "", "no dispatched config was measured on a held-out problem"])
    geomean = math.exp(sum(math.log1p(x) for x in measured) / len(measured)) - 1
    worst = max(measured)
    lines += ["", f"{len(measured)} of {len(rows)} held-out problems: geomean regret "
              f"{100 * geomean:.2f} % (goal <= {100 * GOAL_GEOMEAN:g} %: "
              f"{'met' if geomean <= GOAL_GEOMEAN else 'missed'}), worst {100 * worst:.2f} % "
              f"(goal <= {100 * GOAL_WORST:g} %: {'met' if worst <= GOAL_WORST else 'missed'})"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tuned", nargs="+", type=Path, help="replay tables of the tuned set")
    parser.add_argument("--held-out", nargs="+", type=Path,
                        help="replay tables of the held-out shapes, each tuned exhaustively")
    args = parser.parse_args(argv)
    tuned_paths = args.tuned or [REPLAY / f"h200-matmul{'-' if s else ''}{s}.csv"
                                 for s in DEFAULT_TUNED]
    held_paths = args.held_out or [REPLAY / f"h200-matmul-{s}.csv" for s in DEFAULT_HELD_OUT]
    tuned = [p for path in tuned_paths for p in problems(path)]
    held_out = [p for path in held_paths for p in problems(path)]
    if not tuned or not held_out:
        print("dispatch_regret: no measured problem in the "
              f"{'tuned' if not tuned else 'held-out'} tables", file=sys.stderr)
        return 2
    print(table(regrets(tuned, held_out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
