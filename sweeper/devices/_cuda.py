"""The CUDA device: CUDA-event timing, L2 flushed by a memset of twice its size."""

from __future__ import annotations

import gc
from typing import Any, ClassVar

from sweeper.bounds import Bounds, HardwareFacts, Sourced, derive_bounds
from sweeper.core import DeviceFacts
from sweeper.core._spelling import given
from sweeper.devices._base import Device, Launch
from sweeper.devices._nvml import GpuState, StateMonitor, Window, open_reader, throttle_reason
from sweeper.errors import NoDeviceError
from sweeper.measure import Duty, time_cuda

#: Spin cycles before each unflushed sample: about 50 us at 2 GHz, longer than the ~20 us
#: a Triton launch takes on an H200's host, so the launch is never timed.
HOLD_CYCLES = 100_000


class CudaDevice(Device):
    """The first CUDA GPU, timed with CUDA events: the L2 emptied by a memset of twice its
    size before a cold sample, a spin before each warm one so the host's launch is never
    timed, and NVML's clocks, power and throttle reasons watched around the samples (where
    NVML is present)."""

    name: ClassVar[str] = "cuda"
    torch_device: ClassVar[str] = "cuda"
    measures_gpu: ClassVar[bool] = True
    has_ceilings: ClassVar[bool] = True
    flushes_l2: ClassVar[bool] = True

    def __init__(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise NoDeviceError("no CUDA device found; run on the CPU with "
                                f"{given('device', 'interpret')} (the Triton interpreter: "
                                "slow, small footprints, no GPU timings)")
        self._props = torch.cuda.get_device_properties(0)
        self._facts = DeviceFacts(name=self._props.name, sms=self._props.multi_processor_count,
                                  l2_bytes=self._props.L2_cache_size)
        self._flush_buffer: Any = None
        self.reader = open_reader(0, uuid=nvml_uuid(self._props))
        self._monitor: StateMonitor | None = None
        self.note = self.reader.note
        self._floor: float | None = None
        self._bounds: Bounds | None = None

    @classmethod
    def plan_stand_in(cls) -> Device | None:
        """The GPU's facts from the CUDA driver, without torch (``_gpu_query``)."""
        return PlannedGpu()

    def facts(self) -> DeviceFacts:
        return self._facts

    def compile_target(self) -> str | None:
        return f"sm_{self._props.major}{self._props.minor}"

    def bounds(self) -> Bounds:
        """From NVML's maximum clocks and bus width, else torch's device properties (kHz
        clocks; 0 where the CUDA version does not report them), and the SMs, L2 and compute
        capability torch gives."""
        if self._bounds is None:
            nvml, props = self.reader.limits(), self._props
            self._bounds = derive_bounds(HardwareFacts(
                gpu=props.name, sms=props.multi_processor_count, l2_bytes=props.L2_cache_size,
                capability=(props.major, props.minor),
                mem_mhz=Sourced.first(("NVML", nvml.max_mem_mhz),
                                      ("torch", getattr(props, "memory_clock_rate", 0) / 1e3)),
                bus_bits=Sourced.first(("NVML", nvml.bus_bits),
                                       ("torch", getattr(props, "memory_bus_width", 0))),
                sm_mhz=Sourced.first(("NVML", nvml.max_sm_mhz),
                                     ("torch", getattr(props, "clock_rate", 0) / 1e3))))
        return self._bounds

    def _flush(self) -> None:
        if self._flush_buffer is None:   # allocated once, at least twice the L2
            import torch

            self._flush_buffer = torch.empty(2 * self.facts().l2_bytes, dtype=torch.uint8,
                                             device="cuda")
        self._flush_buffer.zero_()

    def time(self, launch: Launch, *, warmup: int, repeat: int, flush: bool) -> list[float]:
        return time_cuda(launch, warmup=warmup, repeat=repeat,
                         flush=self._flush if flush else None, hold=self._hold)

    def warm_up(self, launch: Launch, count: int, flush: bool,
                enough_s: float | None = None) -> None:
        """The sampling loop's own turns (flush, hold, events, launch), their times
        dropped: the first sample then follows what every later one does
        (:func:`~sweeper.measure.time_cuda`).  With ``enough_s``, the first two turns are
        timed, and where their launches took that long they are the whole warmup
        (:func:`~sweeper.core.warmup_turns`)."""
        if enough_s is None or count <= 2:
            self.time(launch, warmup=count, repeat=0, flush=flush)
        elif sum(self.time(launch, warmup=0, repeat=2, flush=flush)) < enough_s * 1e3:
            self.time(launch, warmup=count - 2, repeat=0, flush=flush)

    @staticmethod
    def _hold() -> None:
        import torch

        torch.cuda._sleep(HOLD_CYCLES)

    def batched(self, launch: Launch, batch: int, graph: bool) -> Launch:
        if not graph:
            return super().batched(launch, batch, graph)
        import torch

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):        # compile and warm outside the capture
            launch()
        torch.cuda.current_stream().wait_stream(side)
        cuda_graph = torch.cuda.CUDAGraph()
        # no garbage collection while capturing: a collected CUDA C kernel's module (an
        # earlier config's) unloads itself, which the driver refuses during a capture; on
        # an H100 that failed the capture and left the process's CUDA state spoiled for
        # what it ran next.  The capture collects once before it starts.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with torch.cuda.graph(cuda_graph):
                for _ in range(batch):
                    launch()
        finally:
            if collecting:
                gc.enable()
        return cuda_graph.replay

    @property
    def monitor(self) -> StateMonitor | None:
        """NVML polled on a thread, started by the first measurement: a process that
        measures nothing (the coordinator of worker processes) never polls, and so
        never takes the driver's locks beside the workers' timing (it polled every
        20 ms for nothing, 675 reads of 3.5 ms in a copy sweep on the H200)."""
        if self._monitor is None and self.reader.available:
            self._monitor = StateMonitor(self.reader)
        return self._monitor

    def state(self) -> GpuState | None:
        monitor = self.monitor
        return monitor.latest() if monitor else None

    def window(self, t0: float, t1: float) -> Window | None:
        monitor = self.monitor
        return monitor.window(t0, t1) if monitor else None

    def power_limit_w(self) -> float:
        return self.reader.power_limit_w

    def throttled(self, duty: Duty | None = None) -> str | None:
        return throttle_reason(self.reader.read_clocks(), self.reader.usual_sm_mhz,
                               discard_power_cap=duty is not None and duty.discards_power_cap())

    def launch_floor_ms(self) -> float | None:
        """Median event time around one launch of an empty Triton kernel (measured once)."""
        if self._floor is None:
            import statistics

            from sweeper.kernels._jit import jitted

            kernel = jitted(_empty, False)           # compiled once per process
            samples = self.time(lambda: kernel[(1,)](), warmup=20, repeat=200, flush=False)
            self._floor = statistics.median(samples)
        return self._floor

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize()

    def healthy(self) -> bool:
        import torch

        try:       # a sticky error fails every later call on the context, this one too
            torch.cuda.synchronize()
            return int(torch.ones(1, device=self.torch_device).sum().item()) == 1
        except RuntimeError:
            return False

    def environment(self) -> dict[str, Any]:
        import torch

        env = super().environment()
        env.update(cuda=torch.version.cuda, driver=_driver_version(),
                   gpu_uuid=str(getattr(self._props, "uuid", "")),
                   memory_bytes=self._props.total_memory,
                   capability=f"{self._props.major}.{self._props.minor}")
        return env


