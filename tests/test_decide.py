"""Stopping rules, throttle discards, ties and A/B verdicts on synthetic samples."""

import re

import numpy as np
import pytest

from sweeper.devices._nvml import GpuState, NullReader, throttle_reason
from sweeper.measure import (
    MAX_DISCARDS,
    PRACTICAL,
    Stop,
    StopReason,
    StopRule,
    Verdict,
    compare_samples,
    median_ci,
    outlier_mask,
    sample_until,
    spearman,
    summarize,
    tied_set,
)

RNG = np.random.default_rng(7)


def noisy(median: float, rel: float, n: int) -> list[float]:
    return list(median * (1 + rel * RNG.standard_normal(n)))


def test_median_ci_covers_the_median_and_narrows_with_n():
    x = noisy(1.0, 0.02, 50)
    lo, hi = median_ci(x)
    s = sorted(x)
    assert (lo, hi) == (s[17], s[32])          # ranks 18 and 33 of 50 (1-based)
    assert lo <= np.median(x) <= hi
    wide = np.subtract(*median_ci(noisy(1.0, 0.02, 20))[::-1])
    narrow = np.subtract(*median_ci(noisy(1.0, 0.02, 2000))[::-1])
    assert narrow < wide / 4


def test_median_ci_of_few_samples_is_the_range():
    assert median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)


def test_outliers_are_counted_not_dropped():
    x = [1.0] * 20 + [1.01] * 20 + [5.0]
    assert outlier_mask(x).sum() == 1
    s = summarize(x)
    assert s.outliers == 1 and s.n == 41 and s.max == 5.0


def test_fixed_rule_stops_at_repeat():
    rule = StopRule(kind="fixed", repeat=5)
    assert rule.check([1.0] * 4, 0.0) is None
    assert rule.check([1.0] * 5, 0.0) == StopReason(Stop.FIXED, "fixed: 5 samples")


def test_ci_rule_needs_min_samples_then_stops_when_quiet():
    rule = StopRule(kind="ci", target=0.005, min_samples=10, max_time_s=10)
    quiet = noisy(1.0, 0.001, 30)
    assert rule.check(quiet[:5], 0.1) is None
    assert rule.check(quiet, 0.1).kind is Stop.CONVERGED
    assert rule.check(quiet, 0.1).text.startswith("converged: ci ")
    loud = noisy(1.0, 0.2, 30)
    assert rule.check(loud, 0.1) is None
    assert rule.check(loud, 10.0).kind is Stop.UNCONVERGED
    assert rule.check(loud, 10.0).text.startswith("unconverged: max_time 10 s")


def test_min_time_counts_gpu_time():
    rule = StopRule(kind="stdrel", target=0.01, min_samples=2, min_time_s=0.5, max_time_s=60)
    samples = [10.0] * 20                       # 0.2 s of GPU time
    assert rule.check(samples, 5.0) is None
    assert rule.check(samples * 3, 5.0).text.startswith("converged: stdrel 0.00%")


def test_sampling_loop_discards_throttled_chunks():
    rule = StopRule(kind="fixed", repeat=6)
    chunks = iter([[9.0] * 6, [1.0] * 6])
    states = iter(["SM clock 500 MHz < 75% of its usual 1980 MHz", None])
    timing = sample_until(lambda k: next(chunks), rule, throttled=lambda: next(states))
    assert timing.samples == [1.0] * 6
    assert timing.discarded == 6 and timing.discard_reasons[0].startswith("SM clock 500 MHz")


def test_sampling_loop_keeps_samples_after_max_discards_and_says_so():
    rule = StopRule(kind="fixed", repeat=2)
    timing = sample_until(lambda k: [2.0] * k, rule, throttled=lambda: "throttled: hw_slowdown")
    assert timing.samples == [2.0, 2.0] and timing.discarded == 2 * MAX_DISCARDS
    assert timing.discard_reasons[-1] == "kept while throttled: throttled: hw_slowdown"


def test_adaptive_loop_takes_chunks_until_converged():
    rule = StopRule(kind="ci", target=0.01, min_samples=10, max_time_s=100)
    calls = []

    def take(k):
        calls.append(k)
        return noisy(1.0, 0.01, k)
    timing = sample_until(take, rule)
    assert timing.converged and len(timing.samples) == sum(calls) >= 10
    assert timing.stop_reason.kind is Stop.CONVERGED and timing.converged


