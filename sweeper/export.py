"""Export best configs to a tuning file, and read them back at launch time.

``sweeper export STUDY`` writes, per (kernel, GPU, dtype, footprint), the best
measured config into a JSON tuning file (merging with what is there).
:func:`tuned` returns the config for a kernel on the current GPU at the nearest
tuned footprint, with the grid re-computed for the footprint asked for when it
was an expression such as ``cdiv(n, BLOCK)``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeper.errors import SweeperError
from sweeper.finals import Pick, Winners
from sweeper.fsio import atomic_write
from sweeper.kernels import Headline
from sweeper.space import DTYPES, evaluate, format_size, parse
from sweeper.store import StudyStore

DEFAULT_TUNING = Path("studies") / "tuning.json"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class TunedConfig:
    """A launch config read from a tuning file; ``grid`` is for the footprint asked for."""

    kernel: str
    gpu: str
    dtype: str
    footprint: int               # the footprint it was tuned at
    grid: int
    grid_expr: str
    block: int
    meta: dict[str, int] = field(default_factory=dict)
    gbps: float = 0.0
    median_ms: float = 0.0
    study: str = ""
    #: What the kernel's reports lead with, and its value at ``median_ms`` (GB/s, TFLOP/s).
    headline: Headline = Headline.GBPS
    rate: float = 0.0

    @property
    def num_warps(self) -> int:
        return self.block // 32

    def launch_options(self) -> dict[str, int]:
        """Keyword arguments for a Triton launch: ``num_warps`` and the constexprs."""
        return {"num_warps": self.num_warps, **self.meta}


def tuning_path(path: str | Path | None = None) -> Path:
    return Path(path or os.environ.get("SWEEPER_TUNING") or DEFAULT_TUNING)


def export_study(store: StudyStore, path: str | Path | None = None) -> tuple[Path, list[dict]]:
    """Merge the study's best config per problem into the tuning file; return the entries."""
    meta = store.meta()
    trials, _ = store.records()
    picks = Winners.of(store).picks(trials)
    best: dict[tuple[str, int], Pick] = {}
    for (dtype, footprint, cache), pick in sorted(picks.items()):   # cold wins over warm
        if cache == "cold" or (dtype, footprint) not in best:
            best[(dtype, footprint)] = pick
    if not best:
        raise SweeperError(f"{store.root}: no successful trial to export")
    entries = [_entry(meta, dtype, footprint, pick)
               for (dtype, footprint), pick in sorted(best.items())]
    target = tuning_path(path)
    data = _read(target) if target.exists() else {"version": FORMAT_VERSION, "entries": []}
    keys = {_entry_key(e) for e in entries}
    data["entries"] = [e for e in data["entries"] if _entry_key(e) not in keys] + entries
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, json.dumps(data, indent=2) + "\n")
    return target, entries


