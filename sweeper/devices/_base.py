"""A device runs and times launches.  Swapping it makes the pipeline testable anywhere."""

from __future__ import annotations

import abc
import os
import platform
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from sweeper.space import MeasureSpec

Launch = Callable[[], None]


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
    #: A caveat printed with every run and report (``None`` for real hardware).
    note: ClassVar[str | None] = None

    @abc.abstractmethod
    def facts(self) -> DeviceFacts: ...

    @abc.abstractmethod
    def time(self, launch: Launch, *, warmup: int, repeat: int, flush: bool) -> list[float]:
        """Milliseconds of each of ``repeat`` launches after ``warmup`` untimed ones."""

    @abc.abstractmethod
    def synchronize(self) -> None: ...

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
