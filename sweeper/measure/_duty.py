"""Equal duty for power-bound kernels: every config measured from the same power state.

A kernel that draws the board to its power limit (an 8192³ bf16 matmul on the H200
reaches 700 W within 0.2 s of sustained load) runs at full clock in a short burst and
at a capped clock once the limiter engages: on the H200 1.41 ms a launch after a
cool GPU and 1.65-1.69 ms under sustained load (SM clock 1980 -> 1380-1485 MHz,
``sw_power_cap``).  Without a schedule, what a config measures depends on what ran
before it: in a 40-trial H200 study (``benchmarks/spaces/matmul-8k.yaml``), a trial
that follows a compile (GPU idle) starts sampling at 1980 MHz and one that follows
another config's samples at 1425-1890 MHz, and the interleaved finals, which run back
to back, read every finalist 9-14 % slower than the sweep does (docs/benchmarks.md).

A :class:`Duty` is what precedes each config's samples once a problem is power-bound
(``measure.duty``): a fixed cool-down (``cool``: the GPU idles, so the samples start
from the same cool state), a fixed load of the config's own work (``load``: the
samples start from its own steady, capped state), or sustained load (``sustained``,
what ``auto`` sweeps under): configs are sampled back to back, as the kernel runs in
production, and only a GPU that has idled (a compile, a pause) is first loaded with the
config's own work until it has been busy for ``seconds``; the finals then re-measure
the best configs under :data:`DEFAULT_DUTY`'s cool-downs (:meth:`Duty.for_finals`).

Measured on the H200 with
``benchmarks/power_probe.py``: after 8 s of load against 8 s of idle, the median of 30
samples differed by 15.8 % with nothing before the samples, 0.9 % after a 1 s
cool-down, 0.05 % after 3 s, 0.9 % after a 0.5 s load and 2.0 % after a 2 s load
(docs/benchmarks.md).

The power limiter does not wait for a trial to end: on the H200 it steps an 8192³
matmul's clock down after 15-20 ms of samples (1.50 -> 1.62 -> 1.73 ms a launch
within one trial of 30 samples), so one config's median can land anywhere between
its fast and capped times, and two runs of a study put configs 3-5 % apart.  Under a
cool-down schedule samples are therefore taken in bursts of at most ``BURST_S`` of
work, each after a cool-down and ``BURST_WARMUP`` untimed turns of the sampling loop (the
clock ramps up from idle on the first launch), and a fixed rule takes one burst per measurement: the
samples of one burst agree closely, and each further burst would cost a cool-down (a
40-trial study of 30 samples a trial takes 330 s in 12 ms bursts, 95 s in one go).

Which throttle reasons discard samples (sweeper.devices._nvml.throttle_reason): the
reasons a GPU gives for slowing down that are not the kernel's own doing (thermal and
hardware slowdowns, the power brake, a clock under 75 % of its usual) discard a chunk;
``sw_power_cap`` is the kernel's own power draw, so it only labels the samples, except
under a cool-down schedule, whose samples are meant to start from a cool state: a
chunk that hit the cap there is taken again after another cool-down.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

from sweeper.measure._decide import StopRule

#: A problem is power-bound once a trial's sampling window shows the power cap, or board
#: power at this fraction of the enforced limit.
POWER_BOUND = 0.9
#: The throttle reason the board's power limiter gives.
POWER_CAP = "sw_power_cap"
#: Seconds of samples one burst may take under a cool-down schedule (the limiter's first
#: step came after 15-20 ms; the flush and hold around each sample add a few %).
BURST_S = 0.012
#: Turns of the sampling loop after each cool-down, their times dropped, before a burst.
BURST_WARMUP = 2
#: Samples a fixed rule takes at least under a cool-down schedule, in as many bursts as
#: that needs (a launch longer than ``BURST_S`` gets a cool-down before each sample).
BURST_MIN = 5


@dataclass(frozen=True)
class Duty:
    """What precedes each config's samples: ``cool`` (the GPU idles ``seconds``) or
    ``load`` (the config's own launches run back to back for ``seconds``)."""

    kind: str
    seconds: float

    def describe(self) -> str:
        """The schedule in words, as a run's header and a report say it."""
        if self.kind == "cool":
            return f"a {self.seconds:g} s cool-down before each config's samples"
        if self.kind == "sustained":
            return (f"configs sampled back to back under sustained load (after an idle "
                    f"GPU, {self.seconds:g} s of the config's own work first)")
        return f"{self.seconds:g} s of the config's own work before its samples"

    def for_finals(self, finals: str = "cool") -> Duty:
        """The schedule the finals' entrants follow: a sweep under sustained load is
        decided after :data:`DEFAULT_DUTY`'s cool-downs (``finals`` ``cool``), where
        configs 1 % apart rank reliably, or under the same sustained load (``finals``
        ``sustained``: entrants back to back, the GPU never idles for them); any other
        schedule is kept."""
        if self.kind == "sustained" and finals == "cool":
            return DEFAULT_DUTY
        return self

    def settle(self, launch: Callable[[], None], synchronize: Callable[[], None]) -> None:
        """Bring the GPU to the schedule's state before ``launch``'s samples."""
        synchronize()
        if self.kind == "cool":
            time.sleep(self.seconds)
            return
        t0 = time.perf_counter()
        needed = self.seconds if self.kind == "load" else _LOAD.needed(t0, self.seconds)
        while time.perf_counter() - t0 < needed:
            launch()
            synchronize()

    def sampled(self) -> None:
        """The samples that followed :meth:`settle` have ended (the GPU was busy)."""
        _LOAD.ended(time.perf_counter())

    def burst_size(self, launch: Callable[[], None], synchronize: Callable[[], None]) -> int:
        """Samples that fit in ``BURST_S``, from one host-timed launch (host time
        overstates a short launch, so the burst errs short)."""
        t0 = time.perf_counter()
        launch()
        synchronize()
        return max(1, int(BURST_S / max(time.perf_counter() - t0, 1e-9)))

    def bursts(self, timed: Callable[[int], list[float]], settle: Callable[[], None],
               size: int) -> Callable[[int], list[float]]:
        """``timed(k)`` (k samples, ms each) taken as bursts of at most ``size`` samples,
        each after a cool-down (``settle``) and ``BURST_WARMUP`` turns of the sampling
        loop whose times are dropped (as a trial's warmup: launches back to back read a
        short kernel's first sample high); the first burst follows the settle and warmup
        before sampling."""
        started = [False]

        def take(k: int) -> list[float]:
            out: list[float] = []
            while len(out) < k:
                n = min(k - len(out), size)
                if started[0]:
                    settle()
                    out.extend(timed(BURST_WARMUP + n)[BURST_WARMUP:])
                else:
                    out.extend(timed(n))
                started[0] = True
            return out
        return take

    @staticmethod
    def capped(rule: StopRule, size: int) -> StopRule:
        """A fixed rule under a cool-down schedule takes one burst of samples (at least
        ``BURST_MIN``): more would cost a cool-down each, and the samples of one burst
        agree closely (on the H200 within 0.5 % for an 8192³ matmul)."""
        if rule.kind != "fixed":
            return rule
        return dataclasses.replace(rule, repeat=min(rule.repeat, max(BURST_MIN, size)))

    def discards_power_cap(self) -> bool:
        """Samples that hit the power cap do not belong to this schedule's state."""
        return self.kind == "cool"


#: What ``auto`` switches to once a problem is found power-bound: a 100 ms cool-down.  On
#: the H200 (``benchmarks/duty_cooldown.sh``, docs/benchmarks.md) a sweep of the 108
#: configs of ``spaces/matmul-8k.yaml`` under it chose the same winner as under 1 s
#: (0.10 % apart in the finals) and ranked the configs alike (Spearman 0.999 over all,
#: 0.93-0.95 over the ten fastest, where two sweeps under 1 s agree at 0.94), in 43 s
#: against 193-213 s.  The cool-downs of 1 s and 3 s measured by
#: ``benchmarks/power_probe.py`` restore a GPU after seconds of sustained load; between a
#: sweep's configs the load is a burst of milliseconds.
DEFAULT_DUTY = Duty("cool", 0.1)


#: What ``auto`` sweeps under once a problem is found power-bound: sustained load, the GPU
#: first loaded for 0.2 s (an 8192³ bf16 matmul reaches the H200's 700 W limit within 0.2 s)
#: where it idled longer than ``IDLE_S`` since the last samples.
SUSTAINED = Duty("sustained", 0.2)
#: Seconds without samples after which the GPU counts as idle: the power limiter steps
#: the clock within 15-20 ms of load, so a pause of this length lets it rise again.  A
#: shorter pause does too (on an H100 10 ms let it rise 10-12 %: docs/benchmarks.md), so
#: a trial behind one samples before the cap holds again.  Loading after any pause (5 ms
#: here) tripled a warm sweep of the ffn matmul on the H200, and 20 ms of the config's
#: launches queued after its samples cost a fifth more on an H100; both ranked its top
#: ten further from the cool measurement, so neither was kept.
IDLE_S = 0.05


class _Load:
    """How long this process has kept its GPU under load: since ``since``, the samples
    having ended last at ``last`` (seconds of ``time.perf_counter()``)."""

    def __init__(self) -> None:
        self.since = self.last = -1e9

    def needed(self, now: float, seconds: float) -> float:
        """Seconds of load still needed for ``seconds`` of sustained load at ``now``."""
        if now - self.last > IDLE_S:
            self.since = now
        return max(0.0, seconds - (now - self.since))

    def ended(self, now: float) -> None:
        self.last = now


#: This process's GPU load (one worker process measures on one GPU).
_LOAD = _Load()


def power_bound(reasons: dict[str, float], power_w_max: float | None,
                limit_w: float) -> str | None:
    """Why a sampling window shows a power-bound kernel (the cap engaged, or power at
    ``POWER_BOUND`` of the limit), or ``None``."""
    if reasons.get(POWER_CAP, 0.0) > 0:
        return f"{POWER_CAP} in {100 * reasons[POWER_CAP]:.0f}% of the NVML polls while sampling"
    if power_w_max is not None and limit_w > 0 and power_w_max >= POWER_BOUND * limit_w:
        return (f"board power reached {power_w_max:.0f} W, {100 * power_w_max / limit_w:.0f}% "
                f"of its {limit_w:.0f} W limit, while sampling")
    return None
