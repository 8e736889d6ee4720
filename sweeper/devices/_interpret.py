"""The Triton interpreter on the CPU: the whole pipeline without a GPU.

Its timings are CPU timings of an interpreter and mean nothing for a GPU; every
run and report says so.  Footprints are capped small and repetitions few, so a
small space finishes in seconds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from sweeper.bounds import Bounds
from sweeper.core import MeasureSpec
from sweeper.devices._base import Device, DeviceFacts, Launch, PlanCosts
from sweeper.measure import time_host

MAX_FOOTPRINT = 16 << 10
MAX_WARMUP = 1
MAX_REPEAT = 5


class InterpretDevice(Device):
    """The Triton interpreter on the CPU, host-timed: problems capped at
    ``MAX_FOOTPRINT`` bytes (a footprint lowered to it, dimensions shrunk by one factor),
    at most ``MAX_WARMUP`` warmup and ``MAX_REPEAT`` timed runs, no L2 flush, so the
    whole pipeline runs in seconds without a GPU; its timings are an interpreter's, and
    its note says so."""

    name: ClassVar[str] = "interpret"
    torch_device: ClassVar[str] = "cpu"
    sets_env: ClassVar[Mapping[str, str]] = {"TRITON_INTERPRET": "1"}
    #: rough CPU figures: a launch of the interpreter takes milliseconds
    plan_costs: ClassVar[PlanCosts] = PlanCosts(compile_s=0.0, launch_s=5e-3, bandwidth=2.0e6,
                                                flush=False)
    note: str | None = (
        f"Triton interpreter on the CPU: problems capped at {MAX_FOOTPRINT >> 10} KiB "
        "(footprints lowered, dimensions shrunk keeping their ratios and whether each is a "
        "power of two; problems that would shrink to one kept apart where their order "
        "allows, else measured once), at most "
        f"{MAX_WARMUP} warmup and {MAX_REPEAT} timed runs, no L2 flush; these are CPU timings "
        "of an interpreter and mean nothing for a GPU")

    def __init__(self) -> None:
        os.environ.update(self.sets_env)         # set before any kernel is built
        self._facts = DeviceFacts(name="Triton interpreter (CPU)", sms=os.cpu_count() or 1,
                                  l2_bytes=_cpu_l2_bytes(), max_footprint=MAX_FOOTPRINT)

    def facts(self) -> DeviceFacts:
        return self._facts

    def bounds(self) -> Bounds:
        return Bounds.none(self._facts.name, "CPU timings of an interpreter: no GPU's "
                           "physical limits apply")

    def measure_spec(self, spec: MeasureSpec) -> MeasureSpec:
        return MeasureSpec(warmup=min(spec.warmup, MAX_WARMUP),
                           repeat=min(spec.repeat, MAX_REPEAT), stop="fixed",
                           timeout_s=spec.timeout_s, duty=spec.duty, duty_s=spec.duty_s)

    def time(self, launch: Launch, *, warmup: int, repeat: int, flush: bool) -> list[float]:
        return time_host(launch, warmup=warmup, repeat=repeat)

    def synchronize(self) -> None:
        return None


def _cpu_l2_bytes() -> int:
    """The CPU's L2 size from sysfs, or 1 MiB where it cannot be read."""
    try:
        text = Path("/sys/devices/system/cpu/cpu0/cache/index2/size").read_text().strip()
        return int(text.rstrip("K")) << 10 if text.endswith("K") else int(text)
    except (OSError, ValueError):
        return 1 << 20
