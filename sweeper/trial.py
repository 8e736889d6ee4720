"""One trial: first launch timed apart, output verified, then warmup and timed samples.

A config that fails to compile, runs out of resources, raises or computes a
wrong answer comes back with a status and its reason; it never raises.
"""

from __future__ import annotations

import enum
import time
import traceback
from dataclasses import dataclass, field

import torch

from sweeper.devices import Device
from sweeper.kernels import Buffers, Kernel
from sweeper.measure import Stats, summarize, throughput
from sweeper.space import Config, MeasureSpec


class TrialStatus(str, enum.Enum):
    OK = "ok"
    INVALID = "invalid"                    # skipped: a constraint or value ruled it out
    COMPILE_ERROR = "compile_error"
    OUT_OF_RESOURCES = "out_of_resources"
    WRONG_ANSWER = "wrong_answer"
    CRASHED = "crashed"
    TIMEOUT = "timeout"


@dataclass
class TrialResult:
    status: TrialStatus
    reason: str | None = None
    cold_s: float | None = None            # compile + first launch, host clock
    samples_ms: list[float] = field(default_factory=list)
    stats: Stats | None = None
    gbps: float = 0.0                      # effective GB/s from the median
    gflops: float = 0.0                    # effective GFLOP/s from the median


def run_trial(kernel: Kernel, buffers: Buffers, config: Config, device: Device,
              measure: MeasureSpec, generator: torch.Generator) -> TrialResult:
    """Measure ``config``; every failure becomes a status with its reason."""
    cold_s = None
    try:
        t0 = time.perf_counter()
        kernel.launch(buffers, config)
        device.synchronize()
        cold_s = time.perf_counter() - t0
        kernel.randomize(buffers, generator)
        kernel.poison(buffers)
        kernel.launch(buffers, config)
        device.synchronize()
        wrong = kernel.check(buffers)
        if wrong is not None:
            return TrialResult(TrialStatus.WRONG_ANSWER, wrong, cold_s=cold_s)
        samples = device.time(lambda: kernel.launch(buffers, config), warmup=measure.warmup,
                              repeat=measure.repeat, flush=measure.flush_l2)
    except Exception as err:  # noqa: BLE001 - every failure is recorded, the sweep goes on
        status, reason = classify(err)
        return TrialResult(status, reason, cold_s=cold_s)
    stats = summarize(samples)
    seconds = stats.median * 1e-3
    problem = buffers.problem
    return TrialResult(
        TrialStatus.OK, cold_s=cold_s, samples_ms=samples, stats=stats,
        gbps=throughput(kernel.bytes_moved(problem), seconds) / 1e9,
        gflops=throughput(kernel.flops(problem), seconds) / 1e9)


def classify(err: BaseException) -> tuple[TrialStatus, str]:
    """Map an exception from compiling or launching to a status and a one-line reason."""
    names = {cls.__name__ for cls in type(err).__mro__}
    text = f"{type(err).__name__}: {err}".strip().splitlines()
    reason = " ".join(line.strip() for line in text if line.strip())[:500]
    if "OutOfResources" in names or isinstance(err, torch.cuda.OutOfMemoryError):
        return TrialStatus.OUT_OF_RESOURCES, reason
    if names & {"CompilationError", "CompileTimeAssertionFailure", "PTXASError"}:
        return TrialStatus.COMPILE_ERROR, reason
    if "InterpreterError" in names and err.__cause__ is not None:
        return classify(err.__cause__)[0], reason
    return TrialStatus.CRASHED, reason or "".join(traceback.format_exception_only(err)).strip()
