"""Write a study's report: heatmaps, ``report.md`` and ``report.json``."""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sweeper.ceilings import Ceilings
from sweeper.finals import RULE, FinalRecord
from sweeper.report._draw import draw_effect, draw_heatmap
from sweeper.report._tables import (
    best_configs,
    failure_counts,
    final_table,
    flag_counts,
    heatmaps,
    one_at_a_time,
    stop_counts,
    trials_frame,
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
    finals = [FinalRecord.from_json(d) for d in store.raw("final")]
    ceilings = Ceilings.from_json(meta["ceilings"]) if meta.get("ceilings") else None
    meta_names = meta.get("meta_axes", [])
    df = trials_frame(trials, meta_names, ceilings)
    axes = meta.get("axes", {})
    blocks = sorted(int(b) for b in axes.get("block", []) if str(b).isdigit())
    env = meta.get("environment", {})
    empty = df.empty
    latest: dict[tuple[Any, ...], FinalRecord] = {}
    for f in finals:                       # the newest final of each problem counts
        latest[(f.problem["dtype"], f.problem["footprint"], f.problem["cache"])] = f
    return {
        "meta": meta, "frame": df, "baselines": baselines, "ceilings": ceilings,
        "heatmaps": [] if empty else heatmaps(df, meta_names, axes.get("grid", []), blocks,
                                              kernel=meta["kernel"], gpu=env.get("gpu", "?")),
        "best": pd.DataFrame() if empty else best_configs(df, baselines, meta_names),
        "failures": pd.DataFrame() if empty else failure_counts(df),
        "stops": pd.DataFrame() if empty else stop_counts(df),
        "flags": pd.DataFrame() if empty else flag_counts(df),
        "finals": [(f, final_table(f, df, meta_names)) for f in latest.values()],
        "effects": one_at_a_time(trials, axes, dict(meta["sampler"].get("baseline", [])))
        if meta.get("sampler", {}).get("name") == "one-at-a-time" else [],
        "drift": store.raw("drift"),
    }


def write_report(store: StudyStore, *, draw: bool = True) -> ReportFiles:
    tables = study_tables(store)
    images: list[Path] = []
    if draw:
        for data in tables["heatmaps"]:
            images += draw_heatmap(data, store.root / "heatmaps")
        for effect in tables["effects"]:
            images += draw_effect(effect, tables["meta"]["kernel"], store.root / "heatmaps")
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


def _markdown(tables: dict[str, Any], images: list[Path]) -> str:
    meta, df = tables["meta"], tables["frame"]
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
               "GB/s from the median.\n")
    out += _winners(tables)
    out += _effects(tables)
    out.append("## Best configs in the sweep\n")
    best = tables["best"]
    if not best.empty:
        shown = best.copy()
        base_name = tables["baselines"][0].name if tables["baselines"] else "baseline"
        shown = shown.rename(columns={
            "grid_label": "grid", "grid": "programs", "pct_of_baseline": f"% of {base_name}",
            "pct_ceiling": "% of ceiling", "gbps": "GB/s", "gb_per_j": "GB/J",
            "cold_s": "first run s", "rel_ci": "±CI", "number": "#"})
        keep = [c for c in shown.columns if c != "gflops" or (shown[c] > 0).any()]
        out.append(_md_table(shown[keep]))
    else:
        out.append("No config was measured successfully.\n")
    if tables["baselines"]:
        out.append("\n## Baselines (same timer, same runs, same GPU)\n")
        rows = pd.DataFrame([{"name": b.name, "dtype": b.dtype,
                              "footprint": format_size(b.footprint), "cache": b.cache,
                              "median ms": b.stats["median"], "min ms": b.stats["min"],
                              "p95 ms": b.stats["p95"], "GB/s": b.gbps}
                             for b in tables["baselines"]])
        out.append(_md_table(rows))
    out += _ceilings(tables["ceilings"])
    out.append("\n## How sampling stopped, and flags\n")
    out.append(_md_table(tables["stops"]))
    out.append("\n" + _md_table(tables["flags"]))
    out.append("\n## Trials without a number\n")
    out.append(_md_table(tables["failures"]))
    if images:
        out.append("\n## Heatmaps\n")
        for path in images:
            if path.suffix == ".png":
                out.append(f"![{path.stem}](heatmaps/{path.name})\n")
    out += _record(tables)
    out.append("\n## Environment\n")
    out.append(_md_table(pd.DataFrame([{"what": k, "value": v} for k, v in env.items()])))
    return "\n".join(out)


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
    out = ["## Winners, re-measured interleaved\n",
           f"Finalists (the top configs and every config tied with the best) were re-measured "
           f"in round-robin rounds in one process; the winner comes from those samples. "
           f"Rule: {RULE}.\n"]
    for final, table in tables["finals"]:
        p = final.problem
        out.append(f"**{p['dtype']} {format_size(p['footprint'])} {p['cache']}**: winner "
                   f"#{final.winner}, {len(final.tied) - 1} other(s) tied within noise; "
                   f"{final.rounds} rounds × {final.samples_per_round} samples each.\n")
        out.append(_md_table(table))
    return out


def _ceilings(ceilings: Ceilings | None) -> list[str]:
    if ceilings is None:
        return ["\n## Ceilings\n", "Not measured for this GPU when the study ran "
                "(`sweeper calibrate`): no % of ceiling and no roofline place.\n"]
    return ["\n## Ceilings\n",
            f"Measured by `sweeper calibrate` on {ceilings.measured}: DRAM copy "
            f"{ceilings.dram_bandwidth():.0f} GB/s (torch copy_, cold, largest footprint), "
            "matmul " + ", ".join(f"{k} {v:.0f} TFLOP/s" for k, v in ceilings.matmul.items()) +
            f", launch floor {ceilings.launch_floor_us:.1f} us. '% of ceiling' divides by the "
            "copy bandwidth measured at the trial's own footprint and cache mode; "
            "roofline: attainable = min(matmul peak, intensity × DRAM bandwidth).\n"]


def _record(tables: dict[str, Any]) -> list[str]:
    """The seed's measurement record: what a reader needs to trust or redo the number."""
    meta, env, df = tables["meta"], tables["meta"].get("environment", {}), tables["frame"]
    sizes = sorted({(d, format_size(int(f))) for d, f in zip(df.get("dtype", []),
                   df.get("footprint", [])) if pd.notna(f)})
    conclusion = "no successful config"
    if tables["finals"]:
        parts = []
        for final, table in tables["finals"]:
            row = table.iloc[0]
            parts.append(f"{final.problem['dtype']} {format_size(final.problem['footprint'])} "
                         f"{final.problem['cache']}: #{final.winner} at {row['gbps']:.4g} GB/s, "
                         f"{len(final.tied) - 1} tied within noise")
        conclusion = "; ".join(parts)
    elif not tables["best"].empty:
        row = tables["best"].iloc[0]
        conclusion = f"#{row['number']} at {row['gbps']:.4g} GB/s (no interleaved final)"
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
