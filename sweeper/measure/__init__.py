"""Measure: the timers and the statistics over their raw samples."""

from sweeper.measure._stats import Stats, summarize, throughput
from sweeper.measure._timer import time_cuda, time_host

__all__ = ["Stats", "summarize", "throughput", "time_cuda", "time_host"]
