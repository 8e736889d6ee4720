"""Write a study's report: heatmaps, ``report.md``, ``report.html`` and ``report.json``."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sweeper.bounds import Bounds
from sweeper.ceilings import Ceilings
from sweeper.consensus import AGREE, Agreement
from sweeper.finals import FinalRecord
from sweeper.fsio import atomic_write
from sweeper.kernels import Headline
from sweeper.outcome import problem_text
from sweeper.report._contents import ReportTables
from sweeper.report._figures import render, report_figures
from sweeper.report._footprint import FootprintCurve, footprint_curves
from sweeper.report._heatmaps import heatmaps
from sweeper.report._html import html_page
from sweeper.report._markdown import markdown
from sweeper.report._provenance import (
    factors,
    record_rows,
    reproduce_command,
    run_story,
    sampler_shares,
)
from sweeper.report._roofline import Roofline, roofline, winner_work
from sweeper.report._tables import (
    best_configs,
    failure_counts,
    final_table,
    flag_counts,
    headline_table,
    nothing_measured,
    one_at_a_time,
    outcome_labels,
    power_summary,
    rate_column,
    single_valued,
    stop_counts,
    study_ceilings,
    study_frame,
    unit,
)
from sweeper.store import DriftRecord, DutyRecord, ProblemKey, Storage, StudyMeta
from sweeper.winners import Winners


@dataclass
class ReportFiles:
    """What :func:`write_report` wrote: ``report.md``, ``report.html`` (one self-contained
    page: the same tables, interactive heatmaps and charts, every trial), ``report.json``
    (its tables as data, for scripts), the images it shows (heatmaps, effect plots,
    footprint curves and the roofline) and which of them were drawn this time (the others
    were current)."""

    markdown: Path
    html: Path
    json: Path
    images: list[Path] = field(default_factory=list)
    drawn: list[Path] = field(default_factory=list)     # of ``images``, drawn this time
    #: the pictures left undrawn at the deadline: not shown, drawn by the next report
    left: tuple[str, ...] = ()
    #: why the report has no picture to draw, where it has none (the study has no trial,
    #: none was measured, or too little varies for a map): no folder is made then
    why_none: str | None = None
    #: seconds spent importing the plotting library, computing the tables, drawing the
    #: pictures, writing the three files
    seconds: dict[str, float] = field(default_factory=dict)


#: The colour scale, as report.json says it.
SCALE_TEXT = {"study": "one for the study's maps", "problem": "shared by each problem's maps",
              "map": "per map"}


def study_tables(store: Storage, *, shared_scale: bool = False, scale: str | None = None
                 ) -> ReportTables:
    """Everything the report shows, computed from the study on disk; problems in
    (dtype, footprint, dimensions, cache) order everywhere.  ``scale``: the heatmaps'
    colour scale, one for the study (default), per problem or per map
    (:data:`~sweeper.options.SCALES`); ``shared_scale`` without it: per problem."""
    scale = scale or ("problem" if shared_scale else "study")
    meta = store.study_meta()
    every, baselines = store.records()
    winners = Winners.of(store)            # the newest final of each problem counts
    # a study resumed with --force after its kernel changed, measured on both sources,
    # shows the trials of its source now (and the configs the constraints ruled out)
    # (none measured on it yet: those of the latest earlier source that measured any)
    shown_earlier = winners.sources.shown_earlier(every)
    trials = winners.sources.shown(every)
    earlier = winners.sources.earlier(every)
    unknown = winners.sources.unknown(every)
    left_out = earlier if len(trials) < len(every) else 0
    picks = {p.trial.number: p for p in winners.picks(trials).values()}
    ceilings, meta_names, headline = study_ceilings(meta), meta.param_axes, Headline(meta.headline)
    df = study_frame(meta, trials)
    metric = rate_column(df, headline)
    axes = meta.axes
    blocks = sorted(int(b) for b in axes.get("block", []) if str(b).isdigit())
    fixed = single_valued(df, meta_names)
    shown_meta = [n for n in meta_names if n not in fixed]
    varying = len({"grid_label", "block", *meta_names} - set(fixed))
    empty = df.empty
    finals = winners.shown(every)          # of the source now, as the tables are
    story = run_story(meta)
    samplers = sampler_shares(meta, trials)
    shown_picks = pd.DataFrame() if empty else _without(headline_table(
        list(picks.values()), df, shown_meta, metric), fixed)
    curves, roof = _charts(meta, df, list(picks.values()), metric, ceilings)
    return ReportTables(
        meta=meta, frame=df, ceilings=ceilings, headline=headline,
        metric=metric, story=story,
        baselines=sorted(baselines, key=lambda b: b.problem),
        picks=shown_picks,
        heatmaps=[] if empty or varying < 2 else heatmaps(
            df, meta_names, axes.get("grid", []), blocks, kernel=meta.kernel,
            gpu=meta.gpu, headline=headline, picks=picks, scale=scale),
        best=pd.DataFrame() if empty else _without(best_configs(
            df, baselines, shown_meta, picks=picks, finals=finals), fixed),
        failures=pd.DataFrame() if empty else failure_counts(df),
        stops=pd.DataFrame() if empty else stop_counts(df, meta.measure.get("stop", "")),
        flags=pd.DataFrame() if empty else flag_counts(trials),
        unmeasured=None if empty else nothing_measured(df),
        agreements=winners.agreements(trials),
        unfinished=[problem_text(p) for p in winners.missing(trials)]
        if meta.finals else [],
        finals=[(f, _without(final_table(f, df, shown_meta, metric), fixed, final=True))
                for f in finals],
        effects=one_at_a_time(trials, axes, dict(meta.sampler.get("baseline", [])),
                              headline, meta.zipped)
        if meta.sampler.get("baseline") else [],       # a sampler that takes one
        drift=store.read(DriftRecord),
        factors=factors(meta, df, story, samplers),
        samplers=samplers,
        abandoned_trials=sum(t.status.value == "abandoned" for t in trials),
        abandoned_saved_ms=sum(t.saved_ms for t in trials),
        power=power_summary(trials, meta, store.read(DutyRecord), finals,
                            {t.number for t in every} - {t.number for t in trials}),
        footprint=curves, roofline=roof,
        record=record_rows(meta, df, shown_picks, {f.winner: len(f.tied) - 1 for f in finals},
                           metric, unit(metric), story, earlier, left_out=bool(left_out),
                           shown_earlier=shown_earlier, unknown_source=unknown),
        colour_scale=scale, earlier_source=earlier, earlier_shown=shown_earlier,
        unknown_source=unknown)


def _without(table: pd.DataFrame, fixed: Sequence[str], *, final: bool = False
             ) -> pd.DataFrame:
    """``table`` without the config columns held at one value (a final's table names the
    grid label ``grid``)."""
    names = {"grid_label": "grid", "grid": ""} if final else {}
    drop = [names.get(c, c) for c in fixed]
    return table.drop(columns=[c for c in drop if c and c in table])


def _charts(meta: StudyMeta, df: pd.DataFrame, picks: list[Any], metric: str,
            ceilings: Ceilings | None) -> tuple[list[FootprintCurve], Roofline | None]:
    """The footprint curves (dtypes with two footprints or more, a problem of a cache mode
    at each) and the roofline of the study's winners (when its GPU has ceilings or
    physical bounds); none of a study without trials, by the same path."""
    bounds = Bounds.from_json(meta.bounds) if meta.bounds else None
    curves = footprint_curves(
        df, picks, metric, kernel=meta.kernel, gpu=meta.gpu,
        grid_names=["grid_label", "block", *meta.param_axes],
        l2_bytes=int(meta.environment.get("l2_bytes") or (bounds.l2_bytes if bounds else 0)),
        ceilings=ceilings, bounds=bounds)
    roof = None
    if ceilings is not None or (bounds is not None and bounds.all()):
        roof = roofline(meta.gpu, winner_work(meta.study, meta.kernel, df, picks),
                        ceilings, bounds,
                        f"sweeper calibrate, {ceilings.measured}" if ceilings else "")
        roof = roof if len(roof.points) else None       # nothing on it: % of ceiling says it
    return curves, roof


def _baseline_json(final: FinalRecord) -> dict[str, Any] | None:
    """The baseline the winner's speed is stated against, as report.json gives it."""
    base = final.compared_baseline()
    return None if base is None else {"name": base.name, "median_ms": base.stats.median,
                                      "winner_speed_ratio": final.baseline_ratio()}


