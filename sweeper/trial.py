"""One trial: the first launch timed apart and its output verified, then warmup and samples.

A config that fails to compile, runs out of resources, raises or computes a
wrong answer comes back with a status and its reason; it never raises.
"""

from __future__ import annotations

import enum
import itertools
import os
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sweeper.devices import Device
from sweeper.devices._base import Measured
from sweeper.devices._nvml import Window
from sweeper.errors import (
    DEBUG_ENV,
    ConstantMemoryFailed,
    ReferenceFailed,
    RefusalFailed,
    VerifyFailed,
    one_line,
    statement,
    user_line,
)
from sweeper.escape import cut
from sweeper.kernels import Buffers, Kernel
from sweeper.measure import (
    Duty,
    Flag,
    Spent,
    Stats,
    StopReason,
    TrialFlag,
    median_ci,
    summarize,
    throughput,
)
from sweeper.measure._duty import POWER_CAP
from sweeper.space import Config, MeasureSpec, launch_text

if TYPE_CHECKING:      # a trial's status and records are read without importing torch
    import torch


class TrialStatus(str, enum.Enum):
    """How a trial ended. Only ``ok`` has a median; every other status is recorded with its
    reason and the sweep goes on, so a failing config costs one trial, never the study."""

    OK = "ok"
    INVALID = "invalid"                    # skipped: a constraint or value ruled it out
    COMPILE_ERROR = "compile_error"
    OUT_OF_RESOURCES = "out_of_resources"
    WRONG_ANSWER = "wrong_answer"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    MISSING = "missing"                    # replay: the table has no such config
    ABANDONED = "abandoned"                # clearly slower than the best: sampling cut short
    IMPOSSIBLE = "impossible"              # faster than the device's physical bounds allow


#: The statuses of a trial that failed: all but a measured one (``ok``, or ``abandoned``
#: once clearly slower than the best) and a config ruled out before it ran (``invalid``).
FAILURES = frozenset(TrialStatus) - {TrialStatus.OK, TrialStatus.ABANDONED, TrialStatus.INVALID}
#: The statuses that are the kernel's fault, not the space's (a constraint, a config too
#: big for the GPU, a replay table's gap) nor the search's (abandoned): a run with any
#: ends ``sweeper run`` with its own exit status, and the same one on every early trial
#: stops the run.
KERNEL_FAULTS = frozenset({TrialStatus.COMPILE_ERROR, TrialStatus.WRONG_ANSWER,
                           TrialStatus.CRASHED, TrialStatus.TIMEOUT, TrialStatus.IMPOSSIBLE})


def trials_counted(trials: Iterable[Any]) -> int:
    """How many of the study's ``trials`` (records with a ``status``) the trial budget
    counts already: all but those the constraints or values ruled out (never launched).
    The sweep's set-up, the run's estimate and ``sweeper plan`` count alike; a trial to
    be measured again (``retry``) is not counted, its config's next trial is."""
    return sum(1 for t in trials if t.status is not TrialStatus.INVALID and not t.retry)


