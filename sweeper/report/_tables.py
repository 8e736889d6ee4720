"""Compute what reports show (pure pandas): trial table, best configs, finals, counts.

Every list of problems is in (dtype, footprint, cache) order, the footprint as a number
(4KiB before 16KiB), the same in every table, map and JSON list."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from sweeper.ceilings import Ceilings
from sweeper.consensus import Agreement
from sweeper.core._model import GRID_EXTENTS
from sweeper.core._units import counted
from sweeper.finals import FinalRecord
from sweeper.kernels import Headline
from sweeper.measure import Stats, Stop
from sweeper.measure._duty import POWER_CAP
from sweeper.outcome import (
    RETRY,
    again_text,
    counts_text,
    set_apart,
    skip_cause,
    skipped_text,
)
from sweeper.space import Problem, format_size, parse_size, show_dims
from sweeper.store import BaselineRecord, DutyRecord, StudyMeta, TrialRecord
from sweeper.trial import FAILURES, TrialStatus
from sweeper.winners import Pick

STAT_COLUMNS = ("median", "mean", "min", "max", "p95", "p99", "std", "cv", "ci_lo", "ci_hi",
                "rel_ci", "outliers")
#: What a rate column holds, for colour bars and plot axes.
LABELS = {"gbps": "effective GB/s (read + write, median)", "tflops": "TFLOP/s (FLOPs / median)",
          "score": "score"}


def dimension_names(trials: Sequence[TrialRecord]) -> tuple[str, ...]:
    """The problem's dimensions as the first resolved trial names them; none where no
    trial was resolved to a config."""
    return next((tuple(n for n, _ in t.config.problem.dims) for t in trials
                 if t.config and t.config.problem.dims), ())


def trials_frame(trials: Sequence[TrialRecord], meta_names: Sequence[str],
                 ceilings: Ceilings | None = None, headline: Headline = Headline.GBPS
                 ) -> pd.DataFrame:
    """One row per trial: choice labels, resolved values, status, statistics, throughput,
    stopping rule, flags, energy and, with ceilings, % of the ceiling of the ``headline``
    rate (copy bandwidth, or the dtype's matmul rate) and roofline place.  Each row is
    kept as its values alone (every row has the same columns, in the same order): 10⁵
    trials' rows as dicts would hold a few hundred MB before the frame is made.  No
    trials: no rows, but the same columns (those of the dimensions aside, which only a
    resolved trial names), so that every table made from it can be read by name."""
    dim_names = dimension_names(trials)
    blank = TrialRecord(status=TrialStatus.INVALID, number=0, choice={})
    columns = list(_trial_row(blank, meta_names, dim_names, ceilings, headline))
    rows = [list(_trial_row(t, meta_names, dim_names, ceilings, headline).values())
            for t in trials]
    df = _fill_footprints(pd.DataFrame(rows, columns=columns), dim_names)
    df.attrs["dims"] = dim_names
    df.attrs["meta"] = list(meta_names)
    return df


#: Seconds over which NVML's board power is a mean (``nvmlDeviceGetPowerUsage`` on Ampere
#: and later GPUs, the A100 aside): a reading is of the second before it.
POWER_AVERAGED_S = 1.0


def power_of_its_own(t: TrialRecord) -> bool:
    """Whether trial ``t``'s board power (its energy per launch: the mean power over its
    sampling window × its median) is of the trial itself: it sampled for at least the
    second NVML averages power over, and a poll fell in that window.  A shorter window
    reads the trials before it: the committed H200 copy study's 17 trials, of 13 ms each,
    read 111 W rising to 240 W in the order they ran whatever their configs, so its GB/J
    ranked the configs by when they were measured."""
    return t.energy_window_s >= POWER_AVERAGED_S and t.power_readings > 0


def _trial_row(t: TrialRecord, meta_names: Sequence[str], dim_names: Sequence[str],
               ceilings: Ceilings | None, headline: Headline) -> dict[str, Any]:
    """:func:`trials_frame`'s row of trial ``t``, by column name."""
    cfg = t.config
    row: dict[str, Any] = {
        "number": t.number, "status": t.status.value, "retry": t.retry,
        "reason": t.reason or "",
        "grid_label": t.choice.get("grid", ""), "grid": cfg.grid if cfg else None,
        "block": cfg.block if cfg else _number(t.choice.get("block", "")),
        "dtype": t.choice.get("dtype"), "footprint_label": t.choice.get("footprint"),
        "footprint": cfg.problem.footprint if cfg else None,
        "size_label": t.choice.get("footprint") or " ".join(
            f"{d}={t.choice.get(d, '?')}" for d in dim_names),
        "dims": _dims_text(cfg.problem) if cfg else None,
        "cache": cfg.cache if cfg else t.choice.get("cache", "cold"), "cold_s": t.cold_s,
        "gbps": t.gbps, "gflops": t.gflops, "tflops": t.rate(Headline.TFLOPS),
        "score": t.score,
        "samples": len(t.samples_ms),
        "stop": t.stop_reason.kind.value if t.stop_reason else "",
        "stop_reason": t.stop_reason.text if t.stop_reason else "",
        "discarded": t.discarded,
        "flags": "; ".join(f.text for f in t.flags),
        "energy_j": t.energy_j if t.energy_j is not None else np.nan,
        "sm_mhz": (t.clocks.sm_mhz_mean if t.clocks else None) or np.nan,
        "capped": t.clocks.reasons.get(POWER_CAP, 0.0) if t.clocks else 0.0,
        "gb_per_j": (t.gbps * t.stats.median * 1e-3 / t.energy_j
                     if t.energy_j and t.stats and power_of_its_own(t) else np.nan),
    }
    params = {"grid_y": cfg.grid_y, "grid_z": cfg.grid_z, **cfg.meta} if cfg else {}
    for name in meta_names:     # the grid beyond x too, where the space gives it
        value = params.get(name, _number(t.choice.get(name, "")))
        # unresolved, an expression is no value of the grid's (none, as grid's is)
        row[name] = None if name in GRID_EXTENTS and isinstance(value, str) else value
    for name in dim_names:
        row[name] = dict(cfg.problem.dims).get(name) if cfg else _number(t.choice.get(name, ""))
    for stat in STAT_COLUMNS:
        key = stat if stat in ("cv", "rel_ci", "outliers") else f"{stat}_ms"   # unitless
        row[key] = getattr(t.stats, stat) if t.stats else np.nan
    row["ci_pct"] = 100.0 * row["rel_ci"]
    row.update(_ceiling_columns(t, ceilings, headline))
    return row


