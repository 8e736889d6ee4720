"""Export best configs to a tuning file, and read them back at launch time.

``sweeper export STUDY`` writes, per (kernel, GPU, dtype, problem), the best
measured config into a JSON tuning file (merging with what is there); an entry names its
problem by footprint and by the kernel's dimensions (``dims``).  :func:`tuned` returns
the config for a kernel on the current GPU at the dimensions asked for (else the nearest
tuned ones) or the nearest tuned footprint, with the grid re-computed for the problem
asked for when it was an expression such as ``cdiv(n, BLOCK)``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeper.errors import SweeperError
from sweeper.finals import UNFINISHED, Pick, Winners, finals_apply, problem_of
from sweeper.fsio import atomic_write, writable_target
from sweeper.kernels import Headline
from sweeper.space import DTYPES, Problem, evaluate, format_size, parse, show_dims
from sweeper.store import ProblemKey, StudyStore

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
    #: the kernel's dimensions it was tuned at (none in a file older than dimensions)
    dims: dict[str, int] = field(default_factory=dict)

    @property
    def num_warps(self) -> int:
        """Warps per program: the tuned block of threads over the 32 of a warp."""
        return self.block // 32

    def launch_options(self) -> dict[str, int]:
        """Keyword arguments for a Triton launch: ``num_warps`` and the constexprs."""
        return {"num_warps": self.num_warps, **self.meta}


def tuning_path(path: str | Path | None = None) -> Path:
    """The tuning file: ``path`` if given, else ``$SWEEPER_TUNING``, else
    ``DEFAULT_TUNING``, so a caller and ``sweeper export`` agree on one file without
    passing it around."""
    return Path(path or os.environ.get("SWEEPER_TUNING") or DEFAULT_TUNING)


def export_study(store: StudyStore, path: str | Path | None = None
                 ) -> tuple[Path, list[dict[str, Any]]]:
    """Merge the study's best config per problem into the tuning file; return the entries."""
    meta = store.meta()
    trials, _ = store.records()
    winners = Winners.of(store)
    picks = winners.picks(trials)
    unfinished = set(winners.missing(trials)) if finals_apply(meta) else set()
    best: dict[ProblemKey, Pick] = {}
    for key, pick in sorted(picks.items()):                        # cold wins over warm
        plain = key._replace(cache="cold")
        if key.cache == "cold" or plain not in best:
            best[plain] = pick
    if not best:
        raise SweeperError(f"{store.root}: no successful trial to export")
    entries = [_entry(meta, key.problem, pick, problem_of(pick.trial) in unfinished)
               for key, pick in sorted(best.items())]
    target = tuning_path(path)
    writable_target(target)                  # a device or a folder: refused before work
    data: dict[str, Any] = _read(target) if target.exists() else \
        {"version": FORMAT_VERSION, "entries": []}
    keys = {_entry_key(e) for e in entries}
    data["entries"] = [e for e in data["entries"] if _entry_key(e) not in keys] + entries
    atomic_write(target, json.dumps(data, indent=2) + "\n")
    return target, entries


