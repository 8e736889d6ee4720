"""``report.html``: the tables :func:`sweeper.report.study_tables` computed, as one
self-contained page (no server, no network, no library: its style and script are in
the file), and the same page as a fragment a notebook shows (:meth:`sweeper.Study._repr_html_`).

What the page promises a reader:

- The sentences and small tables (best config per problem, finals, best configs,
  failures, provenance) are HTML written here and read without a script.
- The heatmaps, the footprint curves, the roofline and the table of every trial are drawn
  by the page's script from one JSON block of the numbers already computed: a heatmap
  cell or a point shows its trial's config, median, 95 % CI, samples and flags on hover;
  the trial table sorts by any column and filters by text, ``key=value`` and status.
- Text from the study (names, labels, reasons, the environment) is only ever text: the
  HTML written here escapes it (:func:`html.escape`), the JSON block cannot end its
  ``<script>`` element (``<``, ``>`` and ``&`` are written as ``\\u`` escapes), and the
  script puts every string into the page as a text node, never as markup.
- A script error is written into the page (``.sw-error``), so a broken page says so
  instead of showing empty boxes; a test reads it from a real browser.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable
from html import escape
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from sweeper.escape import script_json
from sweeper.outcome import problem_text
from sweeper.report import _shared
from sweeper.report._contents import ReportTables
from sweeper.report._footprint import FootprintCurve
from sweeper.report._heatmaps import HeatmapData, fmt_rate
from sweeper.report._provenance import approx_size, reproduce_command
from sweeper.report._roofline import Roofline
from sweeper.report._tables import LABELS, outcome_labels, problem_keys, reason_kind, unit
from sweeper.space import format_size

#: The trial table's columns, in order, where the study has them (the meta-parameters and
#: the rate column go where their names stand).
TRIAL_COLUMNS = ["number", "status", "problem", "grid_label", "grid", "block", "META",
                 "median_ms", "ci_lo_ms", "ci_hi_ms", "ci_pct", "samples", "RATE",
                 "pct_ceiling", "cold_s", "stop", "flags", "reason"]
#: Columns left out of the trial table where every trial has one value (the page's
#: "what varied" table states it once).
HELD = {"problem", "grid_label", "grid", "block"}
#: Columns that mean nothing for a trial without a number (0.0 there is not a rate).
RATES = ("gbps", "gflops", "tflops", "score", "pct_ceiling")
#: A text column is written as indices into its values when each value fills, on average,
#: this many rows or more.
LEVELS_EVERY = 4
#: Significant digits the page keeps of a number (the report's tables show four).
DIGITS = 6
#: Full reasons shown under each kind of failure; the trial table holds every one.
REASONS_SHOWN = 20


def html_page(tables: ReportTables) -> str:
    """The whole ``report.html``: a page that also catches any script error into itself."""
    title = f"{tables.meta.study}: {tables.meta.kernel} on {tables.meta.gpu}"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{escape(title)}</title>\n<script>{_asset('errors.js')}</script>\n"
            f"</head><body>\n{html_fragment(tables, 'sweeper-report')}\n</body></html>\n")


def html_fragment(tables: ReportTables, element_id: str | None = None) -> str:
    """The report as one ``<div>`` holding its own style and script, scoped to that div
    (``element_id``, a fresh one by default), so that several can share a notebook."""
    root = element_id or f"sweeper-{uuid.uuid4().hex[:12]}"
    sections, links = [], []
    for key, title, build in _sections():
        parts = build(tables)
        if parts:                                  # a section with nothing to show is left out
            sections += [f"<h2 id=\"{escape(root)}-{key}\">{title}</h2>", *parts]
            links.append(f"<a href=\"#{escape(root)}-{key}\">{title}</a>")
    body = "\n".join([*_head(tables), "<nav>" + " · ".join(links) + "</nav>", *sections])
    return (f"<div class=\"sweeper-report\" id=\"{escape(root)}\">\n"
            f"<style>{_asset('report.css')}</style>\n{body}\n"
            "<script type=\"application/json\" class=\"sw-data\">"
            f"{script_json(report_data(tables))}</script>\n"
            f"<script>{_asset('report.js')}\n"
            f"sweeperReport({json.dumps(root)}, document.currentScript);</script>\n"
            "</div>")


def _asset(name: str) -> str:
    """The text of ``html/NAME``, the page's own style or script."""
    return (resources.files("sweeper.report") / "html" / name).read_text(encoding="utf-8")