def study_frame(meta: StudyMeta, trials: Sequence[TrialRecord]) -> pd.DataFrame:
    """:func:`trials_frame` of a study's trials: its meta-parameters, the ceilings it
    recorded and its kernel's headline rate."""
    return trials_frame(trials, meta.param_axes, study_ceilings(meta), Headline(meta.headline))


def study_ceilings(meta: StudyMeta) -> Ceilings | None:
    """The ceilings the study recorded, if any."""
    return Ceilings.from_json(meta.ceilings) if meta.ceilings else None


def _dims_text(problem: Problem) -> str:
    """The dimensions a problem is named by; empty for one its footprint names."""
    return "" if problem.sized_by_footprint else show_dims(problem.dims)


def _fill_footprints(df: pd.DataFrame, dim_names: Sequence[str]) -> pd.DataFrame:
    """Trials ruled out before they were resolved get the footprint and dimensions (the
    ``dims`` text and each of ``dim_names``' columns) that trials of the same size labels
    ran at (capped ones on the interpreter), else the label's own size, so each belongs
    to the problem it would have been measured in and no row mixes the problem asked
    (``size_label``) with the one measured."""
    if df.empty:
        return df
    sized = ["footprint", "dims", *dim_names]
    ran = df.dropna(subset=["footprint"]).groupby("size_label")[sized].first()
    for i in df.index[df["footprint"].isna()]:
        label = df.at[i, "size_label"]
        if label in ran.index:
            for column in sized:
                df.at[i, column] = ran.at[label, column]
            continue
        df.at[i, "footprint"] = _size(label)
        df.at[i, "dims"] = "" if df.at[i, "footprint_label"] else label
    return df


