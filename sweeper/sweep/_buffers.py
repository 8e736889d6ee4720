"""The buffers a sweep launches on: allocated once per problem and kept for its next
configs.

A warm run of a footprint that fits in the L2 rotates among enough buffer sets to
cover twice the L2, so its launches do not replay a cache that holds all their data.
When keeping a new problem's sets would pass the memory budget (40 % of the GPU's
memory; 1 GiB elsewhere), the kept ones are dropped first: one problem at a time.
"""

from __future__ import annotations

from sweeper.devices import Device
from sweeper.kernels import Buffers, Kernel
from sweeper.space import Config, Problem

#: The most buffer sets a warm, L2-sized problem rotates among.
MAX_ROTATION = 16


class BufferPool:
    """Buffer sets by problem; ``l2_bytes`` is the L2 size that decides whether a warm
    footprint rotates (0: never)."""

    def __init__(self, kernel: Kernel, device: Device, l2_bytes: int) -> None:
        self.kernel, self.device, self.l2_bytes = kernel, device, l2_bytes
        self._sets: dict[tuple[Problem, int], list[Buffers]] = {}
        self._bytes = 0

    def sets(self, config: Config) -> list[Buffers]:
        """One set of buffers for ``config``'s problem; for warm runs of an L2-sized
        footprint, enough sets to cover twice the L2, the extra ones randomized."""
        problem = config.problem
        count = 1
        working_set = self.kernel.working_set(problem)
        if config.cache == "warm" and self.l2_bytes and working_set <= self.l2_bytes:
            count = min(MAX_ROTATION, -(-2 * self.l2_bytes // max(working_set, 1)) + 1)
        key = (problem, count)
        if key not in self._sets:
            size = count * working_set
            if self._bytes + size > memory_budget(self.device):
                self._sets.clear()          # one problem at a time when memory is short
                self._bytes = 0
            self._sets[key] = [self.kernel.allocate(problem, self.device.torch_device)
                               for _ in range(count)]
            import torch

            generator = torch.Generator(device=self.device.torch_device)
            for buffers in self._sets[key][1:]:
                self.kernel.randomize(buffers, generator)
            self._bytes += size
        return self._sets[key]


def memory_budget(device: Device) -> int:
    """How many bytes of buffers a sweep keeps at most."""
    if device.torch_device == "cuda":
        import torch

        return int(torch.cuda.get_device_properties(0).total_memory * 0.4)
    return 1 << 30
