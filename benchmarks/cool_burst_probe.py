"""What a power-bound matmul's samples read right after a cool-down, sample by sample.

Run on a GPU machine:  python benchmarks/cool_burst_probe.py [--size 8192] [--reps 2]

The GPU test of the cool-down schedule (tests/test_gpu.py, a sustained 8192³ bf16 matmul
then a 1 s cool-down) expects the samples after the cool-down to read faster than those
under sustained load.  On an H100 80GB HBM3 that hit its power cap (hot 1.62 ms a launch)
the burst after a 1 s cool-down read 1.37, 2.91, 2.91, 1.37, 2.91, 2.91 ms: two speeds,
one half the other, in one stream of launches.  This probe takes such bursts apart: after
2 s of sustained load, a cool-down of each length, then the sampling loop
(:func:`sweeper.measure.time_cuda`) with and without its hold kernel and with 2 or 10
untimed turns first, while a thread reads NVML's SM clock and clock-event reasons every
millisecond.  It prints each burst's samples with the clocks and reasons seen while it
ran, so whether the slow samples are the clock (and which reason pulls it) can be read
off.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

import torch

from sweeper.devices import open_device
from sweeper.devices._cuda import HOLD_CYCLES
from sweeper.devices._nvml import SLOWDOWNS
from sweeper.measure import Duty, StopRule, time_cuda


def _poll(reader: object, stop: threading.Event, out: list[tuple[float, int, int]]) -> None:
    """SM clock and raw clock-event bits every millisecond until ``stop``."""
    nv = reader._nvml          # type: ignore[attr-defined]
    h = reader._handle         # type: ignore[attr-defined]
    read = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons",
                   nv.nvmlDeviceGetCurrentClocksThrottleReasons)
    while not stop.is_set():
        out.append((time.perf_counter(), nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                    read(h)))
        time.sleep(0.001)


def _names(bits: int) -> str:
    return "+".join(name for name, bit in SLOWDOWNS.items() if bits & bit) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    device: Any = open_device("cuda")   # a CudaDevice: its NVML reader is read here
    print(f"{device.facts().name}, power limit {device.power_limit_w():.0f} W, usual SM "
          f"clock {device.reader.usual_sm_mhz} MHz")
    a = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    b, c = torch.randn_like(a), torch.empty_like(a)

    def launch() -> None:
        torch.matmul(a, b, out=c)

    def hold() -> None:
        torch.cuda._sleep(HOLD_CYCLES)

    rows = []
    for rep in range(args.reps):
        for cool_s in (1.0, 0.1):
            for with_hold in (True, False):
                for turns in (2, 10):
                    t_end = time.perf_counter() + 2.0            # sustained load
                    while time.perf_counter() < t_end:
                        launch()
                        torch.cuda.synchronize()
                    hot = time_cuda(launch, warmup=2, repeat=10, hold=hold)
                    torch.cuda.synchronize()
                    time.sleep(cool_s)
                    polls: list[tuple[float, int, int]] = []
                    stop = threading.Event()
                    poller = threading.Thread(target=_poll, args=(device.reader, stop, polls))
                    poller.start()
                    t0 = time.perf_counter()
                    samples = time_cuda(launch, warmup=turns, repeat=8,
                                        hold=hold if with_hold else None)
                    t1 = time.perf_counter()
                    time.sleep(0.005)
                    stop.set()
                    poller.join()
                    seen = [(mhz, bits) for t, mhz, bits in polls if t0 - 0.002 <= t <= t1]
                    clocks = sorted({mhz for mhz, _ in seen})
                    reasons = sorted({_names(bits) for _, bits in seen})
                    label = (f"rep {rep} cool {cool_s:g}s hold {'on ' if with_hold else 'off'}"
                             f" turns {turns:2d}")
                    print(f"{label}: hot median {statistics.median(hot):.3f} ms; burst "
                          + " ".join(f"{s:.3f}" for s in samples)
                          + f"; SM MHz seen {clocks[:6]}{'...' if len(clocks) > 6 else ''}"
                          f"; reasons {reasons}", flush=True)
                    rows.append((label, statistics.median(hot), statistics.median(samples),
                                 max(samples) / min(samples)))
    for rep in range(args.reps + 1):           # the GPU test's own steps, as the sweep takes them
        for cool_s in (1.0, 0.1):
            hot_m = device.measure(launch, warmup=0, rule=StopRule(kind="fixed", repeat=400),
                                   flush=False, duty=Duty("load", 2.0))
            cool_m = device.measure(launch, warmup=0, rule=StopRule(kind="fixed", repeat=20),
                                    flush=False, duty=Duty("cool", cool_s))
            samples = cool_m.timing.samples
            window = cool_m.window
            label = f"rep {rep} device.measure, cool {cool_s:g}s"
            print(f"{label}: hot median {statistics.median(hot_m.timing.samples):.3f} ms; "
                  "burst " + " ".join(f"{x:.3f}" for x in samples)
                  + (f"; window SM MHz {window.sm_mhz_min}-{window.sm_mhz_max}, reasons "
                     f"{window.reasons}" if window is not None else ""), flush=True)
            rows.append((label, statistics.median(hot_m.timing.samples),
                         statistics.median(samples), max(samples) / min(samples)))
    print("\n| burst | hot median ms | burst median ms | burst max/min |")
    print("|---|---|---|---|")
    for label, hot_ms, cool_ms, spread in rows:
        print(f"| {label} | {hot_ms:.3f} | {cool_ms:.3f} | {spread:.2f} |")


if __name__ == "__main__":
    main()
