"""Does another process reading NVML slow a worker's trials?  On two GPUs a trial took
75.3 ms against 66.7 ms on one (benchmarks/multi_gpu.py), and each worker polls its GPU's
state every 20 ms (clocks, power, the energy counter: 3-5 ms a read), so one suspect is
the driver's locks shared with the other worker's poller.  This isolates it on one GPU.

    python benchmarks/nvml_contention.py [spaces/copy.yaml] [--pollers 2]

After one untimed sweep (Triton's cache warm), the space is swept with one worker process
three ways, each into a fresh study: alone; beside ``--pollers`` processes reading the
same GPU's full NVML state every 20 ms (as a worker's poller does, the energy counter
included); beside as many reading it without the energy counter.  Printed per sweep: the
worker's busy seconds per trial, the sweep's trials' wall time, and the median of the
winner's samples; the pollers' reads per second and mean read time.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PERIOD_S = 0.02


def poll(stop: Any, energy: bool, out: Any) -> None:
    """Read GPU 0's state every ``PERIOD_S`` until ``stop``; put (reads, seconds reading)."""
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    reads, spent = 0, 0.0
    while not stop.wait(PERIOD_S):
        t0 = time.perf_counter()
        if energy:
            pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
        pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)
        pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
        pynvml.nvmlDeviceGetPowerUsage(h)
        pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)
        spent += time.perf_counter() - t0
        reads += 1
    out.put((reads, spent))


def sweep(space_path: str, root: Path) -> tuple[float, float, float]:
    """One worker process sweeps ``space_path`` into a study at ``root``: its busy ms per
    trial, the trials' wall seconds, the best trial's median (ms)."""
    from sweeper.devices import open_device
    from sweeper.kernels import load_kernel
    from sweeper.space import load_space
    from sweeper.store import StudyStore
    from sweeper.sweep import Sweep, open_study

    space = load_space(space_path)
    device = open_device("cuda")
    kernel = load_kernel(space.kernel, space.kernel_options)
    store = StudyStore(root)
    open_study(store, space, kernel, device, command="nvml_contention.py")
    summary = Sweep(space, kernel, device, store, processes=True, finals=False).run()
    timing = summary.timing
    assert timing is not None and summary.best is not None and summary.best.stats
    (worker,) = timing.workers
    return (1e3 * worker.busy_s / max(1, worker.jobs), timing.span_s - timing.setup_s,
            summary.best.stats.median)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("space", nargs="?", default="spaces/copy.yaml")
    parser.add_argument("--pollers", type=int, default=2)
    args = parser.parse_args(argv)
    context = multiprocessing.get_context("spawn")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        sweep(args.space, Path(tmp) / "warm-up")
        for name, energy in (("alone", None), ("beside full reads", True),
                             ("beside reads without energy", False)):
            stop, out = context.Event(), context.Queue()
            procs = [] if energy is None else [
                context.Process(target=poll, args=(stop, energy, out))
                for _ in range(args.pollers)]
            for p in procs:
                p.start()
            time.sleep(1.0 if procs else 0.0)          # the pollers' imports and nvmlInit
            busy, trials, best = sweep(args.space, Path(tmp) / name.replace(" ", "-"))
            stop.set()
            got = [out.get(timeout=30) for _ in procs]
            for p in procs:
                p.join(10)
            reads = sum(r for r, _ in got)
            spent = sum(s for _, s in got)
            rows.append((name, busy, trials, best, reads / max(trials, 1e-9),
                         1e3 * spent / reads if reads else 0.0))
    print(f"{args.space}, one worker process; pollers: {args.pollers} processes, every "
          f"{PERIOD_S * 1e3:.0f} ms")
    print("| sweep | busy ms a trial | trials s | best median ms | poller reads/s | "
          "ms a read |\n|---|---|---|---|---|---|")
    for name, busy, trials, best, rate, per in rows:
        print(f"| {name} | {busy:.2f} | {trials:.2f} | {best:.4f} | {rate:.0f} | {per:.2f} |")
    alone = rows[0][1]
    print("busy a trial over alone: " + ", ".join(
        f"{name} {busy / alone:.3f}x" for name, busy, *_ in rows[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