@dataclass
class TrialResult:
    """What measuring one config gave, before it is numbered and kept as a
    :class:`~sweeper.store.TrialRecord`: its status and reason, the raw samples and their
    statistics, the rates, how sampling stopped, and the GPU's state, power and clocks
    while it ran."""

    status: TrialStatus
    reason: str | None = None
    cold_s: float | None = None            # compile + first launch, host clock
    samples_ms: list[float] = field(default_factory=list)
    stats: Stats | None = None
    gbps: float = 0.0                      # effective GB/s from the median
    gflops: float = 0.0                    # effective GFLOP/s from the median
    #: bytes one launch touches (the kernel's ``working_set`` of its problem), which
    #: decided its ``L2-resident`` flag and places the L2 on the report's footprint curve;
    #: 0 where not counted (no samples taken, or a study an older sweeper wrote)
    working_set: int = 0
    stop_reason: StopReason | None = None  # which rule ended sampling
    discarded: int = 0                     # samples thrown away while throttled
    discard_reasons: list[str] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)   # GPU state at start and end
    energy_j: float | None = None          # per launch: mean board power x median time
    power_w: float | None = None           # mean board power while sampling (NVML)
    power_readings: int = 0                # NVML polls inside the sampling window
    energy_window_s: float = 0.0           # how long sampling lasted
    batch: int = 1
    graph: bool = False
    flags: list[TrialFlag] = field(default_factory=list)  # launch-bound, L2-resident ...
    saved_ms: float = 0.0                  # GPU time early abandonment did not spend
    clocks: Window | None = None           # SM clock, power, throttle reasons while sampling
    duty: str = ""                         # the power schedule before its samples, if any
    #: host seconds by what they were spent on: ``randomize`` (inputs and poison),
    #: ``compile`` (the first launch, compile included), ``verify``, ``cool-down`` or
    #: ``load`` (the power schedule), ``warmup``, ``sample`` (timed launches and what
    #: comes with them: flushes, synchronizing, NVML reads)
    seconds: dict[str, float] = field(default_factory=dict)
    #: a crash that is not the kernel's: its worker process was killed by a SIGKILL that
    #: sweeper did not send (the OOM killer, a user's or a scheduler's kill).  It is no
    #: failure of the kernel's, and it leaves its config to be measured again by the next
    #: run, once (:class:`~sweeper.store._ledger.Ledger`), whose trial is the config's
    #: from then on (:func:`~sweeper.store._base.measured_again`)
    retry: bool = False

    @property
    def kernel_fault(self) -> bool:
        """Whether the trial failed by the kernel's fault (:data:`KERNEL_FAULTS`), which
        ``sweeper run``'s exit status says: a crash whose worker was killed from outside
        (:attr:`retry`) is not."""
        return self.status in KERNEL_FAULTS and not self.retry


#: A median within this many launch floors is mostly launch overhead, not the kernel.
LAUNCH_BOUND_FACTOR = 5


def abandon_rule(best_ci_hi_ms: float, factor: float) -> Callable[[list[float]], str | None]:
    """Stop sampling a config whose median's CI lies above ``factor`` x the best's CI."""
    limit = factor * best_ci_hi_ms

    def check(samples: list[float]) -> str | None:
        if len(samples) < 5:
            return None
        lo, _ = median_ci(samples)
        if lo <= limit:
            return None
        return (f"after {len(samples)} samples the median's CI starts at {lo:.4g} ms, above "
                f"{factor:g}x the best's {best_ci_hi_ms:.4g} ms")
    return check


def run_trial(kernel: Kernel, buffers: Buffers | Sequence[Buffers], config: Config,
              device: Device, measure: MeasureSpec, generator: torch.Generator,
              l2_bytes: int = 0, best: tuple[float, float] | None = None,
              duty: Duty | None = None, number: int | None = None) -> TrialResult:
    """Measure ``config``; every failure becomes a status with its reason.

    ``buffers`` may be several sets of the same problem: launches rotate among them
    so a warm, L2-sized footprint is not a replay of the cache.  The first set is
    the one verified.
    """
    sets = [buffers] if isinstance(buffers, Buffers) else list(buffers)
    first = sets[0]
    cold_s = None
    spent = Spent()
    try:
        with spent.on("randomize"):
            kernel.randomize(first, generator)
            kernel.poison(first)
            device.synchronize()
        # the first launch on fresh inputs and poisoned outputs: compile + first run, timed
        # on the host clock (seconds), verified before anything is sampled
        with spent.on("compile"):
            t0 = time.perf_counter()
            kernel.launch(first, config)
            device.synchronize()
            cold_s = time.perf_counter() - t0
        with spent.on("verify"):
            wrong = verdict(kernel, first)
        if wrong is not None:
            return TrialResult(TrialStatus.WRONG_ANSWER, wrong, cold_s=cold_s,
                               seconds=dict(spent))
        rotation = Rotation(kernel, sets, config)
        abandon = abandon_rule(best[1], measure.abandon) \
            if measure.abandon and best is not None else None
        measured = device.measure(rotation, warmup=measure.warmup, rule=measure.rule(),
                                  flush=config.cache == "cold", batch=measure.batch,
                                  graph=measure.graph, abandon=abandon, duty=duty,
                                  verify=rotation, warmup_time_s=measure.warmup_time_s)
    except Exception as err:  # noqa: BLE001 - every failure is recorded, the sweep goes on
        status, reason = classify(err)
        debug_failure(config, status, err, number)
        return TrialResult(status, reason, cold_s=cold_s, seconds=dict(spent))
    for what, seconds in measured.seconds.items():
        spent[what] = spent.get(what, 0.0) + seconds
    result = _result(kernel, sets, config, device, measure, measured, cold_s, l2_bytes, duty)
    result.seconds = dict(spent)
    return result