def write_report(store: Storage, *, draw: bool = True, shared_scale: bool = False,
                 formats: Sequence[str] = ("png",), redraw: bool = False,
                 workers: int | None = None, scale: str | None = None,
                 deadline: float | None = None) -> ReportFiles:
    """Draw the pictures whose input changed since they were last drawn (all with
    ``redraw``) in each of ``formats`` (``scale``, ``shared_scale``: the heatmaps' colour
    scale, as :func:`study_tables` takes it; ``workers``, ``deadline``: see
    :func:`render`) and write
    ``report.md``, ``report.html`` and ``report.json``, all from one computation of the
    tables."""
    t0 = time.perf_counter()
    tables = study_tables(store, shared_scale=shared_scale, scale=scale)
    files = ReportFiles(markdown=store.root / "report.md", html=store.root / "report.html",
                        json=store.root / "report.json")
    t1 = time.perf_counter()
    imported = 0.0
    if draw:
        figures = report_figures(tables)
        shown = render(figures, store.root / "heatmaps", formats,
                       redraw=redraw, workers=workers, deadline=deadline)
        files.images, files.drawn, imported = shown.images, shown.drawn, shown.imported_s
        files.left = shown.left
        if not figures:
            files.why_none = _why_no_picture(tables)
    t2 = time.perf_counter()
    maps = {m.name for m in tables.heatmaps}
    atomic_write(files.json, json.dumps(_finite(_report_json(tables)), indent=2,
                                        default=_jsonable) + "\n")
    atomic_write(files.markdown, markdown(tables, [p for p in files.images if p.stem in maps]))
    atomic_write(files.html, html_page(tables))
    # the plotting library's import is the report's, not its first picture's: counted
    # with the pictures, a report of one map priced each map at 0.8-1.0 s of its pictures'
    # 1.0 s, so the next estimate of one of 12 maps said 11 s for a report that took 4 s
    files.seconds = {"imports": imported, "tables": t1 - t0, "pictures": t2 - t1 - imported,
                     "files": time.perf_counter() - t2}
    return files


