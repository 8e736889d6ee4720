"""Sweep wall time against a plain event-timed loop, and the best config against torch copy_.

Run on a GPU machine:  python benchmarks/sweep_overhead.py [spaces/copy.yaml] [--breakdown]

Every config is compiled first (untimed), so both sides measure with warm Triton
caches; then, in one process: a plain loop (warmup, then `repeat` samples each
with an L2 flush outside a CUDA event pair, one synchronize), the sweep over the
same space (verification, statistics, store, Optuna and all), the plain loop again.
The ratio is the sweep's wall time over the mean of the two plain loops.
``--breakdown`` also times, during the sweep, each step of a trial (the kernel's
randomize, poison, check and launches; the device's measure, timing and synchronize; the
journal's append; the whole trial) and prints where the time beyond the plain loop goes;
the timers' own cost is a few µs a call.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from sweeper.devices import open_device
from sweeper.kernels import load_kernel
from sweeper.measure import time_cuda
from sweeper.space import load_space
from sweeper.store import StudyStore
from sweeper.sweep import Sweep, enumerate_choices, open_study


def plain_loop(kernel, buffers, configs, warmup, repeat, flush) -> tuple[float, dict]:
    medians = {}
    t0 = time.perf_counter()
    for key, cfg in configs:
        samples = time_cuda(lambda cfg=cfg: kernel.launch(buffers, cfg), warmup=warmup,
                            repeat=repeat, flush=flush)
        medians[key] = statistics.median(samples)
    return time.perf_counter() - t0, medians


def instrument(kernel, device) -> dict[str, list[float]]:
    """Wrap the steps of a trial with wall-clock timers; name -> [seconds, calls]."""
    import sweeper.sweep._bench as bench
    from sweeper.store import StudyStore as Store

    spent: dict[str, list[float]] = {}

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                entry = spent.setdefault(name, [0.0, 0])
                entry[0] += time.perf_counter() - t0
                entry[1] += 1
        return wrapper

    for name in ("randomize", "poison", "check", "launch"):
        setattr(kernel, name, timed(f"kernel.{name}", getattr(kernel, name)))
    for name in ("measure", "time", "synchronize", "throttled", "window"):
        setattr(device, name, timed(f"device.{name}", getattr(device, name)))
    Store.append = timed("store.append", Store.append)
    bench.run_trial = timed("run_trial (whole trial)", bench.run_trial)
    return spent


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--breakdown"]
    breakdown = "--breakdown" in sys.argv[1:]
    space = load_space(args[0] if args else "spaces/copy.yaml")
    device = open_device("cuda")
    kernel = load_kernel(space.kernel, space.kernel_options)
    facts = device.facts()
    valid, _ = enumerate_choices(space, facts.env())
    configs = [(tuple(sorted(c.items())), space.resolve(c, facts.env())) for c in valid]
    problems = {cfg.problem for _, cfg in configs}
    assert len(problems) == 1, "one problem (dtype x footprint) per run keeps buffers simple"
    buffers = kernel.allocate(problems.pop(), "cuda")
    kernel.randomize(buffers, torch.Generator(device="cuda").manual_seed(0))
    t0 = time.perf_counter()
    for _, cfg in configs:
        kernel.launch(buffers, cfg)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    m = space.measure
    flush = device._flush if "cold" in space.axis("cache").labels else None
    loop_a, med_a = plain_loop(kernel, buffers, configs, m.warmup, m.repeat, flush)
    with tempfile.TemporaryDirectory() as tmp:
        store = StudyStore(Path(tmp) / "bench")
        open_study(store, space, kernel, device, command="benchmarks/sweep_overhead.py")
        spent = instrument(kernel, device) if breakdown else {}
        summary = Sweep(space, kernel, device, store).run()
        trials, baselines = store.records()
    loop_b, med_b = plain_loop(kernel, buffers, configs, m.warmup, m.repeat, flush)
    reader = device.reader
    costs = {}
    for name, fn in (("full read", reader.read), ("read without processes",
                     lambda: reader.read(False)), ("clock check", reader.read_clocks)):
        t1 = time.perf_counter()
        for _ in range(100):
            fn()
        costs[name] = (time.perf_counter() - t1) / 100 * 1e3
    ok = [t for t in trials if t.ok]
    best = max(ok, key=lambda t: t.gbps)
    base = baselines[0]
    nbytes = kernel.bytes_moved(configs[0][1].problem)
    loop_best = max(nbytes / (min(med_a[k], med_b[k]) * 1e-3) / 1e9 for k, _ in configs)
    ratio = summary.wall_s / ((loop_a + loop_b) / 2)
    print(f"gpu: {facts.name}; torch {torch.__version__}; configs: {len(configs)}; "
          f"warmup {m.warmup}, repeat {m.repeat}, L2 flush {flush is not None}")
    print(f"compile + first launch of all configs (untimed by both sides): {compile_s:.2f} s")
    print("| what | value |\n|---|---|")
    print(f"| plain loop, before | {loop_a:.2f} s |")
    print(f"| sweeper sweep ({summary.measured} measured, verified, stored) | "
          f"{summary.wall_s:.2f} s |")
    print(f"| plain loop, after | {loop_b:.2f} s |")
    print(f"| of which: finalists re-measured interleaved | {summary.finals_s:.2f} s |")
    print(f"| sweep / plain loop | {ratio:.3f}x (target <= 1.15x) |")
    print(f"| sweep without the finals / plain loop | "
          f"{(summary.wall_s - summary.finals_s) / ((loop_a + loop_b) / 2):.3f}x |")
    for name, ms in costs.items():
        print(f"| NVML {name} | {ms:.3f} ms |")
    print(f"| best config (sweep) | {best.choice} {best.gbps:.1f} GB/s |")
    print(f"| best config (plain loop medians) | {loop_best:.1f} GB/s |")
    print(f"| torch copy_ same footprint, same timer | {base.gbps:.1f} GB/s |")
    print(f"| best / torch copy_ | {100 * best.gbps / base.gbps:.1f}% (target >= 99%) |")
    if spent:
        print(f"\n| step, during the sweep ({summary.wall_s:.2f} s) | seconds | calls | "
              "ms a call |\n|---|---|---|---|")
        for name, (seconds, calls) in sorted(spent.items(), key=lambda kv: -kv[1][0]):
            print(f"| {name} | {seconds:.3f} | {calls} | {1e3 * seconds / calls:.3f} |")


if __name__ == "__main__":
    main()
