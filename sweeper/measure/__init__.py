"""Measure: the timers, the sampling loop, statistics and decisions over raw samples."""

from sweeper.measure._decide import (
    PRACTICAL,
    Comparison,
    StopRule,
    Verdict,
    compare_samples,
    tied_set,
)
from sweeper.measure._duty import DEFAULT_DUTY, SUSTAINED, Duty, power_bound
from sweeper.measure._notes import Flag, Note, Stop, StopReason, TrialFlag
from sweeper.measure._sampling import MAX_DISCARDS, Timing, sample_until
from sweeper.measure._spent import Spent
from sweeper.measure._stats import Stats, median_ci, outlier_mask, spearman, summarize, throughput
from sweeper.measure._timer import time_cuda, time_host

__all__ = ["DEFAULT_DUTY", "MAX_DISCARDS", "PRACTICAL", "SUSTAINED", "Comparison", "Duty",
           "Flag", "Note", "Spent", "Stats", "Stop", "StopReason", "StopRule", "Timing",
           "TrialFlag", "Verdict", "compare_samples", "median_ci", "outlier_mask", "power_bound",
           "sample_until", "spearman", "summarize", "throughput", "tied_set", "time_cuda",
           "time_host"]
