"""Evidence that sweeper's numbers can be trusted (issue 3), on a CUDA GPU.

    python benchmarks/trust_evidence.py [agreement] [stability] [cache] [ceilings]

- agreement: >= 20 copy configs above 100 us at 1 GiB fp32, sweeper's median (cold, adaptive
  ci 0.5 %) against triton.testing.do_bench(return_mode="median") in the same process.
- stability: spaces/copy.yaml swept twice back to back; the winners' GB/s drift and the
  Spearman rank correlation of all configs' medians.
- cache: cold vs warm copy at 8, 32, 64, 256 MiB and 1 GiB (the L2 region).
- ceilings: sweeper calibrate's figures next to do_bench of torch copy_ and torch.matmul.
"""

from __future__ import annotations

import functools
import json
import os
import random
import sys
import tempfile
from pathlib import Path

import torch
from triton.testing import do_bench

from sweeper import ceilings as ceil
from sweeper.devices import open_device
from sweeper.kernels import load_kernel
from sweeper.measure import StopRule, spearman, summarize
from sweeper.space import Config, Problem, format_size, load_space
from sweeper.store import StudyStore
from sweeper.sweep import Sweep, enumerate_choices, open_study


def agreement(device, kernel) -> dict:
    space = load_space("spaces/copy.yaml")
    facts = device.facts()
    valid, _ = enumerate_choices(space, facts.env())
    random.Random(0).shuffle(valid)
    problem = Problem("float32", 1 << 30)
    buffers = kernel.allocate(problem, "cuda")
    kernel.randomize(buffers, torch.Generator(device="cuda").manual_seed(0))
    rule = StopRule(kind="ci", target=0.005, min_samples=20, max_time_s=2.0)
    rows = []
    for choice in valid:
        config = space.resolve(choice, facts.env())
        launch = lambda config=config: kernel.launch(buffers, config)  # noqa: E731
        ours = summarize(device.measure(launch, warmup=10, rule=rule, flush=True)
                         .timing.samples).median
        if ours < 0.1:
            continue
        theirs = do_bench(launch, return_mode="median")
        rows.append({"config": choice, "sweeper_ms": ours, "do_bench_ms": theirs,
                     "diff_pct": 100 * (ours - theirs) / theirs})
        if len(rows) == 24:
            break
    within = sum(abs(r["diff_pct"]) <= 1.0 for r in rows)
    print(f"\n## agreement: sweeper median vs do_bench median, copy 1 GiB fp32, "
          f"{len(rows)} configs")
    print("| grid | block | BLOCK | sweeper ms | do_bench ms | diff % |\n|---|---|---|---|---|---|")
    for r in rows:
        c = r["config"]
        print(f"| {c['grid']} | {c['block']} | {c['BLOCK']} | {r['sweeper_ms']:.4f} | "
              f"{r['do_bench_ms']:.4f} | {r['diff_pct']:+.2f} |")
    print(f"within ±1%: {within}/{len(rows)} ({100 * within / len(rows):.0f}%; target >= 95%)")
    return {"rows": rows, "within": within}


def _sweep(device, kernel, space, root) -> tuple[dict, float]:
    store = StudyStore(root)
    open_study(store, space, kernel, device, command="benchmarks/trust_evidence.py stability")
    summary = Sweep(space, kernel, device, store,
                    ceilings=_ceilings(device)).run()
    trials = {t.key(): t for t in store.records()[0] if t.ok}
    final = summary.finals[0]
    gbps = final.winner_row().gbps
    return trials, gbps


