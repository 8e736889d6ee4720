import numpy as np
import pytest

from sweeper.measure import summarize, throughput


def test_summary_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.lognormal(mean=0.0, sigma=0.1, size=1000)
    s = summarize(list(x))
    assert s.n == 1000
    assert s.median == pytest.approx(np.median(x))
    assert s.mean == pytest.approx(x.mean())
    assert s.min == x.min() and s.max == x.max()
    assert s.p95 == pytest.approx(np.percentile(x, 95))
    assert s.p99 == pytest.approx(np.percentile(x, 99))
    assert s.std == pytest.approx(x.std(ddof=1))
    assert s.cv == pytest.approx(x.std(ddof=1) / x.mean())


def test_median_resists_one_outlier():
    # the seed's example: nine runs near 1.02 ms and one interrupted at 2.15 ms
    s = summarize([1.02, 1.01, 1.03, 1.02, 1.01, 1.02, 1.03, 1.01, 1.02, 2.15])
    assert s.median == pytest.approx(1.02)
    assert s.mean == pytest.approx(1.132)
    assert s.max == 2.15


def test_single_sample_has_zero_spread():
    s = summarize([3.0])
    assert (s.median, s.std, s.cv) == (3.0, 0.0, 0.0)


def test_no_samples_is_an_error():
    with pytest.raises(ValueError):
        summarize([])


def test_throughput():
    assert throughput(2e9, 0.5) == 4e9
    assert throughput(0, 1.0) == 0.0
    assert throughput(1e9, 0.0) == 0.0
