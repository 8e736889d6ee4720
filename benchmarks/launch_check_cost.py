"""What the launch check costs a config: a short kernel's first launch of each config is
made inside :func:`~sweeper.kernels._launched.recording` (Triton's launch patched, then put
back), its launch recorded (the grid function evaluated on the launch's arguments), and
:func:`~sweeper.kernels._launched.mismatch` judges it.  Host time only, once a config; the
timed launches run unpatched.  A real interpreted launch of a small Triton kernel, with and
without the recording around it, shows the check against a launch's own host cost.

    python benchmarks/launch_check_cost.py [CONFIGS]       (default: 204, spaces/copy.yaml's)
"""

from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch
import triton
import triton.language as tl

from sweeper.kernels._launched import _launched, mismatch, recording


@triton.jit
def _scale(x, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) * 1, mask=offsets < n)


def per_call(step, n: int) -> float:
    """The least mean seconds of ``step()`` over ``n`` calls, of five tries."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            step()
        best = min(best, (time.perf_counter() - start) / n)
    return best


def paired(a, b, pairs: int) -> tuple[float, float, float]:
    """Median seconds of ``a()``, of ``b()`` and of their difference, over ``pairs``
    pairs taken in turn (which goes first alternating), so that a machine's load falls
    on both alike."""
    times_a, times_b = [], []
    for i in range(pairs):
        for step, times in ((a, times_a), (b, times_b))[::1 if i % 2 else -1]:
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
    return (statistics.median(times_a), statistics.median(times_b),
            statistics.median(x - y for x, y in zip(times_a, times_b, strict=True)))


def main(configs: int) -> None:
    x = torch.ones(256)
    grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)  # noqa: E731  as users write

    def launch() -> None:
        _scale[grid](x, x.numel(), BLOCK=128, num_warps=4)

    def checked() -> None:
        with recording() as seen:
            launch()
        assert mismatch(seen, 2, 4) is None, seen

    def empty() -> None:
        with recording() as seen:
            pass
        mismatch(seen, 2, 4)

    def recorded() -> None:
        _launched(_scale, grid, (x, x.numel()), {"BLOCK": 128, "num_warps": 4})

    launch()                                          # the interpreter's first-call work
    patch, record = per_call(empty, 5_000), per_call(recorded, 5_000)
    with_check, bare, more = paired(checked, launch, 400)
    print("what                                       us a config")
    print(f"patch, put back and judge                  {patch * 1e6:10.1f}")
    print(f"record one launch (its grid evaluated)     {record * 1e6:10.1f}")
    print(f"the two: the check's own work              {(patch + record) * 1e6:10.1f}")
    print(f"interpreted launch, bare (median)          {bare * 1e6:10.1f}")
    print(f"interpreted launch, checked (median)       {with_check * 1e6:10.1f}")
    print(f"checked - bare, median of 400 pairs        {more * 1e6:10.1f}")
    print(f"the check's own work over {configs} configs: {(patch + record) * configs * 1e3:.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 204)