def debug_failure(config: Config, status: TrialStatus, err: BaseException,
                  number: int | None = None) -> None:
    """Under ``sweeper --debug`` (:data:`~sweeper.errors.DEBUG_ENV`), print the traceback of
    ``err``, which failed ``config``'s trial with ``status``, to stderr (what it was
    raised from too: the user's own error behind a failed refusal), headed by the trial's
    ``number`` as the report names it (``#6``); nothing without it."""
    if os.environ.get(DEBUG_ENV):
        which = "a trial" if number is None else f"trial #{number}"
        print(f"sweeper --debug: {which} of "
              f"{launch_text(config.grid, config.block, config.meta, config.grid_extents)} failed "
              f"({status.value}):\n{''.join(traceback.format_exception(err))}",
              file=sys.stderr, flush=True)


def _result(kernel: Kernel, sets: Sequence[Buffers], config: Config, device: Device,
            measure: MeasureSpec, measured: Measured, cold_s: float | None, l2_bytes: int,
            duty: Duty | None) -> TrialResult:
    """The result of a trial whose samples were taken: statistics over them, rates from
    the median, the GPU's state and power while sampling, and its flags; ``wrong_answer``
    if the outputs were wrong after the samples."""
    timing = measured.timing
    stats = summarize(timing.samples)
    seconds = stats.median * 1e-3
    problem = sets[0].problem
    result = TrialResult(
        TrialStatus.ABANDONED if timing.abandoned else TrialStatus.OK,
        reason=timing.stop_reason.text if timing.abandoned else None,
        cold_s=cold_s, samples_ms=timing.samples, stats=stats,
        gbps=throughput(kernel.bytes_moved(problem), seconds) / 1e9,
        gflops=throughput(kernel.flops(problem), seconds) / 1e9,
        working_set=int(kernel.working_set(problem)),
        stop_reason=timing.stop_reason, discarded=timing.discarded,
        discard_reasons=timing.discard_reasons,
        state={k: v.to_dict() for k, v in (("start", measured.start), ("end", measured.end))
               if v is not None},
        energy_j=measured.power_w * seconds if measured.power_w is not None else None,
        power_w=measured.power_w, power_readings=measured.power_readings,
        energy_window_s=timing.elapsed_s,
        batch=measured.batch, graph=measured.graph,
        clocks=measured.window,
        duty=duty.describe() if duty else "")
    result.flags = _flags(result.working_set, config, device, stats, timing, measure,
                          len(sets), l2_bytes, measured.window)
    if timing.abandoned:
        expected = measure.repeat if measure.stop == "fixed" else measure.min_samples
        result.saved_ms = max(0, expected - len(timing.samples)) * stats.median * measure.batch
    if measured.wrong_after is not None:       # its samples stay on record, as it ran
        result.status = TrialStatus.WRONG_ANSWER
        result.reason = (f"the first launch was right, but the output after the timed samples "
                         f"({len(timing.samples)}) was wrong: {measured.wrong_after}; the "
                         "kernel stopped doing the work after the verified launch")
    return result


