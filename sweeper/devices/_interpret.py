"""The Triton interpreter on the CPU: the whole pipeline without a GPU.

Its timings are CPU timings of an interpreter and mean nothing for a GPU; every
run and report says so.  Footprints are capped small and repetitions few, so a
small space finishes in seconds.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from sweeper._environ import one_blas_thread
from sweeper.bounds import Bounds
from sweeper.core import INTERPRETER, DeviceFacts, MeasureSpec
from sweeper.devices._base import Device, Launch, Measured, PlanCosts
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
    #: the interpreter runs what Triton's compiler refuses (a global that is not a
    #: constexpr): a run compiles its kernel for a GPU as well (``--gpu-check``)
    checks_gpu_compile: ClassVar[bool] = True
    #: An interpreted launch runs each program in turn and each tensor operation of its
    #: body as Python calls, so it costs by programs and operations, not bytes: least
    #: squares over the trials of spaces/copy-small.yaml, copy.yaml (204) and softmax.yaml
    #: on the 2-core development machine while other work loaded it (load average 4-12,
    #: 2026-12-03) gave 0.7-1.9 ms a program, 0.36-0.40 ms an operation and 0-19 ms a
    #: launch beside them, a start-up of 6.1-9.5 s and a report of 5.7-12.9 s.  The same
    #: machine unloaded (load average 0.5, 2026-12-05) measured the launches of those
    #: spaces at 0.133 (copy, 404 trials) and 0.145 (softmax, 24) of that model, a
    #: start-up of 1.6-1.7 s, a report of 1.0 s (4 maps) to 2.1 s (8), and its four
    #: finals stopped after 3, 3, 3 and 5 rounds, as most on the H200 did (under load all
    #: six had run 5: the order settled later in noisier timings): a fresh machine
    #: takes the unloaded figures (that model's three costs times 0.14), which a new user's
    #: first run meets, and a loaded one learns its own from its runs: the machine's
    #: first kernel is kept as measured (the model's 1 is a machine unloaded), and a
    #: kernel after it counts its trials against 10 of what the machine's kernels
    #: measured.  56 runs of four spaces (copy-small, two matmuls; load average 1-8,
    #: 2026-12-07) measured 0.9-5.9 of the model (copy 1.1-4.7) as the load moved;
    #: replayed over them, the scale the runs before left was off each later run's ratio
    #: by 1.34x in the mean and 2.6x at most (49 runs), where counted against 50 trials
    #: pulled towards the model's 1 it was off by 1.47x and 4.2x.
    plan_costs: ClassVar[PlanCosts] = PlanCosts(
        compile_s=0.0, launch_s=0.7e-3, bandwidth=2.0e6, flush=False, program_s=0.14e-3,
        op_s=0.053e-3, startup_s=1.7, report_s=2.1,
        scale_prior_trials=10, finals_tie=True)
    #: A final here takes the top 5 finalists in 3 rounds (the finals' ``TOP_K`` and
    #: ``MIN_ROUNDS``, named here as numbers: the devices sit below the finals), not the
    #: configs tied with the fastest (up to twelve) and up to five rounds: each entrant
    #: takes ``MAX_REPEAT`` host-timed samples a round, and the 95 % interval of a median
    #: of fewer than 15 samples is their whole range (:func:`~sweeper.measure.median_ci`),
    #: so on a loaded machine every config ties with the fastest, the finalists are twelve
    #: and none leaves nor settles before the fifth round: examples/matmul.yaml's finals
    #: took 6.1-7.4 s of runs of 30-34 s (load average 7), where its plan, assuming the
    #: H200's five finalists and 3.5 rounds, kept about 1 s.  More rounds of
    #: interpreter timings, which mean nothing for a GPU, would choose no better winner;
    #: the final still runs the whole pipeline (rounds, a finalist leaving, the tie rule).
    most_finalists: ClassVar[int | None] = 5
    most_final_rounds: ClassVar[int | None] = 3
    note: str | None = (
        f"Triton interpreter on the CPU: problems capped at {MAX_FOOTPRINT >> 10} KiB "
        "(footprints lowered, dimensions shrunk keeping their ratios and whether each is a "
        "power of two; problems that would shrink to one kept apart where their order "
        "allows, else measured once), at most "
        f"{MAX_WARMUP} warmup and {MAX_REPEAT} timed runs, no L2 flush; these are CPU timings "
        "of an interpreter and mean nothing for a GPU")

    def __init__(self) -> None:
        os.environ.update(self.sets_env)         # set before any kernel is built
        self._facts = DeviceFacts(name=INTERPRETER, sms=os.cpu_count() or 1,
                                  l2_bytes=_cpu_l2_bytes(), max_footprint=MAX_FOOTPRINT)

    def facts(self) -> DeviceFacts:
        return self._facts

    def bounds(self) -> Bounds:
        return Bounds.none(self._facts.name, "CPU timings of an interpreter: no GPU's "
                           "physical limits apply")

    def measure_spec(self, spec: MeasureSpec) -> MeasureSpec:
        return MeasureSpec(warmup=min(spec.warmup, MAX_WARMUP),
                           repeat=min(spec.repeat, MAX_REPEAT), stop="fixed",
                           timeout_s=spec.timeout_s, duty=spec.duty, duty_s=spec.duty_s,
                           finals_duty=spec.finals_duty, warmup_time_s=spec.warmup_time_s)

    def time(self, launch: Launch, *, warmup: int, repeat: int, flush: bool) -> list[float]:
        return time_host(launch, warmup=warmup, repeat=repeat)

    def measure(self, launch: Launch, **how: Any) -> Measured:
        """:meth:`Device.measure` with torch on one CPU thread (:func:`one_thread`): a
        baseline such as torch's softmax over a capped problem otherwise wakes its
        OpenMP threads at every call, 4-18 ms on a shared two-core machine against
        0.08 ms on one thread, so a final's baseline read anywhere in that range."""
        with one_thread():
            return super().measure(launch, **how)

    def synchronize(self) -> None:
        return None


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch's CPU operations and the BLAS libraries' (NumPy's matmul, which runs a
    ``tl.dot`` in the interpreter) on one thread within, as many as before after (the
    interpreter runs in the caller's process: ``sweeper.run`` from a notebook keeps
    its threads): on a shared machine threads that spin waiting for work made a launch's
    time grow with its tiles, a 128×256 tile's dot taking 3-4 times a 64×64 one's, where
    on one thread they cost alike (:func:`~sweeper._environ.one_blas_thread`)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with one_blas_thread():
            yield
    finally:
        torch.set_num_threads(before)


def _cpu_l2_bytes() -> int:
    """The CPU's L2 size from sysfs, or 1 MiB where it cannot be read."""
    try:
        text = Path("/sys/devices/system/cpu/cpu0/cache/index2/size").read_text().strip()
        return int(text.rstrip("K")) << 10 if text.endswith("K") else int(text)
    except (OSError, ValueError):
        return 1 << 20
