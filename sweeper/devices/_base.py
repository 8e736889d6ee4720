"""A device runs and times launches.  Swapping it makes the pipeline testable anywhere."""

from __future__ import annotations

import abc
import os
import platform
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from sweeper.devices._nvml import GpuState
from sweeper.errors import SweeperError
from sweeper.measure import StopRule, Timing, sample_until
from sweeper.space import MeasureSpec, Space

Launch = Callable[[], None]


@dataclass
class Measured:
    """A trial's timing with the machine's state around it."""

    timing: Timing
    start: GpuState | None = None
    end: GpuState | None = None
    batch: int = 1
    graph: bool = False
    power_w: float | None = None      # mean board power over the sampling window
    power_readings: int = 0           # polls inside that window


@dataclass(frozen=True)
class DeviceFacts:
    """What expressions may read (``sms``, ``l2_bytes``) and what reports name."""

    name: str
    sms: int
    l2_bytes: int
    #: Footprints above this are capped (the interpreter); ``None``: no cap.
    max_footprint: int | None = None

    def env(self) -> dict[str, int]:
        return {"sms": self.sms, "l2_bytes": self.l2_bytes}


class Device(abc.ABC):
    """Where trials run: a CUDA GPU, or the Triton interpreter on the CPU."""

    name: ClassVar[str]
    torch_device: ClassVar[str]
    #: True for a device that serves recorded results instead of launching kernels.
    replays: ClassVar[bool] = False
    #: A caveat printed with every run and report (``None`` for real hardware).
    note: str | None = None

    @abc.abstractmethod
    def facts(self) -> DeviceFacts: ...

    @abc.abstractmethod
    def time(self, launch: Launch, *, warmup: int, repeat: int, flush: bool) -> list[float]:
        """Milliseconds of each of ``repeat`` launches after ``warmup`` untimed ones."""

    def measure(self, launch: Launch, *, warmup: int, rule: StopRule, flush: bool,
                batch: int = 1, graph: bool = False,
                abandon: Callable[[list[float]], str | None] | None = None) -> Measured:
        """Warm up, then sample until ``rule`` stops; each sample is ``batch`` launches
        (replayed from a CUDA graph if ``graph``) and its time is divided by ``batch``.
        The machine's state is read just before and just after sampling."""
        sample = self.batched(launch, batch, graph)
        for _ in range(warmup):
            launch()
        self.synchronize()
        start, t0 = self.state(), time.perf_counter()
        timing = sample_until(
            lambda k: [t / batch for t in self.time(sample, warmup=0, repeat=k, flush=flush)],
            rule, throttled=self.throttled, abandon=abandon)
        power, readings = self.mean_power(t0, time.perf_counter())
        return Measured(timing=timing, start=start, end=self.state(), batch=batch, graph=graph,
                        power_w=power, power_readings=readings)

    def batched(self, launch: Launch, batch: int, graph: bool) -> Launch:
        """One sample's work: ``batch`` launches in a row (graphs: see the CUDA device)."""
        if graph:
            raise SweeperError(f"{self.name}: CUDA graphs need the cuda device")
        if batch == 1:
            return launch

        def many() -> None:
            for _ in range(batch):
                launch()
        return many

    def state(self) -> GpuState | None:
        """The latest clocks, temperature, power, energy and other processes on the GPU;
        ``None`` where they cannot be read."""
        return None

    def mean_power(self, t0: float, t1: float) -> tuple[float | None, int]:
        """Mean board power (W) between two ``time.perf_counter()`` readings, and how many
        readings it rests on."""
        return None, 0

    def throttled(self) -> str | None:
        """Why samples just taken should be thrown away, or ``None``."""
        return None

    def launch_floor_ms(self) -> float | None:
        """Event-timed cost of an empty launch, where it means something."""
        return None

    @abc.abstractmethod
    def synchronize(self) -> None: ...

    def healthy(self) -> bool:
        """Can this process still run work on the device?  After a sticky CUDA error
        (an illegal address, a device-side assert) it cannot."""
        return True

    def check_space(self, space: Space) -> None:
        """Refuse, before anything is written, a space this device cannot serve (a replay
        table without a column for one of its axes); most devices serve any space."""
        return None

    def measure_spec(self, spec: MeasureSpec) -> MeasureSpec:
        """The measurement this device will really do for ``spec`` (caps, if any)."""
        return spec

    def environment(self) -> dict[str, Any]:
        """Hardware and software facts recorded with every study."""
        import torch
        import triton

        from sweeper import __version__

        facts = self.facts()
        return {
            "device": self.name, "gpu": facts.name, "sms": facts.sms,
            "l2_bytes": facts.l2_bytes, "torch": torch.__version__,
            "triton": triton.__version__, "python": sys.version.split()[0],
            "sweeper": __version__, "host": socket.gethostname(),
            "platform": platform.platform(),
            "env": {k: v for k, v in sorted(os.environ.items())
                    if k.startswith("TRITON_") or k == "CUDA_VISIBLE_DEVICES"},
        }
