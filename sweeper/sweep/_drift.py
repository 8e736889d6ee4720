"""Drift, for a sampler that varies one axis at a time around a baseline config
(``takes_baseline``): that config measured again at the end of the sweep.  How far its
median moved since its trial (``drift_pct``) is how much of the differences between
configs measured that far apart the GPU's state, not the config, may explain.
"""

from __future__ import annotations

from collections.abc import Mapping

from sweeper.measure import summarize
from sweeper.space import Space
from sweeper.store import DriftRecord, Storage, TrialRecord, key_of
from sweeper.sweep._bench import Bench


def measure_drift(space: Space, done: Mapping[tuple[str, ...], TrialRecord], bench: Bench,
                  store: Storage) -> DriftRecord | None:
    """The baseline trial measured again and recorded, or None if it has no result."""
    base = done.get(key_of(dict(space.sampler.baseline)))
    if base is None or not base.ok or base.stats is None:
        return None
    samples = bench.again(base, bench.measure.rule())
    stats = summarize(samples)
    record = DriftRecord(
        number=base.number, samples_ms=samples, stats=stats,
        drift_pct=100 * (stats.median - base.stats.median) / base.stats.median)
    store.append(record)
    return record
