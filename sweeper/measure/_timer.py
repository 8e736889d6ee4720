"""The timer: one small function a reviewer can audit in one sitting.

Warm up with turns of the sampling loop itself, then ``repeat`` samples; before each
sample the L2 is
flushed outside the timed region, then a short spin kernel holds the GPU
(nvbench's blocking-kernel idea: the GPU stays busy while the host queues the
start event and the launch, so host launch latency is not timed as kernel time);
one pair of CUDA events brackets each launch; one synchronize at the end.

The hold follows the flush too: on the H200 a 10 µs matmul (1024³ bf16) timed right
after the flush measures 25–29 µs, with flush and hold 9.8–10.0 µs, as
``triton.testing.do_bench`` does (9.98 µs; ``python benchmarks/short_launch.py``).

The warmup turns the same loop, its times not kept.  After launches back to back (ten,
or for 25 ms) the first timed sample of a short kernel read a median 1.2-3.6× its
settled time on an H100 (a 15 µs atomic sum, a 49 µs copy), 44 of 60 trials above 1.15×;
after ten turns of the loop, events included, 0.97-0.99× at the median, 6 of 48 above
1.15× (``python benchmarks/first_samples.py``, docs/benchmarks.md).

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
    """Milliseconds of each of ``repeat`` launches, timed with CUDA events, after
    ``warmup`` turns of the same loop (flush, hold, events, launch) whose times are not
    kept."""
    import torch

    turns = warmup + repeat
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(turns)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(turns)]
    for start, end in zip(starts, ends, strict=True):
        if flush is not None:
            flush()              # queued before the start event: not in the sample
        if hold is not None:
            hold()               # keeps the GPU busy while the host queues what follows
        start.record()
        launch()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end)
            for start, end in zip(starts[warmup:], ends[warmup:], strict=True)]


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
