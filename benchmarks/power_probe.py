"""How a power-bound kernel's time depends on what ran before it, on the GPU.

    python benchmarks/power_probe.py [--seconds 20] [--out DIR]

A bf16 8192³ ``torch.matmul`` draws the board to its power limit.  This prints the
device's physical facts (clocks, bus width, power limit: what sweeper's physical
bounds rest on), then

1. a time series under sustained load: every ~0.25 s the median event time of the last
   chunk of back-to-back launches, SM clock, power, temperature and throttle reasons;
2. the recovery after it: clocks and power while idle;
3. schedules: 30 samples timed as sweeper times them (L2 flush, hold, one event pair),
   after a hot history (seconds of load) and after a cool one (seconds idle), with
   nothing before the samples, a fixed cool-down, or a fixed pre-load of the same work.
   A schedule whose median is the same after either history keeps rankings independent
   of what was measured before.

Raw rows go to DIR/power-series.csv and DIR/power-schedules.csv.
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

N = 8192


def facts(handle) -> dict:
    nv = pynvml
    out = {}
    for name, call in [
        ("name", lambda: nv.nvmlDeviceGetName(handle)),
        ("max_sm_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(handle, nv.NVML_CLOCK_SM)),
        ("max_mem_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(handle, nv.NVML_CLOCK_MEM)),
        ("default_app_sm_mhz",
         lambda: nv.nvmlDeviceGetDefaultApplicationsClock(handle, nv.NVML_CLOCK_SM)),
        ("bus_width_bits", lambda: nv.nvmlDeviceGetMemoryBusWidth(handle)),
        ("power_limit_w", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000),
        ("default_power_limit_w",
         lambda: nv.nvmlDeviceGetPowerManagementDefaultLimit(handle) / 1000),
        ("slowdown_temp_c", lambda: nv.nvmlDeviceGetTemperatureThreshold(
            handle, nv.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)),
    ]:
        try:
            out[name] = call()
        except Exception as err:  # noqa: BLE001 - a fact NVML lacks is printed as such
            out[name] = f"n/a ({type(err).__name__})"
    props = torch.cuda.get_device_properties(0)
    out.update(sms=props.multi_processor_count, capability=f"{props.major}.{props.minor}",
               l2_bytes=props.L2_cache_size)
    return out


def state(handle) -> dict:
    nv = pynvml
    try:
        reasons = nv.nvmlDeviceGetCurrentClocksEventReasons(handle)
    except (AttributeError, nv.NVMLError):
        reasons = nv.nvmlDeviceGetCurrentClocksThrottleReasons(handle)
    return {"sm_mhz": nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM),
            "power_w": nv.nvmlDeviceGetPowerUsage(handle) / 1000,
            "temp_c": nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU),
            "reasons": hex(reasons)}


def back_to_back(a, b, c, launches: int) -> float:
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(launches)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(launches)]
    for s, e in zip(starts, ends, strict=True):
        s.record()
        torch.matmul(a, b, out=c)
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))


def load_for(a, b, c, seconds: float) -> None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--history", type=float, default=8.0)
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    for k, v in facts(handle).items():
        print(f"fact {k}: {v}")
    device = open_device("cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = torch.randn(N, N, device="cuda", dtype=torch.bfloat16, generator=gen)
    c = torch.empty_like(a)
    flops = 2 * N ** 3
    print(f"idle before: {state(handle)}")

    rows = []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < args.seconds:
        ms = back_to_back(a, b, c, 100)
        rows.append({"phase": "load", "t_s": round(time.perf_counter() - t0, 3),
                     "median_ms": ms, "tflops": flops / ms / 1e9, **state(handle)})
    t1 = time.perf_counter()
    while time.perf_counter() - t1 < 6:
        time.sleep(0.25)
        rows.append({"phase": "idle", "t_s": round(time.perf_counter() - t0, 3),
                     "median_ms": "", "tflops": "", **state(handle)})
    with open(out / "power-series.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for r in rows[:3] + rows[len(rows) // 4:len(rows) // 4 + 1] + rows[len(rows) // 2:][:1] + \
            [r for r in rows if r["phase"] == "load"][-2:] + \
            [r for r in rows if r["phase"] == "idle"][::4]:
        print(f"series {r}")

    def sample(pre) -> tuple[float, dict, dict]:
        pre()
        s0 = state(handle)
        samples = device.time(lambda: torch.matmul(a, b, out=c), warmup=0, repeat=30,
                              flush=True)
        return statistics.median(samples), s0, state(handle)

    schedules = {
        "nothing": lambda: None,
        "cool 1 s": lambda: (torch.cuda.synchronize(), time.sleep(1.0)),
        "cool 3 s": lambda: (torch.cuda.synchronize(), time.sleep(3.0)),
        "preload 0.5 s": lambda: load_for(a, b, c, 0.5),
        "preload 2 s": lambda: load_for(a, b, c, 2.0),
    }
    histories = {"hot": lambda: load_for(a, b, c, args.history),
                 "cool": lambda: (torch.cuda.synchronize(), time.sleep(args.history))}
    results = []
    for name, pre in schedules.items():
        for hist, make in histories.items():
            make()
            ms, s0, s1 = sample(pre)
            results.append({"schedule": name, "history": hist, "median_ms": ms,
                            "tflops": flops / ms / 1e9, "sm_mhz_start": s0["sm_mhz"],
                            "sm_mhz_end": s1["sm_mhz"], "power_start": s0["power_w"],
                            "power_end": s1["power_w"], "reasons_end": s1["reasons"]})
            print(f"schedule {results[-1]}", flush=True)
    with open(out / "power-schedules.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0]))
        w.writeheader()
        w.writerows(results)
    print("\n| schedule | after hot ms | after cool ms | hot/cool |")
    print("|---|---|---|---|")
    for name in schedules:
        hot = next(r for r in results if r["schedule"] == name and r["history"] == "hot")
        cool = next(r for r in results if r["schedule"] == name and r["history"] == "cool")
        print(f"| {name} | {hot['median_ms']:.4f} | {cool['median_ms']:.4f} | "
              f"{hot['median_ms'] / cool['median_ms']:.4f} |")


if __name__ == "__main__":
    main()
