"""How well the built-in kernel models (``Kernel.model``, sweeper/kernels/_guess.py) match
the recorded H200 tables (no GPU needed).

    python benchmarks/model_accuracy.py [--tables held-out-7]

Per table: the rank correlation of guess and measured throughput, where the first config
within 98 % of the table's best falls in the model's ranking (1: the model's best guess
is there), and the mean |log error| of the guess relative to the best guess against the
throughput relative to the best.  For matmul, whose model guesses 1 / the launch's time
in seconds, also the mean |log error| of that time against the measured median.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from scipy.stats import spearmanr  # noqa: E402
from table_sets import GOAL, SETS, TABLES, table_path  # noqa: E402

from sweeper.devices import DeviceFacts, open_device  # noqa: E402
from sweeper.kernels import Kernel, load_kernel  # noqa: E402
from sweeper.space import Config, load_space  # noqa: E402

Launch = tuple[Config, DeviceFacts, float, float]


def measured_rows(device: Any, space: Any) -> Iterator[tuple[dict[str, str], Config, float]]:
    """Each ``ok`` row of a replay device's table: (the row, its config resolved on the
    table's facts, its median in seconds)."""
    facts = device.facts()
    for row in device.rows:
        if row.get("status", "ok") == "ok" and row["median_ms"]:
            config = space.resolve({p: row[p] for p in device.params}, facts.env(),
                                   facts.max_footprint)
            yield row, config, float(row["median_ms"]) / 1e3


def launches(table: Path, space_path: str) -> tuple[Kernel, list[Launch]]:
    """The table's kernel, and its measured launches: (config, the table's device facts,
    seconds, throughput)."""
    device = open_device(f"replay:{table}")
    space = load_space(ROOT / space_path)
    kernel, facts = load_kernel(space.kernel, space.kernel_options), device.facts()
    rows = [(config, facts, seconds, kernel.bytes_moved(config.problem) / seconds)
            for _, config, seconds in measured_rows(device, space)]
    return kernel, rows


def accuracy(table: Path, space_path: str) -> tuple[float, int, float, float | None] | None:
    """The table's figures (see the module docstring); ``None`` for a kernel without a
    model (a CUDA C or short kernel that declares none: ``auto`` searches it by pattern;
    the CUDA C copy's space declares the streaming model)."""
    kernel, launched = launches(table, space_path)
    rows = [(speed, seconds, kernel.model(config, facts))
            for config, facts, seconds, speed in launched]
    if any(r[2] is None for r in rows):
        return None
    best, top = max(r[0] for r in rows), max(r[2] for r in rows)
    rho = float(spearmanr([r[0] for r in rows], [r[2] for r in rows]).statistic)
    by_guess = sorted(rows, key=lambda r: -r[2])
    rank = next(i for i, r in enumerate(by_guess, 1) if r[0] >= GOAL * best)
    guessed = [r for r in rows if r[2] > 0]
    relative = sum(abs(math.log((r[2] / top) / (r[0] / best))) for r in guessed) / len(guessed)
    timed = None
    if kernel.name == "matmul":
        timed = sum(abs(math.log(1 / r[2] / r[1])) for r in guessed) / len(guessed)
    return rho, rank, relative, timed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", choices=("all", *SETS), default="all")
    args = parser.parse_args(argv)
    tables = TABLES if args.tables == "all" else SETS[args.tables]
    print("| table | rank correlation | model's rank of the first within 98 % "
          "| mean abs log error, relative | mean abs log error, time |")
    print("|---|---|---|---|---|")
    for name, space_path in tables.items():
        figures = accuracy(table_path(name), space_path)
        if figures is None:
            print(f"| {name} | no kernel model | | | |")
            continue
        rho, rank, relative, timed = figures
        print(f"| {name} | {rho:.2f} | {rank} | {relative:.2f} | "
              f"{'–' if timed is None else f'{timed:.2f}'} |")


if __name__ == "__main__":
    main()
