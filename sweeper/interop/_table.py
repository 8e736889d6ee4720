"""A study as typed pandas tables: every trial one row, and its raw samples.

The rows are the report's (:func:`sweeper.report.trials_frame`, so a notebook and
``report.md`` agree on every number), with each column given the dtype its values have:
parameters and dimensions as nullable integers where every label is a whole number (a
trial ruled out before it resolved has none: ``<NA>``, never ``nan`` or ``0``), the
status as a categorical of every :class:`~sweeper.trial.TrialStatus` (beside it ``retry``:
a ``crashed`` trial whose worker process was killed from outside, no failure of the
kernel's, whose config is measured again), times and rates
as ``float64`` (rates ``nan`` for a trial without a median, not 0), text as ``string``,
the start time as UTC timestamps, and ``source_hash``: the hash of the kernel's source
the trial was measured on (a study resumed with ``--force`` after its kernel was edited
holds trials of two; ``<NA>`` for one recorded without a hash before such a resume whose
earlier source the study does not name; :class:`~sweeper.winners.Sources`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from sweeper.kernels import Headline
from sweeper.report._shared import blank
from sweeper.report._tables import study_frame
from sweeper.store import Storage
from sweeper.trial import TrialStatus
from sweeper.winners import Sources

#: The first columns, in this order; the axes and dimensions follow, then the rest.
LEAD = ("number", "status", "retry", "reason", "dtype", "footprint", "cache", "grid",
        "block")
#: Columns of the report's frame that repeat another one as text or are for drawing.
DROPPED = ("size_label", "footprint_label", "score")
TEXT = ("reason", "dtype", "cache", "grid_label", "dims", "stop", "stop_reason", "flags",
        "bound")
STATUS = pd.CategoricalDtype([s.value for s in TrialStatus])


def trials_table(store: Storage, *, samples: bool = False) -> pd.DataFrame:
    """One row per trial of ``store`` in journal order, typed (see the module's text);
    ``samples``: with ``samples_ms``, each trial's raw samples as a list (empty for a trial
    that produced none; ``df.explode("samples_ms")`` gives one row per sample).
    ``df.attrs`` holds the study, kernel, GPU, headline unit, parameter and dimension
    names, so a table written to a file says what it is."""
    meta = store.study_meta()
    trials, _ = store.records()
    meta_names = list(meta.param_axes)
    df = study_frame(meta, trials)
    dims = list(df.attrs.get("dims", ()))
    df = df.drop(columns=[c for c in DROPPED if c in df])
    axes = [a for a in meta.axes if a not in (*LEAD, *meta_names, *dims)]
    df = _typed(df, [*meta_names, *dims, *axes])
    for rate in ("gbps", "gflops", "tflops"):     # a trial without a median has no rate,
        if rate in df:                            # nor one of a kernel that declares none
            df[rate] = df[rate].where((df["status"] == "ok") & (df[rate] > 0))
    # in microseconds whatever the stamps hold (pandas infers seconds from none at all)
    df["started"] = pd.to_datetime([t.started or None for t in trials], utc=True,
                                   format="ISO8601").as_unit("us")
    df["wall_s"] = pd.Series([t.wall_s for t in trials], dtype="float64", index=df.index)
    # the kernel source each was measured on: a study resumed with --force after an edit
    # holds trials of two (``df.attrs["kernel_source"]``: the one it has now)
    sources = Sources.of(meta)
    df["source_hash"] = pd.Series([sources.source_of(t) for t in trials],
                                  dtype="string", index=df.index)
    if samples:
        df["samples_ms"] = pd.Series([list(t.samples_ms) for t in trials], dtype=object,
                                     index=df.index)
    order = [c for c in (*LEAD, *meta_names, *dims, *axes) if c in df]
    df = df[order + [c for c in df if c not in order]]
    df.attrs = {"study": meta.study, "kernel": meta.kernel, "gpu": meta.gpu,
                "headline": Headline(meta.headline).unit, "params": list(meta.axes),
                "dims": dims, "kernel_source": sources.now}
    return df


def _typed(df: pd.DataFrame, numeric: list[str]) -> pd.DataFrame:
    """``df`` with each column's dtype set: ``numeric`` names (and grid, block, footprint,
    counts) as nullable integers where every value is one, else as text."""
    out = df.copy()
    out["number"] = out["number"].astype("int64")
    out["status"] = out["status"].astype(STATUS)
    out["retry"] = out["retry"].astype(bool)       # a frame with no rows has it as floats
    for name in ("grid", "block", "footprint", "samples", "discarded", "outliers", *numeric):
        if name in out:
            out[name] = _integers_or_text(out[name])
    for name in TEXT:
        if name in out:
            out[name] = out[name].fillna("").astype("string")
    for name in out.columns:
        if out[name].dtype == object and name not in numeric:
            out[name] = pd.to_numeric(out[name], errors="coerce").astype("float64") \
                if _all_numbers(out[name]) else out[name].astype("string")
    return out


def _integers_or_text(column: pd.Series) -> pd.Series:
    """Nullable integers where every present value is a whole number that a 64-bit
    integer holds, else the labels as text (an axis of expressions such as ``grid: [sms,
    "cdiv(n, BLOCK)"]`` stays text, as does a count a journal edited by hand holds past
    2**63, which stopped the parquet export with an OverflowError)."""
    present = [v for v in column if not blank(v)]
    if all(_whole(v) and -2**63 <= int(v) < 2**63 for v in present):
        return column.map(lambda v: None if blank(v) else int(v)).astype("Int64")
    return column.map(lambda v: None if blank(v) else str(v)).astype("string")


def _whole(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, str) and value.isascii() and value.isdigit()


def _all_numbers(column: pd.Series) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in column.dropna())
