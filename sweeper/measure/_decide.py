"""Decisions over samples: when to stop sampling, who is tied, and A-vs-B verdicts.

Pure functions over raw samples (milliseconds), unit-tested on synthetic data.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from sweeper.measure._notes import Stop, StopReason
from sweeper.measure._stats import median_ci, summarize

K = TypeVar("K", bound=Hashable)

#: The smallest difference of medians worth acting on: 1 % of every launch's time.  Two
#: configs closer than this are the SAME in practice however tight their intervals (a
#: long run separates any two configs statistically); the finals use it to trade speed
#: for steadiness, ``compare`` and ``ab`` to call a difference.
PRACTICAL = 0.01


@dataclass(frozen=True)
class StopRule:
    """When a trial has enough samples.

    ``kind`` is ``fixed`` (exactly ``repeat`` samples), ``ci`` (the median's 95 % CI
    half-width over the median below ``target``) or ``stdrel`` (std / mean below
    ``target``, nvbench's rule).  Adaptive rules also need ``min_samples`` and
    ``min_time_s`` and give up at ``max_time_s`` (the trial is flagged unconverged).
    """

    kind: str = "fixed"
    repeat: int = 50
    target: float = 0.005
    min_samples: int = 10
    min_time_s: float = 0.0
    max_time_s: float = 1.0

    def check(self, samples: Sequence[float], elapsed_s: float) -> StopReason | None:
        """Why to stop now, or ``None`` to keep sampling.

        ``min_time_s`` counts measured (GPU) time, the sum of the samples, as nvbench's
        does; ``max_time_s`` counts wall time since sampling began.
        """
        n = len(samples)
        if self.kind == "fixed":
            return StopReason(Stop.FIXED, f"fixed: {self.repeat} samples") \
                if n >= self.repeat else None
        if n >= max(self.min_samples, 2) and sum(samples) / 1e3 >= self.min_time_s:
            noise = self.noise(samples)
            if noise < self.target:
                return StopReason(Stop.CONVERGED, f"converged: {self.kind} {100 * noise:.2f}% "
                                  f"< {100 * self.target:g}% after {n} samples")
        if elapsed_s >= self.max_time_s:
            return StopReason(Stop.UNCONVERGED, (
                f"unconverged: max_time {self.max_time_s:g} s reached with {self.kind} "
                f"{100 * self.noise(samples):.2f}% after {n} samples"))
        return None

    def noise(self, samples: Sequence[float]) -> float:
        """What the rule holds against ``target``: the median's relative 95 % CI half-width
        (``ci``) or std / mean (otherwise); infinite with fewer than two samples, so no
        rule stops on one."""
        if len(samples) < 2:
            return float("inf")
        s = summarize(samples)
        return s.rel_ci if self.kind == "ci" else s.cv

    @property
    def chunk(self) -> int:
        """Samples recorded between two checks (one synchronize each)."""
        return self.repeat if self.kind == "fixed" else max(5, min(self.min_samples, 20))


def tied_set(candidates: Mapping[K, Sequence[float]]) -> tuple[K, list[K]]:
    """The fastest candidate by median and every candidate whose median CI overlaps its CI."""
    if not candidates:
        raise ValueError("no candidates")
    cis = {k: median_ci(v) for k, v in candidates.items()}
    best = min(candidates, key=lambda k: float(np.median(candidates[k])))
    lo, hi = cis[best]
    tied = [k for k, (a, b) in cis.items() if a <= hi and b >= lo]
    return best, tied


class Verdict(str, enum.Enum):
    """B against A: FASTER or SLOWER (apart, by more than the practical threshold), SAME
    (within it), or UNCLEAR (too noisy to say); see :func:`compare_samples`."""

    SAME = "SAME"
    FASTER = "FASTER"
    SLOWER = "SLOWER"
    UNCLEAR = "UNCLEAR"


@dataclass(frozen=True)
class Comparison:
    """B against A in time: ``ratio`` = median B / median A, with a conservative interval.

    ``threshold`` is the practical threshold the verdict was given under, and
    ``separated`` whether the medians' 95 % CIs are apart: SAME with ``separated`` means
    a real difference too small to matter.
    """

    verdict: Verdict
    ratio: float
    lo: float
    hi: float
    threshold: float = PRACTICAL
    separated: bool = False

    @property
    def practically_same(self) -> bool:
        """SAME only because the medians are within the threshold (their CIs are apart)."""
        return self.verdict is Verdict.SAME and self.separated


def compare_samples(a: Sequence[float], b: Sequence[float], max_noise: float = 0.05,
                    threshold: float = PRACTICAL) -> Comparison:
    """B against A.  FASTER/SLOWER when the medians' 95 % CIs are apart and the medians
    differ by more than ``threshold`` (either way: ``max(r, 1/r) > 1 + threshold`` for the
    ratio ``r``, so swapping A and B swaps the verdict); SAME when the medians are within
    the threshold and their CIs are apart, or overlap with both tighter than
    ``max_noise``; UNCLEAR when the CIs overlap but one is too noisy to say, or the
    medians differ by more than the threshold (a 5 % gap inside two ±4 % intervals is
    neither a difference shown nor one ruled out: the finals' tie rule asks both too)."""
    if threshold < 0:
        raise ValueError(f"threshold >= 0 must hold, but got {threshold=}")
    sa, sb = summarize(a), summarize(b)
    ratio = sb.median / sa.median
    lo, hi = sb.ci_lo / sa.ci_hi, sb.ci_hi / sa.ci_lo
    separated = sb.ci_hi < sa.ci_lo or sb.ci_lo > sa.ci_hi
    within = max(ratio, 1 / ratio) <= 1 + threshold
    if separated and within:
        verdict = Verdict.SAME
    elif sb.ci_hi < sa.ci_lo:
        verdict = Verdict.FASTER
    elif sb.ci_lo > sa.ci_hi:
        verdict = Verdict.SLOWER
    elif within and max(sa.rel_ci, sb.rel_ci) <= max_noise:
        verdict = Verdict.SAME
    else:
        verdict = Verdict.UNCLEAR
    return Comparison(verdict, ratio, lo, hi, threshold, separated)