class Rotation:
    """Launches that rotate among buffer sets, and the check that the timed ones did the
    work (:class:`~sweeper.devices.OutputCheck`): only sets launched after the poisoning
    are checked, since a short sampling run may not reach every set."""

    def __init__(self, kernel: Kernel, sets: Sequence[Buffers], config: Config) -> None:
        self.kernel, self.sets, self.config = kernel, list(sets), config
        self._order = itertools.cycle(range(len(self.sets)))
        self.launched: set[int] = set()

    def __call__(self) -> None:
        index = next(self._order)
        self.launched.add(index)
        self.kernel.launch(self.sets[index], self.config)

    def poison(self) -> None:
        for buffers in self.sets:
            self.kernel.poison(buffers)
        self.launched.clear()

    def check(self) -> str | None:
        for index in sorted(self.launched):
            wrong = verdict(self.kernel, self.sets[index])
            if wrong is not None:
                return wrong if len(self.sets) == 1 else \
                    f"buffer set {index + 1} of {len(self.sets)}: {wrong}"
        return None


def verdict(kernel: Kernel, buffers: Buffers) -> str | None:
    """``kernel.check(buffers)``: ``None`` where the outputs are right, else the reason; a
    check that returns anything else (``True``, a count) raises a :class:`TypeError`
    saying so, which fails the trial as crashed."""
    wrong = kernel.check(buffers)
    if wrong is not None and not isinstance(wrong, str):
        raise TypeError(f"{type(kernel).__name__}.check returned {cut(repr(wrong), 60)}; "
                        "it returns None where the outputs are right, else the reason (a "
                        "str)")
    return wrong


def _flags(working_set: int, config: Config, device: Device, stats: Stats, timing: Any,
           measure: MeasureSpec, sets: int, l2_bytes: int,
           clocks: Window | None) -> list[TrialFlag]:
    flags = []
    if not timing.converged:
        flags.append(TrialFlag(Flag.UNCONVERGED, "unconverged"))
    if l2_bytes and working_set <= l2_bytes:
        rotated = f", rotating {sets} buffer sets" if sets > 1 else ""
        flags.append(TrialFlag(Flag.L2_RESIDENT, f"L2-resident ({config.cache}{rotated})"))
    floor = device.launch_floor_ms()
    if floor and measure.batch == 1 and stats.median < LAUNCH_BOUND_FACTOR * floor:
        flags.append(TrialFlag(Flag.LAUNCH_BOUND, (
            f"launch-bound: median {stats.median * 1e3:.1f} us is within "
            f"{LAUNCH_BOUND_FACTOR}x the {floor * 1e3:.1f} us launch floor; "
            "try measure.batch or measure.graph")))
    if timing.discarded:
        flags.append(TrialFlag(Flag.DISCARDED,
                               f"{timing.discarded} samples discarded (throttled)"))
    capped = clocks.reasons.get(POWER_CAP) if clocks else None
    if capped and clocks:
        flags.append(TrialFlag(Flag.POWER_CAPPED, (
            f"power-capped: sw_power_cap in {100 * capped:.0f}% of the NVML polls, SM clock "
            f"{clocks.sm_mhz_mean:.0f} MHz on average")))
    return flags


#: The characters a trial's reason keeps (the journal's line stays short).
REASON_MAX = 500
#: Where torch's CUDA error messages turn from what happened to generic debugging advice.
_CUDA_ADVICE = re.compile(r"\s+(?:Search for `cudaError|CUDA kernel errors might be)")