def _entry(meta: dict[str, Any], dtype: str, footprint: int, pick: Pick) -> dict[str, Any]:
    """One tuning entry.  ``median_ms`` and ``gbps`` are from the samples the config was
    chosen on (the interleaved final's where one chose it), ``median_from`` says which, as
    the report does; the sweep's median and rate are kept under their own names."""
    t, env = pick.trial, meta.get("environment", {})
    cfg, stats = t.config or {}, t.stats or {}          # a pick always has both
    entry = {
        "kernel": meta["kernel"], "gpu": env.get("gpu", "?"), "dtype": dtype,
        "footprint": footprint, "grid": cfg["grid"], "grid_expr": t.choice["grid"],
        "block": cfg["block"], "meta": cfg["meta"],
        "gbps": t.rate(Headline.GBPS, pick.median_ms), "median_ms": pick.median_ms,
        "median_from": pick.median_from, "sweep_median_ms": stats["median"],
        "sweep_gbps": t.gbps, "study": meta["study"], "trial": t.number,
        "chosen_by": pick.chosen_by,
        "facts": {"sms": env.get("sms"), "l2_bytes": env.get("l2_bytes")},
        "exported": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    # the headline rate at the median the entry states, so the two always agree
    headline = _headline(meta)
    entry.update(headline=headline.value, rate=t.rate(headline, entry["median_ms"]))
    return entry


def _headline(meta: dict[str, Any]) -> Headline:
    """The study's headline rate; studies recorded before kernels declared one: GB/s."""
    return Headline(meta.get("headline", Headline.GBPS.value))


def entry_rate(entry: dict[str, Any]) -> tuple[float, Headline]:
    """A tuning entry's headline rate and its kind; entries written before ``rate``
    existed carry GB/s only."""
    if "rate" in entry:
        return entry["rate"], Headline(entry["headline"])
    return entry["gbps"], Headline.GBPS


def _entry_key(entry: dict[str, Any]) -> tuple[Any, ...]:
    return entry["kernel"], entry["gpu"], entry["dtype"], entry["footprint"]


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise SweeperError(f"{path}: not a readable tuning file: {err}") from None
    if data.get("version") != FORMAT_VERSION:
        raise SweeperError(f"{path}: tuning file version {data.get('version')!r}; "
                           f"this sweeper reads version {FORMAT_VERSION}")
    return data


def current_gpu() -> str:
    """The name studies record for the device this process would run on."""
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        from sweeper.devices import open_device

        return open_device("interpret").facts().name
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    raise SweeperError("no CUDA device and not in the Triton interpreter; pass gpu=...")


def tuned(kernel: str, *, dtype: str, footprint: int, gpu: str | None = None,
          path: str | Path | None = None) -> TunedConfig:
    """The tuned config for ``kernel`` on ``gpu`` (default: this one) at the nearest footprint."""
    target = tuning_path(path)
    if not target.exists():
        raise SweeperError(f"{target}: no tuning file; run `sweeper export STUDY` first")
    gpu = gpu or current_gpu()
    candidates = [e for e in _read(target)["entries"]
                  if e["kernel"] == kernel and e["gpu"] == gpu and e["dtype"] == dtype]
    if not candidates:
        raise SweeperError(f"{target}: no tuned config for {kernel} {dtype} on {gpu!r}")
    entry = min(candidates, key=lambda e: abs(math.log2(e["footprint"]) - math.log2(footprint)))
    env = {"sms": entry["facts"]["sms"], "l2_bytes": entry["facts"]["l2_bytes"],
           "itemsize": DTYPES[dtype], "footprint": footprint, "n": footprint // DTYPES[dtype],
           "block": entry["block"], **entry["meta"]}
    grid = int(evaluate(parse(entry["grid_expr"]), env)) if not entry["grid_expr"].isdigit() \
        else int(entry["grid_expr"])
    rate, headline = entry_rate(entry)
    return TunedConfig(kernel=kernel, gpu=gpu, dtype=dtype, footprint=entry["footprint"],
                       grid=grid, grid_expr=entry["grid_expr"], block=entry["block"],
                       meta=dict(entry["meta"]), gbps=entry["gbps"],
                       median_ms=entry["median_ms"], study=entry["study"],
                       headline=headline, rate=rate)


def describe(config: TunedConfig) -> str:
    """One line: the launch config, and the kernel's headline rate where it was tuned."""
    meta = " ".join(f"{k}={v}" for k, v in config.meta.items())
    return (f"{config.kernel} {config.dtype} on {config.gpu}: grid={config.grid} "
            f"({config.grid_expr}) block={config.block} (num_warps={config.num_warps}) {meta}; "
            f"tuned at {format_size(config.footprint)}: median {config.median_ms:.4g} ms, "
            f"{config.rate:.4g} {config.headline.unit} (study {config.study})")




def export_csv(store: StudyStore, path: str | Path) -> tuple[Path, int]:
    """Write the study as a replay table (see :mod:`sweeper.devices._replay`)."""
    from sweeper.devices._replay import write_table

    meta = store.meta()
    trials, _ = store.records()
    params = list(meta.get("axes", {}))
    env = meta.get("environment", {})
    rows = [{**{p: t.choice.get(p, "") for p in params}, "status": t.status.value,
             "median_ms": t.stats["median"] if t.stats else "",
             "samples_ms": " ".join(repr(x) for x in t.samples_ms)}
            for t in trials if t.status.value not in ("invalid", "missing")]
    header = {"gpu": env.get("gpu", "?"), "sms": env.get("sms", ""),
              "l2_bytes": env.get("l2_bytes", ""), "kernel": meta["kernel"],
              "study": meta["study"], "driver": env.get("driver", ""),
              "created": meta.get("created", ""), "space_sha256": meta.get("space_sha256", "")}
    target = Path(path)
    write_table(target, header, params, rows)
    return target, len(rows)


__all__ = ["TunedConfig", "describe", "entry_rate", "export_csv", "export_study", "tuned",
           "tuning_path"]
