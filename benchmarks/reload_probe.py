"""How much of a power-bound kernel's own work a hot GPU needs after a short pause before
its samples read as they do under sustained load, on the GPU.

    python benchmarks/reload_probe.py [--reps 2] [--out DIR] [--gaps 0.05,0.1] [--loads 0,0.2]
                                      [--no-traces]

Under ``measure.duty: auto`` a power-bound sweep samples configs back to back under
sustained load (:data:`sweeper.measure.SUSTAINED`); a pause between two trials longer
than ``IDLE_S`` (a compile, a sampler's proposal) lets the clock rise again, and the
next config is first loaded with its own work.  For each kernel (bf16 ``torch.matmul``
at 8192³ and at 4096 x 14336 x 4096), this keeps the GPU under load for ``--hot``
seconds, pauses ``gap`` seconds, runs the kernel back to back for ``load`` seconds, then
takes 30 samples as sweeper times them (L2 flush, hold, one event pair each), and
prints each (gap, load) cell's median against the samples taken with no pause at all:
the load a pause of each length needs, and what a fixed load after every pause costs.
Then, after pauses of 0.1 and 0.5 s, the time of each of 120 launches back to back (one
event pair each, no flush): how the clock's fall shows in the kernel's own times.

Raw rows go to DIR/reload-probe.csv and DIR/reload-trace.csv.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pynvml
import torch

from sweeper.devices import open_device

GAPS = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)
LOADS = (0.0, 0.025, 0.05, 0.1, 0.2)
SHAPES = {"8192^3": (8192, 8192, 8192), "4096x14336x4096": (4096, 14336, 4096)}


def load_for(work, seconds: float) -> None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        work()
        torch.cuda.synchronize()


def floats(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in text.split(","))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--hot", type=float, default=0.6)
    parser.add_argument("--out", default=".")
    parser.add_argument("--gaps", type=floats, default=GAPS[1:],
                        help="pauses in seconds, comma-separated (no pause is always taken)")
    parser.add_argument("--loads", type=floats, default=LOADS,
                        help="loads in seconds after each pause, comma-separated")
    parser.add_argument("--no-traces", action="store_true",
                        help="skip the per-launch traces after 0.1 and 0.5 s pauses")
    args = parser.parse_args()
    gaps, loads = (0.0, *args.gaps), tuple(sorted({0.0, *args.loads}))
    trace_gaps = () if args.no_traces else (0.1, 0.5)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    device = open_device("cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for name, (m, n, k) in SHAPES.items():
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=gen)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

        def work(a=a, b=b, c=c) -> None:
            torch.matmul(a, b, out=c)

        load_for(work, 3.0)                 # reach the capped steady state first
        cells = [(g, ld) for g in gaps for ld in loads if g > 0 or ld == 0]
        for rep in range(args.reps):
            for gap, load in cells:
                load_for(work, args.hot)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                if gap:
                    time.sleep(gap)
                if load:
                    load_for(work, load)
                mhz0 = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
                samples = device.time(work, warmup=0, repeat=30, flush=True)
                mhz1 = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
                rows.append({"kernel": name, "rep": rep, "gap_s": gap, "load_s": load,
                             "median_ms": statistics.median(samples),
                             "first5_ms": statistics.median(samples[:5]),
                             "sm_mhz_start": mhz0, "sm_mhz_end": mhz1,
                             "cell_s": round(time.perf_counter() - t0, 4)})
        traces: list[dict] = []
        for gap in trace_gaps:
            for rep in range(args.reps):
                load_for(work, args.hot)
                time.sleep(gap)
                starts = [torch.cuda.Event(enable_timing=True) for _ in range(120)]
                ends = [torch.cuda.Event(enable_timing=True) for _ in range(120)]
                for st, en in zip(starts, ends, strict=True):
                    st.record()
                    work()
                    en.record()
                torch.cuda.synchronize()
                at = 0.0
                for i, (st, en) in enumerate(zip(starts, ends, strict=True)):
                    ms = st.elapsed_time(en)
                    traces.append({"kernel": name, "gap_s": gap, "rep": rep, "launch": i,
                                   "ms": ms, "at_ms": round(at, 3)})
                    at += ms
        steady = statistics.median(r["median_ms"] for r in rows
                                   if r["kernel"] == name and r["gap_s"] == 0)
        for gap in trace_gaps:
            print(f"{name} after {gap} s: median of each 10 launches / no pause "
                  "(at ms since the first)")
            mine = [t for t in traces if t["gap_s"] == gap and t["rep"] == 0]
            print("  " + "  ".join(
                f"{statistics.median(t['ms'] for t in mine[i:i + 10]) / steady:.3f}"
                f"@{mine[i]['at_ms']:.0f}" for i in range(0, 120, 10)))
        if not traces:
            continue
        with open(out / "reload-trace.csv", "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(traces[0]))
            if f.tell() == 0:
                w.writeheader()
            w.writerows(traces)
    with open(out / "reload-probe.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for name in SHAPES:
        mine = [r for r in rows if r["kernel"] == name]
        steady = statistics.median(r["median_ms"] for r in mine if r["gap_s"] == 0)
        spread = [r["median_ms"] / steady for r in mine if r["gap_s"] == 0]
        print(f"\n{name}: no pause {steady:.4f} ms (reps {min(spread):.4f}-{max(spread):.4f})")
        print("median of reps / no pause (first 5 samples' median / no pause)")
        print("| gap s | " + " | ".join(f"load {ld:g} s" for ld in loads) + " |")
        print("|---" * (len(loads) + 1) + "|")
        for gap in gaps[1:]:
            cells = []
            for ld in loads:
                rs = [r for r in mine if r["gap_s"] == gap and r["load_s"] == ld]
                med = statistics.median(r["median_ms"] for r in rs) / steady
                first = statistics.median(r["first5_ms"] for r in rs) / steady
                cells.append(f"{med:.4f} ({first:.4f})")
            print(f"| {gap:g} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
