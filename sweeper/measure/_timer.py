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

A call without warmup turns holds the GPU ``LEAD_HOLDS`` times longer before its first
sample: that sample starts on an idle GPU, with nothing queued to cover the host's first
steps.  On an H100 the first sample of a process's first trial read 4.1-4.6× the settled
time of a 15 µs atomic sum without the lead and 0.93-1.04× with it; in sweeper's pipeline
(``benchmarks/autotune_hooks_cost.py``, fresh processes) 9 of 32 trials held a sample over
twice their median and one trial's median read 43.6 µs for a 17-19 µs kernel, against 1 of
32 and medians of 14.7-19.7 µs with it (``bash
docs/raw/2026-12-06-s41/first_sample_variants.sh``, docs/benchmarks.md).  The garbage
collector was no part of it: switched off around the loop, it changed nothing.

Every sample is returned: statistics are someone else's job
(:mod:`sweeper.measure._stats`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: A launch or a step around it; what it returns is not used.
Launch = Callable[[], object]

#: Extra holds before a call's first timed turn (~200 µs at 2 GHz), so the host is well
#: ahead of the GPU before the first sample starts.
LEAD_HOLDS = 4


def time_cuda(launch: Launch, *, warmup: int, repeat: int, flush: Launch | None = None,
              hold: Launch | None = None) -> list[float]:
    """Milliseconds of each of ``repeat`` launches, timed with CUDA events, after
    ``warmup`` turns of the same loop (flush, hold, events, launch) whose times are not
    kept."""
    import torch

    turns = warmup + repeat
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(turns)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(turns)]
    for turn, (start, end) in enumerate(zip(starts, ends, strict=True)):
        if flush is not None:
            flush()              # queued before the start event: not in the sample
        if hold is not None:
            # keeps the GPU busy while the host queues what follows; longer on an idle GPU
            for _ in range(1 + (LEAD_HOLDS if turn == 0 and not warmup else 0)):
                hold()
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
