"""Write a study's report: heatmaps, ``report.md`` and ``report.json``."""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sweeper.ceilings import DOT_CEILING, Ceilings
from sweeper.errors import SweeperError
from sweeper.finals import Winners
from sweeper.kernels import BUILTINS, Headline, kernel_class
from sweeper.report._draw import draw_effect, draw_heatmap
from sweeper.report._tables import (
    LABELS,
    baseline_rates,
    best_configs,
    failure_counts,
    final_table,
    flag_counts,
    headline_table,
    heatmaps,
    one_at_a_time,
    rate_column,
    stop_counts,
    trials_frame,
    unit,
)
from sweeper.space import format_size
from sweeper.store import StudyStore


@dataclass
class ReportFiles:
    markdown: Path
    json: Path
    images: list[Path] = field(default_factory=list)


def study_tables(store: StudyStore) -> dict[str, Any]:
    """Everything the report shows, computed from the study on disk."""
    meta = store.meta()
    trials, baselines = store.records()
    winners = Winners.of(store)            # the newest final of each problem counts
    picks = {p.trial.number: p for p in winners.picks(trials).values()}
    ceilings = Ceilings.from_json(meta["ceilings"]) if meta.get("ceilings") else None
    meta_names = meta.get("meta_axes", [])
    headline = _headline(meta)
    df = trials_frame(trials, meta_names, ceilings, headline)
    metric = "gbps" if df.empty else rate_column(df, headline)
    axes = meta.get("axes", {})
    blocks = sorted(int(b) for b in axes.get("block", []) if str(b).isdigit())
    env = meta.get("environment", {})
    empty = df.empty
    return {
        "meta": meta, "frame": df, "baselines": baselines, "ceilings": ceilings,
        "headline": headline, "metric": metric,
        "picks": pd.DataFrame() if empty else headline_table(list(picks.values()), df,
                                                             meta_names, metric),
        "heatmaps": [] if empty else heatmaps(df, meta_names, axes.get("grid", []), blocks,
                                              kernel=meta["kernel"], gpu=env.get("gpu", "?"),
                                              headline=headline, picks=picks),
        "best": pd.DataFrame() if empty else best_configs(df, baselines, meta_names,
                                                          picks=picks),
        "failures": pd.DataFrame() if empty else failure_counts(df),
        "stops": pd.DataFrame() if empty else stop_counts(df),
        "flags": pd.DataFrame() if empty else flag_counts(df),
        "finals": [(f, final_table(f, df, meta_names, metric))
                   for f in winners.finals.values()],
        "effects": one_at_a_time(trials, axes, dict(meta["sampler"].get("baseline", [])),
                                 headline)
        if meta.get("sampler", {}).get("name") == "one-at-a-time" else [],
        "drift": store.raw("drift"),
        "factors": factors(meta),
        "abandoned": {"trials": sum(t.status.value == "abandoned" for t in trials),
                      "saved_ms": sum(t.saved_ms for t in trials)},
    }