def report_data(tables: ReportTables) -> dict[str, Any]:
    """What the page's script draws: the trial table, the heatmaps and the charts."""
    metric = tables.metric
    trials = trial_rows(tables)
    return {"metric": metric, "unit": unit(metric), "label": LABELS.get(metric, metric),
            "names": {**_shared.SHOWN, metric: unit(metric), "ci_lo_ms": "CI low ms",
                      "ci_hi_ms": "CI high ms", "stop": "stopped by"},
            "config": [c for c in ("grid_label", "block", *tables.meta.param_axes)
                       if c in trials["columns"]],
            "trials": trials,
            "maps": [_map(m) for m in tables.heatmaps if m.measured and not m.flat],
            "charts": [*(_footprint_chart(c) for c in tables.footprint),
                       *([_roofline_chart(tables.roofline)] if tables.roofline else [])]}


def trial_rows(tables: ReportTables) -> dict[str, Any]:
    """Every trial as a row of values under ``columns`` (numbers to :data:`DIGITS`
    significant digits, ``null`` where missing); columns blank in every row left out.  A
    text column of few values (status, problem, grid) holds indices into its ``levels``,
    which the page's script puts back: a study's 10⁴ rows repeat them otherwise.  A trial
    to be measured again has the status ``retry``, as the page counts and lists it
    (:func:`~sweeper.report._tables.outcome_labels`), not ``crashed``."""
    df = tables.frame
    if df.empty:
        return {"columns": [], "rows": [], "levels": {}}
    held = {*HELD, *tables.meta.param_axes}
    names = [n for c in TRIAL_COLUMNS for n in (tables.meta.param_axes if c == "META" else
                                                [tables.metric] if c == "RATE" else [c])]
    frame = df.assign(problem=problem_keys(df), status=outcome_labels(df))
    frame = frame[[c for c in dict.fromkeys(names) if c in frame
                   and not (c in held and frame[c].astype(str).nunique() <= 1)]]
    frame = _shared.without_blank_columns(frame.assign(**{
        c: frame[c].where(frame["status"] == "ok") for c in RATES if c in frame}))
    levels: dict[str, list[str]] = {}
    for c in frame.columns:
        values = frame[c]
        if values.map(lambda v: isinstance(v, str)).all() and \
                values.nunique() * LEVELS_EVERY <= len(values):
            levels[c] = sorted(values.unique())
            frame = frame.assign(**{c: values.map({v: i for i, v in enumerate(levels[c])})})
    rows = [[_value(v) for v in row] for row in frame.itertuples(index=False, name=None)]
    return {"columns": list(frame.columns), "rows": rows, "levels": levels}


