"""Why a short kernel's first samples read high, and which warm-up removes it (GPU).

    python benchmarks/first_samples.py [--reps 3] [--samples 50] [--json OUT.json]

On an H100 just started, sweeper's first trials of a 15 µs kernel read their first
samples at 409, 104, 62, 36 µs before settling at 14-15 µs (docs/benchmarks-log.md), and
later trials' first samples 30-90 µs.  This script times the same sampling loop as
sweeper's CUDA device (``CudaDevice.time``: flush, hold, event pair, launch), preceded by
one of these warm-ups (``--warmups``), after one of four idle gaps (``--gaps``: the host's
work between trials, a compile, a pause):

- ``count``: ``--warmup`` launches back to back, then a synchronize (what a trial did
  before its warmup turned the sampling loop);
- ``as_samples``: ``--warmup`` turns of the sampling loop itself, events included, their
  times dropped (what a trial does now: ``CudaDevice.warm_up``);
- ``loop``: the same turns without their events;
- ``time``: launches back to back for ``--warm-ms`` milliseconds (``do_bench`` warms up
  for 25 ms);
- ``time_as_samples``: turns of the sampling loop for ``--warm-ms``;
- any of them ``+poison``: then the output filled, as a trial poisons its outputs
  between its warmup and its samples.

The very first trial of the process runs ``count`` with no gap: on a machine just started
it is the case that read high.  Then every (kernel, warm-up, gap) in a shuffled order,
``--reps`` times.  Each line: the first samples, the median of all, the median of the
last half ("settled") and their ratio, and the GPU's performance state and clocks read by
NVML just before the warm-up.  The table last: per warm-up and gap, the median and worst
``median / settled`` and the worst first sample over settled.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sweeper.devices._cuda import CudaDevice
from sweeper.measure import time_cuda

WARMUPS = ("count", "as_samples", "time", "time_as_samples", "loop", "count+poison",
           "as_samples+poison", "loop+poison")
GAPS = (0.002, 0.05, 0.5, 2.0)


@triton.jit
def _sum(x, total, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total, tl.sum(tl.load(x + offsets, mask=offsets < n, other=0.0)))


@triton.jit
def _copy(x, y, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y + offsets, tl.load(x + offsets, mask=mask), mask=mask)


def kernels() -> dict[str, tuple[object, object]]:
    n_sum, n_copy = 4 << 20, 16 << 20
    x = torch.randn(n_sum, device="cuda")
    total = torch.zeros(1, device="cuda")
    a = torch.randn(n_copy, device="cuda")
    b = torch.empty_like(a)

    def atomic_sum() -> None:      # the hook-cost benchmark's kernel, zeroing included
        total.zero_()
        _sum[(triton.cdiv(n_sum, 4096),)](x, total, n_sum, BLOCK=4096, num_warps=4)

    def copy() -> None:            # 64 MiB read and written
        _copy[(triton.cdiv(n_copy, 1024),)](a, b, n_copy, BLOCK=1024, num_warps=4)

    return {"sum 4Mi": (atomic_sum, lambda: total.fill_(float("nan"))),
            "copy 64MiB": (copy, lambda: b.fill_(float("nan")))}


def nvml_state():  # type: ignore[no-untyped-def]
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {"pstate": pynvml.nvmlDeviceGetPerformanceState(h),
                "sm": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "mem": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)}
    except Exception as e:  # noqa: BLE001  (a report, not a check)
        return {"nvml": repr(e)}


def warm(device: CudaDevice, launch, how: str, count: int, warm_ms: float,  # type: ignore[no-untyped-def]
         poison) -> None:
    how, _, then = how.partition("+")
    if how == "loop":
        time_cuda(launch, warmup=count, repeat=0, flush=device._flush, hold=device._hold)
    elif how == "count":
        for _ in range(count):
            launch()
    elif how == "as_samples":
        device.time(launch, warmup=0, repeat=count, flush=True)
    elif how == "time":
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < warm_ms / 1e3:
            for _ in range(10):
                launch()
            torch.cuda.synchronize()
    elif how == "time_as_samples":
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < warm_ms / 1e3:
            device.time(launch, warmup=0, repeat=10, flush=True)
    torch.cuda.synchronize()
    if then == "poison":       # a trial fills its outputs between the warmup and the samples
        poison()


def trial(device, name, kernel, how, gap, args, order):  # type: ignore[no-untyped-def]
    launch, poison = kernel
    time.sleep(gap)
    state = nvml_state()
    t0 = time.perf_counter()
    warm(device, launch, how, args.warmup, args.warm_ms, poison)
    warm_s = time.perf_counter() - t0
    samples = [ms * 1e3 for ms in device.time(launch, warmup=0, repeat=args.samples, flush=True)]
    settled = statistics.median(samples[len(samples) // 2:])
    median = statistics.median(samples)
    row = dict(order=order, kernel=name, warmup=how, gap=gap, first=samples[:8],
               median=median, settled=settled, ratio=median / settled,
               first_ratio=samples[0] / settled, worst_ratio=max(samples) / settled,
               warm_s=warm_s, **state)
    print(f"#{order:3d} {name:10s} {how:15s} gap {gap:5.3f}s  median {median:7.2f} "
          f"settled {settled:7.2f} µs  x{median / settled:.3f}  first "
          + " ".join(f"{s:.1f}" for s in samples[:8])
          + f"  worst x{max(samples) / settled:.2f}  warm {warm_s * 1e3:.1f} ms  {state}",
          flush=True)
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--warm-ms", type=float, default=25.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json")
    parser.add_argument("--warmups", type=lambda s: s.split(","), default=list(WARMUPS[:4]),
                        help=f"comma-separated, of {', '.join(WARMUPS)}")
    parser.add_argument("--gaps", type=lambda s: [float(g) for g in s.split(",")],
                        default=list(GAPS), help="idle seconds before a trial, comma-separated")
    args = parser.parse_args(argv)
    device = CudaDevice()
    launches = kernels()
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
    rows = []
    # the first trial of the process: what a run on a GPU just started meets
    for launch, _ in launches.values():   # compile outside any trial
        launch()
    torch.cuda.synchronize()
    rows.append(trial(device, "sum 4Mi", launches["sum 4Mi"], "count", 0.0, args, 0))
    plan = [(k, w, g) for k in launches for w in args.warmups for g in args.gaps] * args.reps
    random.Random(args.seed).shuffle(plan)
    for i, (k, w, g) in enumerate(plan, 1):
        rows.append(trial(device, k, launches[k], w, g, args, i))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print()
    print("| kernel | warm-up | gap s | median / settled: median | worst | first / settled: worst |"
          " warm-up ms |")
    print("|---|---|---|---|---|---|---|")
    for k in launches:
        for w in args.warmups:
            for g in args.gaps:
                sel = [r for r in rows[1:] if (r["kernel"], r["warmup"], r["gap"]) == (k, w, g)]
                print(f"| {k} | {w} | {g:g} | {statistics.median(r['ratio'] for r in sel):.3f} | "
                      f"{max(r['ratio'] for r in sel):.3f} | "
                      f"{max(r['first_ratio'] for r in sel):.2f} | "
                      f"{statistics.median(r['warm_s'] for r in sel) * 1e3:.1f} |")
    first = rows[0]
    print(f"first trial of the process: median / settled {first['ratio']:.3f}, first samples "
          + " ".join(f"{s:.1f}" for s in first["first"]))


if __name__ == "__main__":
    main()
