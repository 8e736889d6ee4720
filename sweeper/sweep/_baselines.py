"""The torch baseline of each problem (``Kernel.baseline``, e.g. ``y.copy_(x)``).

Measured once per problem (dtype, dimensions, cache), on the problem's first buffers before its
first config, under the same warmup, stopping rule, L2 flush and duty as the trials,
and kept in the journal: the report's "% of torch" compares like with like, and a
resumed study does not measure it again.  A kernel without a baseline has none.
"""

from __future__ import annotations

import torch

from sweeper.devices import Device
from sweeper.kernels import Buffers, Kernel
from sweeper.measure import Duty, summarize, throughput
from sweeper.space import MeasureSpec
from sweeper.store import BaselineRecord, ProblemKey
from sweeper.sweep._relay import Journal


class Baselines:
    """The baselines of one study: those found in the journal, and those measured since."""

    def __init__(self, kernel: Kernel, device: Device, measure: MeasureSpec, seed: int,
                 store: Journal, found: list[BaselineRecord]) -> None:
        self.kernel, self.device, self.measure = kernel, device, measure
        self.seed, self.store = seed, store
        self.known = {b.problem: b for b in found}

    def ensure(self, buffers: Buffers, cache: str, duty: Duty | None) -> None:
        """Measure and record the baseline of ``buffers``' problem in ``cache`` mode,
        unless the kernel has none or it is known."""
        problem = buffers.problem
        key = ProblemKey(problem.dtype, problem.footprint, cache, problem.dims)
        if self.kernel.baseline_name is None or key in self.known:
            return
        generator = torch.Generator(device=self.device.torch_device)
        generator.manual_seed(self.seed)
        self.kernel.randomize(buffers, generator)
        measured = self.device.measure(lambda: self.kernel.baseline(buffers),
                                       warmup=self.measure.warmup, rule=self.measure.rule(),
                                       flush=cache == "cold", duty=duty)
        samples = measured.timing.samples
        stats = summarize(samples)
        gbps = throughput(self.kernel.bytes_moved(problem), stats.median * 1e-3) / 1e9
        record = BaselineRecord.from_samples(
            self.kernel.baseline_name, problem, samples, stats, gbps, cache=cache,
            stop_reason=measured.timing.stop_reason)
        self.store.append(record)
        self.known[key] = record
