"""Statistics over raw samples: a pure function, so it is tested on synthetic data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Stats:
    """Summary of one trial's samples, in milliseconds (``cv`` is std / mean)."""

    n: int
    mean: float
    median: float
    min: float
    max: float
    p95: float
    p99: float
    std: float
    cv: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def summarize(samples_ms: Sequence[float]) -> Stats:
    """Mean, median, min, max, p95, p99, sample standard deviation and CV."""
    if len(samples_ms) == 0:
        raise ValueError("no samples to summarize")
    x = np.asarray(samples_ms, dtype=np.float64)
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if x.size > 1 else 0.0
    p95, p99 = (float(v) for v in np.percentile(x, [95, 99]))
    return Stats(n=int(x.size), mean=mean, median=float(np.median(x)), min=float(x.min()),
                 max=float(x.max()), p95=p95, p99=p99, std=std,
                 cv=std / mean if mean > 0 else 0.0)


def throughput(amount: float, seconds: float) -> float:
    """``amount`` per second, or 0 when either is not positive (no bytes, no time)."""
    return amount / seconds if amount > 0 and seconds > 0 else 0.0