def _why_no_picture(tables: ReportTables) -> str:
    """Why ``tables`` give no picture, in the words of the report's heatmaps section."""
    if tables.frame.empty:
        return "the study has no trial"
    if tables.unmeasured:
        return "no config was measured (report.md says why)"
    return "nothing varies enough to draw a map (report.md says why)"


def _jsonable(value: Any) -> Any:
    return _finite(value.item()) if hasattr(value, "item") else str(value)


def _finite(value: Any) -> Any:
    """``value`` with each number that is not finite ``null``: JSON has no NaN or
    Infinity, and a file holding one (as ``json.dumps`` writes them) is refused whole by
    JSON.parse, jq and every strict reader."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


#: Columns of counts: a whole number in JSON, though a column with a gap is float in pandas.
_COUNTS = frozenset({"grid", "block", "outliers", "rank", "number"})


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """``frame``'s rows as JSON objects: ``null`` where a value is NaN, counts as whole
    numbers, and the finals' unnamed column of roles (winner, tied) as ``role``."""
    def value(key: str, v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return None
        if key in _COUNTS and isinstance(v, float) and v.is_integer():
            return int(v)
        return v
    return [{(k or "role"): value(k, v) for k, v in r.items()}
            for r in frame.to_dict("records")]


def _report_json(tables: ReportTables) -> dict[str, Any]:
    meta, df = tables.meta, tables.frame
    # by status, a trial to be measured again as "retry", not "crashed"
    counts = outcome_labels(df).value_counts().to_dict() if not df.empty else {}
    return {
        "study": meta.study, "copied_from": meta.copied_from or None,
        "kernel": meta.kernel, "device_note": meta.device_note,
        "environment": meta.environment, "measure": meta.measure,
        "measure_text": meta.measure_text, "sampler": meta.sampler,
        "samplers": [s._asdict() for s in tables.samplers],
        "reproduce": reproduce_command(meta), "command": meta.command,
        "space_sha256": meta.space_sha256, "fingerprint": meta.fingerprint,
        "forced": meta.forced,
        "earlier_source_shown": tables.earlier_shown._asdict()
        if tables.earlier_shown else None,
        "counts": counts,
        "headline": {"metric": tables.metric, "unit": unit(tables.metric),
                     "per_problem": _records(tables.picks)},
        "winners": [{"problem": {**f.problem._asdict(), "dims": dict(f.problem.dims)},
                     "winner": f.winner, "tied": f.tied,
                     "rule": f.rule, "rounds": f.rounds, "duty": f.duty,
                     "baseline": _baseline_json(f),
                     "confirmed": {"duty": f.confirmed.duty, "rounds": f.confirmed.rounds,
                                   "median_ms": f.confirmed.stats.median}
                     if f.confirmed else None,
                     "finalists": _records(t)} for f, t in tables.finals],
        "agreements": agreement_json(tables.agreements),
        "best": _records(tables.best),
        "baselines": [{"name": b.name, "dtype": b.dtype, "footprint": b.footprint,
                       "dims": dict(b.dims), "cache": b.cache, "gbps": b.gbps,
                       **{f"{k}_ms": getattr(b.stats, k)
                          for k in ("median", "min", "p95", "std", "ci_lo", "ci_hi")}}
                      for b in tables.baselines],
        "failures": _records(tables.failures),
        "stopping": _records(tables.stops),
        "flags": _records(tables.flags),
        "ceilings": meta.ceilings, "bounds": meta.bounds,
        "gpu_busy": meta.last_run.get("gpu_busy"),
        "stopped_by": meta.last_run.get("stopped_by"),
        "factors": {k: dict(v) for k, v in tables.factors.items()},
        "abandoned": {"trials": tables.abandoned_trials,
                      "saved_ms": tables.abandoned_saved_ms},
        "power": tables.power,
        "unmeasured": tables.unmeasured,
        "unfinished_finals": tables.unfinished,
        "heatmaps": {"colour_scale": SCALE_TEXT[tables.colour_scale],
                     "drawn": [m.name for m in tables.heatmaps if m.drawn],
                     "not_drawn": [m.name for m in tables.heatmaps if not m.drawn]},
        "record": dict(tables.record),
        "footprint_curves": [_curve_json(c) for c in tables.footprint],
        "roofline": {"gpu": roof.gpu, "roofs": [r._asdict() for r in roof.roofs],
                     "points": _records(roof.points), "beside": roof.beside}
        if (roof := tables.roofline) is not None else None,
    }


def agreement_json(agreements: Mapping[ProblemKey, Agreement]) -> list[dict[str, Any]]:
    """The agreements as report.json gives them, in problem order."""
    return [{"problem": {**key._asdict(), "dims": dict(key.dims)}, "agreed": a.agreed,
             "threshold_pct": 100 * AGREE, "gpus": [str(g) for g in a.gpus],
             "exported": a.chosen, "worst_pct": 100 * a.worst, "summary": a.headline(),
             "gpu_winners": {str(g): n for g, n in a.winners.items()},
             "slowdown_pct": {str(n): {str(g): 100 * v for g, v in row.items()}
                              for n, row in a.slowdown.items()}}
            for key, a in sorted(agreements.items())]


def _curve_json(curve: FootprintCurve) -> dict[str, Any]:
    """The numbers behind a footprint curve, in its unit."""
    return {"name": curve.name, "metric": curve.metric, "unit": unit(curve.metric),
            "points": _records(curve.points),
            "trace": {"label": curve.trace_label, "points": _records(curve.trace)},
            "ceiling": {"label": curve.ceiling_label, "points": _records(curve.ceiling)},
            "bound": {"label": curve.bound_label, "value": curve.bound},
            "l2_bytes": curve.l2_bytes, "l2_footprint": curve.l2_footprint,
            "caption": curve.caption}