def _entry(meta: dict[str, Any], problem: Problem, pick: Pick,
           unfinished: bool = False) -> dict[str, Any]:
    """One tuning entry.  ``median_ms`` and ``gbps`` are from the samples the config was
    chosen on (the interleaved final's where one chose it), ``median_from`` says which, as
    the report does; the sweep's median and rate are kept under their own names.
    ``unfinished``: the problem's final has not run yet, and ``note`` says so."""
    t, env = pick.trial, meta.get("environment", {})
    cfg, stats = t.config, t.stats
    assert cfg is not None and stats is not None        # a pick always has both
    entry = {
        "kernel": meta["kernel"], "gpu": env.get("gpu", "?"), "dtype": problem.dtype,
        "footprint": problem.footprint, "dims": dict(problem.dims), "grid": cfg.grid,
        "grid_expr": t.choice["grid"],
        "block": cfg.block, "meta": dict(cfg.meta),
        "gbps": t.rate(Headline.GBPS, pick.median_ms), "median_ms": pick.median_ms,
        "median_from": pick.median_from, "sweep_median_ms": stats.median,
        "sweep_gbps": t.gbps, "study": meta["study"], "trial": t.number,
        "chosen_by": pick.chosen_by,
        "facts": {"sms": env.get("sms"), "l2_bytes": env.get("l2_bytes")},
        "exported": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    if unfinished:
        entry["note"] = UNFINISHED
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
    """What one entry is for; a problem sized by its footprint alone (a 1-D kernel's ``n``,
    or an entry older than dimensions) is keyed by the footprint, so the two agree."""
    problem = Problem(entry["dtype"], entry["footprint"], tuple(entry.get("dims", {}).items()))
    dims = () if problem.sized_by_footprint else problem.dims
    return entry["kernel"], entry["gpu"], entry["dtype"], entry["footprint"], dims


def _read(path: Path) -> dict[str, Any]:
    """The tuning file at ``path``, every entry checked: a file edited by hand or cut
    short is refused with one line naming the entry, never a ``KeyError`` at launch."""
    if path.exists() and not path.is_file():      # /dev/zero would be read without end
        raise SweeperError(f"{path}: not a regular file; a tuning file is a JSON file")
    try:
        data = json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        why = err.strerror if isinstance(err, OSError) else str(err)
        raise SweeperError(f"{path}: not a readable tuning file: {why}") from None
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        found = data.get("version") if isinstance(data, dict) else None
        raise SweeperError(f"{path}: tuning file version {found!r}; this sweeper reads "
                           f"version {FORMAT_VERSION} (an object with version and entries)")
    if not isinstance(data.get("entries"), list):
        raise SweeperError(f"{path}: 'entries' must be a list of tuned configs")
    for i, entry in enumerate(data["entries"]):
        problem = _entry_problem(entry)
        if problem:
            raise SweeperError(f"{path}: entries[{i}]{_entry_name(entry)}: {problem}; "
                               "`sweeper export STUDY` writes a complete entry")
    return data


#: What :func:`tuned` reads from an entry, and the type each must have.
ENTRY_FIELDS: dict[str, tuple[type, ...]] = {
    "kernel": (str,), "gpu": (str,), "dtype": (str,), "footprint": (int,),
    "grid_expr": (str,), "block": (int,), "meta": (dict,), "gbps": (int, float),
    "median_ms": (int, float), "study": (str,), "facts": (dict,)}


def _entry_problem(entry: Any) -> str | None:
    """What is wrong with one tuning entry, or ``None``."""
    if not isinstance(entry, dict):
        return f"an entry must be an object, got {type(entry).__name__}"
    for key, types in ENTRY_FIELDS.items():
        if key not in entry:
            return f"{key!r} is missing"
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, types):
            return f"{key} is {value!r}; it must be {' or '.join(t.__name__ for t in types)}"
    if entry["dtype"] not in DTYPES:
        return f"dtype {entry['dtype']!r} is unknown; allowed: {', '.join(DTYPES)}"
    for key in ("footprint", "block", "median_ms"):
        if not entry[key] > 0 or not math.isfinite(entry[key]):
            return f"{key} is {entry[key]!r}; it must be positive"
    if not math.isfinite(entry["gbps"]) or entry["gbps"] < 0:
        return f"gbps is {entry['gbps']!r}; it must be a finite number >= 0"
    if "rate" in entry:                      # the headline rate, since export wrote one
        rate, headline = entry["rate"], entry.get("headline")
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or \
                not math.isfinite(rate) or rate < 0:
            return f"rate is {rate!r}; it must be a finite number >= 0"
        if headline not in {h.value for h in Headline}:
            return (f"headline is {headline!r}; allowed: "
                    f"{', '.join(h.value for h in Headline)}")
    for key in ("sms", "l2_bytes"):
        if key not in entry["facts"]:
            return f"'facts.{key}' is missing"
    dims = entry.get("dims", {})
    if not isinstance(dims, dict):
        return f"dims is {dims!r}; it must be an object of dimension -> integer"
    for scope, values in (("meta", entry["meta"]), ("facts", entry["facts"]), ("dims", dims)):
        for key, value in values.items():
            if type(value) is not int and not (scope == "facts" and value is None):
                return f"{scope}.{key} is {value!r}; it must be an integer"
            if scope == "dims" and type(value) is int and value <= 0:
                return f"dims.{key} is {value!r}; it must be positive"
    return None