def shrunk_frame(df: pd.DataFrame) -> pd.DataFrame:
    """One row per problem whose trials ran at dimensions other than those its labels
    ask for (the interpreter's cap): ``dtype``, ``asked`` (``cols=1000 rows=4096``) and
    ``measured`` (``cols=31 rows=128``); those the cap merged into another problem are
    the trials ruled out so, whose reason says which."""
    dims = df.attrs.get("dims", ())
    columns = ["dtype", "asked", "measured"]
    if not dims or df.empty:
        return pd.DataFrame(columns=columns)
    ran = df[(df["status"] != "invalid") & df["footprint"].notna()]
    rows = []
    for (dtype, label), group in ran.groupby(["dtype", "size_label"], sort=False):
        first = group.iloc[0]
        measured = {d: first[d] for d in dims if pd.notna(first[d])}
        asked = dict(part.split("=", 1) for part in str(label).split(" ") if "=" in part)
        if any(str(asked.get(d)) != str(int(v)) for d, v in measured.items()
               if str(asked.get(d, "")).isdigit()):
            rows.append((dtype, label, " ".join(f"{d}={int(v)}" for d, v in measured.items())))
    return pd.DataFrame(rows, columns=columns)


def _size(label: Any) -> float:
    try:
        return float(parse_size(str(label)))
    except ValueError:
        return np.nan


#: How problems sort everywhere: dtype, then the footprint as a number, the dimensions
#: (for problems of one footprint), then cache.
PROBLEM_ORDER = ["dtype", "footprint", "dims", "cache"]


def _ceiling_columns(t: TrialRecord, ceilings: Ceilings | None, headline: Headline
                     ) -> dict[str, Any]:
    out: dict[str, Any] = {"pct_ceiling": np.nan, "intensity": np.nan, "bound": ""}
    if ceilings is None or not t.ok or not t.config or not t.stats:
        return out
    problem, cache = t.config.problem, t.config.cache
    if headline is Headline.TFLOPS:
        peak = ceilings.matmul_peak(problem.dtype)
        out["pct_ceiling"] = 100 * t.rate(headline) / peak[1] if peak else np.nan
    if not ceilings.copy:
        return out
    if headline is Headline.GBPS:
        ceiling = ceilings.bandwidth(problem.footprint, cache)
        out["pct_ceiling"] = 100 * t.gbps / ceiling if ceiling else np.nan
    seconds = t.stats.median * 1e-3
    out["intensity"], _, out["bound"] = ceilings.roofline(
        t.gflops * 1e9 * seconds, t.gbps * 1e9 * seconds, problem.dtype)
    return out


def rate_column(df: pd.DataFrame, headline: Headline) -> str:
    """The column reports lead with: the kernel's headline rate, else the score (a kernel
    that declares neither bytes nor FLOPs).  With no measured trial, the headline: there
    is nothing to show it cannot."""
    column = headline.value
    measured = df[df["status"] == "ok"] if "status" in df else df
    if measured.empty or (column in df and (measured[column] > 0).any()):
        return column
    return "score"


def unit(column: str) -> str:
    """The unit of a rate column: ``GB/s`` or ``TFLOP/s`` for a headline's column, else the
    column's own name (``score``)."""
    return Headline(column).unit if column in {h.value for h in Headline} else column


def at_median(value: float, median_ms: float, to_median_ms: float) -> float:
    """A rate measured at ``median_ms``, at another median of the same work."""
    return value * median_ms / to_median_ms


def _number(label: str) -> Any:
    """A label as an integer when it is one (``"256"``), else the label itself."""
    return int(label) if label.isdigit() else label


def problem_key(row: pd.Series) -> str:
    """A row's problem as the report names it: dtype, the dimensions or the footprint
    (its label where it has no size) and cache."""
    fp = row["footprint"]
    fp_text = format_size(int(fp)) if pd.notna(fp) else str(row["size_label"])
    return f"{row['dtype']} {row.get('dims') or fp_text} {row.get('cache', 'cold')}"


def problem_keys(df: pd.DataFrame) -> list[str]:
    """:func:`problem_key` of each row, worked out once per problem, not once a row."""
    columns = [c for c in ("dtype", "footprint", "size_label", "dims", "cache") if c in df]
    keys: dict[tuple[Any, ...], str] = {}
    return [keys.get(row) or keys.setdefault(row, problem_key(pd.Series(dict(zip(
        columns, row, strict=True))))) for row in zip(*(df[c] for c in columns), strict=True)]


