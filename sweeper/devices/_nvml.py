"""The GPU's state through NVML (nvidia-ml-py): clocks, temperature, power, throttle
reasons, energy, other processes.  Where NVML is missing, a reader that says so once."""

from __future__ import annotations

import collections
import dataclasses
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

#: Throttle reasons that mean the SM clock was pulled down by something other than load.
SLOWDOWNS = {
    "hw_slowdown": 0x8, "sw_thermal_slowdown": 0x20, "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80, "sw_power_cap": 0x4, "sync_boost": 0x10,
}
CLOCK_FLOOR = 0.75            # nvbench: samples under 75 % of the default clock are thrown away


@dataclass(frozen=True)
class GpuState:
    """One poll of the GPU: clocks (MHz), temperature, board power (W), the energy counter
    (mJ; ``None`` where unsupported or not read on this poll), the throttle reasons in
    force and how many other processes use the GPU (a second tenant skews every timing)."""

    sm_mhz: int = 0
    mem_mhz: int = 0
    temperature_c: int = 0
    power_w: float = 0.0
    energy_mj: int | None = None
    throttle: tuple[str, ...] = ()
    other_processes: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The state as a trial record stores it."""
        return asdict(self)


@dataclass(frozen=True)
class Window:
    """The GPU's state over one sampling window, from the polls inside it: the clocks a
    trial ran at, its power, and the share of polls that gave each throttle reason."""

    polls: int
    sm_mhz_mean: float | None = None
    sm_mhz_min: int | None = None
    sm_mhz_max: int | None = None
    power_w_mean: float | None = None
    power_w_max: float | None = None
    reasons: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, states: list[GpuState]) -> Window:
        """Summarise ``states``: mean, least and most SM clock, mean and peak power, and
        for each throttle reason the share of polls that gave it (``polls=0`` if none)."""
        if not states:
            return cls(polls=0)
        clocks = [s.sm_mhz for s in states]
        power = [s.power_w for s in states]
        reasons: dict[str, float] = {}
        for s in states:
            for r in s.throttle:
                reasons[r] = reasons.get(r, 0.0) + 1 / len(states)
        return cls(polls=len(states), sm_mhz_mean=sum(clocks) / len(clocks),
                   sm_mhz_min=min(clocks), sm_mhz_max=max(clocks),
                   power_w_mean=sum(power) / len(power), power_w_max=max(power),
                   reasons={k: round(v, 4) for k, v in sorted(reasons.items())})


@dataclass(frozen=True)
class HardwareLimits:
    """The GPU's maximum SM and memory clocks (MHz) and memory bus width (bits), as NVML
    reports them; ``None`` where it cannot say.  The physical bounds derive from these."""

    max_sm_mhz: int | None = None
    max_mem_mhz: int | None = None
    bus_bits: int | None = None


class StateReader(Protocol):
    """Reads the GPU's state; :class:`NvmlReader` through NVML, :class:`NullReader` where
    NVML is missing, so callers never test for NVML themselves.  ``available`` says
    which; ``note``, when set, is printed once with the run."""

    available: bool
    note: str | None
    #: The SM clock this GPU normally runs at under load, MHz (0: unknown).
    usual_sm_mhz: int
    #: The board power limit in force, W (0: unknown).
    power_limit_w: float

    def read(self, processes: bool = True) -> GpuState | None:
        """The state now (clocks, temperature, power, throttle reasons), and with
        ``processes`` the slow part too: the other processes on the GPU and the energy
        counter; ``None`` when there is nothing to read."""

    def read_clocks(self) -> GpuState | None:
        """The SM clock and throttle reasons only: cheap enough to ask after every chunk
        of samples; ``None`` when there is nothing to read."""

    def limits(self) -> HardwareLimits:
        """The GPU's maximum clocks and bus width, from which its physical bounds follow."""


@dataclass
class NullReader:
    """No NVML: nothing to read; ``note`` says so once in the run's output."""

    note: str | None = "NVML is not available: clocks, throttling and energy are not recorded"
    available: bool = False
    usual_sm_mhz: int = 0
    power_limit_w: float = 0.0

    def read(self, processes: bool = True) -> GpuState | None:
        return None

    def read_clocks(self) -> GpuState | None:
        return None

    def limits(self) -> HardwareLimits:
        return HardwareLimits()


@dataclass
class NvmlReader:
    """Reads, through NVML, the GPU whose UUID is ``uuid`` (``GPU-...``), else NVML's GPU
    ``index``.  NVML numbers every GPU of the machine and ignores
    ``CUDA_VISIBLE_DEVICES``, so the GPU a process's CUDA device 0 is (a worker's, with
    one GPU visible) is found by its UUID.  ``usual_sm_mhz`` is the default
    applications clock (else the maximum): the clock a slowdown is measured against.
    Construction fails if NVML cannot start; :func:`open_reader` turns that into a
    :class:`NullReader`."""

    index: int = 0
    uuid: str | None = None
    available: bool = True
    note: str | None = None
    usual_sm_mhz: int = 0
    power_limit_w: float = 0.0
    _handle: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        import pynvml

        self._nvml = pynvml
        pynvml.nvmlInit()
        self._handle = pynvml.nvmlDeviceGetHandleByUUID(self.uuid) if self.uuid else \
            pynvml.nvmlDeviceGetHandleByIndex(self.index)
        try:
            self.usual_sm_mhz = pynvml.nvmlDeviceGetDefaultApplicationsClock(
                self._handle, pynvml.NVML_CLOCK_SM)
        except pynvml.NVMLError:
            self.usual_sm_mhz = pynvml.nvmlDeviceGetMaxClockInfo(self._handle,
                                                                 pynvml.NVML_CLOCK_SM)
        self.power_limit_w = (self._ask(pynvml.nvmlDeviceGetEnforcedPowerLimit) or 0) / 1000

    def read_clocks(self) -> GpuState | None:
        """Only what the throttle check needs: SM clock and throttle reasons (2 calls)."""
        nv, h = self._nvml, self._handle
        return GpuState(sm_mhz=nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                        throttle=self._reasons())

    def _ask(self, read: Any, *args: Any) -> Any:
        """``read(handle, *args)``, or ``None`` where NVML cannot say."""
        try:
            return read(self._handle, *args)
        except self._nvml.NVMLError:
            return None

    def limits(self) -> HardwareLimits:
        nv = self._nvml

        def ask(read: Any, *args: Any) -> int | None:
            return int(self._ask(read, *args) or 0) or None
        return HardwareLimits(
            max_sm_mhz=ask(nv.nvmlDeviceGetMaxClockInfo, nv.NVML_CLOCK_SM),
            max_mem_mhz=ask(nv.nvmlDeviceGetMaxClockInfo, nv.NVML_CLOCK_MEM),
            bus_bits=ask(nv.nvmlDeviceGetMemoryBusWidth))

    def read(self, processes: bool = True) -> GpuState | None:
        nv, h = self._nvml, self._handle
        procs = self._ask(nv.nvmlDeviceGetComputeRunningProcesses) if processes else None
        return GpuState(
            sm_mhz=nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
            mem_mhz=nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
            temperature_c=nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
            power_w=nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
            # the counter is 3-5 ms of a 0.05 ms read (benchmarks/nvml_contention.py); a
            # trial's energy is its mean power times its time (TrialResult.energy_j)
            energy_mj=self._ask(nv.nvmlDeviceGetTotalEnergyConsumption) if processes else None,
            throttle=self._reasons(),
            other_processes=sum(1 for p in procs or () if p.pid != os.getpid()))

    def _reasons(self) -> tuple[str, ...]:
        nv, h = self._nvml, self._handle
        try:
            reasons = nv.nvmlDeviceGetCurrentClocksEventReasons(h)
        except (AttributeError, nv.NVMLError):
            reasons = nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)
        return tuple(name for name, bit in SLOWDOWNS.items() if reasons & bit)


class StateMonitor:
    """Polls the full state on a background thread, so trials read it at no cost.

    A full NVML read took 4.6 ms on the H200 (benchmarks/sweep_overhead.py), two per trial a
    tenth of a copy sweep's time; NVML is called through ctypes, which releases the
    GIL, so polling beside the timing loop costs it nothing.  The slow part of a read, the
    process list and the energy counter (nearly all of the 4.6 ms), is read every
    ``PROCESS_EVERY`` polls; the polls between carry the process count and no energy.
    """

    PROCESS_EVERY = 20

    def __init__(self, reader: StateReader, period_s: float | None = None) -> None:
        self.reader = reader
        self.period_s = period_s if period_s is not None else poll_period_s()
        self._history: collections.deque[tuple[float, GpuState]] = collections.deque(
            maxlen=4096)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        first = reader.read(processes=True)
        if first is not None:
            self._history.append((time.perf_counter(), first))
        self._thread = threading.Thread(target=self._run, name="sweeper-nvml", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        polls = 0
        others = self._history[-1][1].other_processes if self._history else 0
        while not self._stop.wait(self.period_s):
            polls += 1
            with_processes = polls % self.PROCESS_EVERY == 0
            state = self.reader.read(processes=with_processes)
            if state is None:
                continue
            if with_processes:
                others = state.other_processes
            else:
                state = dataclasses.replace(state, other_processes=others)
            with self._lock:
                self._history.append((time.perf_counter(), state))

    def latest(self) -> GpuState | None:
        """The most recent poll, ``None`` before the first."""
        with self._lock:
            return self._history[-1][1] if self._history else None

    def window(self, t0: float, t1: float) -> Window:
        """The state over [t0, t1] from the polls inside it; with none inside (a window
        shorter than a poll), the latest poll before ``t1`` stands for it, counted as 0."""
        with self._lock:
            inside = [s for t, s in self._history if t0 <= t <= t1]
            before = [s for t, s in self._history if t <= t1]
        if inside:
            return Window.of(inside)
        return dataclasses.replace(Window.of(before[-1:]), polls=0)

    def close(self) -> None:
        """Stop polling (the thread ends after its current poll); the history stays
        readable."""
        self._stop.set()


#: Seconds between two polls of the GPU's state, unless ``SWEEPER_NVML_PERIOD_MS`` says.
POLL_PERIOD_S = 0.02


def poll_period_s() -> float:
    """The poll period: ``SWEEPER_NVML_PERIOD_MS`` (milliseconds, at least 1) where it is
    set to a number, else ``POLL_PERIOD_S``.  A diagnostic knob: NVML's calls may wait on
    the driver's locks with other processes' (a worker per GPU), so what polling costs a
    trial can be measured by polling less."""
    import math

    text = os.environ.get("SWEEPER_NVML_PERIOD_MS", "")
    try:
        ms = float(text)
    except ValueError:
        return POLL_PERIOD_S
    return max(ms, 1.0) / 1e3 if math.isfinite(ms) else POLL_PERIOD_S


def open_reader(index: int = 0, uuid: str | None = None) -> StateReader:
    """An NVML reader for the GPU whose UUID is ``uuid``, else NVML's GPU ``index``, or, on
    any NVML failure, a :class:`NullReader` whose note says why: a missing NVML costs the
    run its GPU state, never the run."""
    try:
        return NvmlReader(index, uuid)
    except Exception as err:  # noqa: BLE001 - any NVML failure: say so once and go on
        return NullReader(note=f"NVML is not available ({type(err).__name__}: {err}); "
                               "clocks, throttling and energy are not recorded")


#: Reasons that only label samples: the kernel's own power draw, and clocks held in step
#: with other GPUs.  Every other reason discards (sweeper.measure._duty says why).
LABEL_ONLY = ("sw_power_cap", "sync_boost")


def throttle_reason(state: GpuState | None, usual_sm_mhz: int,
                    discard_power_cap: bool = False) -> str | None:
    """Why samples taken in ``state`` should not count, or ``None``.

    A clock pulled down by the power cap is the kernel's own doing and counts, unless
    ``discard_power_cap`` (a cool-down schedule, whose samples must start cool)."""
    if state is None:
        return None
    capped = "sw_power_cap" in state.throttle
    if capped and discard_power_cap:
        return (f"power cap engaged (SM clock {state.sm_mhz} MHz): taken again after "
                "the cool-down")
    if usual_sm_mhz and state.sm_mhz < CLOCK_FLOOR * usual_sm_mhz and not capped:
        return (f"SM clock {state.sm_mhz} MHz < {int(100 * CLOCK_FLOOR)}% of its usual "
                f"{usual_sm_mhz} MHz")
    serious = [t for t in state.throttle if t not in LABEL_ONLY]
    if serious:
        return f"throttled: {', '.join(serious)}"
    return None