def _entry_name(entry: Any) -> str:
    """`` (copy float32 1GiB on H200)`` from whatever the entry holds, for messages."""
    if not isinstance(entry, dict):
        return ""
    parts = [str(entry[k]) for k in ("kernel", "dtype") if isinstance(entry.get(k), str)]
    dims = entry.get("dims")
    if isinstance(dims, dict) and dims and set(dims) != {"n"}:
        parts.append(" ".join(f"{k}={v}" for k, v in dims.items()))
    elif type(entry.get("footprint")) is int and entry["footprint"] > 0:
        parts.append(format_size(entry["footprint"]))
    if isinstance(entry.get("gpu"), str):
        parts.append(f"on {entry['gpu']}")
    return f" ({' '.join(parts)[:120]})" if parts else ""


def current_gpu() -> str:
    """The name studies record for the device this process would run on."""
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        from sweeper.devices import open_device

        return open_device("interpret").facts().name
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    raise SweeperError("no CUDA device and not in the Triton interpreter; pass gpu=...")


def tuned(kernel: str, *, dtype: str, footprint: int | None = None,
          dims: Mapping[str, int] | None = None, gpu: str | None = None,
          path: str | Path | None = None) -> TunedConfig:
    """The tuned config for ``kernel`` on ``gpu`` (default: this one) for a problem of
    ``dims`` (the entry tuned at those dimensions, else the nearest: the least sum of
    each dimension's log2 distance) or of ``footprint`` bytes (the nearest tuned
    footprint); the grid is computed for the problem asked for."""
    _check_problem(dtype, footprint, dims)
    target = tuning_path(path)
    if not target.exists():
        raise SweeperError(f"{target}: no tuning file; run `sweeper export STUDY` first")
    gpu = gpu or current_gpu()
    entries = _read(target)["entries"]
    candidates = [i for i, e in enumerate(entries)
                  if e["kernel"] == kernel and e["gpu"] == gpu and e["dtype"] == dtype]
    if dims is not None:
        candidates = [i for i in candidates if set(entries[i].get("dims", {})) == set(dims)]
    if not candidates:
        shape = f" {show_dims(dims)}" if dims is not None else ""
        raise SweeperError(f"{target}: no tuned config for {kernel} {dtype}{shape} on {gpu!r}")
    if dims is not None:
        index = min(candidates, key=lambda i: sum(
            abs(math.log2(entries[i]["dims"][d] / v)) for d, v in dims.items()))
    else:
        assert footprint is not None
        index = min(candidates, key=lambda i: abs(math.log2(entries[i]["footprint"]) -
                                                  math.log2(footprint)))
    entry = entries[index]
    grid = _grid(target, index, entry, dtype, footprint, dims)
    rate, headline = entry_rate(entry)
    return TunedConfig(kernel=kernel, gpu=gpu, dtype=dtype, footprint=entry["footprint"],
                       grid=grid, grid_expr=entry["grid_expr"], block=entry["block"],
                       meta=dict(entry["meta"]), gbps=entry["gbps"],
                       median_ms=entry["median_ms"], study=entry["study"],
                       headline=headline, rate=rate, dims=dict(entry.get("dims", {})))


