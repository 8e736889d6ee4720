"""What honouring an autotuner's ``reset_to_zero`` costs a measured launch (GPU).

    python benchmarks/autotune_hooks_cost.py [--n 4194304] [--device cuda] [--graph]

One ``@triton.autotune`` kernel (a sum into one float32 by ``atomic_add``, which needs
``total`` zeroed before each launch) measured three ways over the same configs:

- ``hook``: sweeper with the autotuner's ``reset_to_zero=["total"]``, run by sweeper's
  hook wrapper around every launch (``sweeper/kernels/_autotune.py``, ``Hooks.before``);
- ``inline``: sweeper with the same zeroing written into the launch function (no hook):
  what the same GPU work costs without the wrapper;
- ``triton``: Triton's own autotuner timing the hooked kernel (``configs_timings``, its
  ``do_bench`` with the hook inside the timed call, as sweeper times it).

Per config: each median in microseconds and ``hook / inline`` (the wrapper's cost) and
``hook / triton``.  ``--graph``: both sweeper runs replay their launches from a CUDA graph
(``measure.graph``), which takes the host's launch path out of every sample.  Both
sweeper runs flush the L2 before each sample as every sweeper
measurement does; Triton's ``do_bench`` clears its cache buffer too.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import torch
import triton
import triton.language as tl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import sweeper  # noqa: E402

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (1024, 4096) for w in (4, 8)]


@triton.jit
def _sum(x, total, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total, tl.sum(tl.load(x + offsets, mask=offsets < n, other=0.0)))


hooked_sum = triton.autotune(configs=CONFIGS, key=["n"], reset_to_zero=["total"])(_sum)
plain_sum = triton.autotune(configs=CONFIGS, key=["n"])(_sum)


def _launch(kernel, x, total, config, zero: bool) -> None:  # type: ignore[no-untyped-def]
    if zero:
        total.zero_()
    kernel.fn[(triton.cdiv(x.numel(), config.meta["BLOCK"]),)](
        x, total, x.numel(), num_warps=config.num_warps, **config.meta)


def _declare(n: int):  # type: ignore[no-untyped-def]
    common = dict(inputs={"x": "n"}, outputs={"total": "1"}, dims={"n": n},
                  reference=lambda x: x.sum().reshape(1),
                  tolerance={"float32": (1e-3, 1e-2)})
    hook = sweeper.kernel(lambda x, total, config: _launch(hooked_sum, x, total, config, False),
                          name="hook", autotuned=hooked_sum, **common)
    inline = sweeper.kernel(lambda x, total, config: _launch(plain_sum, x, total, config, True),
                            name="inline", autotuned=plain_sum, **common)
    return hook, inline


# module-level, so that sweeper's worker processes import them by name
# (autotune_hooks_cost:HOOK, with this folder on PYTHONPATH), at main()'s --n
HOOK, INLINE = _declare(int(os.environ.get("HOOKCOST_N", 1 << 22)))


def _medians(study: sweeper.Study) -> dict[tuple[int, int], float]:
    frame = study.trials_dataframe()
    frame = frame[frame["status"] == "ok"]
    print(f"{study.name}: {len(frame)} configs of dtype {set(frame['dtype'])}, "
          f"n {set(frame['n'])}, grid {set(frame['grid'])}")
    _details(study)
    return {(int(r.BLOCK), int(r.block) // 32): float(r.median_ms) * 1e3
            for r in frame.itertuples()}


def _details(study: sweeper.Study) -> None:
    """Each trial in the order measured: its samples (µs: least, median, most, the first
    five), those discarded and why, and the SM clock NVML gave at the sampling's start and
    end and over its window: what a median far from its neighbours' was measured under."""
    from sweeper.store import StudyStore

    for t in StudyStore(study.path).records()[0]:
        if not t.samples_ms:
            continue
        us = sorted(x * 1e3 for x in t.samples_ms)
        clocks = "/".join(str((t.state.get(k) or {}).get("sm_mhz", "?")) for k in ("start", "end"))
        window = t.clocks
        span = f"{window.sm_mhz_min}-{window.sm_mhz_max} MHz in {window.polls} polls" \
            if window and window.polls else "no polls"
        first = " ".join(f"{x * 1e3:.1f}" for x in t.samples_ms[:5])
        what = f"{t.config.meta} block {t.config.block}" if t.config else ""
        print(f"  #{t.number} {what}: {us[0]:.2f} / {us[len(us) // 2]:.2f} / {us[-1]:.2f} "
              f"µs of {len(us)}, first {first}; "
              f"discarded {t.discarded} {t.discard_reasons[:2]}; SM MHz start/end {clocks}, "
              f"window {span}; cold {t.cold_s}")