def best_configs(df: pd.DataFrame, baselines: Sequence[BaselineRecord], meta_names: Sequence[str],
                 top: int = 10, picks: Mapping[int, Pick] | None = None,
                 finals: Sequence[FinalRecord] = ()) -> pd.DataFrame:
    """The ``top`` configs of each problem by score, with % of the torch baseline; the
    ``picks`` (trial number -> :class:`Pick`) are kept whatever their rank and named in
    ``chosen``: "winner" (of the interleaved final) or "sweep best".  Finalists also get
    ``final_median_ms``, their median when re-measured interleaved (the winner's is the
    one it was chosen on); NaN for the others."""
    picks = picks or {}
    ok = df[df["status"] == "ok"].copy()
    if ok.empty:
        return ok
    base = {(b.dtype, b.footprint, _dims_text(b.problem.problem), b.cache): b.gbps
            for b in baselines}
    ok["baseline_gbps"] = [base.get(key, np.nan) for key in
                           zip(ok["dtype"], ok["footprint"], ok["dims"], ok["cache"],
                               strict=True)]
    ok["pct_of_baseline"] = 100.0 * ok["gbps"] / ok["baseline_gbps"]
    ok["problem"] = problem_keys(ok)
    ok = ok.sort_values([*PROBLEM_ORDER, "score"], ascending=[True, True, True, True, False],
                        kind="stable")
    ok["rank"] = ok.groupby("problem").cumcount() + 1
    ok["chosen"] = [("winner" if picks[n].final else "sweep best") if n in picks else ""
                    for n in ok["number"]]
    remeasured = {r.number: r.stats.median for f in finals for r in f.finalists}
    ok["final_median_ms"] = [remeasured.get(n, np.nan) for n in ok["number"]]
    shaped = [d for d in df.attrs.get("dims", ()) if (ok["dims"] != "").any()]
    columns = ["problem", *shaped, "rank", "chosen", "number", "grid_label", "grid", "block",
               *meta_names,
               "median_ms", "ci_pct", "final_median_ms", "min_ms", "p95_ms", "std_ms",
               "outliers", "gbps", "tflops", "pct_of_baseline", "pct_ceiling", "gb_per_j",
               "sm_mhz", "cold_s", "flags"]
    shown = (ok["rank"] <= top) | (ok["chosen"] != "")
    return ok[shown][columns].reset_index(drop=True)


def headline_table(picks: Sequence[Pick], df: pd.DataFrame, meta_names: Sequence[str],
                   metric: str) -> pd.DataFrame:
    """One row per problem: the config the study ends with, its median from the samples it
    was chosen on (the final's, else the sweep's) and where that is from, its sweep median,
    and its ``metric`` rate and % of the ceiling at the chosen median.  Without picks (no
    trial measured) no rows, but the same columns: a table read by name reads the same."""
    columns = ["problem", *PROBLEM_ORDER, "chosen_by", "number", "grid_label", "grid", "block",
               *meta_names, "median_ms", "median_from", "sweep_median_ms", metric,
               "pct_ceiling", "x_baseline"]
    by_number = df.set_index("number")
    rows = []
    for pick in picks:
        t = by_number.loc[pick.trial.number]
        median = pick.median_ms
        rows.append({
            "problem": problem_key(t), **{k: t[k] for k in PROBLEM_ORDER},
            "chosen_by": pick.chosen_by, "number": pick.trial.number,
            "grid_label": t["grid_label"], "grid": t["grid"], "block": t["block"],
            **{n: t[n] for n in meta_names},
            "median_ms": median, "median_from": pick.median_from,
            "sweep_median_ms": t["median_ms"],
            metric: at_median(t[metric], t["median_ms"], median),
            "pct_ceiling": at_median(t["pct_ceiling"], t["median_ms"], median),
            "x_baseline": (pick.final.baseline_ratio() if pick.final else None) or np.nan})
    return ((pd.DataFrame(rows) if rows else pd.DataFrame(columns=columns))
            .sort_values(PROBLEM_ORDER, kind="stable")
            .drop(columns=PROBLEM_ORDER).reset_index(drop=True))


#: What :func:`reason_kind` strips: a parenthesis holding a number and no other
#: parenthesis (``(BLOCK=1024, block=64)``; the one around a kernel's line, which holds
#: its code's, stays whole), ``N of M``, and from ``index N`` on.
_NUMBERS = re.compile(r"\s*\([^()]*\d[^()]*\)|\b\d+ of \d+\b|index \d+.*$")


def reason_kind(reason: str) -> str:
    """A failure's reason without its values, so like failures count together."""
    return " ".join(_NUMBERS.sub("", reason).split()) or reason


#: Trial numbers a failure group lists before it says how many more.
LISTED = 8