def _value(value: Any) -> Any:
    """A cell as JSON: a number to :data:`DIGITS` significant digits (whole numbers whole),
    ``None`` for a missing one, text as text."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):                   # numpy scalars
        value = value.item()
    if isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 2 ** 53 else \
            float(f"{value:.{DIGITS}g}")
    return str(value)


def _spread(pct: float) -> int | str:
    """A wide CI's ± in % as its cell says it: whole percent, or ``∞`` for one too wide to
    put a number on (its width over a median a few ulps above 0 overflows)."""
    return round(pct) if math.isfinite(pct) else "∞"


def _map(m: HeatmapData) -> dict[str, Any]:
    """A heatmap as the script draws it: labels, each cell's rate, text, mark and trial,
    and for a cell whose CI is wide (:attr:`HeatmapData.wide`) its ± in % (hatched)."""
    values = m.values.to_numpy(dtype=float)
    numbers = (m.numbers.to_numpy(dtype=float) if m.numbers is not None
               else np.full(values.shape, np.nan))
    notes = m.notes.to_numpy(dtype=object)
    won = m.won_by.to_numpy(dtype=object) if m.won_by is not None else None
    wide = m.wide.to_numpy(dtype=bool)
    spread = m.ci_pct.to_numpy(dtype=float) if m.ci_pct is not None else None
    cells = [[[_value(v), _value(n), fmt_rate(v) if math.isfinite(v) else notes[i, j],
               won[i, j] if won is not None and math.isfinite(v) else "",
               _spread(spread[i, j]) if spread is not None and wide[i, j] else None]
              for j, (v, n) in enumerate(zip(values[i], numbers[i], strict=True))]
             for i in range(values.shape[0])]
    best = m.best
    return {"name": m.name, "title": m.title, "caption": m.caption,
            "rows": [str(_value(b)) for b in m.values.index], "columns": m.column_labels,
            "cells": cells,
            "best": [list(m.values.index).index(best[0]), list(m.values.columns).index(best[1])]
            if best is not None else None,
            "best_note": m.best_note,
            "final": fmt_rate(m.best_final) if m.best_final is not None else None,
            "scale": list(m.scale) if m.scale else None}


def _footprint_chart(curve: FootprintCurve) -> dict[str, Any]:
    """A footprint curve as the script's chart: points with CI bars per cache mode, the
    dotted one-config trace, the calibrated reference, the bound and the L2 size."""
    rate = unit(curve.metric)
    series = []
    for cache, sub in curve.points.groupby("cache", sort=True):
        series.append({"label": f"chosen config, {cache}", "kind": "points", "points": [
            [_value(p["footprint"]), _value(p["rate"]), _value(p["lo"]), _value(p["hi"]),
             _value(p["number"]),
             f"{p['problem']}: #{p['number']}, {fmt_rate(p['rate'])} {rate} at median "
             f"{p['median_ms']:.4g} ms ({p['median_from']})"]
            for _, p in sub.iterrows()]})
    for frame, label, kind in ((curve.trace, curve.trace_label, "dotted"),
                               (curve.ceiling, curve.ceiling_label, "thin")):
        for cache, sub in frame.groupby("cache", sort=True):
            series.append({"label": f"{label}{', ' + str(cache) if cache else ''}",
                           "kind": kind, "points": [
                               [_value(x), _value(y), None, None, None,
                                f"{approx_size(float(x))}: {fmt_rate(y)} {rate}"]
                               for x, y in zip(sub["footprint"], sub["rate"], strict=True)]})
    sizes = sorted(set(curve.points["footprint"]))
    return {"name": curve.name, "title": curve.title, "caption": curve.caption,
            "xlabel": "footprint", "ylabel": LABELS.get(curve.metric, curve.metric),
            "xlog": True, "ylog": False, "series": series,
            "xticks": [[int(s), approx_size(float(s))] for s in sizes],
            "hlines": [[curve.bound, curve.bound_label]] if curve.bound is not None else [],
            "vlines": [[curve.l2_footprint, f"L2 {format_size(curve.l2_bytes)}"]]
            if curve.l2_footprint else []}


def _roofline_chart(roof: Roofline) -> dict[str, Any]:
    """The roofline as the script's chart: each winner at its intensity and TFLOP/s, the
    roofs as lines over the intensities shown (solid calibrated, dashed physical)."""
    points = roof.points
    top = max((r.per_s for r in roof.roofs if r.kind == "compute"), default=math.inf)
    ridges = [top / r.per_s for r in roof.roofs if r.kind == "memory" and math.isfinite(top)]
    xs = [float(x) for x in points["intensity"]] or [1.0]
    lo, hi = min(xs + ridges) / 10, max(xs + ridges) * 10
    series = [{"label": "chosen configs", "kind": "points", "points": [
        [_value(p["intensity"]), _value(p["flop_s"] / 1e12), None, None, _value(p["number"]),
         f"{p['problem']} ({p['study']}): #{p['number']}, {p['flop_s'] / 1e12:.4g} TFLOP/s "
         f"at {p['intensity']:.4g} FLOP/B, {p['pct_roof']:.1f}% of the roof ({p['roof']})"
         + (f": {p['above']}" if p["above"] else "")]
        for _, p in points.iterrows()]}]
    for r in roof.roofs:
        ridge = min(hi, max(lo, top / r.per_s))      # a memory roof ends under the top roof
        line = ([[x, x * r.per_s / 1e12] for x in (lo, ridge)] if r.kind == "memory"
                else [[x, r.per_s / 1e12] for x in (lo, hi)])
        series.append({"label": f"{r.name} ({'calibrated' if r.calibrated else 'physical'})",
                       "kind": "thin" if r.calibrated else "dashed",
                       "points": [[_value(x), _value(y), None, None, None,
                                   f"{r.name}: {r.source}"] for x, y in line]})
    return {"name": "roofline", "title": f"roofline · {roof.gpu}",
            "caption": roof.caption,
            "xlabel": "arithmetic intensity (FLOP/B)",
            "ylabel": "TFLOP/s", "xlog": True, "ylog": True, "series": series,
            "xticks": [], "hlines": [], "vlines": []}


def html_table(df: pd.DataFrame, rename: dict[str, str] | None = None, *, empty: str = ""
               ) -> str:
    """``df`` as an HTML table (:func:`._shared.shown_table`: ``rename`` after
    :data:`._shared.SHOWN`), every cell escaped; ``empty`` (a sentence) where it has no
    row."""
    if df.empty:
        return f"<p>{escape(empty)}</p>" if empty else ""
    names, rows = _shared.shown_table(df, rename)
    head = "".join(f"<th>{escape(name)}</th>" for name in names)
    body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>"
                   for row in rows)
    return f"<table class=\"sw-static\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _p(text: str, cls: str = "") -> str:
    """A paragraph of ``text``, escaped; ``cls``: its class."""
    attribute = f' class="{cls}"' if cls else ""
    return f"<p{attribute}>{escape(text)}</p>"


def _sections() -> list[tuple[str, str, Callable[[ReportTables], list[str]]]]:
    """The page's sections in order: (anchor, heading, what builds its HTML)."""
    return [("picks", "Best config per problem", _picks), ("heatmaps", "Heatmaps", _maps),
            ("charts", "Footprint curves and roofline", _charts),
            ("finals", "Winners, re-measured interleaved", _finals),
            ("trials", "Every trial", _trials), ("failures", "Trials without a number", _failures),
            ("factors", "What varied, and what was held fixed",
             lambda tables: [html_table(_shared.factors_table(tables))]),
            ("best", "Best configs in the sweep", _best),
            ("baselines", _shared.BASELINES,
             lambda tables: [html_table(_shared.baselines_table(tables))]
             if tables.baselines else []),
            ("provenance", "Provenance", _provenance)]