def _diagnose(n: int) -> None:
    """The same launch (zero, then sum) timed by hand, µs medians of 50: CUDA events
    after sweeper's flush (a memset of twice the L2) and hold (a 100 000-cycle spin),
    after the flush alone, after the hold alone, after Triton's cache clear (a 256 MiB
    memset), back to back with nothing between, and Triton's do_bench."""
    import statistics

    import triton.testing

    x = torch.randn(n, device="cuda")
    total = torch.zeros(1, device="cuda")
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    ours = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    theirs = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")

    def timed(config, before) -> float:  # type: ignore[no-untyped-def]
        def launch() -> None:
            total.zero_()
            _launch(plain_sum, x, total, config, False)
        for _ in range(5):
            launch()
        pairs = []
        for _ in range(50):
            before()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                enable_timing=True)
            start.record()
            launch()
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in pairs) * 1e3

    print("| BLOCK | warps | flush + hold µs | flush µs | hold µs | 256 MiB clear µs "
          "| nothing µs | do_bench µs |")
    print("|---|---|---|---|---|---|---|---|")
    for config in CONFIGS:
        cfg = config
        shim = type("C", (), {"meta": cfg.kwargs, "num_warps": cfg.num_warps})()
        cold = timed(shim, lambda: (ours.zero_(), torch.cuda._sleep(100_000)))
        flushed = timed(shim, lambda: ours.zero_())
        held = timed(shim, lambda: torch.cuda._sleep(100_000))
        cleared = timed(shim, lambda: theirs.zero_())
        bare = timed(shim, lambda: None)

        def call(shim=shim) -> None:  # type: ignore[no-untyped-def]
            total.zero_()
            _launch(plain_sum, x, total, shim, False)
        bench = triton.testing.do_bench(call, quantiles=(0.5,))
        bench = (bench[0] if isinstance(bench, (list, tuple)) else bench) * 1e3
        print(f"| {cfg.kwargs['BLOCK']} | {cfg.num_warps} | {cold:.2f} | {flushed:.2f} | "
              f"{held:.2f} | {cleared:.2f} | {bare:.2f} | {bench:.2f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 22, help="elements summed")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--graph", action="store_true", help="measure.graph: true")
    parser.add_argument("--diagnose", action="store_true",
                        help="also time the launch by hand after each way of clearing")
    args = parser.parse_args(argv)
    os.environ["HOOKCOST_N"] = str(args.n)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)
    sys.path.insert(0, str(HERE))
    runs = {}
    with tempfile.TemporaryDirectory() as studies:
        for name in ("HOOK", "INLINE"):
            space = {"study": name.lower(), "from_autotune": f"autotune_hooks_cost:{name}",
                     "measure": {"warmup": 5, "repeat": 50, "graph": args.graph}}
            runs[name.lower()] = _medians(sweeper.run(space, device=args.device,
                                                      studies_dir=studies, quiet=True,
                                                      report=False))
    triton_us: dict[tuple[int, int], float] = {}
    if args.device == "cuda":
        x = torch.randn(args.n, device="cuda")
        total = torch.zeros(1, device="cuda")
        hooked_sum[lambda meta: (triton.cdiv(args.n, meta["BLOCK"]),)](x, total, args.n)
        for config, ms in hooked_sum.configs_timings.items():
            triton_us[(config.kwargs["BLOCK"], config.num_warps)] = float(
                ms[0] if isinstance(ms, (list, tuple)) else ms) * 1e3
        print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
              f"Triton {triton.__version__}, n = {args.n}")
    print("| BLOCK | warps | hook µs | inline µs | triton µs | hook / inline | hook / triton |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(runs["hook"]):
        hook, inline = runs["hook"][key], runs["inline"].get(key, float("nan"))
        theirs = triton_us.get(key, float("nan"))
        print(f"| {key[0]} | {key[1]} | {hook:.2f} | {inline:.2f} | {theirs:.2f} | "
              f"{hook / inline:.3f} | {hook / theirs:.3f} |")
    if args.diagnose and args.device == "cuda":
        _diagnose(args.n)


if __name__ == "__main__":
    main()