def outcome_labels(df: pd.DataFrame) -> pd.Series:
    """Each of ``df``'s trials by what became of it, as trials are counted and listed
    (:func:`~sweeper.outcome.outcome_label`): its status, :data:`~sweeper.outcome.RETRY`
    for one to be measured again (its worker process killed from outside), never
    ``crashed``."""
    if "status" not in df:                  # an empty study's frame has no columns
        return pd.Series(dtype=object)
    return df["status"].where(~df["retry"].astype(bool), RETRY) if "retry" in df \
        else df["status"]


def failure_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Trials that did not give a number, counted by status and reason (values stripped,
    so like failures count together), most first; each group with its ``trials``
    (``#2, #5, #9``), what its configs have ``in common`` that the measured ones lack
    (``BLOCK=512``: the labels of grid, block and the meta-parameters), and the complete
    ``message`` of its first trial where stripping changed it (``""`` where not).  A trial
    to be measured again is counted as :data:`~sweeper.outcome.RETRY`, not as crashed
    (:func:`outcome_labels`)."""
    columns = ["status", "reason", "count", "trials", "in common", "message"]
    bad = df[df["status"] != "ok"]
    if bad.empty:
        return pd.DataFrame(columns=columns)
    fine = df[df["status"] == "ok"]
    config = [c for c in ("grid_label", "block", *df.attrs.get("meta", ())) if c in df]
    rows = []
    for (status, reason), group in bad.assign(status=outcome_labels(bad),
                                              kind=bad["reason"].map(reason_kind)).groupby(
            ["status", "kind"], sort=False):
        numbers = sorted(int(n) for n in group["number"])
        listed = ", ".join(f"#{n}" for n in numbers[:LISTED])
        if len(numbers) > LISTED:
            listed += f" … ({len(numbers)} in all)"
        first = group.loc[group["number"].idxmin(), "reason"]
        distinct = group["reason"].nunique()
        message = "" if first == reason else first + (
            f" (and {counted(distinct - 1, 'other message')} alike)" if distinct > 1 else "")
        rows.append((status, reason, len(group), listed, _in_common(group, fine, config),
                     message))
    return (pd.DataFrame(rows, columns=columns)
            .sort_values("count", ascending=False, kind="stable").reset_index(drop=True))


def _in_common(group: pd.DataFrame, fine: pd.DataFrame, columns: Sequence[str]) -> str:
    """``BLOCK=512`` (or ``BLOCK=1024 or 2048``): what sets the configs of ``group`` apart
    from those of ``fine`` (the measured trials), by the rule of the run's ``failed:``
    line (:func:`~sweeper.outcome.set_apart`); empty where nothing does."""
    def labels(df: pd.DataFrame) -> list[dict[str, str]]:
        named = {c: "grid" if c == "grid_label" else c for c in columns}
        return [{named[c]: value_label(v) for c, v in row.items() if not pd.isna(v)}
                for row in df[list(columns)].to_dict("records")]

    axes = ["grid" if c == "grid_label" else c for c in columns]
    return " ".join(set_apart(labels(group), labels(fine), axes))


def value_label(value: Any) -> str:
    """A config value as its label: ``1024``, not ``1024.0`` (pandas widens int columns
    that hold NaN)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def status_counts_text(df: pd.DataFrame) -> str:
    """``204 trials: 190 measured, 4 abandoned early, 6 failed, 4 skipped by constraints``:
    a study's trials by what became of them, counted as the run's ``done:`` line counts
    them (an abandoned trial was measured until clearly slower, not failed; one whose
    config is to be measured again did not fail either: ``2 to measure again (...)``)."""
    counts = outcome_labels(df).value_counts().to_dict() if not df.empty else {}
    absent = counts.get(TrialStatus.MISSING.value, 0)     # a replay's: no failure
    failed = sum(counts.get(s.value, 0) for s in FAILURES) - absent
    abandoned = counts.get("abandoned", 0)
    again = counts.get(RETRY, 0)
    return (f"{counted(len(df), 'trial')}: "
            f"{counts_text(counts.get('ok', 0), abandoned, failed, absent, again)}, "
            f"{skipped_text(_skip_causes(df))}")


def _skip_causes(df: pd.DataFrame) -> list[str]:
    """Why each of ``df``'s skipped (``invalid``) trials was skipped
    (:func:`~sweeper.outcome.skip_cause`: by its reason, and whether it resolved, as a
    resolved trial's ``grid`` shows), to count by cause."""
    if "status" not in df:                  # an empty study's frame has no columns
        return []
    invalid = df["status"] == "invalid"
    n = int(invalid.sum())
    reasons = df.loc[invalid, "reason"] if "reason" in df else [""] * n
    resolved = df.loc[invalid, "grid"].notna() if "grid" in df else [False] * n
    return [skip_cause(r if isinstance(r, str) else "", bool(k))
            for r, k in zip(reasons, resolved, strict=True)]


def nothing_measured(df: pd.DataFrame) -> str | None:
    """Why ``df``'s trials (a study's, or one problem's) gave no number, when none did:
    the counts by status and the commonest reason with one full example; ``None`` when a
    config was measured."""
    if df.empty or (df["status"] == "ok").any():
        return None
    counts = outcome_labels(df).value_counts()
    ran = counts.drop("invalid", errors="ignore")
    parts = [again_text(n) if status == RETRY else f"{n} {status}"
             for status, n in ran.items()]
    if "invalid" in counts:
        parts.append(skipped_text(_skip_causes(df)))
    reasons = failure_counts(df)
    failed = reasons[reasons["status"] != "invalid"]
    top = (failed if len(failed) else reasons).iloc[0]
    example = df[(outcome_labels(df) == top["status"])
                 & (df["reason"].map(reason_kind) == top["reason"])].iloc[0]
    return (f"no config was measured: {len(df)} trial(s), {', '.join(parts)}; the "
            f"commonest reason: {top['status']}, {top['reason']!r} ({top['count']} trial(s); "
            f"e.g. #{example['number']}: {example['reason']})")


def stop_counts(df: pd.DataFrame, rule: str = "") -> pd.DataFrame:
    """How measured trials stopped sampling: after the fixed rule's samples (``fixed: 50``),
    converged under the study's adaptive ``rule`` (``converged: ci``), unconverged
    (flagged), or replayed."""
    ok = df[df["status"] == "ok"]
    if ok.empty:
        return pd.DataFrame(columns=["rule", "count"])
    labels = pd.Series([f"fixed: {samples}" if stop == Stop.FIXED.value else
                        f"converged: {rule}" if stop == Stop.CONVERGED.value and rule else
                        stop or "?"
                        for stop, samples in zip(ok["stop"], ok["samples"], strict=True)])
    return labels.value_counts().rename_axis("rule").rename("count").reset_index()


def flag_counts(trials: Sequence[TrialRecord]) -> pd.DataFrame:
    """Trials by flag kind (launch-bound, L2-resident, unconverged, suspicious, ...)."""
    kinds = Counter(kind.value for t in trials for kind in {f.kind for f in t.flags})
    return pd.DataFrame(sorted(kinds.items()), columns=["flag", "trials"])


def power_summary(trials: Sequence[TrialRecord], meta: StudyMeta,
                  duty_records: Sequence[DutyRecord], finals: Sequence[FinalRecord],
                  hidden: Collection[int] = frozenset()) -> dict[str, Any]:
    """What the GPU was doing while ``trials`` (those the report shows) were measured: the
    schedule and why (a power-bound study records when and why it switched to an
    equal-duty schedule, a ``duty`` record: :func:`duty_switch`), how many trials saw the
    power cap, the spread of the clocks the trials ran at (``TrialRecord.clocks``), board
    power, and the samples discarded by reason; so a reader can tell a kernel that ran at
    full clock from one that ran capped.  ``hidden``: the numbers of the study's trials
    not shown (another source of the kernel's)."""
    windows = [t.clocks for t in trials if t.clocks and t.clocks.sm_mhz_mean is not None]
    clocks = [w.sm_mhz_mean for w in windows if w.sm_mhz_mean is not None]
    capped = [w.reasons[POWER_CAP] for w in windows if w.reasons.get(POWER_CAP)]
    power = [w.power_w_max for w in windows if w.power_w_max is not None]
    discarded = Counter(reason.split(" (")[0].split(":")[0]      # the reason without values
                        for t in trials for reason in t.discard_reasons)
    return {
        "schedule": meta.measure.get("duty", "auto"),
        "switched": duty_switch(trials, duty_records, hidden),
        "finals_duty": sorted({f.duty for f in finals if f.duty}),
        "trials_with_clocks": len(windows),
        "trials_capped": len(capped),
        "capped_share": float(np.mean(capped)) if capped else 0.0,
        "sm_mhz": {"min": min(clocks), "median": float(np.median(clocks)),
                   "max": max(clocks)} if clocks else None,
        "power_w_max": max(power) if power else None,
        "samples_discarded": sum(t.discarded for t in trials),
        "discard_reasons": dict(discarded.most_common()),
        "energy_not_shown": sum(1 for t in trials
                                if t.energy_j and t.stats and not power_of_its_own(t)),
    }


def duty_switch(trials: Sequence[TrialRecord], duty_records: Sequence[DutyRecord],
                hidden: Collection[int] = frozenset()) -> str:
    """The note of the latest duty switch (``duty_records``) that any of ``trials`` was
    sampled under: a trial with a schedule (``duty``) follows the latest switch made at
    its number or before; ``""`` where none did.  A switch made at a trial in ``hidden``
    (another source of the kernel's, whose trials are not shown) says so: a study forced
    past an edit keeps the schedule it switched to."""
    made = sorted(duty_records, key=lambda r: r.trial)
    at = [r.trial for r in made]
    followed = [made[i - 1] for t in trials if t.duty
                if (i := bisect.bisect_right(at, t.number))]
    if not followed:
        return ""
    last = max(followed, key=lambda r: r.trial)
    return last.note + (f" (trial #{last.trial} was measured on another source of the kernel; "
                        "the trials shown followed its schedule)" if last.trial in hidden
                        else "")


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
                  & (ok["dims"] == _dims_text(b.problem.problem)) & (ok["cache"] == b.cache)]
        out.append(at_median(same.iloc[0][metric], same.iloc[0]["median_ms"],
                             b.stats.median) if len(same) else np.nan)
    return out