def stability(device, kernel) -> dict:
    space = load_space("spaces/copy.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        a, best_a = _sweep(device, kernel, space, Path(tmp) / "a")
        b, best_b = _sweep(device, kernel, space, Path(tmp) / "b")
    keys = [k for k in a if k in b]
    rho = spearman([a[k].stats.median for k in keys], [b[k].stats.median for k in keys])
    top_a = max(a.values(), key=lambda t: t.gbps).gbps
    top_b = max(b.values(), key=lambda t: t.gbps).gbps
    drift = 100 * abs(best_b - best_a) / best_a
    print("\n## stability: spaces/copy.yaml swept twice back to back")
    print(f"| what | run 1 | run 2 |\n|---|---|---|\n| winner GB/s (interleaved final) | "
          f"{best_a:.1f} | {best_b:.1f} |\n| best sweep GB/s | {top_a:.1f} | {top_b:.1f} |")
    print(f"winner drift {drift:.2f}% (target <= 1%); Spearman over {len(keys)} configs "
          f"{rho:.4f} (target >= 0.95)")
    return {"best": [best_a, best_b], "drift_pct": drift, "spearman": rho, "n": len(keys)}


def cache(device, kernel) -> dict:
    sizes = [8 << 20, 32 << 20, 64 << 20, 256 << 20, 1 << 30]
    rule = StopRule(kind="ci", target=0.005, min_samples=20, max_time_s=2.0)
    l2 = device.facts().l2_bytes
    rows = []
    for fp in sizes:
        problem = Problem("float32", fp)
        sets = [kernel.allocate(problem, "cuda")]
        count = min(16, -(-2 * l2 // kernel.working_set(problem)) + 1) \
            if kernel.working_set(problem) <= l2 else 1
        sets += [kernel.allocate(problem, "cuda") for _ in range(count - 1)]
        for s in sets:
            kernel.randomize(s, torch.Generator(device="cuda").manual_seed(1))
        config = Config(problem=problem, grid=problem.n // 1024, block=256, meta={"BLOCK": 1024})
        row = {"footprint": fp, "rotation": count}
        for mode, flush in (("cold", True), ("warm", False)):
            it = iter(sets * 100000)
            single = sets[0]
            launch = functools.partial(kernel.launch, single, config) if mode == "cold" else \
                (lambda it=it, config=config: kernel.launch(next(it), config))
            ms = summarize(device.measure(launch, warmup=10, rule=rule, flush=flush)
                           .timing.samples).median
            row[mode] = kernel.bytes_moved(problem) / (ms * 1e-3) / 1e9
        # warm without rotation: the cache replay the rotation avoids
        ms = summarize(device.measure(functools.partial(kernel.launch, sets[0], config),
                                      warmup=10, rule=rule, flush=False).timing.samples).median
        row["warm_replay"] = kernel.bytes_moved(problem) / (ms * 1e-3) / 1e9
        rows.append(row)
        del sets
    print(f"\n## cold vs warm: copy fp32, grid cdiv(n,1024), block 256, BLOCK 1024 "
          f"(L2 {format_size(l2)}; working set = 2 x footprint)")
    print("| footprint | cold GB/s | warm GB/s (rotating sets) | warm GB/s (same buffers) |\n"
          "|---|---|---|---|")
    for r in rows:
        print(f"| {format_size(r['footprint'])} | {r['cold']:.0f} | {r['warm']:.0f} "
              f"({r['rotation']} sets) | {r['warm_replay']:.0f} |")
    return {"rows": rows}


def _ceilings(device):
    env = device.environment()
    return ceil.load(env["gpu"], env.get("gpu_uuid", ""), env.get("driver", ""))


def ceilings(device) -> dict:
    found = _ceilings(device)
    if found is None:
        found = ceil.measure(device, progress=print)
        ceil.save(found)
    print(f"\n## ceilings (sweeper calibrate) next to do_bench, {found.gpu}")
    print("| footprint | sweeper cold GB/s | sweeper warm GB/s | do_bench copy_ GB/s |\n"
          "|---|---|---|---|")
    for fp, row in sorted(found.copy.items()):
        src = torch.rand(fp // 4, device="cuda")
        dst = torch.empty_like(src)
        ms = do_bench(functools.partial(dst.copy_, src), return_mode="median")
        print(f"| {format_size(fp)} | {row['cold']:.0f} | {row['warm']:.0f} | "
              f"{2 * fp / (ms * 1e-3) / 1e9:.0f} |")
        del src, dst
    print("| matmul 8192³ | sweeper TFLOP/s | do_bench torch.matmul TFLOP/s |\n|---|---|---|")
    n = 8192
    for name, tflops in found.matmul.items():
        dtype = torch.float32 if name in ("float32", "tfloat32") else getattr(torch, name)
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        torch.backends.cuda.matmul.allow_tf32 = name == "tfloat32"
        ms = do_bench(functools.partial(torch.matmul, a, b), return_mode="median")
        torch.backends.cuda.matmul.allow_tf32 = False
        print(f"| {name} | {tflops:.1f} | {2 * n ** 3 / (ms * 1e-3) / 1e12:.1f} |")
    print(f"launch floor: {found.launch_floor_us:.1f} us (event-timed empty Triton kernel)")
    return {"ceilings": found.to_json()}


def main() -> None:
    wanted = sys.argv[1:] or ["ceilings", "agreement", "stability", "cache"]
    device = open_device("cuda")
    kernel = load_kernel("copy")
    results = {}
    for part in wanted:
        fn = {"agreement": agreement, "stability": stability, "cache": cache,
              "ceilings": ceilings}[part]
        results[part] = fn(device) if part == "ceilings" else fn(device, kernel)
        sys.stdout.flush()
    out = Path(os.environ.get("OUT", "."))
    (out / "trust_evidence.json").write_text(json.dumps(results, indent=1, default=str))
    print("\nsummary:", {k: {kk: vv for kk, vv in v.items() if kk in (
        "within", "drift_pct", "spearman", "n")} for k, v in results.items()})


if __name__ == "__main__":
    main()
