"""Compute what reports show (pure pandas): trial table, heatmap grids, best configs."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from sweeper.ceilings import Ceilings
from sweeper.finals import FinalRecord, Pick
from sweeper.kernels import Headline
from sweeper.space import format_size
from sweeper.store import BaselineRecord, TrialRecord

STAT_COLUMNS = ("median", "mean", "min", "max", "p95", "p99", "std", "cv", "ci_lo", "ci_hi",
                "rel_ci", "outliers")
#: What a rate column holds, for colour bars and plot axes.
LABELS = {"gbps": "effective GB/s (read + write, median)", "tflops": "TFLOP/s (FLOPs / median)",
          "score": "score"}


def trials_frame(trials: Sequence[TrialRecord], meta_names: Sequence[str],
                 ceilings: Ceilings | None = None, headline: Headline = Headline.GBPS
                 ) -> pd.DataFrame:
    """One row per trial: choice labels, resolved values, status, statistics, throughput,
    stopping rule, flags, energy and, with ceilings, % of the ceiling of the ``headline``
    rate (copy bandwidth, or the dtype's matmul rate) and roofline place."""
    rows = []
    for t in trials:
        cfg = t.config or {}
        row: dict[str, Any] = {
            "number": t.number, "status": t.status.value, "reason": t.reason or "",
            "grid_label": t.choice.get("grid", ""), "grid": cfg.get("grid"),
            "block": cfg.get("block", _number(t.choice.get("block", ""))),
            "dtype": t.choice.get("dtype"), "footprint_label": t.choice.get("footprint"),
            "footprint": cfg.get("footprint"),
            "cache": cfg.get("cache", t.choice.get("cache", "cold")), "cold_s": t.cold_s,
            "gbps": t.gbps, "gflops": t.gflops, "tflops": t.rate(Headline.TFLOPS),
            "score": t.score,
            "samples": len(t.samples_ms),
            "stop_reason": t.stop_reason, "discarded": t.discarded, "flags": "; ".join(t.flags),
            "energy_j": t.energy_j if t.energy_j is not None else np.nan,
            "sm_mhz": (t.clocks or {}).get("sm_mhz_mean") or np.nan,
            "capped": (t.clocks or {}).get("reasons", {}).get("sw_power_cap", 0.0),
            "gb_per_j": (t.gbps * t.stats["median"] * 1e-3 / t.energy_j
                         if t.energy_j and t.stats else np.nan),
        }
        for name in meta_names:
            row[name] = cfg.get("meta", {}).get(name, _number(t.choice.get(name, "")))
        for stat in STAT_COLUMNS:
            key = f"{stat}_ms" if stat in ("median", "mean", "min", "max", "p95", "p99", "std",
                                           "ci_lo", "ci_hi") else stat
            row[key] = (t.stats or {}).get(stat, np.nan)
        row.update(_ceiling_columns(t, ceilings, headline))
        rows.append(row)
    return pd.DataFrame(rows)


def _ceiling_columns(t: TrialRecord, ceilings: Ceilings | None, headline: Headline
                     ) -> dict[str, Any]:
    out: dict[str, Any] = {"pct_ceiling": np.nan, "intensity": np.nan, "bound": ""}
    if ceilings is None or not t.ok or not t.config:
        return out
    cfg = t.config
    if headline is Headline.TFLOPS:
        peak = ceilings.matmul_peak(cfg["dtype"])
        out["pct_ceiling"] = 100 * t.rate(headline) / peak[1] if peak else np.nan
    if not ceilings.copy:
        return out
    if headline is Headline.GBPS:
        ceiling = ceilings.bandwidth(cfg["footprint"], cfg.get("cache", "cold"))
        out["pct_ceiling"] = 100 * t.gbps / ceiling if ceiling else np.nan
    seconds = t.stats["median"] * 1e-3
    out["intensity"], _, out["bound"] = ceilings.roofline(
        t.gflops * 1e9 * seconds, t.gbps * 1e9 * seconds, cfg["dtype"])
    return out


def rate_column(df: pd.DataFrame, headline: Headline) -> str:
    """The column reports lead with: the kernel's headline rate, else the score."""
    column = headline.value
    return column if column in df and (df[column] > 0).any() else "score"


def unit(column: str) -> str:
    return Headline(column).unit if column in {h.value for h in Headline} else column


def at_median(value: float, median_ms: float, to_median_ms: float) -> float:
    """A rate measured at ``median_ms``, at another median of the same work."""
    return value * median_ms / to_median_ms


def _number(label: str) -> Any:
    """A label as an integer when it is one (``"256"``), else the label itself."""
    return int(label) if label.isdigit() else label


def problem_key(row: pd.Series) -> str:
    fp = row["footprint"]
    fp_text = format_size(int(fp)) if pd.notna(fp) else str(row["footprint_label"])
    return f"{row['dtype']} {fp_text} {row.get('cache', 'cold')}"


class HeatmapData(NamedTuple):
    """One heatmap: a block x grid table of a rate and what it is of."""

    name: str                      # file stem
    title: str
    values: pd.DataFrame           # index: block, columns: grid label; NaN where no result
    notes: pd.DataFrame            # same shape: "" or why a cell has no number
    column_labels: list[str]       # tick text for the columns
    best: tuple[Any, str] | None   # (block, grid label) of the marked cell
    metric: str
    best_note: str = "best"        # what the marked cell is


def heatmaps(df: pd.DataFrame, meta_names: Sequence[str], grid_order: Sequence[str],
             block_order: Sequence[int], *, kernel: str, gpu: str,
             headline: Headline = Headline.GBPS, picks: Mapping[int, Pick] | None = None
             ) -> list[HeatmapData]:
    """A heatmap per (meta values, dtype, footprint), plus the best over meta values.

    ``picks`` (trial number -> :class:`Pick`) are the configs the study ends with; a map
    marks its problem's pick where the pick lies in it, else its own best cell."""
    out: list[HeatmapData] = []
    resolved = df[df["status"] != "invalid"]
    metric = rate_column(df, headline)
    picks = picks or {}
    for (dtype, fp_label, cache), sub in df.groupby(["dtype", "footprint_label", "cache"],
                                                    sort=False):
        fp = resolved.loc[resolved["footprint_label"] == fp_label, "footprint"]
        fp_text = format_size(int(fp.iloc[0])) if len(fp) else str(fp_label)
        resident = sub["flags"].str.contains("L2-resident").any()
        base = f"{kernel} · {dtype} · {fp_text} · {cache}{' (L2-resident)' if resident else ''}"
        stem = f"{dtype}_{fp_text}_{cache}"
        groups = sub.groupby(list(meta_names), sort=True) if meta_names else [((), sub)]
        for key, cell_df in groups:
            key = key if isinstance(key, tuple) else (key,)
            meta_text = " ".join(f"{n}={v}" for n, v in zip(meta_names, key))
            name = f"{stem}_" + "_".join(f"{n}-{v}" for n, v in zip(meta_names, key))
            out.append(_grid(cell_df, grid_order, block_order, metric, name.rstrip("_"),
                             f"{base} · {meta_text} · {gpu} · {unit(metric)}".replace(
                                 " ·  ·", " ·"), picks, show_values=True))
        out.append(_grid(sub, grid_order, block_order, metric, f"{stem}_best",
                         f"{base} · best over {', '.join(meta_names) or 'all'} · {gpu} · "
                         f"{unit(metric)}", picks, show_values=False))
    return out


def _grid(df: pd.DataFrame, grid_order: Sequence[str], block_order: Sequence[int],
          metric: str, name: str, title: str, picks: Mapping[int, Pick], *,
          show_values: bool) -> HeatmapData:
    ok = df[df["status"] == "ok"]
    values = (ok.groupby(["block", "grid_label"])[metric].max().unstack("grid_label")
              .reindex(index=list(block_order), columns=list(grid_order)))
    notes = pd.DataFrame("", index=values.index, columns=values.columns)
    for _, row in df[df["status"] != "ok"].iterrows():
        b, g = row["block"], row["grid_label"]
        if b in notes.index and g in notes.columns and pd.isna(values.loc[b, g]):
            notes.loc[b, g] = "skip" if row["status"] == "invalid" else "fail"
    labels = []
    for g in grid_order:
        grids = df.loc[df["grid_label"] == g, "grid"].dropna().unique()
        shown = show_values and len(grids) == 1 and str(int(grids[0])) != g
        labels.append(f"{g}\n={int(grids[0])}" if shown else g)
    best, note = None, "best"
    for _, row in ok[ok["number"].isin(list(picks))].iterrows():     # its problem's pick
        if row["block"] in values.index and row["grid_label"] in values.columns:
            best = (row["block"], row["grid_label"])
            note = ("winner of the interleaved final" if picks[row["number"]].final
                    else "best in the sweep")
    if best is None and values.notna().any().any():
        best, note = values.stack().idxmax(), "best of this map" if picks else "best"
    return HeatmapData(name=name, title=title, values=values, notes=notes,
                       column_labels=labels, best=best, metric=metric, best_note=note)


def best_configs(df: pd.DataFrame, baselines: Sequence[BaselineRecord], meta_names: Sequence[str],
                 top: int = 10, picks: Mapping[int, Pick] | None = None) -> pd.DataFrame:
    """The ``top`` configs of each problem by score, with % of the torch baseline; the
    ``picks`` (trial number -> :class:`Pick`) are kept whatever their rank and named in
    ``chosen``: "winner" (of the interleaved final) or "sweep best"."""
    picks = picks or {}
    ok = df[df["status"] == "ok"].copy()
    if ok.empty:
        return ok
    base = {(b.dtype, b.footprint, b.cache): b.gbps for b in baselines}
    ok["baseline_gbps"] = [base.get(key, np.nan) for key in
                           zip(ok["dtype"], ok["footprint"], ok["cache"])]
    ok["pct_of_baseline"] = 100.0 * ok["gbps"] / ok["baseline_gbps"]
    ok["problem"] = ok.apply(problem_key, axis=1)
    ok = ok.sort_values(["problem", "score"], ascending=[True, False])
    ok["rank"] = ok.groupby("problem").cumcount() + 1
    ok["chosen"] = [("winner" if picks[n].final else "sweep best") if n in picks else ""
                    for n in ok["number"]]
    columns = ["problem", "rank", "chosen", "number", "grid_label", "grid", "block", *meta_names,
               "median_ms", "rel_ci", "min_ms", "p95_ms", "std_ms", "outliers", "gbps", "tflops",
               "pct_of_baseline", "pct_ceiling", "gb_per_j", "sm_mhz", "cold_s", "flags"]
    shown = (ok["rank"] <= top) | (ok["chosen"] != "")
    return ok[shown][columns].reset_index(drop=True)


def headline_table(picks: Sequence[Pick], df: pd.DataFrame, meta_names: Sequence[str],
                   metric: str) -> pd.DataFrame:
    """One row per problem: the config the study ends with, its median from the samples it
    was chosen on (the final's, else the sweep's), and its ``metric`` rate and % of the
    ceiling at that median."""
    by_number = df.set_index("number")
    rows = []
    for pick in picks:
        t = by_number.loc[pick.trial.number]
        median = pick.median_ms
        rows.append({
            "problem": problem_key(t), "chosen_by": pick.chosen_by, "number": pick.trial.number,
            "grid_label": t["grid_label"], "grid": t["grid"], "block": t["block"],
            **{n: t[n] for n in meta_names},
            "median_ms": median, metric: at_median(t[metric], t["median_ms"], median),
            "pct_ceiling": at_median(t["pct_ceiling"], t["median_ms"], median),
            "x_baseline": (pick.final.baseline_ratio() if pick.final else None) or np.nan})
    return pd.DataFrame(rows).sort_values("problem").reset_index(drop=True) if rows \
        else pd.DataFrame()


_NUMBERS = re.compile(r"\s*\([^)]*\)|\b\d+ of \d+\b|index \d+.*$")


def failure_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Trials that did not give a number, counted by status and reason (values stripped)."""
    bad = df[df["status"] != "ok"]
    if bad.empty:
        return pd.DataFrame(columns=["status", "reason", "count"])
    reasons = bad["reason"].map(lambda r: _NUMBERS.sub("", r).strip() or r)
    return (bad.assign(reason=reasons).groupby(["status", "reason"]).size()
            .rename("count").reset_index().sort_values("count", ascending=False))


def stop_counts(df: pd.DataFrame) -> pd.DataFrame:
    """How measured trials stopped sampling: fixed, converged, or unconverged (flagged)."""
    ok = df[df["status"] == "ok"]
    if ok.empty:
        return pd.DataFrame(columns=["rule", "count"])
    rule = ok["stop_reason"].str.extract(r"^(\w+(?:: \w+)?)")[0].fillna("?")
    return rule.value_counts().rename_axis("rule").rename("count").reset_index()


def flag_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Trials by flag kind (launch-bound, L2-resident, unconverged, suspicious, ...)."""
    kinds: dict[str, int] = {}
    for flags in df["flags"]:
        for flag in filter(None, flags.split("; ")):
            kind = re.split(r"[:(]", flag)[0].strip()
            kind = re.sub(r"^\d+ ", "", kind)
            kinds[kind] = kinds.get(kind, 0) + 1
    return pd.DataFrame(sorted(kinds.items()), columns=["flag", "trials"])


def baseline_rates(baselines: Sequence[BaselineRecord], df: pd.DataFrame, metric: str
                   ) -> list[float]:
    """Each baseline's ``metric`` rate: GB/s as recorded, any other rate from a trial of
    the same problem (the same work) taken to the baseline's median."""
    if metric == "gbps":
        return [b.gbps for b in baselines]
    ok = df[df["status"] == "ok"]
    out = []
    for b in baselines:
        same = ok[(ok["dtype"] == b.dtype) & (ok["footprint"] == b.footprint)
                  & (ok["cache"] == b.cache)]
        out.append(at_median(same.iloc[0][metric], same.iloc[0]["median_ms"],
                             b.stats["median"]) if len(same) else np.nan)
    return out


def final_table(final: FinalRecord, df: pd.DataFrame, meta_names: Sequence[str],
                metric: str = "gbps") -> pd.DataFrame:
    """The finalists of one problem as re-measured interleaved, winner first, with their
    ``metric`` rate at the re-measured median."""
    by_number = df.set_index("number")
    rows = []
    for r in final.finalists:
        t = by_number.loc[r["number"]]
        st = r["stats"]
        rows.append({
            "": "winner" if r["number"] == final.winner else (
                "tied" if r["number"] in final.tied else ""),
            "number": r["number"], "grid": t["grid_label"], "block": t["block"],
            **{n: t[n] for n in meta_names}, "median_ms": st["median"],
            "ci_ms": f"[{st['ci_lo']:.4g}, {st['ci_hi']:.4g}]", "cv": st["cv"],
            metric: at_median(t[metric], t["median_ms"], st["median"]),
            "sweep_median_ms": t["median_ms"]})
    if final.baseline:                      # the same work, in the same rounds
        st = final.baseline["stats"]
        winner = next(r for r in rows if r["number"] == final.winner)
        rows.append({"": f"baseline: {final.baseline['name']}", "number": "–",
                     "grid": "–", "block": "–", **{n: "–" for n in meta_names},
                     "median_ms": st["median"],
                     "ci_ms": f"[{st['ci_lo']:.4g}, {st['ci_hi']:.4g}]", "cv": st["cv"],
                     metric: at_median(winner[metric], winner["median_ms"], st["median"]),
                     "sweep_median_ms": np.nan})
    out = pd.DataFrame(rows)
    order = {"winner": 0, "tied": 1, "": 2}
    return out.sort_values(by=["", "median_ms"], key=lambda c: c.map(
        lambda v: order.get(v, 3)) if c.name == "" else c).reset_index(drop=True)


class AxisEffect(NamedTuple):
    """One axis swept alone around the baseline: its points and what they say."""

    axis: str
    points: pd.DataFrame           # label, median_ms, rate, lo, hi (its 95 % CI), status
    best: str
    ratio: float                   # best / worst rate
    beyond_noise: bool             # best's and worst's CIs do not overlap
    baseline: str


def one_at_a_time(trials: Sequence[TrialRecord], axes: dict[str, list[str]],
                  baseline: dict[str, str], headline: Headline = Headline.GBPS
                  ) -> list[AxisEffect]:
    """Per axis, the trials that differ from the baseline in that axis alone, with their
    ``headline`` rate."""
    out = []
    for axis, labels in axes.items():
        if len(labels) < 2:
            continue
        rows = []
        for t in trials:
            if all(t.choice.get(k) == v for k, v in baseline.items() if k != axis):
                st = t.stats or {}
                scale = t.rate(headline) * st.get("median", 0) if t.ok else 0.0   # rate x ms
                rows.append({
                    "label": t.choice[axis], "status": t.status.value,
                    "median_ms": st.get("median", np.nan),
                    "rate": t.rate(headline) if t.ok else np.nan,
                    "lo": scale / st["ci_hi"] if t.ok and st.get("ci_hi") else np.nan,
                    "hi": scale / st["ci_lo"] if t.ok and st.get("ci_lo") else np.nan})
        if not rows:
            continue
        points = (pd.DataFrame(rows).drop_duplicates("label")
                  .set_index("label").reindex(labels).reset_index())
        ok = points.dropna(subset=["rate"])
        if ok.empty:
            continue
        best, worst = ok.loc[ok["rate"].idxmax()], ok.loc[ok["rate"].idxmin()]
        out.append(AxisEffect(axis=axis, points=points, best=str(best["label"]),
                              ratio=float(best["rate"] / worst["rate"]),
                              beyond_noise=bool(best["lo"] > worst["hi"]),
                              baseline=baseline[axis]))
    return out