def final_table(final: FinalRecord, df: pd.DataFrame, meta_names: Sequence[str],
                metric: str = "gbps") -> pd.DataFrame:
    """The finalists of one problem as re-measured interleaved, winner first, with their
    ``metric`` rate at the re-measured median."""
    def row(what: str, config: dict[str, Any], st: Stats, rate: float, sweep_ms: float
            ) -> dict[str, Any]:
        return {"": what, **config, "median_ms": st.median,
                "ci_ms": f"[{st.ci_lo:.4g}, {st.ci_hi:.4g}]", "cv_pct": 100 * st.cv,
                metric: rate, "sweep_median_ms": sweep_ms}

    by_number = df.set_index("number")
    rows = []
    for r in final.finalists:
        t = by_number.loc[r.number]
        rows.append(row("winner" if r.number == final.winner else (
            "tied" if r.number in final.tied else ""),
            {"number": r.number, "grid": t["grid_label"], "block": t["block"],
             **{n: t[n] for n in meta_names}},
            r.stats, at_median(t[metric], t["median_ms"], r.stats.median), t["median_ms"]))
    if final.baseline:                      # the same work, in the same rounds
        st = final.baseline.stats
        winner = next(r for r in rows if r["number"] == final.winner)
        rows.append(row(f"baseline: {final.baseline.name}",
                        dict.fromkeys(["number", "grid", "block", *meta_names], "–"), st,
                        at_median(winner[metric], winner["median_ms"], st.median), np.nan))
    out = pd.DataFrame(rows)
    order = {"winner": 0, "tied": 1, "": 2}
    return out.sort_values(by=["", "median_ms"], key=lambda c: c.map(
        lambda v: order.get(v, 3)) if c.name == "" else c).reset_index(drop=True)


