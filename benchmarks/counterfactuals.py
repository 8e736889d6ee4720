"""Counterfactual tables: a recorded H200 table with one *region* kept at its recorded
speed and every config outside it slower (its median and every raw sample times one
factor), by as much as makes the region's best config lead everything outside by
``LEAD``.  ``search_robustness.py`` replays them (its docstring says why and gives the
regions); ``search_efficiency.py --tables counterfactual`` and ``search_trace.py`` build
them too.

    python benchmarks/counterfactuals.py FOLDER [--only add-1g/box,...]

writes each counterfactual's table into FOLDER (a replay table: ``sweeper run SPACE
--device replay:TABLE``) and prints its slowdown outside the region, configs, configs
within 2 % of the best and the model's rank of the best.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from model_accuracy import measured_rows  # noqa: E402
from table_sets import GOAL, TABLES, table_path  # noqa: E402

from sweeper.devices import open_device  # noqa: E402
from sweeper.devices._replay import ReplayDevice, write_table  # noqa: E402
from sweeper.kernels import load_kernel  # noqa: E402
from sweeper.space import Config, Space, load_space  # noqa: E402

#: The region's best config leads every config outside it by this factor.
LEAD = 1.03
#: Arrays an elementwise kernel loads per element, and the values per thread over all of
#: them beyond which a launch is in the ``spill`` region.
INPUTS = {"copy": 1, "add": 2}
SPILL_VALUES = 128
#: ``notop``: the model's favourites, the configs it guesses within this of its best.
SHARP_POOL = 0.95


Axes = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class Point:
    """One measured config of a table: its row, resolved config, rate and model guess."""
    row: dict[str, str]
    config: Config
    rate: float
    guess: float


def _stride(points: list[Point], kernel: str, axes: Axes) -> list[Point]:
    def tiles(p: Point) -> int:
        return -(-p.config.problem.n // p.config.meta["BLOCK"])

    return [p for p in points if p.config.grid < tiles(p)]


def _spill(points: list[Point], kernel: str, axes: Axes) -> list[Point]:
    def values(p: Point) -> float:
        per_thread = p.config.meta["BLOCK"] // p.config.block
        return per_thread * p.config.problem.itemsize / 4 * INPUTS[kernel]

    return [p for p in points if values(p) > SPILL_VALUES]


def _box(points: list[Point], kernel: str, axes: Axes) -> list[Point]:
    by_guess = sorted(points, key=lambda p: (p.guess, sorted(p.row.items())))
    centre = by_guess[len(by_guess) // 2].row

    def near(p: Point) -> bool:      # over the axes the table records (matmul's leave some out)
        return all(abs(labels.index(p.row[a]) - labels.index(centre[a])) <= 1
                   for a, labels in axes.items() if a in p.row)

    return [p for p in points if near(p)]


def _notop(points: list[Point], kernel: str, axes: Axes) -> list[Point]:
    """Every config but the model's favourites (guessed within ``SHARP_POOL`` of its
    best): the best lies outside what a start that trusts a sharp model draws from."""
    top = max(p.guess for p in points)
    return [p for p in points if p.guess < SHARP_POOL * top]


#: Region name -> the points of a table in it (given the kernel's name and the axes).
REGIONS: dict[str, Callable[[list[Point], str, Axes], list[Point]]] = {
    "stride": _stride, "spill": _spill, "box": _box, "notop": _notop}
#: The recorded tables the counterfactuals are built from: name -> (table, space file).
BASES = {
    "add-1g": ("h200-add.csv", "benchmarks/spaces/add.yaml"),
    "add-wide-1g": ("h200-add-wide-1g.csv", "benchmarks/spaces/add-wide-1g.yaml"),
    "add-bf16-1g": ("h200-add-bf16.csv", "benchmarks/spaces/add-bf16.yaml"),
    "add-fp16-32m": ("h200-add-fp16-32m.csv", "benchmarks/spaces/add-fp16-32m.yaml"),
    "copy-1g": ("h200-copy.csv", "benchmarks/spaces/copy.yaml"),
    "copy-fp16-1g": ("h200-copy-fp16.csv", "benchmarks/spaces/copy-fp16.yaml"),
}
#: Counterfactual name -> (base, region); ``add-1g/stride`` and so on.
COUNTERFACTUALS = {f"{base}/{region}": (base, region) for base in BASES
                   for region in ("stride", "spill", "box")}
#: The recorded tables whose kernel model is sharp (at most ``SHARP_MAX`` configs guessed
#: within ``SHARP_POOL`` of its best: matmul and softmax), where ``auto`` spends its later
#: spread points on the model's favourites (``sweeper/samplers/_auto_model.py``, step 1).
SHARP = [
    "matmul", "matmul-fp16", "matmul-2k", "matmul-2560", "matmul-3584", "matmul-fp16-2560",
    "matmul-1920", "matmul-fp16-2816", "matmul-1k", "matmul-fp16-1280", "matmul-fp16-1k",
    "matmul-1280", "matmul-896", "matmul-1408", "matmul-fp16-1536", "matmul-1536",
    "matmul-fp16-1792", "matmul-1792", "matmul-fp16-1664", "softmax-bf16-32k",
    "softmax-fp32-8k", "matmul-k256", "matmul-odd", "softmax-fp16-4k", "matmul-short-k",
    "softmax-bf16-1k", "matmul-fp16-down", "matmul-bf16-long-k", "matmul-bf16-6k-deep",
    "matmul-fp16-qkv-deep", "matmul-8k-cool", "matmul-ffn-cool", "matmul-wide-1k",
    "softmax-fp32-2k", "softmax-bf16-16k"
]
#: Those whose ``box`` region leaves configs outside and is not already the best.
SHARP_BOX = [
    "matmul-1536", "matmul-896", "matmul-1k", "softmax-bf16-32k", "softmax-fp16-4k",
    "softmax-bf16-1k", "matmul-2k", "matmul-fp16-1280", "softmax-fp32-8k", "matmul-1408",
    "matmul-1920", "matmul-fp16-1k", "matmul-1280", "matmul-fp16-2816", "softmax-bf16-16k",
    "softmax-fp32-2k"
]
BASES.update({name: (f"h200-{name}.csv", TABLES[f"h200-{name}.csv"]) for name in SHARP})
#: The counterfactuals of a sharp model (``search_robustness.py --sharp``): its favourites
#: slowed (``notop``), and a small region it rates middling (``box``).
SHARP_COUNTERFACTUALS = {**{f"{base}/notop": (base, "notop") for base in SHARP},
                         **{f"{base}/box": (base, "box") for base in SHARP_BOX}}
#: Every counterfactual :func:`build` can write, by name.
ALL = {**COUNTERFACTUALS, **SHARP_COUNTERFACTUALS}


def points(device: ReplayDevice, space: Space) -> list[Point]:
    """Every ``ok`` row of ``device``'s table with its rate and the model's guess."""
    kernel, facts = load_kernel(space.kernel, space.kernel_options), device.facts()
    return [Point(row, config, kernel.bytes_moved(config.problem) / (seconds * 1e3),
                  float(kernel.model(config, facts)))
            for row, config, seconds in measured_rows(device, space)]


def slowed(row: dict[str, str], factor: float) -> dict[str, str]:
    """``row`` with its median and raw samples ``factor`` times as long."""
    samples = " ".join(f"{float(x) * factor!r}" for x in row.get("samples_ms", "").split())
    return {**row, "median_ms": repr(float(row["median_ms"]) * factor),
            "samples_ms": samples}


def build(name: str, folder: Path) -> tuple[Path, str]:
    """Write counterfactual ``name`` into ``folder``: (its table, its space file)."""
    base, region = ALL[name]
    table_name, space_path = BASES[base]
    device = open_device(f"replay:{table_path(table_name)}")
    space = load_space(ROOT / space_path)
    every = points(device, space)
    kept = {id(p.row) for p in REGIONS[region](every, space.kernel, space.choices())}
    inside = max(p.rate for p in every if id(p.row) in kept)
    outside = max(p.rate for p in every if id(p.row) not in kept)
    factor = max(1.0, LEAD * outside / inside)
    rows = [r if id(r) in kept or r.get("status", "ok") != "ok" or not r["median_ms"]
            else slowed(r, factor) for r in device.rows]
    out = folder / f"{name.replace('/', '-')}.csv"
    write_table(out, {**device.header, "counterfactual": f"{name} from {table_name}",
                      "slowdown": f"{factor:.4f}"}, device.params, rows)
    return out, space_path


def describe(table: Path, space_path: str) -> tuple[str, int, int, int]:
    """(the slowdown outside the region, configs, configs within 2 % of the best, the
    model's rank of the best config) of a counterfactual table."""
    device = open_device(f"replay:{table}")
    every = points(device, load_space(ROOT / space_path))
    best = max(every, key=lambda p: p.rate)
    rank = sum(p.guess > best.guess for p in every)
    near = sum(p.rate >= GOAL * best.rate for p in every)
    return device.header.get("slowdown", "?"), len(every), near, rank


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="write the counterfactual tables")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--only", default="", help="comma-separated, e.g. add-1g/box")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(COUNTERFACTUALS)
    unknown = [n for n in names if n not in ALL]
    if unknown:
        parser.error(f"unknown counterfactual {unknown[0]}; known: {', '.join(ALL)}")
    args.folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        table, space = build(name, args.folder)
        slowdown, configs, near, rank = describe(table, space)
        print(f"{name}: {table} (space {space}): slowdown outside {slowdown}, {configs} "
              f"configs, {near} within 2 %, the model ranks the best {rank}")


if __name__ == "__main__":
    main()
