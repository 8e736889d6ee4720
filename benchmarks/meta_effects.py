"""What one two-valued meta-parameter does on recorded tables (no GPU needed): for each
table that sweeps it, the median ratio of the time with the second value to the time with
the first, over pairs of configs equal in every other axis (all pairs, and those where
either is within 10 % of the table's best), and how many of the configs within 98 % of the
best take each value.  Where a kernel model leaves an axis out, this says whether it
should not.

    python benchmarks/meta_effects.py [--axes TMA,GROUP_M,EPILOGUE_SUBTILE,FLATTEN,grid]
                                      [--tables 'benchmarks/tables/h200-matmul*.csv']
"""

from __future__ import annotations

import argparse
import glob
import statistics
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
#: What is not an axis of a replay table.
NOT_AXES = ("status", "median_ms", "samples_ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--axes", default="TMA,GROUP_M,EPILOGUE_SUBTILE,FLATTEN,grid")
    parser.add_argument("--tables", default=str(ROOT / "benchmarks/tables/h200-matmul*.csv"))
    args = parser.parse_args()
    print("| table | axis | second / first, all pairs | near the best | within 98 %: first, "
          "second |\n|---|---|---|---|---|")
    for path in sorted(glob.glob(args.tables)):
        table = pd.read_csv(path, comment="#")
        ok = table[table["status"] == "ok"]
        best = ok["median_ms"].min()
        top = ok[ok["median_ms"] <= best / 0.98]
        axes = [c for c in table.columns if c not in NOT_AXES]
        for axis in args.axes.split(","):
            values = sorted(ok[axis].unique(), key=str) if axis in ok else []
            if len(values) != 2:
                continue
            others = [a for a in axes if a != axis]
            pairs = ok.pivot_table(index=others, columns=axis, values="median_ms",
                                   aggfunc="first").dropna()
            ratio = pairs[values[1]] / pairs[values[0]]
            near = ratio[pairs.min(axis=1) <= best * 1.10]
            shown = f"{statistics.median(near):.3f} ({len(near)})" if len(near) else "–"
            counts = [int((top[axis] == v).sum()) for v in values]
            print(f"| {Path(path).name} | {axis} {values[1]} / {values[0]} | "
                  f"{statistics.median(ratio):.3f} ({len(ratio)}) | {shown} | "
                  f"{counts[0]}, {counts[1]} |")


if __name__ == "__main__":
    main()
