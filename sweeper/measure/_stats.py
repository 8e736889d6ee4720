"""Statistics over raw samples: pure functions, so they are tested on synthetic data.

The median's confidence interval is distribution-free (order statistics of the
binomial), so it holds for the skewed, heavy-tailed timings GPUs produce.
Outliers (outside 1.5 × IQR) are counted, never dropped: every statistic is over
all samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Stats:
    """Summary of one trial's samples, in milliseconds (``cv`` is std / mean).

    ``ci_lo``/``ci_hi`` bound the median at 95 %; ``rel_ci`` is that interval's
    half-width over the median; ``outliers`` counts samples outside 1.5 × IQR.
    """

    n: int
    mean: float
    median: float
    min: float
    max: float
    p95: float
    p99: float
    std: float
    cv: float
    q1: float = math.nan
    q3: float = math.nan
    ci_lo: float = math.nan
    ci_hi: float = math.nan
    rel_ci: float = math.nan
    outliers: int = 0

    def to_dict(self) -> dict[str, float]:
        """The statistics by name, as a trial record stores them."""
        return asdict(self)

    def bounds(self) -> tuple[float, float]:
        """The median's 95 % interval; the median itself for a bound not known (statistics
        a journal written by hand left out)."""
        return (self.median if math.isnan(self.ci_lo) else self.ci_lo,
                self.median if math.isnan(self.ci_hi) else self.ci_hi)


def summarize(samples_ms: Sequence[float]) -> Stats:
    """Mean, median, min, max, p95, p99, std, CV, quartiles, the median's CI, outliers."""
    if len(samples_ms) == 0:
        raise ValueError("no samples to summarize")
    x = np.asarray(samples_ms, dtype=np.float64)
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if x.size > 1 else 0.0
    p95, p99, q1, q3 = (float(v) for v in np.percentile(x, [95, 99, 25, 75]))
    median = float(np.median(x))
    lo, hi = median_ci(x)
    return Stats(n=int(x.size), mean=mean, median=median, min=float(x.min()),
                 max=float(x.max()), p95=p95, p99=p99, std=std,
                 cv=std / mean if mean > 0 else 0.0, q1=q1, q3=q3, ci_lo=lo, ci_hi=hi,
                 rel_ci=(hi - lo) / 2 / median if median > 0 else math.inf,
                 outliers=int(outlier_mask(x).sum()))


def median_ci(samples: Sequence[float] | np.ndarray, z: float = Z95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median (normal approximation of
    the binomial ranks); the whole range when there are too few samples."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = x.size
    half = z * math.sqrt(n) / 2
    lo = math.floor(n / 2 - half)               # 1-based rank of the lower bound
    hi = math.ceil(n / 2 + half) + 1            # 1-based rank of the upper bound
    if lo < 1 or hi > n:
        return float(x[0]), float(x[-1])
    return float(x[lo - 1]), float(x[hi - 1])


def outlier_mask(samples: Sequence[float] | np.ndarray) -> np.ndarray:
    """True for samples outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] (Tukey's fences)."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size < 4:
        return np.zeros(x.size, dtype=bool)
    q1, q3 = np.percentile(x, [25, 75])
    iqr = q3 - q1
    mask: np.ndarray = (x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr)
    return mask


def throughput(amount: float, seconds: float) -> float:
    """``amount`` per second, or 0 when either is not positive (no bytes, no time)."""
    return amount / seconds if amount > 0 and seconds > 0 else 0.0


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation (average ranks for ties)."""
    from scipy.stats import rankdata

    ra, rb = rankdata(a), rankdata(b)
    if ra.std() == 0 or rb.std() == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])
