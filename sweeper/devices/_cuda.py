"""The CUDA device: CUDA-event timing, L2 flushed by a memset of twice its size."""

from __future__ import annotations

from typing import Any, ClassVar

from sweeper.devices._base import Device, DeviceFacts, Launch
from sweeper.errors import NoDeviceError
from sweeper.measure import time_cuda


class CudaDevice(Device):
    name: ClassVar[str] = "cuda"
    torch_device: ClassVar[str] = "cuda"

    def __init__(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise NoDeviceError("no CUDA device found; run on the CPU with --device interpret "
                                "(the Triton interpreter: slow, small footprints, no GPU timings)")
        self._props = torch.cuda.get_device_properties(0)
        self._facts = DeviceFacts(name=self._props.name, sms=self._props.multi_processor_count,
                                  l2_bytes=self._props.L2_cache_size)
        self._flush_buffer: Any = None

    def facts(self) -> DeviceFacts:
        return self._facts

    def _flush(self) -> None:
        if self._flush_buffer is None:   # allocated once, at least twice the L2
            import torch

            self._flush_buffer = torch.empty(2 * self.facts().l2_bytes, dtype=torch.uint8,
                                             device="cuda")
        self._flush_buffer.zero_()

    def time(self, launch: Launch, *, warmup: int, repeat: int, flush: bool) -> list[float]:
        return time_cuda(launch, warmup=warmup, repeat=repeat,
                         flush=self._flush if flush else None)

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize()

    def environment(self) -> dict[str, Any]:
        import torch

        env = super().environment()
        env.update(cuda=torch.version.cuda, driver=_driver_version(),
                   gpu_uuid=str(getattr(self._props, "uuid", "")),
                   memory_bytes=self._props.total_memory,
                   capability=f"{self._props.major}.{self._props.minor}")
        return env


def _driver_version() -> str:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception as err:  # NVML missing or refused: record why, go on
        return f"unknown ({type(err).__name__})"