def _head(tables: ReportTables) -> list[str]:
    """The title, notes and counts."""
    meta = tables.meta
    out = [f"<h1>Study <code>{escape(meta.study)}</code>: {escape(meta.kernel)} on "
           f"{escape(str(meta.environment.get('gpu', '?')))}</h1>"]
    out += [_p(f"{label}: {text}.", "sw-note") for label, text in _shared.notes(tables)]
    if tables.unmeasured:
        out.append(_p(tables.unmeasured, "sw-note"))
    return [*out, _p(_shared.counts_sentence(tables)), "<div class=\"sw-tip\" hidden></div>"]


def _picks(tables: ReportTables) -> list[str]:
    return [_p(_shared.picks_intro("sweeper export")),
            html_table(*_shared.picks_table(tables), empty=_shared.no_picks(tables)),
            *(_p(_shared.unfinished(p)) for p in tables.unfinished)]


def _finals(tables: ReportTables) -> list[str]:
    out = []
    for final, table in tables.finals:
        out += [_p(f"{problem_text(final.problem)}: winner {_shared.final_text(final)}; "
                   f"rule: {final.rule}.{_shared.final_against(final)}"),
                html_table(table, rename=_shared.finals_names(tables))]
    return out


def _maps(tables: ReportTables) -> list[str]:
    drawn = [m for m in tables.heatmaps if m.measured and not m.flat]
    if not drawn:
        return []
    out = [_p(f"{LABELS.get(tables.metric, tables.metric)}; hover a cell for its trial.")]
    best = [i for i, m in enumerate(drawn) if m.name.endswith("_best")]
    rest = [i for i in range(len(drawn)) if i not in best]
    out += [_figure("map", i, drawn[i].title, drawn[i].caption) for i in best]
    if rest:
        out.append(f"<details><summary>{len(rest)} more: one map per value of the "
                   "meta-parameters</summary>")
        out += [_figure("map", i, drawn[i].title, drawn[i].caption) for i in rest]
        out.append("</details>")
    return out


