"""The recorded H200 tables the search benchmarks replay, by set, and where they are:
``search_efficiency.py``, ``model_accuracy.py``, ``search_robustness.py`` and the others
read them from here (the sets say when each table was recorded, against which state of
``auto``).

    python benchmarks/table_sets.py [--tables held-out-12]
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The goal the searches are counted to: 98 % of the table's best throughput.
GOAL = 0.98

DESIGN = {   # replay table -> the space it was recorded from; auto was designed on these
    "h200-copy.csv": "benchmarks/spaces/copy.yaml",
    "h200-copy-256m.csv": "benchmarks/spaces/copy-256m.yaml",
    "h200-add.csv": "benchmarks/spaces/add.yaml",
    "h200-matmul.csv": "benchmarks/spaces/matmul.yaml",
}
HELD_OUT = {  # recorded after auto was fixed, never used to tune it
    "h200-add-256m.csv": "benchmarks/spaces/add-256m.yaml",
    "h200-copy-fp16.csv": "benchmarks/spaces/copy-fp16.yaml",
    "h200-matmul-fp16.csv": "benchmarks/spaces/matmul-fp16.yaml",
}
HELD_OUT_2 = {  # recorded after auto's model-ranked moves were fixed
    "h200-copy-8m.csv": "benchmarks/spaces/copy-8m.yaml",
    "h200-copy-4g.csv": "benchmarks/spaces/copy-4g.yaml",
    "h200-add-bf16.csv": "benchmarks/spaces/add-bf16.yaml",
    "h200-matmul-2k.csv": "benchmarks/spaces/matmul-2k.yaml",
}
HELD_OUT_3 = {  # recorded after auto's kernel models were fixed
    "h200-copy-bf16-64m.csv": "benchmarks/spaces/copy-bf16-64m.yaml",
    "h200-add-fp16-32m.csv": "benchmarks/spaces/add-fp16-32m.yaml",
    "h200-matmul-1k.csv": "benchmarks/spaces/matmul-1k.yaml",
    "h200-matmul-fp32.csv": "benchmarks/spaces/matmul-fp32.yaml",
}
HELD_OUT_4 = {  # recorded after the matmul model's idle-SM fix
    "h200-copy-fp16-2g.csv": "benchmarks/spaces/copy-fp16-2g.yaml",
    "h200-add-128m.csv": "benchmarks/spaces/add-128m.yaml",
    "h200-matmul-3k.csv": "benchmarks/spaces/matmul-3k.yaml",
    "h200-matmul-fp16-1536.csv": "benchmarks/spaces/matmul-fp16-1536.yaml",
}
HELD_OUT_5 = {  # recorded after the kernel models were refitted and
    # auto took the model as its surrogate's prior mean
    "h200-copy-bf16-512m.csv": "benchmarks/spaces/copy-bf16-512m.yaml",
    "h200-copy-fp16-32m.csv": "benchmarks/spaces/copy-fp16-32m.yaml",
    "h200-add-bf16-16m.csv": "benchmarks/spaces/add-bf16-16m.yaml",
    "h200-add-512m.csv": "benchmarks/spaces/add-512m.yaml",
    "h200-matmul-2560.csv": "benchmarks/spaces/matmul-2560.yaml",
    "h200-matmul-fp16-1280.csv": "benchmarks/spaces/matmul-fp16-1280.yaml",
}
HELD_OUT_6 = {  # recorded after the matmul model became a time model
    # fitted on the nine matmul tables above and auto measured its best guess first
    "h200-copy-128m.csv": "benchmarks/spaces/copy-128m.yaml",
    "h200-add-fp16-256m.csv": "benchmarks/spaces/add-fp16-256m.yaml",
    "h200-matmul-1536.csv": "benchmarks/spaces/matmul-1536.yaml",
    "h200-matmul-fp16-1792.csv": "benchmarks/spaces/matmul-fp16-1792.yaml",
    "h200-matmul-3584.csv": "benchmarks/spaces/matmul-3584.yaml",
    "h200-matmul-fp16-1k.csv": "benchmarks/spaces/matmul-fp16-1k.yaml",
}
HELD_OUT_7 = {  # recorded after auto's model turns
    "h200-matmul-1152.csv": "benchmarks/spaces/matmul-1152.yaml",
    "h200-matmul-1280.csv": "benchmarks/spaces/matmul-1280.yaml",
    "h200-matmul-fp16-2304.csv": "benchmarks/spaces/matmul-fp16-2304.yaml",
    "h200-matmul-fp16-3k.csv": "benchmarks/spaces/matmul-fp16-3k.yaml",
    "h200-add-64m.csv": "benchmarks/spaces/add-64m.yaml",
    "h200-copy-bf16-2g.csv": "benchmarks/spaces/copy-bf16-2g.yaml",
}
HELD_OUT_8 = {  # recorded after auto's start went from six spread
    # points to three after the model's best guess
    "h200-matmul-1792.csv": "benchmarks/spaces/matmul-1792.yaml",
    "h200-matmul-2304.csv": "benchmarks/spaces/matmul-2304.yaml",
    "h200-matmul-fp16-2560.csv": "benchmarks/spaces/matmul-fp16-2560.yaml",
    "h200-matmul-fp16-1152.csv": "benchmarks/spaces/matmul-fp16-1152.yaml",
    "h200-add-bf16-256m.csv": "benchmarks/spaces/add-bf16-256m.yaml",
    "h200-copy-fp16-512m.csv": "benchmarks/spaces/copy-fp16-512m.yaml",
}
HELD_OUT_9 = {  # add only, other sizes, dtypes and grids than every add table above; to be
    # recorded after the add model counted each array's registers apart, into
    # benchmarks/tables (a table not recorded yet is skipped with a note)
    "h200-add-fp16-2g-grid3.csv": "benchmarks/spaces/add-fp16-2g-grid3.yaml",
    "h200-add-bf16-128m-wide.csv": "benchmarks/spaces/add-bf16-128m-wide.yaml",
    "h200-add-16m-block1024.csv": "benchmarks/spaces/add-16m-block1024.yaml",
    "h200-add-256m-odd-grids.csv": "benchmarks/spaces/add-256m-odd-grids.yaml",
    "h200-add-fp64-512m.csv": "benchmarks/spaces/add-fp64-512m.yaml",
    "h200-add-fp16-1g-block1024.csv": "benchmarks/spaces/add-fp16-1g-block1024.yaml",
}
HELD_OUT_10 = {  # kernels and shapes no table above has (issue 28): softmax at LLM and
    # square shapes, tall-skinny and odd-sized matmuls, a CUDA C kernel and a short kernel
    # brought with from_autotune (no kernel model for the last two; since 2026-12-05 the
    # CUDA C copy's space declares the streaming model, docs/search.md)
    "h200-softmax-bf16-32k.csv": "benchmarks/spaces/softmax-bf16-32k.yaml",
    "h200-softmax-fp32-8k.csv": "benchmarks/spaces/softmax-fp32-8k.yaml",
    "h200-matmul-k256.csv": "benchmarks/spaces/matmul-k256.yaml",
    "h200-matmul-odd.csv": "benchmarks/spaces/matmul-odd.yaml",
    "h200-cuda-copy.csv": "spaces/cuda-copy.yaml",
    "h200-gelu-autotune.csv": "benchmarks/spaces/gelu-autotune.yaml",
}
HELD_OUT_11 = {  # recorded on the H200 after every change to auto above, never used to
    # tune it: a scale table (none before), softmax at attention-sized rows in fp16, a
    # short-K matmul, a copy of no power of two over odd grid multiples
    "h200-scale-bf16-512m.csv": "benchmarks/spaces/scale-bf16-512m.yaml",
    "h200-softmax-fp16-4k.csv": "benchmarks/spaces/softmax-fp16-4k.yaml",
    "h200-matmul-short-k.csv": "benchmarks/spaces/matmul-short-k.yaml",
    "h200-copy-96m-odd-grids.csv": "benchmarks/spaces/copy-96m-odd-grids.yaml",
}
HELD_OUT_12 = {  # recorded on the H200 after step 5 of auto, never used to tune it: a kernel
    # no table had (copy-strided: a transpose read and a gather, which the copy model it
    # inherits rates as contiguous streams), softmax over short rows, a long-K fp16 matmul
    "h200-copy-strided-transpose.csv": "benchmarks/spaces/copy-strided-transpose.yaml",
    "h200-copy-strided-gather.csv": "benchmarks/spaces/copy-strided-gather.yaml",
    "h200-softmax-bf16-1k.csv": "benchmarks/spaces/softmax-bf16-1k.yaml",
    "h200-matmul-fp16-down.csv": "benchmarks/spaces/matmul-fp16-down.yaml",
}
HELD_OUT_13 = {  # recorded on the H200 after set 12, never used to tune auto: copy-strided
    # at two more orders (an fp16 transpose, a stride coprime with n), a wide fp32 scale,
    # a long-K bf16 matmul
    "h200-copy-strided-transpose-fp16.csv": "benchmarks/spaces/copy-strided-transpose-fp16.yaml",
    "h200-copy-strided-33.csv": "benchmarks/spaces/copy-strided-33.yaml",
    "h200-scale-fp32-2g.csv": "benchmarks/spaces/scale-fp32-2g.yaml",
    "h200-matmul-bf16-long-k.csv": "benchmarks/spaces/matmul-bf16-long-k.yaml",
}
HELD_OUT_14 = {  # recorded on the H200 after auto learnt where configs fail (the matmul
    # model's TMA epilogue, the chance of running), never used to tune it: pipelines up to
    # five stages deep, so that 276 of 756 configs run out of shared memory
    "h200-matmul-bf16-6k-deep.csv": "benchmarks/spaces/matmul-bf16-6k-deep.yaml",
    "h200-matmul-fp16-qkv-deep.csv": "benchmarks/spaces/matmul-fp16-qkv-deep.yaml",
}
HELD_OUT_15 = {  # exhaustive H200 studies of issue 27 (the 8192^3 bf16 space under
    # {cool: 1s}, 2026-12-02, docs/raw/2026-12-02-s14/duty-studies.tgz; the 4096 x 14336 x
    # 4096 one under {cool: 100ms}, 2026-12-04, docs/raw/2026-12-04-s20/finals.tgz),
    # exported as tables (`sweeper export STUDY --format csv`) after the matmul model priced
    # TMA and the flattened loop: never used to tune auto or the model
    "h200-matmul-8k-cool.csv": "spaces/matmul-8k.yaml",
    "h200-matmul-ffn-cool.csv": "benchmarks/spaces/matmul-ffn.yaml",
}
HELD_OUT_16 = {  # recorded on the H200 on 2026-12-05, never used to tune auto or a model:
    # square matmuls at sizes no table had (the square tables' configs, where auto's misses
    # are needle-like), a short wide bf16 matmul over the ffn space's configs, and softmax
    # at two more shapes
    "h200-matmul-896.csv": "benchmarks/spaces/matmul-896.yaml",
    "h200-matmul-1408.csv": "benchmarks/spaces/matmul-1408.yaml",
    "h200-matmul-fp16-1664.csv": "benchmarks/spaces/matmul-fp16-1664.yaml",
    "h200-matmul-1920.csv": "benchmarks/spaces/matmul-1920.yaml",
    "h200-matmul-fp16-2176.csv": "benchmarks/spaces/matmul-fp16-2176.yaml",
    "h200-matmul-fp16-2816.csv": "benchmarks/spaces/matmul-fp16-2816.yaml",
    "h200-matmul-wide-1k.csv": "benchmarks/spaces/matmul-wide-1k.yaml",
    "h200-softmax-fp32-2k.csv": "benchmarks/spaces/softmax-fp32-2k.yaml",
    "h200-softmax-bf16-16k.csv": "benchmarks/spaces/softmax-bf16-16k.yaml",
}
HELD_OUT_17 = {  # recorded on an H100 80GB HBM3 on 2026-12-05 (no H200 was lent for the
    # call: `STAGES=record RECORD="copy-strided-7-bf16 copy-strided-transpose-2k
    # softmax-bf16-6000 matmul-3072-1024-4096" bash benchmarks/gpu_run.sh`), after a user
    # kernel could declare the streaming model, never used to tune auto or a model:
    # copy-strided at two more orders (a bf16 read of stride 7, a 2048-column fp32
    # transpose), softmax over bf16 rows of 6000, a 3072 x 1024 x 4096 bf16 matmul with
    # split K
    "h100-copy-strided-7-bf16.csv": "benchmarks/spaces/copy-strided-7-bf16.yaml",
    "h100-copy-strided-transpose-2k.csv": "benchmarks/spaces/copy-strided-transpose-2k.yaml",
    "h100-softmax-bf16-6000.csv": "benchmarks/spaces/softmax-bf16-6000.yaml",
    "h100-matmul-3072-1024-4096.csv": "benchmarks/spaces/matmul-3072-1024-4096.yaml",
}
HELD_OUT_18 = {  # recorded on an H100 80GB HBM3 on 2026-12-05 (`STAGES=record
    # RECORD=matmul-tutorial-4k bash benchmarks/gpu_run.sh`), never used to tune auto or a
    # model: a user's kernel, the Triton tutorial's matmul (examples/matmul.py) declaring
    # the built-in tiled model, over the 144 configs of examples/matmul.yaml at 4096^3 fp16;
    # the same space recorded on an H200 on 2026-12-06
    "h100-matmul-tutorial-4k.csv": "benchmarks/spaces/matmul-tutorial-4k.yaml",
    "h200-matmul-tutorial-4k.csv": "benchmarks/spaces/matmul-tutorial-4k.yaml",
}
HELD_OUT_19 = {  # recorded on an H200 on 2026-12-06 (`STAGES=record RECORD="softmax-fp16-3072
    # add-bf16-768m matmul-fp16-5120-1024" bash benchmarks/gpu_run.sh`), never used to tune
    # auto or a model: softmax over 8192 fp16 rows of 3072, add at 768 MiB bf16, a short-K
    # fp16 matmul 5120 x 5120 x 1024
    "h200-softmax-fp16-3072.csv": "benchmarks/spaces/softmax-fp16-3072.yaml",
    "h200-add-bf16-768m.csv": "benchmarks/spaces/add-bf16-768m.yaml",
    "h200-matmul-fp16-5120-1024.csv": "benchmarks/spaces/matmul-fp16-5120-1024.yaml",
}
DIAGNOSIS = {  # recorded to diagnose auto on add over a wider grid range (not held out)
    "h200-add-wide-1g.csv": "benchmarks/spaces/add-wide-1g.yaml",
}
SETS = {"design": DESIGN, "held-out": HELD_OUT, "held-out-2": HELD_OUT_2,
        "held-out-3": HELD_OUT_3, "held-out-4": HELD_OUT_4, "held-out-5": HELD_OUT_5,
        "held-out-6": HELD_OUT_6, "held-out-7": HELD_OUT_7, "held-out-8": HELD_OUT_8,
        "held-out-9": HELD_OUT_9, "held-out-10": HELD_OUT_10, "held-out-11": HELD_OUT_11,
        "held-out-12": HELD_OUT_12, "held-out-13": HELD_OUT_13, "held-out-14": HELD_OUT_14,
        "held-out-15": HELD_OUT_15, "held-out-16": HELD_OUT_16, "held-out-17": HELD_OUT_17,
        "held-out-18": HELD_OUT_18, "held-out-19": HELD_OUT_19,
        "diagnosis": DIAGNOSIS}
#: Every set's tables, in the sets' order.
TABLES = {name: space for tables in SETS.values() for name, space in tables.items()}
#: Where recorded tables are looked up, in this order: the tests' tables, then the
#: benchmarks' own (recorded for a diagnosis or a held-out set, not used by the tests).
TABLE_DIRS = (ROOT / "tests" / "data" / "replay", ROOT / "benchmarks" / "tables")


def table_path(name: str) -> Path:
    """Where the recorded table ``name`` is (the last of ``TABLE_DIRS`` if nowhere)."""
    return next((d / name for d in TABLE_DIRS if (d / name).exists()), TABLE_DIRS[-1] / name)


def main(argv: list[str] | None = None) -> None:
    """Print each set's tables, its space file, and whether the table is recorded here."""
    parser = argparse.ArgumentParser(description="the recorded tables, by set")
    parser.add_argument("--tables", choices=("all", *SETS), default="all")
    args = parser.parse_args(argv)
    for name, tables in SETS.items():
        if args.tables not in ("all", name):
            continue
        print(f"{name}:")
        for table, space in tables.items():
            where = table_path(table)
            print(f"  {table}  {space}  "
                  f"{where.relative_to(ROOT) if where.exists() else 'not recorded'}")


if __name__ == "__main__":
    main()
