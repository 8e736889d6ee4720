"""The per-problem tables a :class:`~sweeper.api.Study` gives: the winners as report.md
shows them, and the torch baselines.  Computed by the report's own functions, so a
notebook and the report never disagree."""

from __future__ import annotations

import pandas as pd

from sweeper.interop import trials_table
from sweeper.kernels import Headline
from sweeper.report._tables import dimension_names, headline_table, rate_column, study_frame
from sweeper.store import Storage
from sweeper.winners import Winners

#: The problem's columns each per-problem table starts with (the dimensions follow).
PROBLEM = ("dtype", "footprint", "cache")


def winners_table(store: Storage) -> pd.DataFrame:
    """One row per problem, in (dtype, footprint, dims, cache) order: the config it ends
    with (``number``, the parameters), ``chosen_by`` (``interleaved final`` or ``sweep
    median``), ``median_ms`` from the samples it was chosen on and ``median_from`` saying
    which, the sweep's median, the headline rate (``gbps`` or ``tflops``) at
    ``median_ms``, % of the ceiling and × the torch baseline where known.  A study with no
    measured trial has no rows but the same columns, typed alike."""
    meta = store.study_meta()
    trials, _ = store.records()
    meta_names = list(meta.param_axes)
    frame = study_frame(meta, trials)
    picks = list(Winners.of(store).picks(trials).values())
    rate = rate_column(frame, Headline(meta.headline))
    shown = headline_table(picks, frame, meta_names, rate)
    typed = trials_table(store)
    problem = typed[["number", *PROBLEM, *typed.attrs["dims"]]]
    params = [c for c in ("grid_label", "grid", "block", *meta_names) if c in shown]
    # the report's order of problems (a merge keeps its left side's): the trials' would
    # be the winners' trial numbers
    out = shown.drop(columns=params).merge(problem, on="number").merge(
        typed[["number", *params]], on="number")
    first = ["problem", *PROBLEM, *typed.attrs["dims"], "number", "chosen_by", *params]
    out = out[first + [c for c in out if c not in first]]
    numbers = ("median_ms", "sweep_median_ms", rate, "pct_ceiling", "x_baseline")
    return out.astype({"problem": "string", "chosen_by": "string", "median_from": "string",
                       "number": "int64", **dict.fromkeys(numbers, "float64")}
                      ).reset_index(drop=True)


def baselines_table(store: Storage) -> pd.DataFrame:
    """One row per torch baseline (``name``, the problem), with its median, the median's
    95 % CI, GB/s and how many samples it took, in (dtype, footprint, dims, cache)
    order; typed alike where there is none."""
    trials, baselines = store.records()
    dims = dimension_names(trials)       # columns even where there is no baseline
    rows = [{"name": b.name, "dtype": b.dtype, "footprint": b.footprint, "cache": b.cache,
             **b.dims, "median_ms": b.stats.median, "ci_lo_ms": b.stats.bounds()[0],
             "ci_hi_ms": b.stats.bounds()[1], "gbps": b.gbps, "samples": len(b.samples_ms)}
            for b in sorted(baselines, key=lambda b: b.problem)]
    times = ("median_ms", "ci_lo_ms", "ci_hi_ms", "gbps")
    columns = ["name", *PROBLEM, *dims, *times, "samples"]
    out = pd.DataFrame(rows, columns=list(dict.fromkeys(
        [*columns[:4], *dims, *(k for r in rows for k in r), *columns])))
    return out.astype({"name": "string", "dtype": "string", "cache": "string",
                       "footprint": "int64", "samples": "int64",
                       **dict.fromkeys(dims, "int64"), **dict.fromkeys(times, "float64")})


__all__ = ["baselines_table", "winners_table"]
