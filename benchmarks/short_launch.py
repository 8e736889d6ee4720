"""Short launches timed cold: sweeper's timer against triton's do_bench on the GPU.

    python benchmarks/short_launch.py

A 1024³ bf16 matmul (about 10 µs) and an 8 MiB copy (about 8 µs) are timed with
``time_cuda`` as ``sweeper run`` does (L2 flushed, then the spin kernel holds the GPU
while the host queues the launch), with the flush alone (no spin: host launch latency
lands in the sample), and with ``do_bench``; each 30 samples, medians in µs.
"""

from __future__ import annotations

import functools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
import triton

from sweeper.devices import open_device
from sweeper.kernels import load_kernel
from sweeper.measure._timer import time_cuda
from sweeper.space import Config, Problem


def main() -> None:
    device = open_device("cuda")
    cases = [("matmul 1024³ bf16, 64×128 tiles", "matmul", Problem("bfloat16", 2 << 20), 132, 128,
              {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "num_stages": 4}),
             ("copy 8 MiB fp32, BLOCK 4096", "copy", Problem("float32", 8 << 20), 512, 128,
              {"BLOCK": 4096})]
    print("| launch | flush + hold (sweeper) | flush only (before) | do_bench |")
    print("|---|---|---|---|")
    for name, kernel_name, problem, grid, block, meta in cases:
        kernel = load_kernel(kernel_name)
        buffers = kernel.allocate(problem, "cuda")
        generator = torch.Generator(device="cuda")
        generator.manual_seed(0)
        kernel.randomize(buffers, generator)
        config = Config(problem, grid, block, meta)
        launch = functools.partial(kernel.launch, buffers, config)
        launch()
        torch.cuda.synchronize()
        hold = device._hold
        both = time_cuda(launch, warmup=5, repeat=30, flush=device._flush, hold=hold)
        alone = time_cuda(launch, warmup=5, repeat=30, flush=device._flush)
        bench = triton.testing.do_bench(launch, warmup=25, rep=100, return_mode="median")
        print(f"| {name} | {1000 * statistics.median(both):.2f} | "
              f"{1000 * statistics.median(alone):.2f} | {1000 * bench:.2f} |")


if __name__ == "__main__":
    main()
