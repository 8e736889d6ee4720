"""Sample until the stopping rule is met, throwing away chunks taken while the GPU was
throttled (nvbench discards samples under 75 % of the default SM clock)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sweeper.measure._decide import StopRule
from sweeper.measure._notes import Stop, StopReason

MAX_DISCARDS = 3
ABANDON_CHUNK = 10


@dataclass
class Timing:
    """What :func:`sample_until` took: the kept samples (ms), why it stopped, how many
    samples it threw away while the GPU was throttled and why, and the seconds it spent."""

    samples: list[float]
    stop_reason: StopReason
    discarded: int = 0                     # samples thrown away while throttled
    discard_reasons: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def converged(self) -> bool:
        """Whether the rule was met: not given up at its time limit nor abandoned."""
        return self.stop_reason.kind not in (Stop.UNCONVERGED, Stop.ABANDONED)

    @property
    def abandoned(self) -> bool:
        """Whether sampling stopped early because the config could not win (``abandon``
        said so)."""
        return self.stop_reason.kind is Stop.ABANDONED


def sample_until(take: Callable[[int], list[float]], rule: StopRule, *,
                 throttled: Callable[[], str | None] = lambda: None,
                 abandon: Callable[[list[float]], str | None] | None = None,
                 recover: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> Timing:
    """Call ``take(k)`` for chunks of ``k`` timed samples until ``rule`` says stop.

    After each chunk ``throttled()`` reports why the machine was not in its usual state
    (or ``None``); such a chunk is discarded and re-measured, at most ``MAX_DISCARDS``
    times, after which samples are kept and the reason stays on record; ``recover`` (if
    any) runs before a discarded chunk is taken anew.  ``abandon``
    may end sampling early (a config clearly slower than the best so far): its reason
    becomes the stop reason, prefixed ``abandoned:``; a fixed rule then takes a first
    chunk of ``ABANDON_CHUNK`` samples so there is something to judge.
    """
    samples: list[float] = []
    reasons: list[str] = []
    discarded = 0
    t0 = clock()
    while True:
        want = rule.repeat - len(samples) if rule.kind == "fixed" else rule.chunk
        if abandon is not None and not samples and rule.kind == "fixed":
            want = min(want, ABANDON_CHUNK)
        chunk = take(max(1, want))
        why = throttled()
        if why is not None:
            if len(reasons) < MAX_DISCARDS:
                discarded += len(chunk)
                reasons.append(why)
                if recover is not None:
                    recover()
                continue
            reasons.append(f"kept while throttled: {why}")
        samples.extend(chunk)
        stop = rule.check(samples, clock() - t0)
        if stop is None and abandon is not None:
            why = abandon(samples)
            stop = StopReason(Stop.ABANDONED, f"abandoned: {why}") if why is not None else None
        if stop is not None:
            return Timing(samples, stop, discarded, reasons, clock() - t0)