def factors(meta: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """What the study varied, and everything it held fixed (the seeds' single-variable
    discipline: a result is only about the varied axes if the rest is written down)."""
    axes = meta.get("axes", {})
    env, fp = meta.get("environment", {}), meta.get("fingerprint", {})
    measure, sampler = meta.get("measure", {}), meta.get("sampler", {})
    varied = [(name, ", ".join(map(str, labels))) for name, labels in axes.items()
              if len(labels) > 1]
    fixed = [(name, str(labels[0])) for name, labels in axes.items() if len(labels) == 1]
    fixed += [
        ("kernel", f"{meta.get('kernel')} (source {fp.get('kernel_source', '–')})"),
        ("measurement", meta.get("measure_text", "–") + (
            f"; batch {measure['batch']}" if measure.get("batch", 1) > 1 else "") +
            ("; CUDA graph" if measure.get("graph") else "") +
            (f"; abandon at {measure['abandon']}x the best" if measure.get("abandon")
             else "")),
        ("inputs", "fresh random data per trial, seeded from the sampler seed and the trial "
                   "number; output poisoned before the verified first launch"),
        ("sampler", f"{sampler.get('name', '?')}, seed {sampler.get('seed', 0)}"),
        ("GPU", f"{env.get('gpu', '?')} UUID {env.get('gpu_uuid', '–')}, driver "
                f"{env.get('driver', '–')}; clocks, power and modes left as found (SM clock, "
                "temperature, power and throttle reasons recorded per trial; throttled "
                "chunks of samples discarded)"),
        ("software", f"CUDA {env.get('cuda', '–')}, torch {env.get('torch', '–')}, triton "
                     f"{env.get('triton', '–')}, sweeper {env.get('sweeper', '–')}"),
        ("environment variables", fp.get("env") or "no TRITON_* or CUDA_VISIBLE_DEVICES set"),
    ]
    return {"varied": varied, "fixed": fixed}


def _headline(meta: dict[str, Any]) -> Headline:
    """The kernel's headline rate, as the study recorded it; for studies older than that
    record, a built-in kernel's, else GB/s: a report imports no user code."""
    if meta.get("headline"):
        return Headline(meta["headline"])
    if meta.get("kernel") in BUILTINS:
        return kernel_class(meta["kernel"]).headline
    return Headline.GBPS


def write_report(store: StudyStore, *, draw: bool = True) -> ReportFiles:
    tables = study_tables(store)
    images: list[Path] = []
    if draw:
        for data in tables["heatmaps"]:
            images += draw_heatmap(data, store.root / "heatmaps")
        for effect in tables["effects"]:
            images += draw_effect(effect, tables["meta"]["kernel"], store.root / "heatmaps",
                                  tables["metric"])
    files = ReportFiles(markdown=store.root / "report.md", json=store.root / "report.json",
                        images=images)
    files.json.write_text(json.dumps(_report_json(tables), indent=2, default=_jsonable) + "\n")
    files.markdown.write_text(_markdown(tables, images))
    return files


def reproduce_command(meta: dict[str, Any]) -> str:
    device = meta.get("fingerprint", {}).get("device", "cuda")
    return shlex.join(["sweeper", "run", meta.get("space_path", "SPACE"), "--device", device,
                       "--study", meta["study"]])


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def _clean(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in records]


def _report_json(tables: dict[str, Any]) -> dict[str, Any]:
    meta, df = tables["meta"], tables["frame"]
    counts = df["status"].value_counts().to_dict() if not df.empty else {}
    return {
        "study": meta["study"], "kernel": meta["kernel"], "device_note": meta.get("device_note"),
        "environment": meta.get("environment", {}), "measure": meta.get("measure", {}),
        "measure_text": meta.get("measure_text"), "sampler": meta.get("sampler"),
        "reproduce": reproduce_command(meta), "command": meta.get("command"),
        "space_sha256": meta.get("space_sha256"), "fingerprint": meta.get("fingerprint"),
        "counts": counts,
        "headline": {"metric": tables["metric"], "unit": unit(tables["metric"]),
                     "per_problem": _clean(tables["picks"].to_dict("records"))},
        "winners": [{"problem": f.problem, "winner": f.winner, "tied": f.tied,
                     "rule": f.rule, "rounds": f.rounds,
                     "finalists": _clean(t.to_dict("records"))} for f, t in tables["finals"]],
        "best": _clean(tables["best"].to_dict("records")),
        "baselines": [{"name": b.name, "dtype": b.dtype, "footprint": b.footprint,
                       "cache": b.cache, "gbps": b.gbps,
                       **{f"{k}_ms": v for k, v in b.stats.items()
                          if k in ("median", "min", "p95", "std", "ci_lo", "ci_hi")}}
                      for b in tables["baselines"]],
        "failures": _clean(tables["failures"].to_dict("records")),
        "stopping": _clean(tables["stops"].to_dict("records")),
        "flags": _clean(tables["flags"].to_dict("records")),
        "ceilings": meta.get("ceilings"),
        "factors": {k: dict(v) for k, v in tables["factors"].items()},
        "abandoned": tables["abandoned"],
    }


def _md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "(none)\n"
    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    sep = "|" + "---|" * len(df.columns)
    rows = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.itertuples(False)]
    return "\n".join([head, sep, *rows]) + "\n"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


#: Column names as report.md shows them.
SHOWN = {"grid_label": "grid", "grid": "programs", "pct_ceiling": "% of ceiling",
         "gb_per_j": "GB/J", "cold_s": "first run s", "rel_ci": "±CI", "number": "#",
         "chosen_by": "chosen by", "median_ms": "median ms"}