def compile_line(err: BaseException) -> str | None:
    """``kernels.py:12: x = tl.lod(x_ptr + offsets)``: where Triton's compile error ``err``
    (a ``CompilationError``: the kernel's source and the node at fault) points in the
    user's file (its whole statement, as :func:`~sweeper.errors.user_line` quotes it), the
    jitted function found in the traceback of the compile (Triton's own frames hold it);
    the line within the kernel (``line 5 of the kernel: ...``) where that cannot be found,
    and ``None`` where the error names no node."""
    src, node = getattr(err, "src", None), getattr(err, "node", None)
    lineno = getattr(node, "lineno", None)
    if not isinstance(src, str) or not isinstance(lineno, int):
        return None
    lines = src.split("\n")
    text = statement(lines, lineno)
    tb = err.__traceback__
    while tb is not None:
        jit = getattr(tb.tb_frame.f_locals.get("self"), "fn", None)
        first = getattr(jit, "def_file_line_number", None)
        code = getattr(getattr(jit, "fn", None), "__code__", None)
        if isinstance(first, int) and code is not None and getattr(jit, "src", None) == src:
            return f"{os.path.basename(code.co_filename)}:{first + lineno - 1}: {text}"
        tb = tb.tb_next
    return f"line {lineno} of the kernel: {text}"


def classify(err: BaseException) -> tuple[TrialStatus, str]:
    """Map an exception from compiling or launching to a status and a one-line reason.
    A compile error keeps Triton's message and names the kernel's line at fault
    (:func:`compile_line`), as an interpreted kernel's error names its line
    (:func:`~sweeper.errors.user_line`).  Every reason, whatever its path, is capped by
    one rule (:func:`_cut_before`)."""
    import torch

    if isinstance(err, (ReferenceFailed, RefusalFailed, VerifyFailed, ConstantMemoryFailed)):
        return TrialStatus.CRASHED, _cut_before(str(err), "")
    names = {cls.__name__ for cls in type(err).__mro__}
    message = getattr(err, "error_message", None)
    line: str | None = None
    if names & {"CompilationError"} and isinstance(message, str) and message.strip():
        line = compile_line(err)
        text = f"{type(err).__name__}: {message.strip()}"
    else:
        text = f"{type(err).__name__}: {err}"
    reason = _CUDA_ADVICE.split(one_line(text), maxsplit=1)[0]     # CUDA's generic advice
    if "OutOfResources" in names or isinstance(err, torch.cuda.OutOfMemoryError):
        status = TrialStatus.OUT_OF_RESOURCES
    elif names & {"CompilationError", "CompileTimeAssertionFailure", "PTXASError"}:
        status = TrialStatus.COMPILE_ERROR
    elif "InterpreterError" in names and (cause := err.__cause__) is not None and \
            _static_assert(cause):
        # the interpreter fails tl.static_assert as it runs; a GPU's compiler refuses it
        status, line = TrialStatus.COMPILE_ERROR, user_line(cause)
        reason = one_line(f"CompileTimeAssertionFailure: {cause}")
    elif "InterpreterError" in names and err.__cause__ is not None:
        status, line = classify(err.__cause__)[0], user_line(err.__cause__)
    else:
        # where the user's own code raised it (a CUDA error surfaces at a later call, not
        # where it arose: no line for it)
        status = TrialStatus.CRASHED
        line = None if "CUDA error" in reason else user_line(err)
    # at most 500 characters, the kernel's line kept whole (Triton's advice on a global
    # that is not a constexpr alone is 400), a cut message ending in "…"
    return status, _cut_before(reason, f" (at {line})" if line else "")


def _static_assert(err: BaseException | None) -> bool:
    """Whether ``err`` is the ``AssertionError`` the Triton interpreter's
    ``tl.static_assert`` raises (its innermost frame is the interpreter's stand-in), not
    an ``assert`` of the kernel's own."""
    if not isinstance(err, AssertionError):
        return False
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_name == "_new_static_assert"


def _cut_before(message: str, at: str) -> str:
    """``message`` then ``at`` (the user's line) in at most :data:`REASON_MAX` characters,
    ``at`` kept whole where it fits: a message cut to make room ends in ``…``, so its last
    words are not read as the end of its sentence."""
    room = REASON_MAX - len(at)
    return (cut(message, room, "…") if room > 0 else "") + at[:REASON_MAX]