def _check_problem(dtype: str, footprint: int | None, dims: Mapping[str, int] | None) -> None:
    """Refuse a problem :func:`tuned` cannot look up, with what it takes."""
    if (footprint is None) == (dims is None):
        raise SweeperError("give the problem by footprint=BYTES or by dims={NAME: SIZE}, "
                           "one of them")
    if footprint is not None and (isinstance(footprint, bool) or
                                  not isinstance(footprint, int) or footprint <= 0):
        raise SweeperError(f"footprint {footprint!r}: give a positive number of bytes "
                           "(e.g. 256MiB)")
    if dims is not None and (not dims or not all(
            isinstance(k, str) and type(v) is int and v > 0 for k, v in dims.items())):
        raise SweeperError(f"dims {dict(dims)!r}: give each dimension a positive integer "
                           "(e.g. {'M': 4096, 'N': 2048, 'K': 8192})")
    if dtype not in DTYPES:
        raise SweeperError(f"unknown dtype {dtype!r}; allowed: {', '.join(DTYPES)}")


def _grid(target: Path, index: int, entry: dict[str, Any], dtype: str,
          footprint: int | None, dims: Mapping[str, int] | None) -> int:
    """The entry's grid expression evaluated for the problem asked for: its dimensions,
    footprint and ``n`` (each where known), the device facts, block and meta."""
    facts = {k: v for k, v in entry["facts"].items() if k in ("sms", "l2_bytes") and
             v is not None}
    env: dict[str, int] = {**facts, "itemsize": DTYPES[dtype], **(dims or {}),
                           "block": entry["block"], **entry["meta"]}
    if footprint is not None:
        env.update(footprint=footprint, n=footprint // DTYPES[dtype])
    elif dims is not None and dict(dims) == entry.get("dims"):
        env.update(footprint=entry["footprint"], n=dims.get("n", entry["footprint"] //
                                                            DTYPES[dtype]))
    asked = format_size(footprint) if footprint is not None else show_dims(dims or {})
    try:
        grid = int(evaluate(parse(entry["grid_expr"]), env))
    except (SweeperError, ValueError, RecursionError) as err:
        raise SweeperError(f"{target}: entries[{index}]{_entry_name(entry)}: grid_expr: "
                           f"{err}") from None
    if grid <= 0:
        raise SweeperError(f"{target}: entries[{index}]{_entry_name(entry)}: grid_expr "
                           f"{entry['grid_expr']!r} gives {grid} programs at "
                           f"{asked}; a launch needs at least one")
    return grid


def describe(config: TunedConfig) -> str:
    """One line: the launch config, and the kernel's headline rate where it was tuned."""
    meta = " ".join(f"{k}={v}" for k, v in config.meta.items())
    return (f"{config.kernel} {config.dtype} on {config.gpu}: grid={config.grid} "
            f"({config.grid_expr}) block={config.block} (num_warps={config.num_warps}) {meta}; "
            f"tuned at {_tuned_at(config)}: median {config.median_ms:.4g} ms, "
            f"{config.rate:.4g} {config.headline.unit} (study {config.study})")




def _tuned_at(config: TunedConfig) -> str:
    """The problem a config was tuned at: its dimensions, or its footprint for a 1-D
    kernel or an entry older than dimensions."""
    problem = Problem(config.dtype, config.footprint, tuple(config.dims.items()))
    return problem.describe()


def export_csv(store: StudyStore, path: str | Path) -> tuple[Path, int]:
    """Write the study as a replay table (see :mod:`sweeper.devices._replay`)."""
    from sweeper.devices._replay import write_table

    meta = store.meta()
    trials, _ = store.records()
    params = list(meta.get("axes", {}))
    env = meta.get("environment", {})
    rows = [{**{p: t.choice.get(p, "") for p in params}, "status": t.status.value,
             "median_ms": t.stats.median if t.stats else "",
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