def agreement_frame(agree: Agreement) -> pd.DataFrame:
    """One row per finalist measured on every GPU, fastest worst case first: its % from
    each GPU's best median, its worst, and what it is (a GPU's winner, exported)."""
    rows = []
    for number, by_gpu in agree.slowdown.items():
        won = [f"GPU {g}" for g, w in agree.winners.items() if w == number]
        what = (["exported"] if number == agree.chosen else []) + \
            ([f"winner on {', '.join(won)}"] if won else [])
        rows.append({"#": number, **{f"GPU {g.index} % from best":
                                     round(100 * by_gpu[g.index], 2) for g in agree.gpus},
                     "worst %": round(100 * max(by_gpu.values()), 2), "": "; ".join(what)})
    return pd.DataFrame(rows).sort_values(["worst %", "#"], kind="stable")


class AxisEffect(NamedTuple):
    """One axis (or zipped group of axes) swept alone around the baseline: its points and
    what they say."""

    axis: str
    points: pd.DataFrame           # label, median_ms, rate, lo, hi (its 95 % CI), status
    best: str
    ratio: float                   # best / worst rate
    beyond_noise: bool             # best's and worst's CIs do not overlap
    baseline: str
    #: why no other value was measured with the rest at the baseline ("" where one was):
    #: its ``when:`` kept it at its first value there, or its trials failed
    unvaried: str = ""
    #: a zipped group's axes (its values are rows of theirs); () for one axis
    members: tuple[str, ...] = ()