def _empty() -> None:
    pass


def _driver_version() -> str:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception as err:  # noqa: BLE001 - NVML missing or refused: record why, go on
        return f"unknown ({type(err).__name__})"


def nvml_uuid(props: Any) -> str | None:
    """The UUID by which NVML names the GPU of CUDA device properties ``props``
    (``GPU-...``), or None where torch does not give one."""
    uuid = getattr(props, "uuid", None)
    if uuid is None:
        return None
    text = str(uuid)
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


class PlannedGpu(CudaDevice):
    """The CUDA device as ``sweeper plan`` reads it: the facts from the driver (or the
    assumed GPU's, with ``assumed`` saying why), the GPU's costs; nothing is opened, so
    nothing of it may be launched or timed."""

    def __init__(self) -> None:     # no CudaDevice.__init__: it imports torch and NVML
        from sweeper.devices._gpu_query import ASSUMED_GPU, GPU_COSTS_READ_ON, query_hardware

        self._bounds = None
        found = query_hardware()
        #: what its bounds are derived from: the driver's, else the assumed GPU's
        self._hardware = found if isinstance(found, HardwareFacts) else GPU_COSTS_READ_ON
        if isinstance(found, HardwareFacts):
            self._facts = DeviceFacts(name=found.gpu, sms=found.sms, l2_bytes=found.l2_bytes)
            return
        self._facts = ASSUMED_GPU
        self.assumed = (f"{found}: planned for an assumed {ASSUMED_GPU.name} "
                        f"({ASSUMED_GPU.sms} SMs, {ASSUMED_GPU.l2_bytes >> 20} MiB L2); "
                        "expressions over sms and l2_bytes may count differently on yours")

    def bounds(self) -> Bounds:
        """From the driver's peak clocks and bus width (:func:`~sweeper.devices._gpu_query.
        query_hardware`), read as the facts were, where nothing is opened; the assumed
        GPU's where the driver cannot describe one."""
        if self._bounds is None:
            self._bounds = derive_bounds(self._hardware)
        return self._bounds
