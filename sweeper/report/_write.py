"""Write a study's report: heatmaps, ``report.md`` and ``report.json``."""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sweeper.report._draw import draw_heatmap
from sweeper.report._tables import best_configs, failure_counts, heatmaps, trials_frame
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
    meta_names = meta.get("meta_axes", [])
    df = trials_frame(trials, meta_names)
    axes = meta.get("axes", {})
    blocks = sorted(int(b) for b in axes.get("block", []) if str(b).isdigit())
    env = meta.get("environment", {})
    maps = heatmaps(df, meta_names, axes.get("grid", []), blocks, kernel=meta["kernel"],
                    gpu=env.get("gpu", "?")) if not df.empty else []
    return {"meta": meta, "frame": df, "baselines": baselines, "heatmaps": maps,
            "best": best_configs(df, baselines, meta_names) if not df.empty else pd.DataFrame(),
            "failures": failure_counts(df) if not df.empty else pd.DataFrame()}


def write_report(store: StudyStore, *, draw: bool = True) -> ReportFiles:
    tables = study_tables(store)
    images: list[Path] = []
    if draw:
        for data in tables["heatmaps"]:
            images += draw_heatmap(data, store.root / "heatmaps")
    files = ReportFiles(markdown=store.root / "report.md", json=store.root / "report.json",
                        images=images)
    files.json.write_text(json.dumps(_report_json(tables), indent=2, default=_jsonable) + "\n")
    files.markdown.write_text(_markdown(tables, store, images))
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
        "sampler": meta.get("sampler"), "reproduce": reproduce_command(meta),
        "command": meta.get("command"), "space_sha256": meta.get("space_sha256"),
        "counts": counts,
        "best": _clean(tables["best"].to_dict("records")),
        "baselines": [{"name": b.name, "dtype": b.dtype, "footprint": b.footprint,
                       "gbps": b.gbps, **{f"{k}_ms": v for k, v in b.stats.items()
                                          if k not in ("n", "cv")}}
                      for b in tables["baselines"]],
        "failures": _clean(tables["failures"].to_dict("records")),
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


def _markdown(tables: dict[str, Any], store: StudyStore, images: list[Path]) -> str:
    meta, df, best = tables["meta"], tables["frame"], tables["best"]
    env = meta.get("environment", {})
    measure = meta.get("measure", {})
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
    out.append("## Best configs\n")
    if not best.empty:
        shown = best.copy()
        shown["footprint"] = shown["problem"]
        base_name = tables["baselines"][0].name if tables["baselines"] else "baseline"
        shown = shown.rename(columns={"grid_label": "grid", "grid": "programs",
                                      "pct_of_baseline": f"% of {base_name}",
                                      "gbps": "GB/s", "cold_s": "first run s"})
        out.append(_md_table(shown.drop(columns=["problem", "footprint", "gflops", "number"])))
    else:
        out.append("No config was measured successfully.\n")
    if tables["baselines"]:
        out.append("\n## Baselines (same timer, same runs, same GPU)\n")
        rows = pd.DataFrame([{"name": b.name, "dtype": b.dtype,
                              "footprint": format_size(b.footprint),
                              "median ms": b.stats["median"], "min ms": b.stats["min"],
                              "p95 ms": b.stats["p95"], "GB/s": b.gbps}
                             for b in tables["baselines"]])
        out.append(_md_table(rows))
    out.append("\n## Trials without a number\n")
    out.append(_md_table(tables["failures"]))
    if images:
        out.append("\n## Heatmaps\n")
        for path in images:
            if path.suffix == ".png":
                out.append(f"![{path.stem}](heatmaps/{path.name})\n")
    out.append("\n## Environment\n")
    env_rows = pd.DataFrame([{"what": k, "value": v} for k, v in env.items()])
    out.append(_md_table(env_rows))
    out.append("\n## Reproduce\n")
    out.append(f"```\n{reproduce_command(meta)}\n```\n")
    out.append(f"The study was created by `{meta.get('command', '?')}` on {meta.get('created')}; "
               f"space file `{meta.get('space_path')}` (sha256 {meta.get('space_sha256', '')[:16]}…,"
               f" full text in `study.json`); raw samples of every trial in `trials.jsonl`.\n")
    return "\n".join(out)
