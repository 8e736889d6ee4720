"""Export best configs to a tuning file, a replay table or an importable Triton module.

``sweeper export STUDY`` writes, per (kernel, GPU, dtype, problem), the config the problem
ends with (the interleaved finals' winner, else the sweep's best) into a JSON tuning file,
merging with what is there; an entry names its problem by footprint and by the kernel's
dimensions (``dims``), and its kernel by name (``kernel_path``: the ``module:attr`` the
space named it by).  :func:`sweeper.tuned` reads it back (:mod:`sweeper.lookup`);
``--format triton`` writes the winners as ``triton.Config`` objects
(:mod:`sweeper.export_triton`).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any, NamedTuple

from sweeper.errors import SweeperError
from sweeper.finals import UNFINISHED, Pick, Winners, finals_apply, problem_of
from sweeper.fsio import atomic_write, writable_target
from sweeper.kernels import Headline
from sweeper.lookup import TunedConfig, current_gpu, describe, tuned
from sweeper.space import Problem
from sweeper.store import ProblemKey, StudyStore, TrialRecord
from sweeper.tuning import FORMAT_VERSION, entry_key, entry_rate, read_tuning, tuning_path


class StudyWinners(NamedTuple):
    """What a study ends with: its metadata, its trials, the pick of each problem (a
    problem measured cold and warm: the cold one's) and the problems whose finals have
    not run yet."""

    meta: dict[str, Any]
    trials: list[TrialRecord]
    picks: dict[ProblemKey, Pick]
    unfinished: set[ProblemKey]


def study_winners(store: StudyStore) -> StudyWinners:
    """The winners of ``store`` as every export writes them; a study with no successful
    trial is refused."""
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
    return StudyWinners(meta, list(trials), dict(sorted(best.items())), unfinished)


def export_study(store: StudyStore, path: str | Path | None = None
                 ) -> tuple[Path, list[dict[str, Any]]]:
    """Merge the study's best config per problem into the tuning file; return the entries.
    An entry replaces one for the same problem, including one an older sweeper keyed by
    the kernel's ``module:attr`` path."""
    from sweeper.consensus import export_fields

    won = study_winners(store)
    by_number = {t.number: t for t in won.trials}
    entries = [{**_entry(won.meta, key.problem, pick, problem_of(pick.trial) in won.unfinished),
                **export_fields(pick.agreement, by_number)} for key, pick in won.picks.items()]
    target = tuning_path(path)
    writable_target(target)                  # a device or a folder: refused before work
    data: dict[str, Any] = read_tuning(target) if target.exists() else \
        {"version": FORMAT_VERSION, "entries": []}
    keys = {entry_key(e) for e in entries} | \
        {entry_key({**e, "kernel": e["kernel_path"]}) for e in entries if "kernel_path" in e}
    data["entries"] = [e for e in data["entries"] if entry_key(e) not in keys] + entries
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
        "kernel": meta.get("kernel_name", meta["kernel"]), "gpu": env.get("gpu", "?"),
        "dtype": problem.dtype,
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
    if meta.get("kernel_name", meta["kernel"]) != meta["kernel"]:
        entry["kernel_path"] = meta["kernel"]
    if env.get("capability"):
        entry["capability"] = str(env["capability"])
    if unfinished:
        entry["note"] = UNFINISHED
    # the headline rate at the median the entry states, so the two always agree
    headline = _headline(meta)
    entry.update(headline=headline.value, rate=t.rate(headline, entry["median_ms"]))
    return entry


def _headline(meta: dict[str, Any]) -> Headline:
    """The study's headline rate; studies recorded before kernels declared one: GB/s."""
    return Headline(meta.get("headline", Headline.GBPS.value))


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


__all__ = ["StudyWinners", "TunedConfig", "current_gpu", "describe", "entry_rate",
           "export_csv", "export_study", "study_winners", "tuned", "tuning_path"]
