"""One ``auto`` search replayed on a recorded table, proposal by proposal (no GPU needed).

    python benchmarks/search_trace.py TABLE [--seeds 0,1] [--limit 40]
                                     [--tables counterfactual] [--set NAME=VALUE]

For the table (a name from ``table_sets.TABLES``, or with ``--tables
counterfactual`` one of ``counterfactuals.COUNTERFACTUALS``, e.g. copy-1g/box): how the
kernel model ranks the configs within 98 % of the best (rank 1: the model's best guess)
and what its best guess measured as a fraction of the best; then, per seed, each proposal
up to the first within 98 % (numbered as the sweep numbers its trials, those that fail
included: ``fails``): its step (``AutoSampler.phases``), its measured fraction of the
best, its model rank and guess relative to the best guess, and the axes that vary.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from search_efficiency import override, selected, trials_to_goal  # noqa: E402
from search_robustness import auto_samplers  # noqa: E402
from table_sets import GOAL, SETS  # noqa: E402

from sweeper.devices import open_device  # noqa: E402
from sweeper.samplers._auto import AutoSampler  # noqa: E402
from sweeper.samplers._auto_state import Key, Phase, key_of  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("table")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--tables", choices=("all", *SETS, "counterfactual"), default="all")
    parser.add_argument("--set", default="", help="auto's constants for a variant, e.g. "
                        "PATIENCE=6 (sweeper/samplers/_auto_model.py, _auto_pattern.py, "
                        "_auto_state.py)")
    args = parser.parse_args()
    override(args.set)
    with tempfile.TemporaryDirectory() as tmp:
        table, space = selected(args.tables, args.table, Path(tmp))[args.table]
        trace(args, table, space)


def trace(args: argparse.Namespace, table: Path, space: str) -> None:
    """Print the table's figures and each seed's proposals (see the module docstring)."""
    device = open_device(f"replay:{table}")
    names = set(device.params)
    recorded = {key_of({p: r[p] for p in device.params}): float(r["median_ms"])
                for r in device.rows if r.get("status", "ok") == "ok" and r["median_ms"]}
    fastest = min(recorded.values())

    def fraction(k: Key) -> float:
        """The config's measured throughput / the table's best (0: not in the table)."""
        ms = recorded.get(tuple((p, v) for p, v in k if p in names))
        return fastest / ms if ms else 0.0

    with tempfile.TemporaryDirectory() as tmp:
        for n, seed in enumerate(int(s) for s in args.seeds.split(",")):
            with auto_samplers() as made, proposals() as proposed:
                count = trials_to_goal(table, space, "auto", seed, Path(tmp), limit=args.limit)
            sampler = made[-1]
            prior = sampler.strategy.prior           # log guess relative to the best guess
            ranked = sorted(prior, key=lambda k: -prior[k])
            rank = {k: i for i, k in enumerate(ranked, 1)}
            varying = {p for p, _ in ranked[0] if len({dict(k)[p] for k in ranked}) > 1}

            def short(k: Key, varying: set[str] = varying) -> str:
                return " ".join(f"{p}={v}" for p, v in k if p in varying)

            if n == 0:
                near = sorted(rank[k] for k in ranked if fraction(k) >= GOAL)
                best = max(ranked, key=fraction)
                print(f"{args.table}: {len(ranked)} valid configs, {len(near)} within 98 %, "
                      f"model ranks {near}; best guess measured {fraction(ranked[0]):.3f} "
                      f"of the best: {short(ranked[0])}")
                print(f"  best config (model rank {rank[best]}, guess "
                      f"{math.exp(prior[best]):.3f}): {short(best)}")
            print(f"seed {seed}: {count} trials")
            for i, (params, phase) in enumerate(proposed[:count or args.limit], 1):
                if params is None:                  # the strategy had nothing: TPE's
                    print(f"  {i:2d} {phase.name:11s}")
                    continue
                k = key_of(params)
                measured = f"{fraction(k):.3f}" if fraction(k) else "fails"
                print(f"  {i:2d} {phase.name:11s} {measured:5s} rank {rank.get(k, -1):4d} "
                      f"guess {math.exp(prior.get(k, -9)):.3f} {short(k)}")


@contextlib.contextmanager
def proposals() -> Iterator[list[tuple[dict[str, str] | None, Phase]]]:
    """Within the block, each proposal an ``AutoSampler`` makes (its config, ``None`` where
    TPE's, and its step), in order, failed ones included: a trial's number in the trace is
    its number in the sweep."""
    made: list[tuple[dict[str, str] | None, Phase]] = []
    real = AutoSampler.before_trial

    def logged(self: AutoSampler, study: Any, trial: Any) -> None:
        real(self, study, trial)
        made.append((self._pending, self.phases[-1]))

    AutoSampler.before_trial = logged  # type: ignore[method-assign]
    try:
        yield made
    finally:
        AutoSampler.before_trial = real  # type: ignore[method-assign]


if __name__ == "__main__":
    main()
