"""The limits check: a result faster than the device's physical bounds (``bounds``) or
above the bandwidth ceiling ``sweeper calibrate`` measured (``ceilings``).

Such a result is more likely a lost launch or a timing gone wrong than a fast kernel, so
the config is re-verified and re-timed once.  Still beyond a physical bound, the trial
fails as ``impossible``; still above the ceiling only, it is flagged ``suspicious`` and
cannot win; within both the second time, it keeps that result, flagged ``re-timed``.
"""

from __future__ import annotations

from collections.abc import Callable

from sweeper.bounds import Bounds
from sweeper.ceilings import SUSPICIOUS, Ceilings
from sweeper.kernels import Kernel
from sweeper.measure import Flag, TrialFlag
from sweeper.space import Config
from sweeper.trial import TrialResult, TrialStatus

RECHECKED = "after re-verifying and re-timing"


class Limits:
    """The bounds of the device and, where measured, its ceilings, for ``kernel``."""

    def __init__(self, kernel: Kernel, bounds: Bounds, ceilings: Ceilings | None) -> None:
        self.kernel, self.bounds, self.ceilings = kernel, bounds, ceilings

    def check(self, config: Config, result: TrialResult,
              again: Callable[[], TrialResult]) -> TrialResult:
        """``result`` if it is within the limits, else the result of ``again`` (the
        config verified and timed once more), failed or flagged as it still is."""
        first = self.beyond(config, result)
        if first is None:
            return result
        second = again()
        if second.status is not TrialStatus.OK:
            return second
        still = self.beyond(config, second)
        if still is None:
            second.flags.append(TrialFlag(
                Flag.RETIMED, f"re-timed: the first run was beyond a limit ({first[0]})"))
        elif still[1]:
            second.status = TrialStatus.IMPOSSIBLE
            second.reason = f"{still[0]}; still beyond {RECHECKED}"
        else:
            second.flags.append(TrialFlag(
                Flag.SUSPICIOUS, f"suspicious: {still[0]}, {RECHECKED}; it cannot win"))
        return second

    def beyond(self, config: Config, result: TrialResult) -> tuple[str, bool] | None:
        """(why, whether physically impossible) for a result beyond a limit, else None."""
        problem = config.problem
        if result.stats is not None:
            why = self.bounds.beyond(self.kernel.bytes_moved(problem),
                                     self.kernel.flops(problem), problem.dtype,
                                     result.stats.median * 1e-3)
            if why is not None:
                return why, True
        if self.ceilings is None or not self.ceilings.copy or not result.gbps:
            return None
        ceiling = self.ceilings.bandwidth(problem.footprint, config.cache)
        if result.gbps <= SUSPICIOUS * ceiling:
            return None
        return (f"{result.gbps:.4g} GB/s is above the calibrated {ceiling:.4g} GB/s ceiling "
                "at this footprint"), False