def one_at_a_time(trials: Sequence[TrialRecord], axes: dict[str, list[str]],
                  baseline: dict[str, str], headline: Headline = Headline.GBPS,
                  zipped: Mapping[str, Mapping[str, Any]] | None = None) -> list[AxisEffect]:
    """Per axis, the trials that differ from the baseline in that axis alone, with their
    ``headline`` rate.  A zipped group (``zipped``: name -> its ``members`` and ``rows``,
    as study.json keeps them) is one axis whose values are its rows, as the sampler
    varied it.  An axis measured at the baseline's value alone says why, not 'no
    effect'."""
    dims: dict[str, tuple[list[str], list[str]]] = {}     # name -> (members, labels)
    zipped = zipped or {}
    group_of = {str(m): name for name, g in zipped.items() for m in g["members"]}
    for axis, labels in axes.items():           # a group where its first member is
        name = group_of.get(axis)
        if name is None:
            dims[axis] = ([axis], [str(label) for label in labels])
        elif name not in dims:
            members = [str(m) for m in zipped[name]["members"]]
            dims[name] = (members, [_row_label(members, row) for row in zipped[name]["rows"]])
    out = []
    for axis, (members, labels) in dims.items():
        if len(labels) < 2:
            continue
        group = tuple(members) if len(members) > 1 else ()
        rows = []
        for t in trials:
            if all(t.choice.get(k) == v for k, v in baseline.items() if k not in members):
                st = t.stats if t.ok else None
                scale = t.rate(headline) * st.median if st else 0.0   # rate x ms
                rows.append({
                    "label": _row_label(members, [t.choice.get(m, "") for m in members]),
                    "status": t.status.value,
                    "median_ms": t.stats.median if t.stats else np.nan,
                    "rate": t.rate(headline) if t.ok else np.nan,
                    "lo": scale / st.ci_hi if st and st.ci_hi else np.nan,
                    "hi": scale / st.ci_lo if st and st.ci_lo else np.nan,
                    "reason": t.reason or ""})
        if not rows:
            continue
        found = pd.DataFrame(rows).drop_duplicates("label")
        at = _row_label(members, [baseline.get(m, "") for m in members])
        points = found.drop(columns="reason").set_index("label").reindex(labels).reset_index()
        ok = points.dropna(subset=["rate"])
        if ok.empty:
            continue
        if len(ok) < 2:
            others = found[found["label"] != at]
            why = ", ".join(sorted({reason_kind(r) for r in others["reason"] if r})) or \
                "no other value was measured with the rest at the baseline"
            out.append(AxisEffect(axis=axis, points=points, best=at, ratio=np.nan,
                                  beyond_noise=False, baseline=at, unvaried=why,
                                  members=group))
            continue
        best, worst = ok.loc[ok["rate"].idxmax()], ok.loc[ok["rate"].idxmin()]
        out.append(AxisEffect(axis=axis, points=points, best=str(best["label"]),
                              ratio=float(best["rate"] / worst["rate"]),
                              beyond_noise=bool(best["lo"] > worst["hi"]),
                              baseline=at, members=group))
    return out


def _row_label(members: Sequence[str], values: Sequence[Any]) -> str:
    """An axis's value, or a zipped group's row as ``BLOCK_M=64,BLOCK_N=64`` (as the
    sampler labels it)."""
    if len(members) == 1:
        return str(values[0])
    return ",".join(f"{m}={v}" for m, v in zip(members, values, strict=True))


def single_valued(df: pd.DataFrame, meta_names: Sequence[str]) -> list[str]:
    """The config columns (``grid_label``, ``grid``, ``block`` and the meta-parameters)
    that hold one value in every trial of the study: reports state them once, under what
    was held fixed, instead of repeating them in every row and drawing maps of one cell."""
    columns = ["grid_label", "grid", "block", *meta_names]
    return [c for c in columns if c in df and df[c].dropna().astype(str).nunique() <= 1]
