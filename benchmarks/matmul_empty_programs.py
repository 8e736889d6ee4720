"""What programs with no work unit cost a matmul launch, on the recorded H200 tables
(no GPU needed).

    python benchmarks/matmul_empty_programs.py

For every recorded matmul table whose grid axis has a grid of the tiles beside ``sms``
and ``2*sms``: each config launched with more programs than tiles, against the same
config with one program per tile; grouped by grid, tiles and the programs of the config
one SM holds at once (``_guess.programs_per_sm``), the mean, least and most ratio of
their measured times.  The matmul model's crowding rule (``_guess.tiled``) rests on it.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from model_accuracy import launches  # noqa: E402
from table_sets import TABLES, table_path  # noqa: E402

from sweeper.kernels._declared import mnk  # noqa: E402
from sweeper.kernels._guess import programs_per_sm  # noqa: E402


def main() -> None:
    ratios: dict[tuple[int, int, int], list[float]] = defaultdict(list)
    for name, space_path in TABLES.items():
        if "matmul" not in name:
            continue
        launched = launches(table_path(name), space_path)[1]
        sms = launched[0][1].sms
        by_config: dict[tuple, dict[int, tuple[float, int, int]]] = defaultdict(dict)
        for config, _, seconds, _ in launched:
            meta = config.meta
            if meta.get("SPLIT_K", 1) != 1:
                continue
            m, n, _ = mnk(config.problem)
            tiles = -(-m // meta["BLOCK_M"]) * -(-n // meta["BLOCK_N"])
            fits = programs_per_sm(config, meta["BLOCK_M"], meta["BLOCK_N"],
                                   meta["BLOCK_K"], meta["num_stages"])
            key = (config.block, *sorted(meta.items()))
            by_config[key][config.grid] = (seconds, tiles, fits)
        for grids in by_config.values():
            for grid, (seconds, tiles, fits) in grids.items():
                if grid > tiles and tiles in grids and grid in (sms, 2 * sms):
                    ratios[(grid // sms, tiles, fits)].append(seconds / grids[tiles][0])
    print("| grid | tiles | programs per SM | configs | time / time at a grid of the tiles, "
          "mean (least-most) |\n|---|---|---|---|---|")
    for (times, tiles, fits), values in sorted(ratios.items()):
        print(f"| {times} × SMs | {tiles} | {fits} | {len(values)} | "
              f"{statistics.mean(values):.3f} ({min(values):.3f}-{max(values):.3f}) |")


if __name__ == "__main__":
    main()
