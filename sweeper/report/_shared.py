"""What ``report.md`` and ``report.html`` both show, worded and computed once: each
output puts it in its own markup and escapes it its own way, so the two say the same."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from sweeper.core._units import counted
from sweeper.report._provenance import shown_source
from sweeper.report._tables import (
    LABELS,
    POWER_AVERAGED_S,
    baseline_rates,
    status_counts_text,
    unit,
)
from sweeper.space import format_size, show_dims
from sweeper.winners import UNFINISHED, unnamed_clause

if TYPE_CHECKING:
    from sweeper.finals import FinalRecord
    from sweeper.report._contents import ReportTables

#: Column names as the reports show them.
SHOWN = {"grid_label": "grid", "grid": "programs", "pct_ceiling": "% of ceiling",
         "gb_per_j": "GB/J", "cold_s": "first run s", "ci_pct": "±CI %", "number": "#",
         "chosen_by": "chosen by", "median_ms": "median ms", "median_from": "median from",
         "sweep_median_ms": "sweep median ms", "final_median_ms": "final median ms",
         "min_ms": "min ms", "p95_ms": "p95 ms", "std_ms": "std ms", "ci_ms": "95% CI ms",
         "cv_pct": "CV %", "sm_mhz": "SM MHz", "x_baseline": "× baseline, same rounds"}
#: What the reports say where nothing was measured, or every config was.
NO_PICKS = "None: no config was measured."
NO_FAILURES = "None: every config was measured."


def no_picks(tables: ReportTables) -> str:
    """What the best config per problem says where no problem has one: of a study resumed
    with ``--force`` after its kernel was edited, that none was measured on the source
    now yet (configs were, on the earlier one)."""
    if not tables.earlier_source:
        return NO_PICKS
    return (f"None: no config was measured on the kernel's source now yet "
            f"({counted(tables.earlier_source, 'trial')} on an earlier source"
            f"{unnamed_clause(tables.earlier_source, tables.unknown_source)}, which no "
            "winner is chosen from); `sweeper run` measures the configs on this one.")


def notes(tables: ReportTables) -> list[tuple[str, str]]:
    """The notes atop a report, each (label, sentence without its full stop), before the
    output's own escaping: a study held under another name than its study file recorded
    (:attr:`~sweeper.store.StudyMeta.copied_from`), the device's note, what the last run
    dropped, and that the tables and heatmaps show an earlier source's trials (none was
    measured on the kernel's source now yet)."""
    meta, shown = tables.meta, tables.earlier_shown
    out = [("Note", f"copied or renamed from the study {meta.copied_from}")] \
        if meta.copied_from else []
    if meta.device_note:
        out.append(("Note", meta.device_note))
    out += [("Last run", str(d["line"])) for d in meta.last_run.get("dropped", [])]
    if shown is not None:
        out.append(("Note", f"no trial was measured on the kernel's source now "
                            f"({meta.kernel_source_hash}) yet: the tables and heatmaps show "
                            f"the {shown_source(shown)}; no winner is chosen from them"))
    return out


#: The heading of the baselines' table.
BASELINES = "Baselines (same timer, same runs, same GPU)"


