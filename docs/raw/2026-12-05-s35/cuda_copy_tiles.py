"""The streaming model on the recorded H200 CUDA C copy (benchmarks/tables/h200-cuda-copy.csv)
at two readings of one program's step: block * VEC * UNROLL (examples/copy.cu's loop: a
block's step covers block * UNROLL vectors of VEC floats) and block * VEC (one vector a
thread).  Rank correlation with the measured throughput, the model's rank of the first
config within 98 % of the best, and what its best guess measured.

    python docs/raw/2026-12-05-s35/cuda_copy_tiles.py
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
from model_accuracy import launches  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402
from table_sets import table_path  # noqa: E402

from sweeper.kernels import _guess  # noqa: E402

kernel, launched = launches(table_path("h200-cuda-copy.csv"), "spaces/cuda-copy.yaml")
best = max(speed for *_, speed in launched)
print(f"declared in spaces/cuda-copy.yaml: {kernel.declared_model.text}")
for name, tile in (("block * VEC * UNROLL", lambda c: c.block * c.meta["VEC"] * c.meta["UNROLL"]),
                   ("block * VEC", lambda c: c.block * c.meta["VEC"])):
    rows = [(speed, _guess.streaming(c, facts.sms, tile(c), 1), c)
            for c, facts, _, speed in launched]
    rho = spearmanr([r[0] for r in rows], [r[1] for r in rows]).statistic
    ranked = sorted(rows, key=lambda r: -r[1])
    rank = next(i for i, r in enumerate(ranked, 1) if r[0] >= 0.98 * best)
    top = ranked[0]
    print(f"tile {name}: rank correlation {rho:.2f}; first within 98 % at the model's rank "
          f"{rank}; its best guess (grid={top[2].grid} block={top[2].block} "
          f"VEC={top[2].meta['VEC']} UNROLL={top[2].meta['UNROLL']}) measured "
          f"{top[0] / best:.3f} of the best")
