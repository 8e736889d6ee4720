"""The timer: one small function a reviewer can audit in one sitting.

Warm up, synchronize, then ``repeat`` samples, queued in small groups; before each
sample the L2 is flushed outside the timed region; one pair of CUDA events brackets
each launch; one synchronize at the end.

The host's launch path must never be timed as kernel time.  Where the device has a
:class:`Gate` (nvbench's blocking kernel, :mod:`sweeper.devices._gate`), each group of
samples is queued behind it and released once queued, so the group runs back to back
from the queue however slow the host was.  Without one, a short spin kernel holds the GPU
before each sample while the host queues the start event and the launch: that hides a
launch path shorter than the spin (on the H200 a 10 µs matmul timed right after the flush
measured 25–29 µs, with flush and spin 9.8–10.0 µs, as ``triton.testing.do_bench``;
``python benchmarks/short_launch.py``), but not a longer one, nor the first samples after
a synchronize, when the GPU has no backlog.

Every sample is returned: statistics are someone else's job
(:mod:`sweeper.measure._stats`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

#: A launch or a step around it; what it returns is not used.
Launch = Callable[[], object]


class Gate(Protocol):
    """Closes the stream until :meth:`open`: what is queued in between runs back to back."""

    def close(self) -> None: ...

    def open(self) -> None: ...


#: Samples queued behind one closing of a gate: the GPU starts after the first group is
#: queued, and the queue (a few commands a sample) never fills while the gate is closed.
GROUP = 8


def time_cuda(launch: Launch, *, warmup: int, repeat: int, flush: Launch | None = None,
              hold: Launch | None = None, gate: Gate | None = None) -> list[float]:
    """Milliseconds of each of ``repeat`` launches, timed with CUDA events: behind
    ``gate`` in groups of :data:`GROUP` where given, else with ``hold`` before each."""
    import torch

    for _ in range(warmup):
        launch()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeat)]
    for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
        if gate is not None and i % GROUP == 0:
            if i:
                gate.open()      # the group before is queued whole
            gate.close()
        if flush is not None:
            flush()              # queued before the start event: not in the sample
        if hold is not None and gate is None:
            hold()               # keeps the GPU busy while the host queues what follows
        start.record()
        launch()
        end.record()
    if gate is not None and repeat:
        gate.open()
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
