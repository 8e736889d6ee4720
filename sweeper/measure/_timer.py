"""The timer: one small function a reviewer can audit in one sitting.

Warm up, synchronize, then ``repeat`` samples; before each sample the L2 is
flushed outside the timed region, then a short spin kernel holds the GPU
(nvbench's blocking-kernel idea: the GPU stays busy while the host queues the
start event and the launch, so host launch latency is not timed as kernel time);
one pair of CUDA events brackets each launch; one synchronize at the end.

The hold follows the flush too: on the H200 a 10 µs matmul (1024³ bf16) timed right
after the flush measures 25–29 µs, with flush and hold 9.8–10.0 µs, as
``triton.testing.do_bench`` does (9.98 µs; ``python benchmarks/short_launch.py``).

Every sample is returned: statistics are someone else's job
(:mod:`sweeper.measure._stats`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: A launch or a step around it; what it returns is not used.
Launch = Callable[[], object]


def time_cuda(launch: Launch, *, warmup: int, repeat: int, flush: Launch | None = None,
              hold: Launch | None = None) -> list[float]:
    """Milliseconds of each of ``repeat`` launches, timed with CUDA events."""
    import torch

    for _ in range(warmup):
        launch()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
    for start, end in zip(starts, ends, strict=True):
        if flush is not None:
            flush()              # queued before the start event: not in the sample
        if hold is not None:
            hold()               # keeps the GPU busy while the host queues what follows
        start.record()
        launch()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in zip(starts, ends, strict=True)]


def time_host(launch: Launch, *, warmup: int, repeat: int, flush: Launch | None = None
              ) -> list[float]:
    """Milliseconds of each launch by the host's clock, for synchronous devices only.

    The Triton interpreter runs a launch to completion before returning, so a
    monotonic host clock around it is the honest timer there.
    """
    for _ in range(warmup):
        launch()
    samples = []
    for _ in range(repeat):
        if flush is not None:
            flush()
        t0 = time.perf_counter()
        launch()
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples
