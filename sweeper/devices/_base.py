"""A device runs and times launches.  Swapping it makes the pipeline testable anywhere."""

from __future__ import annotations

import abc
import ast
import dataclasses
import importlib.util
import os
import platform
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from sweeper.bounds import Bounds
from sweeper.core import DeviceFacts, MeasureSpec, Space
from sweeper.devices._nvml import GpuState, Window
from sweeper.errors import SweeperError
from sweeper.measure import Duty, Spent, StopRule, Timing, sample_until

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
    window: Window | None = None      # clocks, power and throttle reasons while sampling
    #: Why the outputs were wrong after the timed samples (see :class:`OutputCheck`).
    wrong_after: str | None = None
    #: host seconds by what they were spent on (:meth:`Device.measure`)
    seconds: dict[str, float] = field(default_factory=dict)


class OutputCheck(Protocol):
    """Verification around the timed samples: a kernel that does its work on the verified
    first launch and skips it later (memoising on unchanged inputs) would otherwise be
    timed doing nothing."""

    def poison(self) -> None:
        """Fill every output the samples will write with values no correct launch leaves;
        called after warmup, before the first timed sample."""

    def check(self) -> str | None:
        """After the timed samples: ``None`` if the outputs they wrote are right, else why."""


@dataclass(frozen=True)
class PlanCosts:
    """What ``sweeper plan`` assumes one trial costs on a device: seconds to compile a
    config, the shortest launch, the bandwidth a launch moves its bytes at, whether a
    cold sample pays an L2 flush of twice the L2 at that bandwidth, and the FLOP/s a
    launch computes at, by dtype (none: a launch is timed by its bytes alone)."""

    compile_s: float
    launch_s: float
    bandwidth: float
    flush: bool
    flops: Mapping[str, float] = field(default_factory=dict)
    #: An interpreter's launch (``op_s`` > 0): ``launch_s``, plus ``program_s`` for each
    #: program of the grid, plus ``op_s`` for each tensor operation the kernel's body runs
    #: (``Kernel.interpreted_ops``; a kernel that counts none: ``OPS_PER_PROGRAM`` a
    #: program); its bytes and FLOPs cost nothing beside them.  0: a GPU's launch.
    program_s: float = 0.0
    op_s: float = 0.0
    #: What the command's start-up and report take on this kind of device where no run on
    #: the machine measured them (``None``: an H200 host's figures, ``plan.RunCosts``).
    startup_s: float | None = None
    report_s: float | None = None
    #: How many trials' worth what the machine's other kernels measured counts against a
    #: kernel's measured launches: a launch scale learned from fewer trials is pulled
    #: towards it (0, or the machine's first kernel: taken as measured).  Where the
    #: host's load moves every launch (an interpreter on a shared CPU), the machine's
    #: kernels tell that load, and a kernel's own few trials its own.
    scale_prior_trials: int = 0
    #: How many rounds a final typically runs here (``None``: as on the H200, where most
    #: stopped after 3 or 4 of 5: ``finals.finals_estimate_s``).
    finals_rounds: float | None = None
    #: Whether a final's finalists are expected to stay tied through its rounds here, every
    #: one of them measured in each (``False``: as on the H200, where a median of 3 of 5
    #: ran every round: ``finals.FINALS_STAYING``).
    finals_tie: bool = False

    #: Tensor operations a program is assumed to run where its kernel counts none: one
    #: step of a grid-stride copy.
    OPS_PER_PROGRAM = 9


#: A GPU's costs, read on an H200: a trial's own seconds beyond its launches and its
#: compile (loading its binary, verifying, the host's side of sampling: the median over
#: each run's trials, 6.5 ms for matmul, 8.7 ms for softmax and 9.1 ms for copy from
#: cold Triton caches, docs/raw/2026-12-05-s34-h200/), ~20 us of host time per launch,
#: ~4 TB/s copy, and a tuned matmul's FLOP/s (bf16 8192³: 795 TFLOP/s, docs/benchmarks.md;
#: fp16 alike; tf32 for float32 half that).  That H200's bounds, which a plan on another
#: GPU scales these by: :data:`~sweeper.devices._gpu_query.GPU_COSTS_READ_ON`.
GPU_COSTS = PlanCosts(compile_s=0.009, launch_s=20e-6, bandwidth=4.0e12, flush=True,
                      flops={"bfloat16": 795e12, "float16": 795e12, "float32": 400e12})



def recorded_env() -> dict[str, str]:
    """The environment variables a study records (:meth:`Device.environment`) and a
    resume compares: Triton's, and which GPUs CUDA may see."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith("TRITON_") or k == "CUDA_VISIBLE_DEVICES"}


def torch_version() -> str:
    """``torch.__version__``, read without importing torch where nothing has yet, from the
    ``version.py`` its build wrote (the string ``torch.__version__`` is made from): the
    import takes a second (1.3 s on the 2-core development machine), which a run that
    measures nothing on a device that needs no torch to open (a finished study's resume
    on the interpreter or a replay) need not pay.  Imported where that file says none."""
    if "torch" not in sys.modules:
        written = _written_version("torch")
        if written is not None:
            return written
    import torch

    return str(torch.__version__)


def _written_version(package: str) -> str | None:
    """The string ``package``'s ``version.py`` assigns to ``__version__``, read, never run;
    None where the package, the file or such an assignment is not found."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    try:
        tree = ast.parse(Path(spec.origin).with_name("version.py").read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                isinstance(node.value.value, str) and \
                any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets):
            return node.value.value
    return None


class Device(abc.ABC):
    """Where trials run: a CUDA GPU, or the Triton interpreter on the CPU.

    A device declares what it can do in the class attributes below; the core asks
    those, never the device's name, so a device plugin (``sweeper.plugins``) works
    without editing sweeper."""

    name: ClassVar[str]
    torch_device: ClassVar[str]
    #: What follows the device's name after a colon (``replay:PATH.csv``), for messages;
    #: ``None``: the device takes no argument.  The constructor receives it.
    argument: ClassVar[str | None] = None
    #: True for a device that serves recorded results instead of launching kernels: it
    #: answers each config with ``lookup(choice)`` (a row, or ``None`` when its record at
    #: ``path`` lacks it), as :class:`~sweeper.devices._replay.ReplayDevice` does.
    replays: ClassVar[bool] = False
    #: True for a device whose timings are the GPU's own: its studies take the space's
    #: study name.  Elsewhere (an interpreter's CPU timings, a replay) they are named
    #: ``<study>-<device>``, so they never mix with GPU studies.
    measures_gpu: ClassVar[bool] = False
    #: True for a device whose ceilings ``sweeper calibrate`` measures and caches by the
    #: ``gpu``, ``gpu_uuid`` and ``driver`` of its :meth:`environment`.
    has_ceilings: ClassVar[bool] = False
    #: True for a device whose ``time(..., flush=True)`` empties the L2 before each sample;
    #: elsewhere a ``cold`` cache names the axis value only, and runs must not claim a flush.
    flushes_l2: ClassVar[bool] = False
    #: Environment variables set before any kernel module is imported (the interpreter's
    #: ``TRITON_INTERPRET=1``: ``triton.jit`` reads it when it wraps a kernel).
    sets_env: ClassVar[Mapping[str, str]] = {}
    #: True for a device that runs Triton kernels without compiling them for a GPU (the
    #: interpreter, more permissive than Triton's compiler): a run also compiles its
    #: kernel for a GPU target and records what the compiler refuses as a GPU would
    #: (:mod:`sweeper.sweep._gpu_check`, ``--gpu-check``).
    checks_gpu_compile: ClassVar[bool] = False
    #: What ``sweeper plan`` assumes a trial costs here.
    plan_costs: ClassVar[PlanCosts] = GPU_COSTS
    #: The most finalists a final takes here and the most rounds it runs, where its
    #: timings could not tell more apart (``None``: the finals' own, twelve and five:
    #: :class:`~sweeper.finals.FinalSize`).
    most_finalists: ClassVar[int | None] = None
    most_final_rounds: ClassVar[int | None] = None
    #: A caveat printed with every run and report (``None`` for real hardware).
    note: str | None = None
    #: What ``--device`` named to open it (an entry point's name, ``module:attr``), recorded
    #: with the study so a report's command reproduces it; set by ``open_device``.
    opened_as: str = ""

    #: What ``sweeper plan`` assumed because it could not read it from the device
    #: (``None``: nothing); printed with the plan.
    assumed: str | None = None

    def compile_target(self) -> str | None:
        """The architecture its kernels compile for (``sm_90``), so that processes with no
        device of their own compile configs ahead; ``None``: nothing is compiled for a
        GPU here (the interpreter, a replay)."""
        return None

    @classmethod
    def plan_stand_in(cls) -> Device | None:
        """What ``sweeper plan`` reads instead of the device (facts, costs,
        ``check_space``; nothing launched), for a device whose opening costs seconds;
        ``None``: the device itself is opened."""
        return None

    @abc.abstractmethod
    def facts(self) -> DeviceFacts:
        """The device's name, SMs and L2 size: what a space's expressions read and what
        reports call the device.  Read when the device opens, so asking costs nothing."""

    def bounds(self) -> Bounds:
        """The physical limits no correct launch can beat (:mod:`sweeper.bounds`).  They
        live on the device, not in :class:`DeviceFacts`, because deriving them needs what
        only the device holds (NVML, the compute capability) and facts stay what
        expressions read.  By default: none, and why."""
        return Bounds.none(self.facts().name, f"the {self.name} device has no physical "
                           "bounds")

    @abc.abstractmethod
    def time(self, launch: Launch, *, warmup: int, repeat: int, flush: bool) -> list[float]:
        """Milliseconds of each of ``repeat`` launches after ``warmup`` untimed ones."""

    def warm_up(self, launch: Launch, count: int, flush: bool,
                enough_s: float | None = None) -> None:
        """``count`` untimed launches before a measurement's samples, waited for; where a
        device times them, only two if those two took ``enough_s`` or more
        (:func:`~sweeper.core.warmup_turns`)."""
        for _ in range(count):
            launch()
        self.synchronize()

    def measure(self, launch: Launch, *, warmup: int, rule: StopRule, flush: bool,
                batch: int = 1, graph: bool = False,
                abandon: Callable[[list[float]], str | None] | None = None,
                duty: Duty | None = None, verify: OutputCheck | None = None,
                warmup_time_s: float | None = None) -> Measured:
        """Warm up (``warmup`` launches, or two where those take ``warmup_time_s``), then
        sample until ``rule`` stops; each sample is ``batch`` launches
        (replayed from a CUDA graph if ``graph``) and its time is divided by ``batch``.
        With a ``duty`` schedule (a power-bound problem) the GPU is first brought to the
        schedule's state, and again before a discarded chunk is taken anew.  ``verify``
        poisons the outputs after warmup and checks them after sampling; the graph is
        captured after the poisoning, so it replays only launches made after it.  The
        machine's state is read just before and just after sampling, and summed up over
        the sampling window.  ``Measured.seconds`` says where the host's time went: the
        schedule's cool-downs or loads, the warmup, the sampling (less those), the check."""
        spent = Spent()
        settling = "cool-down" if duty is not None and duty.kind == "cool" else "load"

        def settle() -> None:
            assert duty is not None
            with spent.on(settling):
                duty.settle(launch, self.synchronize)

        if duty is not None:
            settle()
        with spent.on("warmup"):
            self.warm_up(launch, warmup, flush, warmup_time_s)
        cool = duty if duty is not None and duty.kind == "cool" else None
        # before the poison: every later launch is timed
        size = cool.burst_size(self.batched(launch, batch, False), self.synchronize) \
            if cool is not None else 0
        if verify is not None:
            verify.poison()
        sample = self.batched(launch, batch, graph)
        start, t0 = self.state(), time.perf_counter()
        take = lambda k: [t / batch for t in self.time(sample, warmup=0, repeat=k,  # noqa: E731
                                                       flush=flush)]
        asked = rule
        if cool is not None:
            rule = cool.capped(rule, size)
            take = cool.bursts(take, settle, size)
        # a cool-down schedule settles before every burst, a discarded chunk's too
        recover = settle if duty is not None and cool is None else None
        settled = spent.get(settling, 0.0)
        with spent.on("sample"):
            timing = sample_until(take, rule, throttled=lambda: self.throttled(duty),
                                  abandon=abandon, recover=recover)
        # the cool-downs or loads between bursts and before retaken chunks are their own
        spent["sample"] -= spent.get(settling, 0.0) - settled
        if rule.repeat < asked.repeat:
            timing.stop_reason = dataclasses.replace(timing.stop_reason, text=(
                f"{timing.stop_reason.text} (one burst of the cool-down schedule; "
                f"{asked.repeat} asked)"))
        if duty is not None:
            duty.sampled()
        window = self.window(t0, time.perf_counter())
        end = self.state()
        self.synchronize()
        with spent.on("verify"):
            wrong = verify.check() if verify is not None else None
        return Measured(timing=timing, start=start, end=end, batch=batch, graph=graph,
                        power_w=window.power_w_mean if window else None,
                        power_readings=window.polls if window else 0, window=window,
                        wrong_after=wrong, seconds=dict(spent))

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

    def window(self, t0: float, t1: float) -> Window | None:
        """Clocks, power and throttle reasons between two ``time.perf_counter()``
        readings; ``None`` where nothing can be read."""
        return None

    def power_limit_w(self) -> float:
        """The board power limit in force (0: unknown)."""
        return 0.0

    def throttled(self, duty: Duty | None = None) -> str | None:
        """Why samples just taken under ``duty`` should be thrown away, or ``None``."""
        return None

    def launch_floor_ms(self) -> float | None:
        """Event-timed cost of an empty launch, where it means something."""
        return None

    @abc.abstractmethod
    def synchronize(self) -> None:
        """Wait until all launched work has finished, so an output can be checked and a
        failure surfaces in the trial that caused it."""

    def healthy(self) -> bool:
        """Can this process still run work on the device?  After a sticky CUDA error
        (an illegal address, a device-side assert) it cannot."""
        return True

    def check_space(self, space: Space, *, user_code: bool = True) -> None:
        """Refuse, before anything is written, a space this device cannot serve (a replay
        table without a column for one of its axes); most devices serve any space.
        ``user_code=False`` (``plan``): a user kernel's module is not imported for it."""
        return

    def measure_spec(self, spec: MeasureSpec) -> MeasureSpec:
        """The measurement this device will really do for ``spec`` (caps, if any)."""
        return spec

    def planned_environment(self) -> dict[str, str]:
        """The entries of :meth:`environment` that ``plan`` can tell without importing
        torch or triton, those a study's fingerprint compares
        (:data:`sweeper.study.FINGERPRINT_ENV`) among them (none here)."""
        return {}

    def environment(self) -> dict[str, Any]:
        """Hardware and software facts recorded with every study."""
        import triton

        from sweeper._version import __version__

        facts = self.facts()
        return {
            "device": self.name, "opened_as": self.opened_as or self.name,
            "gpu": facts.name, "sms": facts.sms,
            "l2_bytes": facts.l2_bytes, "torch": torch_version(),
            "triton": triton.__version__, "python": sys.version.split()[0],
            "sweeper": __version__, "host": socket.gethostname(),
            "platform": platform.platform(),
            "env": recorded_env(),
            **({"max_footprint": facts.max_footprint}
               if facts.max_footprint is not None else {}),
        }
