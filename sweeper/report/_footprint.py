"""Compute footprint curves (pure pandas): a study's rate against the bytes of its
problems, one curve per dtype.  :mod:`._draw` only draws them.

What a curve promises a reader:

- A point is the config a problem ends with (what ``sweeper export`` writes), at the one
  median the report gives it (the interleaved final's, else the sweep's); its error bar
  is that median's 95 % interval, as a rate.  Cold and warm problems are two lines.
- The dotted line is one config (the one the largest cold footprint ends with) at every
  footprint it was measured at, sweep medians: how far one config carries.
- The reference lines are what the GPU reaches, not what the kernel should: torch
  ``copy_`` as ``sweeper calibrate`` measured it at each footprint and cache mode (a
  GB/s curve) or ``torch.matmul`` at 8192³ on the dtype (a TFLOP/s curve), and the
  physical bound (DRAM, or the dtype's FLOP/s) where the device could derive it.
- The L2 is marked where a launch's working set (the bytes it touches, the kernel's
  ``working_set``, recorded with each trial) reaches the L2 size, which is not where the
  footprint does: a copy's footprint is one array and its working set two.  Left of the
  line a problem's working set fits in the L2 (its trials on a GPU are flagged
  L2-resident), so its rate says little about device memory.
- A dtype whose measured problems span fewer than two footprints has no curve (a line
  needs two points), nor one with two problems of one cache mode at one footprint
  (shapes named by their dimensions: a matmul of 8192 x 8192 x 256 and one of 8192³
  hold 128 MiB each), whose rate is then no function of the footprint; the report then
  draws nothing and says nothing about it (its tables and maps give each problem).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from sweeper.bounds import Bounds
from sweeper.ceilings import Ceilings
from sweeper.report._provenance import approx_size
from sweeper.report._tables import LABELS, PROBLEM_ORDER, at_median, problem_key, unit, value_label
from sweeper.space import format_size
from sweeper.winners import Pick

#: Columns of :attr:`FootprintCurve.points`.
POINT_COLUMNS = ["problem", "footprint", "cache", "number", "median_ms", "median_from",
                 "rate", "lo", "hi", "working_set"]
#: Columns of :attr:`FootprintCurve.trace` and :attr:`FootprintCurve.ceiling`.
REFERENCE_COLUMNS = ["footprint", "cache", "rate"]


class FootprintCurve(NamedTuple):
    """One dtype's rate against footprint, and the references it is drawn against."""

    name: str                  # file stem
    dtype: str
    title: str
    metric: str                # the rate column: gbps, tflops or score
    points: pd.DataFrame       # POINT_COLUMNS: each problem's chosen config
    trace: pd.DataFrame        # footprint, cache, rate: one config at every footprint
    trace_label: str           # which config the trace follows ("" when none)
    ceiling: pd.DataFrame      # footprint, cache, rate: the calibrated reference
    ceiling_label: str         # what the reference is ("" when none)
    l2_bytes: int              # 0 when unknown
    l2_footprint: float        # the footprint whose working set is the L2 (0 when unknown)
    bound: float | None        # the physical bound, in the curve's unit
    bound_label: str
    caption: str


def footprint_curves(df: pd.DataFrame, picks: Sequence[Pick], metric: str, *, kernel: str,
                     gpu: str, grid_names: Sequence[str], l2_bytes: int = 0,
                     ceilings: Ceilings | None = None, bounds: Bounds | None = None
                     ) -> list[FootprintCurve]:
    """A curve per dtype whose chosen configs span two footprints or more, each of a
    cache mode's problems at a footprint of its own, dtypes in name order.  ``df`` is
    :func:`sweeper.report.trials_frame`'s table, ``picks`` the config each problem ends
    with, ``grid_names`` the columns that name a config apart from its problem (grid
    label, block, meta-parameters)."""
    points = chosen_points(df, picks, metric)
    out = []
    for dtype, sub in points.groupby("dtype", sort=True):
        if sub["footprint"].nunique() < 2 or sub.duplicated(["footprint", "cache"]).any():
            continue
        sub = sub.drop(columns="dtype").reset_index(drop=True)
        trace, trace_label = _trace(df, sub, dtype, metric, grid_names)
        ceiling, ceiling_label = _ceiling(sub, dtype, metric, ceilings)
        bound, bound_label = _bound(dtype, metric, bounds)
        curve = FootprintCurve(
            name=f"footprint_{dtype}", dtype=str(dtype),
            title=f"{kernel} · {dtype} · {gpu} · {unit(metric)} against footprint",
            metric=metric, points=sub, trace=trace,
            trace_label=trace_label, ceiling=ceiling, ceiling_label=ceiling_label,
            l2_bytes=l2_bytes, l2_footprint=l2_footprint(sub, l2_bytes), bound=bound,
            bound_label=bound_label, caption="")
        out.append(curve._replace(caption=caption(curve)))
    return out


def chosen_points(df: pd.DataFrame, picks: Sequence[Pick], metric: str) -> pd.DataFrame:
    """Each problem's chosen config: its ``metric`` rate at the median it was chosen on,
    that median's 95 % interval as rates (``lo``, ``hi``) and its working set (the bytes a
    launch moves where its trial recorded none: the kernel's default), problems in report
    order."""
    by_number = df.set_index("number")
    rows = []
    for pick in picks:
        t = by_number.loc[pick.trial.number]
        stats = pick.final.winner_row().stats if pick.final else pick.trial.stats
        if stats is None:
            continue
        ci_lo, ci_hi = stats.bounds()
        rate = float(t[metric])
        rows.append({"problem": problem_key(t), "dtype": t["dtype"],
                     "footprint": int(t["footprint"]), "cache": t["cache"],
                     "number": pick.trial.number, "median_ms": pick.median_ms,
                     "median_from": pick.median_from,
                     "rate": at_median(rate, t["median_ms"], pick.median_ms),
                     "lo": at_median(rate, t["median_ms"], ci_hi),
                     "hi": at_median(rate, t["median_ms"], ci_lo),
                     "working_set": pick.trial.working_set
                     or t["gbps"] * t["median_ms"] * 1e6})
    frame = pd.DataFrame(rows, columns=["dtype", *POINT_COLUMNS])
    order = [c for c in PROBLEM_ORDER if c in frame]
    return frame.sort_values(order, kind="stable").reset_index(drop=True)