def without_blank_columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` without its columns that are blank in every row (the first column stays)."""
    return df[[c for i, c in enumerate(df.columns) if i == 0 or not df[c].map(blank).all()]]


def blank(value: Any) -> bool:
    """No value: none, NA, NaN, or the empty text (the empty label a trial that never
    resolved has for a dimension its footprint would have given)."""
    return value is None or value is pd.NA or value == "" or (
        isinstance(value, float) and math.isnan(value))


def cell_value(value: Any) -> str:
    """A table cell's value as a report shows it, before the output's own escaping: four
    significant digits (whole numbers from 1000 up), ``–`` for a missing one."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def shown_table(df: pd.DataFrame, rename: dict[str, str] | None = None
                ) -> tuple[list[str], list[list[str]]]:
    """``df``'s column names and cells as a report's table shows them, before the output's
    own escaping: without its columns blank in every row (the first column stays), each
    name as :data:`SHOWN` and then ``rename`` give it, each value by :func:`cell_value`."""
    df = without_blank_columns(df)
    names = {**SHOWN, **(rename or {})}
    return ([str(names.get(c, c)) for c in df.columns],
            [[cell_value(v) for v in row] for row in df.itertuples(index=False, name=None)])


def counts_sentence(tables: ReportTables) -> str:
    """The line under the title: the trials by what became of them, why the last run
    stopped (a budget, or every valid config tried), how each was measured, and what the
    rates are."""
    stopped = tables.meta.last_run.get("stopped_by")
    why = f"; the last run stopped: {stopped}" if stopped else ""
    return (f"{status_counts_text(tables.frame)}{why}. {tables.story.trial}; "
            f"rates: {LABELS[tables.metric]}.")


def rate_name(tables: ReportTables) -> dict[str, str]:
    """The rate column's name as the tables show it: its unit."""
    return {tables.metric: unit(tables.metric)}


def finals_names(tables: ReportTables) -> dict[str, str]:
    """A final's table's column names as the reports show them: its ``grid`` column holds
    the space file's grid (``sms``), not the programs launched, and the rate its unit."""
    return {"grid": "grid", **rate_name(tables)}


def picks_intro(command: str) -> str:
    """What the table of each problem's pick shows; ``command``: ``sweeper export`` in the
    output's markup."""
    return (f"What {command} writes: the winner of the interleaved final where there is "
            "one, else the sweep's best; its median and rate from the samples it was chosen "
            "on (\"median from\"), its sweep median beside it.")


def picks_table(tables: ReportTables) -> tuple[pd.DataFrame, dict[str, str]]:
    """Each problem's pick as the reports' table shows it (what chose it is in
    ``median from``), and the rate column's name."""
    return tables.picks.drop(columns=["chosen_by"], errors="ignore"), rate_name(tables)


def unfinished(problem: str) -> str:
    """What a problem (its name in the output's markup) whose final is still to run ends
    with."""
    return f"{problem} ends with the sweep's best for now: {UNFINISHED}."


def final_text(final: FinalRecord) -> str:
    """A final's winner and how it was found, after ``winner`` (and the GPU): the rounds,
    and the finalists that left before the last (neither tied with the fastest nor close
    to it after a round), whose medians in the table below are of fewer samples."""
    most = max(len(f.samples_ms) for f in final.finalists)
    left = [f"#{f.number} ({len(f.samples_ms)} of {most})" for f in final.finalists
            if len(f.samples_ms) < most]
    return (f"#{final.winner}, {len(final.tied) - 1} other(s) tied within noise; "
            f"{final.rounds} rounds × {final.samples_per_round} samples each"
            + (f"; left after fewer rounds, their medians of fewer samples: "
               f"{', '.join(left)}" if left else ""))


def final_against(final: FinalRecord, quote: Callable[[str], str] = str) -> str:
    """What a final's sentence says after its winner (each sentence led by a space, or
    nothing): the winner's confirmation rounds where it had them, and the baseline
    measured in the same rounds as the finalists, with the winner's speed against it;
    the study's own values through ``quote``, the output's escaping of a value in a
    sentence (report.md's), or as they are where the output escapes the whole sentence
    (report.html's)."""
    base = final.compared_baseline()
    against = (f" In the same rounds {quote(base.name)} measured "
               f"{base.stats.median:.4g} ms: the winner runs at "
               f"{final.baseline_ratio_text()}× its speed."
               if base and final.baseline_ratio() is not None else "")
    if final.confirmed:
        against = (f" Then the winner{' and the baseline' if base else ''} ran "
                   f"{final.confirmed.rounds} rounds of their own after cool-downs "
                   f"({quote(final.confirmed.duty)}): the winner's median "
                   f"{final.confirmed.stats.median:.4g} ms.{against}")
    return against


def best_table(tables: ReportTables) -> tuple[pd.DataFrame, dict[str, str]]:
    """The best configs in the sweep without the rate columns not shown, and the names of
    the rate's and the baseline's columns."""
    other = [c for c in ("gbps", "tflops") if c != tables.metric]
    base = tables.baselines[0].name if tables.baselines else "baseline"
    return (tables.best.drop(columns=other),
            {"pct_of_baseline": f"% of {base}", **rate_name(tables)})


def best_intro(tables: ReportTables) -> str:
    """What the best configs' numbers are: the sweep's, a finalist's median beside; and
    why trials with a power reading have no GB/J (:func:`._tables.power_of_its_own`)."""
    unshown = tables.power["energy_not_shown"]
    return ("Medians, their ±CI % (half the 95% interval, in % of the median) and rates are "
            "the sweep's" + ("; \"final median ms\" is a finalist's median when re-measured "
                             "interleaved" if tables.best["final_median_ms"].notna().any()
                             else "") + "." +
            (f" GB/J is not given for {counted(unshown, 'trial')}: each sampled for less than "
             f"the {POWER_AVERAGED_S:g} s NVML averages board power over, so its power "
             "reading was mostly of what ran before it." if unshown else ""))


def baselines_table(tables: ReportTables) -> pd.DataFrame:
    """Each baseline measured in the sweep, one a row: what the best configs' "% of"
    column is relative to."""
    metric, df = tables.metric, tables.frame
    shaped = any(not b.problem.problem.sized_by_footprint for b in tables.baselines)
    return pd.DataFrame([{"name": b.name, "dtype": b.dtype,
                          "footprint": format_size(b.footprint),
                          **({"dims": show_dims(b.dims)} if shaped else {}), "cache": b.cache,
                          "median ms": b.stats.median, "min ms": b.stats.min,
                          "p95 ms": b.stats.p95, unit(metric): r}
                         for b, r in zip(tables.baselines,
                                         baseline_rates(tables.baselines, df, metric),
                                         strict=True)])


def factors_table(tables: ReportTables) -> pd.DataFrame:
    """What varied and what was held fixed, one factor a row."""
    return pd.DataFrame([(kind, k, v) for kind in ("varied", "fixed")
                         for k, v in tables.factors[kind]], columns=["", "factor", "value"])


def environment_table(tables: ReportTables) -> pd.DataFrame:
    """The study's environment, one item a row."""
    return pd.DataFrame(list(tables.meta.environment.items()), columns=["what", "value"])
