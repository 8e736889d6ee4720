"""Choosing among a shape's dispatch candidates by timing them, once, as
``triton.autotune`` does: what ``@sweeper.tuned_kernel(..., measure_untuned=True)`` runs at
the first call of a shape that was not tuned.

Each candidate is launched once untimed (that launch compiles it), then :data:`RUNS` times
timed, one launch per sample: with CUDA events on a GPU, with ``time.perf_counter`` on
the CPU (the Triton interpreter runs a launch before returning).  The fastest median wins;
ties go to the earlier candidate, so the pick (listed first) keeps its place unless another
is faster.  A candidate that raises (too many resources, a compile error) is skipped with its
reason, as ``triton.autotune`` skips one that runs out of resources.  Before every launch
the tensors the kernel writes are put back: ``restore`` ones to their values at the call,
``reset_to_zero`` ones to zeros (Triton's ``restore_value`` and ``reset_to_zero``), so the
call's own launch afterwards sees its inputs as given.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sweeper.errors import SweeperError
from sweeper.measure._timer import time_cuda, time_host

#: Timed launches per candidate, after one untimed launch: enough to skip a stray slow
#: one (the median of 3), few enough that ~14 candidates cost ~60 launches once per shape.
RUNS = 3

#: ``timer(launch, reset, runs)``: seconds of each of ``runs`` launches, ``reset()`` called
#: before each, outside the timed span.
Timer = Callable[[Callable[[], object], Callable[[], None], int], list[float]]


def timer_for(tensors: Sequence[Any]) -> Timer:
    """Seconds of each launch: GPU seconds between a pair of CUDA events, ``reset`` queued
    before each start event (:func:`~sweeper.measure.time_cuda`), when the call's first
    tensor is on a GPU; else wall-clock seconds (:func:`~sweeper.measure.time_host`), right
    where a launch returns when done (the Triton interpreter, a CPU)."""
    first = next(iter(tensors), None)
    clock = time_cuda if getattr(first, "is_cuda", False) else time_host
    return lambda launch, reset, runs: [
        ms / 1e3 for ms in clock(launch, warmup=0, repeat=runs, flush=reset)]


def resetter(restore: Sequence[Any], zero: Sequence[Any]) -> Callable[[], None]:
    """A function putting ``restore``'s tensors back to their values now (a copy is kept)
    and filling ``zero``'s with zeros."""
    saved = [(t, t.clone()) for t in restore]

    def reset() -> None:
        for tensor, copy in saved:
            tensor.copy_(copy)
        for tensor in zero:
            tensor.zero_()

    return reset


@dataclass(frozen=True)
class Measured:
    """What timing a shape's candidates found: the median seconds per launch of each
    (``None`` for one that failed; ``failures`` holds its position and reason) and the
    position of the one chosen."""

    seconds: tuple[float | None, ...]
    chosen: int
    failures: tuple[tuple[int, str], ...] = ()

    @property
    def ran(self) -> int:
        """How many candidates ran to a time."""
        return sum(s is not None for s in self.seconds)


def measure(launches: Sequence[Callable[[], object]], reset: Callable[[], None],
            timer: Timer, runs: int = RUNS, names: Sequence[str] = ()) -> Measured:
    """Time each launch (one untimed first, then ``runs``) and choose the fastest median;
    ``reset`` runs before every launch and once at the end; ``names`` (one per launch)
    are what an error says when none ran."""
    seconds: list[float | None] = []
    failures: list[tuple[int, str]] = []
    for i, launch in enumerate(launches):
        try:
            reset()
            launch()
            seconds.append(statistics.median(timer(launch, reset, runs)))
        except Exception as err:  # noqa: BLE001  a candidate that cannot run is skipped
            reason = (str(err).strip().splitlines() or [""])[0]
            failures.append((i, f"{type(err).__name__}: {reason}"[:200]))
            seconds.append(None)
    reset()
    timed = [i for i, s in enumerate(seconds) if s is not None]
    if not timed:
        i, reason = failures[0]
        name = names[i] if i < len(names) else f"candidate {i}"
        raise SweeperError(f"none of the {len(launches)} candidates ran; {name}: {reason}")
    chosen = min(timed, key=lambda i: (seconds[i], i))
    return Measured(tuple(seconds), chosen, tuple(failures))


__all__ = ["RUNS", "Measured", "Timer", "measure", "resetter", "timer_for"]