def _figure(kind: str, index: int, title: str, caption: str) -> str:
    return (f"<figure class=\"sw-{kind}\" data-index=\"{index}\"><figcaption><b>"
            f"{escape(title)}</b><br>{escape(caption)}</figcaption></figure>")


def _charts(tables: ReportTables) -> list[str]:
    charts = [*((c.title, c.caption) for c in tables.footprint),
              *([(f"roofline · {tables.roofline.gpu}", tables.roofline.caption)]
                if tables.roofline else [])]
    return [_figure("chart", i, title, caption) for i, (title, caption) in enumerate(charts)]


def _trials(tables: ReportTables) -> list[str]:
    return [_p("Click a column to sort; filter by any text, by key=value (BLOCK=1024, "
               "status=wrong_answer) or by status."),
            "<div class=\"sw-trials\"></div>"]


def _failures(tables: ReportTables) -> list[str]:
    out: list[str] = []
    df = tables.frame
    if tables.failures.empty:
        return [_p(_shared.NO_FAILURES)]
    bad = df[df["status"] != "ok"]
    kinds, labels = bad["reason"].map(reason_kind), outcome_labels(bad)
    for _, group in tables.failures.iterrows():
        trials = bad[(labels == group["status"]) & (kinds == group["reason"])]
        shown = trials.head(REASONS_SHOWN)
        more = len(trials) - len(shown)
        items = "".join(
            f"<li><b>#{int(t['number'])}</b> {escape(_config_text(t, tables))}"
            f"<pre>{escape(str(t['reason']))}</pre></li>" for _, t in shown.iterrows())
        out.append(f"<details{' open' if group['status'] != 'invalid' else ''}><summary>"
                   f"{int(group['count'])} {escape(str(group['status']))}: "
                   f"{escape(str(group['reason']))}</summary><ul>{items}</ul>"
                   + (_p(f"and {more} more: filter the trial table by "
                         f"status={group['status']}.") if more else "") + "</details>")
    return out


def _config_text(row: pd.Series, tables: ReportTables) -> str:
    names = ["grid_label", "block", *tables.meta.param_axes]
    return " ".join(f"{'grid' if n == 'grid_label' else n}={_shared.cell_value(row[n])}"
                    for n in names if n in row)


def _best(tables: ReportTables) -> list[str]:
    if tables.best.empty:
        return []
    return [_p(_shared.best_intro(tables)), html_table(*_shared.best_table(tables))]


def _provenance(tables: ReportTables) -> list[str]:
    meta = tables.meta
    items = [("reproduce", reproduce_command(meta)), ("space sha256", meta.space_sha256)]
    out = [html_table(pd.DataFrame([*items, *tables.record], columns=["item", "record"])),
           "<h3>Environment</h3>",
           html_table(_shared.environment_table(tables))]
    if meta.space_text:
        out += ["<h3>Space file</h3>", f"<pre>{escape(meta.space_text)}</pre>"]
    return out
