"""Compiling a space serially against the compile pool, and whether compiling beside the
measurements moves them.

    python benchmarks/compile_pool.py                  # on a GPU: both, goals checked
    python benchmarks/compile_pool.py --dry            # no GPU: compile for sm_90 only

Compile: every config of ``--space`` (default: 64 bf16 matmul configs that each compile
a different binary) from a cold Triton cache, first one after another in this process,
as a worker does without a pool, then by a pool of ``--workers`` processes (start-up
included, each cache cold).  On a GPU the serial pass launches each config (compile and
load, synchronized) and the pool's total includes this process loading every config
from the pool's cache.  Goal on the 16-core H200 machine: pool <= 0.2x serial.

A/B (GPU only): ``--ab`` configs of ``spaces/copy.yaml`` measured as a trial measures
them, in ``--rounds`` interleaved rounds, alternately with the pool idle and with it
compiling the space into a fresh cache; the median of each config in both conditions
and their difference.  Goal: every difference within 0.5 %.  ``--dry`` compiles for
``--target`` without a GPU (ptxas ships with Triton) and skips the A/B.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sweeper.devices import open_device  # noqa: E402
from sweeper.devices._cuda import PlannedGpu  # noqa: E402
from sweeper.kernels import load_kernel  # noqa: E402
from sweeper.kernels._precompile import Compile, Precompiler, Target  # noqa: E402
from sweeper.space import load_space  # noqa: E402
from sweeper.store import key_of  # noqa: E402
from sweeper.study import enumerate_choices  # noqa: E402
from sweeper.sweep._compile_pool import CompilePool, PoolSetup, default_size  # noqa: E402

SPACE = ROOT / "benchmarks" / "spaces" / "matmul-compile64.yaml"


def configs(path: Path, device: Any, limit: int | None) -> tuple[Any, list[tuple[Any, Any]]]:
    """The space and its valid configs (key, config) resolved on ``device``."""
    space = load_space(path)
    facts = device.facts()
    valid, _ = enumerate_choices(space, facts.env(), facts.max_footprint)
    resolved = [(key_of(c), space.resolve(c, facts.env(), facts.max_footprint))
                for c in valid]
    return space, resolved[:limit]


def fresh_kernel(space: Any) -> Any:
    """The space's kernel with the jitted functions of its module forgotten, so nothing
    compiled earlier in this process is reused."""
    kernel = load_kernel(space.kernel, space.kernel_options)
    for value in vars(sys.modules[type(kernel).__module__]).values():
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()
    return kernel


def cold_cache() -> str:
    """A new, empty Triton cache folder, made the current one (the pool's processes
    inherit it)."""
    folder = tempfile.mkdtemp(prefix="triton-cache-")
    os.environ["TRITON_CACHE_DIR"] = folder
    return folder


def serial(space: Any, items: list[tuple[Any, Any]], device: Any, target: Target | None
           ) -> float:
    """Seconds to compile every config one after another in this process: launched on the
    GPU, or compiled for ``target`` (``--dry``)."""
    cold_cache()
    kernel = fresh_kernel(space)
    t0 = time.perf_counter()
    if target is not None:
        compiler = Precompiler(kernel, target)
        statuses = [compiler.compile(config).status for _, config in items]
        assert all(s is Compile.COMPILED for s in statuses), statuses
    else:
        launch_all(kernel, items, device)
    return time.perf_counter() - t0


def launch_all(kernel: Any, items: list[tuple[Any, Any]], device: Any) -> None:
    """Launch each config once on the GPU (compiled, or loaded from the cache)."""
    buffers: dict[Any, Any] = {}
    for _, config in items:
        if config.problem not in buffers:
            buffers[config.problem] = kernel.allocate(config.problem, "cuda")
        kernel.launch(buffers[config.problem], config)
        device.synchronize()


def pooled(space: Any, items: list[tuple[Any, Any]], device: Any, target: Target,
           workers: int, dry: bool, started: bool = False) -> tuple[float, float]:
    """Seconds for a fresh pool to compile every config (start-up included; with
    ``started``, its processes started and ready first, as ``sweeper run`` starts them
    ahead while it imports), and on a GPU the seconds this process then takes to load
    them all from the cache."""
    cold_cache()
    t0 = time.perf_counter()
    pool = CompilePool(PoolSetup(space, target, list(sys.path)), workers)
    if started:
        pool.wait_started()
        t0 = time.perf_counter()
    try:
        pool.ahead(items)
        pool.drain()
        took = time.perf_counter() - t0
        compiled = set(pool.handed)      # one config per binary; the others share it
        results = {key: pool.take(key) for key, _ in items}
        assert all(r is not None and r.status is Compile.COMPILED if key in compiled
                   else r is None for key, r in results.items()), results
    finally:
        pool.close()
    if dry:
        return took, 0.0
    t1 = time.perf_counter()
    launch_all(fresh_kernel(space), items, device)
    return took, time.perf_counter() - t1


def ab(device: Any, target: Target, workers: int, count: int, rounds: int,
       compile_items: tuple[Any, list[tuple[Any, Any]]]) -> list[tuple[str, float, float]]:
    """Median (ms) of ``count`` copy configs with the pool idle and busy, interleaved."""
    from sweeper.measure import StopRule

    space, items = configs(ROOT / "spaces" / "copy.yaml", device, count)
    kernel = load_kernel(space.kernel, space.kernel_options)
    samples: dict[tuple[str, bool], list[float]] = {}
    for _ in range(rounds):
        for busy in (False, True):
            pool = CompilePool(PoolSetup(compile_items[0], target, list(sys.path)), workers)
            pool.wait_started()
            if busy:
                cold_cache()
                pool.ahead(compile_items[1])
            for key, config in items:
                buffers = kernel.allocate(config.problem, "cuda")
                got = device.measure(lambda b=buffers, c=config: kernel.launch(b, c),
                                     warmup=10, rule=StopRule(kind="fixed", repeat=50), flush=True)
                samples.setdefault((str(key), busy), []).extend(got.timing.samples)
            pool.close()
    return [(str(key), statistics.median(samples[(str(key), False)]),
             statistics.median(samples[(str(key), True)])) for key, _ in items]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dry", action="store_true",
                        help="no GPU: compile for --target only, no launches, no A/B")
    parser.add_argument("--target", default="sm_90", help="--dry's target (sm_90)")
    parser.add_argument("--space", type=Path, default=SPACE)
    parser.add_argument("--limit", type=int, help="only the first configs of the space")
    parser.add_argument("--workers", type=int, default=default_size(1) or 1)
    parser.add_argument("--ab", type=int, default=8, help="configs in the A/B (0: none)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    device = PlannedGpu() if args.dry else open_device("cuda")   # dry: an H200's facts
    target = Target.parse(args.target if args.dry else device.compile_target())
    space, items = configs(args.space, device, args.limit)
    slow = serial(space, items, device, target if args.dry else None)
    fast, load = pooled(space, items, device, target, args.workers, args.dry)
    ahead, load_ahead = pooled(space, items, device, target, args.workers, args.dry,
                               started=True)
    print(f"| {len(items)} configs of {args.space.name}, {target} | seconds |")
    print("|---|---|")
    print(f"| serial, one process (its imports before the clock) | {slow:.2f} |")
    print(f"| pool of {args.workers}, start-up included | {fast:.2f} |")
    if not args.dry:
        print(f"| then loading all from the cache | {load:.2f} |")
    print(f"| pool of {args.workers}, processes started ahead (as sweeper run starts "
          f"them) | {ahead:.2f} |")
    if not args.dry:
        print(f"| then loading all from the cache | {load_ahead:.2f} |")
    ratio, ratio_ahead = (fast + load) / slow, (ahead + load_ahead) / slow
    print(f"| pool / serial, start-up included | {ratio:.2f}x (goal <= 0.2x: "
          f"{'met' if ratio <= 0.2 else 'missed'}) |")
    print(f"| pool / serial, started ahead | {ratio_ahead:.2f}x (goal <= 0.2x: "
          f"{'met' if ratio_ahead <= 0.2 else 'missed'}) |")
    if args.dry or not args.ab:
        print("A/B: needs a GPU (skipped)" if args.dry else "A/B: skipped (--ab 0)")
        return 0
    rows = ab(device, target, args.workers, args.ab, args.rounds, (space, items))
    print("| config | median idle (ms) | median busy (ms) | busy / idle |")
    print("|---|---|---|---|")
    worst = 0.0
    for key, idle, busy in rows:
        worst = max(worst, abs(busy / idle - 1))
        print(f"| {key} | {idle:.4f} | {busy:.4f} | {100 * (busy / idle - 1):+.2f} % |")
    print(f"worst difference {100 * worst:.2f} % (goal within 0.5 %: "
          f"{'met' if worst <= 0.005 else 'missed'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