def l2_footprint(points: pd.DataFrame, l2_bytes: int) -> float:
    """The footprint at which a launch's working set reaches ``l2_bytes``, so that left of
    it a problem's working set fits in the L2: between two measured footprints,
    interpolated on log scales; beyond them, at the nearest one's ratio of working set to
    footprint.  0 where the L2 or the working sets are unknown."""
    sizes = points.groupby("footprint")["working_set"].max().sort_values()
    sizes = sizes[sizes > 0]
    if not l2_bytes or sizes.empty:
        return 0.0
    held, sets = sizes.index.to_numpy(float), sizes.to_numpy(float)
    if sets[0] < l2_bytes < sets[-1]:
        return float(2 ** np.interp(math.log2(l2_bytes), np.log2(sets), np.log2(held)))
    end = 0 if l2_bytes <= sets[0] else -1
    return float(l2_bytes * held[end] / sets[end])


def _trace(df: pd.DataFrame, points: pd.DataFrame, dtype: str, metric: str,
           names: Sequence[str]) -> tuple[pd.DataFrame, str]:
    """The config the largest footprint ends with (cold first), at every footprint of its
    cache it was measured at; empty where it was measured at one footprint only."""
    ref = points.sort_values(["footprint", "cache"], ascending=[False, True],
                             kind="stable").iloc[0]
    row = df.set_index("number").loc[ref["number"]]
    same = df[(df["status"] == "ok") & (df["dtype"] == dtype) & (df["cache"] == ref["cache"])]
    for name in names:
        same = same[same[name].astype(str) == str(row[name])]
    same = same.sort_values("footprint", kind="stable").drop_duplicates("footprint")
    if len(same) < 2:
        return pd.DataFrame(columns=REFERENCE_COLUMNS), ""
    config = " ".join(f"{n}={value_label(row[n])}" for n in names if n != "grid_label")
    label = (f"#{ref['number']}'s config ({row['grid_label']} {config}), the "
             f"{format_size(int(ref['footprint']))} {ref['cache']} choice, at every footprint")
    trace = same[["footprint", "cache", metric]].rename(columns={metric: "rate"})
    return trace.reset_index(drop=True), label


def _ceiling(points: pd.DataFrame, dtype: str, metric: str, ceilings: Ceilings | None
             ) -> tuple[pd.DataFrame, str]:
    """The calibrated reference across the curve's footprints, per cache mode: the copy
    bandwidth (interpolated between the calibrated footprints, as reports do) for GB/s,
    the dtype's matmul rate for TFLOP/s; empty without ceilings or for another rate."""
    lo, hi = int(points["footprint"].min()), int(points["footprint"].max())
    if ceilings is not None and metric == "gbps" and ceilings.copy:
        xs = sorted({lo, hi, *(fp for fp in ceilings.copy if lo < fp < hi)})
        rows = [{"footprint": x, "cache": c, "rate": ceilings.bandwidth(x, c)}
                for c in sorted(points["cache"].unique()) for x in xs]
        return pd.DataFrame(rows), f"torch copy_, calibrated ({ceilings.measured})"
    peak = ceilings.matmul_peak(dtype) if ceilings is not None and metric == "tflops" else None
    if peak is None:
        return pd.DataFrame(columns=REFERENCE_COLUMNS), ""
    rows = [{"footprint": x, "cache": "", "rate": peak[1]} for x in (lo, hi)]
    return pd.DataFrame(rows), f"torch.matmul {peak[0]} 8192³, calibrated"


def _bound(dtype: str, metric: str, bounds: Bounds | None) -> tuple[float | None, str]:
    """The physical bound in the curve's unit: DRAM for GB/s, the dtype's FLOP/s for
    TFLOP/s."""
    if bounds is None:
        return None, ""
    if metric == "gbps" and bounds.dram:
        return bounds.dram.per_s / 1e9, f"DRAM bound {bounds.dram.rate_text()} (physical)"
    if metric == "tflops" and dtype in bounds.flops:
        b = bounds.flops[dtype]
        return b.per_s / 1e12, f"{dtype} FLOP bound {b.rate_text()} (physical)"
    return None, ""


def caption(curve: FootprintCurve) -> str:
    """What the curve's marks mean, for the figure and the report."""
    parts = [f"points: the config each problem ends with, {LABELS.get(curve.metric, curve.metric)}"
             " at the median it was chosen on; bars: that median's 95% CI"]
    if curve.trace_label:
        parts.append(f"dotted: {curve.trace_label} (sweep medians)")
    if curve.ceiling_label:
        parts.append(f"thin: {curve.ceiling_label}")
    if curve.bound is not None:
        parts.append(f"dashed: {curve.bound_label}")
    if curve.l2_footprint:
        parts.append(f"grey: the {format_size(curve.l2_bytes)} L2, at the footprint whose "
                     "working set (the bytes a launch touches) fills it, "
                     f"{approx_size(curve.l2_footprint)}: left of it a problem fits in the L2")
    return "; ".join(parts)