def _markdown(tables: dict[str, Any], images: list[Path]) -> str:
    meta, df, metric = tables["meta"], tables["frame"], tables["metric"]
    rate = {metric: unit(metric)}
    env = meta.get("environment", {})
    out = [f"# Study `{meta['study']}`: {meta['kernel']} on {env.get('gpu', '?')}\n"]
    if meta.get("device_note"):
        out.append(f"> **Note:** {meta['device_note']}.\n")
    counts = df["status"].value_counts().to_dict() if not df.empty else {}
    out.append(f"{len(df)} trials: {counts.get('ok', 0)} measured, "
               f"{sum(v for k, v in counts.items() if k not in ('ok', 'invalid'))} failed, "
               f"{counts.get('invalid', 0)} skipped by constraints. Each measured trial: first "
               f"launch timed apart (compile + first run), output verified on fresh random data "
               f"with the output poisoned first, then {meta.get('measure_text', '?')}; "
               f"rates: {LABELS[metric]}.\n")
    out += _factors(tables["factors"])
    out.append("## Best config per problem\n")
    out.append("What `sweeper export` writes: the winner of the interleaved final where there "
               "is one, else the sweep's best; its median and rate from the samples it was "
               "chosen on.\n")
    out.append(_md_table(tables["picks"].rename(columns={**SHOWN, **rate})))
    out += _winners(tables)
    out += _effects(tables)
    out.append("## Best configs in the sweep\n")
    best = tables["best"]
    if not best.empty:
        base_name = tables["baselines"][0].name if tables["baselines"] else "baseline"
        other_rates = [c for c in ("gbps", "tflops") if c != metric]
        shown = best.drop(columns=other_rates).rename(columns={
            **SHOWN, "pct_of_baseline": f"% of {base_name}", **rate})
        out.append(_md_table(shown))
    else:
        out.append("No config was measured successfully.\n")
    if tables["baselines"]:
        out.append("\n## Baselines (same timer, same runs, same GPU)\n")
        rows = pd.DataFrame([{"name": b.name, "dtype": b.dtype,
                              "footprint": format_size(b.footprint), "cache": b.cache,
                              "median ms": b.stats["median"], "min ms": b.stats["min"],
                              "p95 ms": b.stats["p95"], unit(metric): r}
                             for b, r in zip(tables["baselines"],
                                             baseline_rates(tables["baselines"], df, metric))])
        out.append(_md_table(rows))
    out += _ceilings(tables["ceilings"], tables["headline"])
    out.append("\n## How sampling stopped, and flags\n")
    out.append(_md_table(tables["stops"]))
    out.append("\n" + _md_table(tables["flags"]))
    out.append("\n## Trials without a number\n")
    out.append(_md_table(tables["failures"]))
    if tables["abandoned"]["trials"]:
        out.append(f"\nEarly abandonment (`measure.abandon: {meta['measure']['abandon']}`): "
                   f"{tables['abandoned']['trials']} trial(s) stopped sampling once clearly "
                   f"slower than the best, saving about "
                   f"{tables['abandoned']['saved_ms']:.4g} ms of GPU sampling time.\n")
    if images:
        out.append("\n## Heatmaps\n")
        for path in images:
            if path.suffix == ".png":
                out.append(f"![{path.stem}](heatmaps/{path.name})\n")
    out += _record(tables)
    out.append("\n## Environment\n")
    out.append(_md_table(pd.DataFrame([{"what": k, "value": v} for k, v in env.items()])))
    return "\n".join(out)


def _factors(found: dict[str, list[tuple[str, str]]]) -> list[str]:
    out = ["## What varied, and what was held fixed\n"]
    out.append(_md_table(pd.DataFrame(
        [("varied", k, v) for k, v in found["varied"]] +
        [("fixed", k, v) for k, v in found["fixed"]], columns=["", "factor", "value"])))
    return out


def _effects(tables: dict[str, Any]) -> list[str]:
    if not tables["effects"]:
        return []
    out = ["## One variable at a time\n",
           "Every axis swept alone, all others at the baseline "
           f"({', '.join(f'{e.axis}={e.baseline}' for e in tables['effects'])}).\n"]
    rows = pd.DataFrame([{"axis": e.axis, "best value": e.best, "baseline": e.baseline,
                          "best/worst": e.ratio, "effect beyond noise": e.beyond_noise}
                         for e in tables["effects"]])
    out.append(_md_table(rows))
    for drift in tables["drift"]:
        out.append(f"\nThe baseline (#{drift['number']}) measured again at the end: "
                   f"{drift['stats']['median']:.4g} ms, {drift['drift_pct']:+.2f}% against "
                   "its first measurement.\n")
    for e in tables["effects"]:
        out.append(f"\n![{e.axis}](heatmaps/oat_{e.axis}.png)\n")
    return out