def test_throttle_reason_from_state():
    assert throttle_reason(None, 1980) is None
    assert throttle_reason(GpuState(sm_mhz=1900), 1980) is None
    assert throttle_reason(GpuState(sm_mhz=1000), 1980) == \
        "SM clock 1000 MHz < 75% of its usual 1980 MHz"
    assert throttle_reason(GpuState(sm_mhz=1900, throttle=("sw_power_cap",)), 1980) is None
    assert throttle_reason(GpuState(sm_mhz=1900, throttle=("hw_thermal_slowdown",)), 1980) == \
        "throttled: hw_thermal_slowdown"
    reader = NullReader()
    assert reader.read() is None and "NVML is not available" in reader.note


def test_tied_set_is_everything_overlapping_the_best():
    candidates = {"a": noisy(1.000, 0.002, 60), "b": noisy(1.0005, 0.002, 60),
                  "c": noisy(1.10, 0.002, 60)}
    best, tied = tied_set(candidates)
    assert best in ("a", "b") and set(tied) == {"a", "b"}


@pytest.mark.parametrize("b, verdict", [
    (noisy(0.90, 0.002, 60), Verdict.FASTER),
    (noisy(1.10, 0.002, 60), Verdict.SLOWER),
    (noisy(1.00, 0.002, 60), Verdict.SAME),
    (noisy(1.00, 0.5, 8), Verdict.UNCLEAR),
])
def test_compare_verdicts(b, verdict):
    a = noisy(1.0, 0.002, 60)
    result = compare_samples(a, b)
    assert result.verdict is verdict
    assert result.lo <= result.ratio <= result.hi


def test_a_difference_within_the_practical_threshold_is_the_same():
    """0.3 % apart with tight intervals: statistically SLOWER, practically SAME; the rule
    is symmetric, so swapping A and B swaps FASTER and SLOWER but keeps SAME."""
    a = [1.0 + 1e-5 * (i % 7) for i in range(60)]
    b = [x * 1.003 for x in a]
    same = compare_samples(a, b)
    assert same.threshold == PRACTICAL == 0.01
    assert same.verdict is Verdict.SAME and same.separated and same.practically_same
    assert same.ratio == pytest.approx(1.003)
    assert compare_samples(b, a).verdict is Verdict.SAME
    strict = compare_samples(a, b, threshold=0.0)
    assert strict.verdict is Verdict.SLOWER and not strict.practically_same
    assert compare_samples(b, a, threshold=0.0).verdict is Verdict.FASTER
    slower = compare_samples(a, [x * 1.02 for x in a])          # beyond the threshold
    assert slower.verdict is Verdict.SLOWER
    assert compare_samples([x * 1.02 for x in a], a).verdict is Verdict.FASTER
    overlapping = compare_samples(a, a)                          # the CIs overlap: SAME
    assert overlapping.verdict is Verdict.SAME and not overlapping.practically_same
    message = "threshold >= 0 must hold, but got threshold=-0.1"
    with pytest.raises(ValueError, match=re.escape(message)):
        compare_samples(a, b, threshold=-0.1)


def test_a_noisy_pair_within_the_threshold_stays_unclear():
    """The threshold never hides noise: overlapping intervals too wide to judge stay UNCLEAR
    even when the medians happen to be close."""
    a = noisy(1.0, 0.002, 60)
    b = [1.0, 0.5, 1.5, 1.002, 0.6, 1.4, 1.001, 0.7]
    result = compare_samples(a, b)
    assert not result.separated and result.verdict is Verdict.UNCLEAR


def test_overlapping_intervals_with_medians_apart_beyond_the_threshold_are_unclear():
    """Medians 5 % apart, each within ±5 % noise: the intervals overlap, so no difference
    is shown, and the gap is five times the threshold, so none is ruled out either: the
    verdict is UNCLEAR, never SAME (the finals do not tie two such configs either)."""
    a = [1.0 + 0.08 * (k - 10) / 10 for k in range(21)]            # ±4 % CI
    b = [x * 1.05 for x in a]
    result = compare_samples(a, b)
    assert not result.separated and result.ratio == pytest.approx(1.05)
    assert max(summarize(a).rel_ci, summarize(b).rel_ci) <= 0.05
    assert result.verdict is Verdict.UNCLEAR
    assert compare_samples(b, a).verdict is Verdict.UNCLEAR
    assert compare_samples(a, b, threshold=0.06).verdict is Verdict.SAME


def test_spearman():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 2, 3], [1, 2, 2, 3]) == pytest.approx(1.0)
