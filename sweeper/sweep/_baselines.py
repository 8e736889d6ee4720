"""The torch baseline of each problem (``Kernel.baseline``, e.g. ``y.copy_(x)``).

Measured once per problem (dtype, dimensions, cache), on the problem's first buffers before its
first config, under the same warmup, stopping rule, L2 flush and duty as the trials,
and kept in the journal: the report's "% of torch" compares like with like, and a
resumed study does not measure it again.  A kernel without a baseline has none, and so
has a problem whose baseline raised: a :class:`~sweeper.errors.BaselineWarning` says
why, once, and the configs are measured all the same (a resumed study tries it again).
"""

from __future__ import annotations

import warnings

from sweeper.devices import Device
from sweeper.errors import BaselineWarning, user_stacklevel
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
        #: The problems whose baseline raised in this run: not tried again until a resume.
        self.failed: set[ProblemKey] = set()

    def ensure(self, buffers: Buffers, cache: str, duty: Duty | None) -> None:
        """Measure and record the baseline of ``buffers``' problem in ``cache`` mode,
        unless the kernel has none or it is known."""
        problem = buffers.problem
        key = ProblemKey(problem.dtype, problem.footprint, cache, problem.dims)
        if self.kernel.baseline_name is None or key in self.known or key in self.failed:
            return
        # imported here: a run that measures nothing (a finished study's) needs no torch
        import torch

        generator = torch.Generator(device=self.device.torch_device)
        generator.manual_seed(self.seed)
        self.kernel.randomize(buffers, generator)
        try:
            measured = self.device.measure(lambda: self.kernel.baseline(buffers),
                                           warmup=self.measure.warmup,
                                           rule=self.measure.rule(), flush=cache == "cold",
                                           duty=duty, warmup_time_s=self.measure.warmup_time_s)
        except Exception as err:     # the user's baseline failed: say so, go on
            if not self.device.healthy():
                raise              # the context is lost: the trial it fails says so
            self.failed.add(key)
            reason = " ".join(f"{type(err).__name__}: {err}".split())[:300]
            warnings.warn(f"the baseline {self.kernel.baseline_name!r} of {problem.dtype} "
                          f"{problem.describe()} {cache} raised {reason}; its configs are "
                          "measured without it (no '% of torch')", BaselineWarning,
                          stacklevel=user_stacklevel())
            return
        samples = measured.timing.samples
        stats = summarize(samples)
        gbps = throughput(self.kernel.bytes_moved(problem), stats.median * 1e-3) / 1e9
        record = BaselineRecord.from_samples(
            self.kernel.baseline_name, problem, samples, stats, gbps, cache=cache,
            stop_reason=measured.timing.stop_reason)
        self.store.append(record)
        self.known[key] = record

    def raised(self, buffers: Buffers, cache: str) -> bool:
        """Whether the baseline of ``buffers``' problem in ``cache`` mode raised in this run
        (:meth:`ensure`): the finals then race the configs without it."""
        problem = buffers.problem
        return ProblemKey(problem.dtype, problem.footprint, cache, problem.dims) in self.failed