def _winners(tables: dict[str, Any]) -> list[str]:
    if not tables["finals"]:
        return []
    rules = list(dict.fromkeys(final.rule for final, _ in tables["finals"]))
    out = ["## Winners, re-measured interleaved\n",
           "Finalists (the top configs and every config tied with the best) were re-measured "
           "in round-robin rounds in one process; the winner comes from those samples. "
           + (f"Rule: {rules[0]}.\n" if len(rules) == 1 else
              "Rules (each final records the one that chose it): " + " | ".join(rules) + ".\n")]
    for final, table in tables["finals"]:
        p = final.problem
        out.append(f"**{p['dtype']} {format_size(p['footprint'])} {p['cache']}**: winner "
                   f"#{final.winner}, {len(final.tied) - 1} other(s) tied within noise; "
                   f"{final.rounds} rounds × {final.samples_per_round} samples each.\n")
        out.append(_md_table(table.rename(columns={tables["metric"]: unit(tables["metric"])})))
    return out


def _ceilings(ceilings: Ceilings | None, headline: Headline) -> list[str]:
    if ceilings is None:
        return ["\n## Ceilings\n", "Not measured for this GPU when the study ran "
                "(`sweeper calibrate`): no % of ceiling and no roofline place.\n"]
    if headline is Headline.TFLOPS:
        held = ", ".join(f"{d} against {c}" for d, c in DOT_CEILING.items())
        pct = ("'% of ceiling' divides TFLOP/s by the torch.matmul rate measured for the "
               f"trial's dtype ({held}: Triton's tl.dot runs those operands that way by "
               "default); ")
    else:
        pct = ("'% of ceiling' divides by the copy bandwidth measured at the trial's own "
               "footprint and cache mode; ")
    return ["\n## Ceilings\n",
            f"Measured by `sweeper calibrate` on {ceilings.measured}: DRAM copy "
            f"{ceilings.dram_bandwidth():.0f} GB/s (torch copy_, cold, largest footprint), "
            "matmul " + ", ".join(f"{k} {v:.0f} TFLOP/s" for k, v in ceilings.matmul.items()) +
            f", launch floor {ceilings.launch_floor_us:.1f} us. {pct}"
            "roofline: attainable = min(matmul peak, intensity × DRAM bandwidth).\n"]


def _record(tables: dict[str, Any]) -> list[str]:
    """The seed's measurement record: what a reader needs to trust or redo the number."""
    meta, env, df = tables["meta"], tables["meta"].get("environment", {}), tables["frame"]
    sizes = sorted({(d, format_size(int(f))) for d, f in zip(df.get("dtype", []),
                   df.get("footprint", [])) if pd.notna(f)})
    metric, tied = tables["metric"], {f.winner: len(f.tied) - 1 for f, _ in tables["finals"]}
    conclusion = "; ".join(
        f"{row['problem']}: #{row['number']} at {row[metric]:.4g} {unit(metric)} "
        + (f"({tied[row['number']]} tied within noise)" if row["number"] in tied
           else "(no interleaved final)")
        for _, row in tables["picks"].iterrows()) or "no successful config"
    rows = [
        ("input sizes and dtype", ", ".join(f"{d} {s}" for d, s in sizes) or "–"),
        ("hardware", f"{env.get('gpu')} ({env.get('sms')} SMs, "
                     f"{format_size(int(env.get('l2_bytes', 0) or 0))} L2), "
                     f"driver {env.get('driver', '–')}, UUID {env.get('gpu_uuid', '–')}"),
        ("software", f"CUDA {env.get('cuda', '–')}, torch {env.get('torch')}, triton "
                     f"{env.get('triton')}, sweeper {env.get('sweeper')}, Python "
                     f"{env.get('python')}"),
        ("command", f"`{meta.get('command', '?')}` (reproduce: `{reproduce_command(meta)}`)"),
        ("statistics", "median of CUDA-event samples (one event pair per sample, L2 flushed "
                       "outside it when cold); 95% CI of the median from order statistics; "
                       "outliers outside 1.5×IQR counted, not dropped"),
        ("stopping rule", meta.get("measure_text", "–")),
        ("raw samples", "`trials.jsonl` in this folder (every sample of every trial)"),
        ("conclusion", conclusion),
    ]
    return ["\n## Measurement record\n",
            _md_table(pd.DataFrame(rows, columns=["item", "record"]))]
