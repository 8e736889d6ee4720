"""How many trials each sampler needs to reach 98 % of the exhaustive best, on recorded
H200 tables replayed (no GPU needed).

    python benchmarks/search_efficiency.py [--seeds 10] [--first-seed 0]
                                           [--samplers random,tpe,...] [--ask-ahead on|off]

For every table in tests/data/replay (with its space file) and every sampler, the
sweep runs through the replay device with seeds 0..N-1 and stops at the first trial
within 98 % of the table's best throughput; the count is of measured trials (configs
ruled out by constraints are never launched and not counted).  Prints median and
worst per sampler and table.

``--goal tied`` counts trials to the first config tied within noise with the table's
best instead (95 % CIs of the recorded samples' medians overlap, the rule the finals
use).  On a table whose fastest configs differ by less than the timing noise (copy at
8 MiB: 8 µs launches) "98 % of the best" names a handful of configs the noise
favoured, and every sampler needs many trials to hit one; "tied" asks for what a
re-measurement could confirm.

``--ask-ahead on`` asks each sampler for the next config before the outcome of the one
measuring is told, as a sweep with a worker process does for a sampler that declares
``asks_ahead`` (``Sweep.ask_ahead``), declared or not: what declaring it would do.  A
sampler that learns then proposes one outcome behind.  ``off`` (the
default) tells every outcome before the next ask.  Either way the table ends with the
coordinator's ask time per trial (median over the runs of their mean milliseconds): the
time the worker waits for a proposal where it is not asked ahead.

Every sampler, ``auto`` included, runs without priors (earlier studies' winners): the
sweep is built here with ``priors=[]``, not through ``sweeper run``, so the other seeds'
studies in the same folder are never read and the counts are the search's own.
``auto+prior`` is the one exception, by name: it starts from the best configs of a
recorded table of a *neighbouring* problem (``PRIOR_FROM``), never the table it is
scored on.

``auto-nomodel`` is ``auto`` with the kernel's model withheld (the kernel answers no
guess), so it runs the search a user's own kernel gets, the guided pattern search
(``_auto_pattern.py``), on every table, the ones whose kernels have a model included.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from table_sets import GOAL, SETS, TABLES, table_path  # noqa: E402

from sweeper.devices import open_device  # noqa: E402
from sweeper.kernels import load_kernel  # noqa: E402
from sweeper.measure import tied_set  # noqa: E402
from sweeper.samplers._priors import PER_STUDY, translate  # noqa: E402
from sweeper.space import SamplerSpec, load_space  # noqa: E402
from sweeper.store import StudyStore  # noqa: E402
from sweeper.sweep import StopFlag, Sweep, open_study  # noqa: E402

#: ``--tables counterfactual``: tables built from recorded ones (search_robustness.py).
COUNTERFACTUAL = "counterfactual"
#: ``--samplers blind``: computed, not run (:func:`blind`).
BLIND = "blind"
#: Samplers measured under another name: ``auto+prior`` (priors from a neighbouring
#: table) and ``auto-nomodel`` (the kernel's model withheld).
VARIANTS = {"auto+prior": "auto", "auto-nomodel": "auto", "auto-declared": "auto",
            "auto-declared-tma": "auto"}
#: "auto-declared": a built-in kernel searched as a user's kernel that declares the
#: built-in model (sweeper/kernels/_model_form.py) in place of its own: the matmul as a
#: pointer-load kernel would declare ``tiled`` (without TMA, the epilogue's shared memory
#: and the flattened loop), softmax ``rowwise``; "auto-declared-tma" declares the matmul's
#: TMA, flattened loop and epilogue too, as the built-in kernel does them (C's tile staged
#: for a TMA store in one slice of K, half of it subtiled;
#: ``sweeper.kernels.matmul.epilogue_bytes``).  Matmul and softmax tables only.
TILED = {"m": "M", "n": "N", "k": "K", "tile_m": "BLOCK_M", "tile_n": "BLOCK_N",
         "tile_k": "BLOCK_K", "stages": "num_stages", "split_k": "SPLIT_K"}
DECLARED = {
    "auto-declared": {"matmul": {"tiled": TILED},
                      "softmax": {"rowwise": {"rows": "rows", "cols": "cols", "tile": "BLOCK"}}},
    "auto-declared-tma": {"matmul": {"tiled": {
        **TILED, "tma": "TMA", "flatten": "FLATTEN",
        "epilogue": "TMA * (2 - min(SPLIT_K, 2)) * BLOCK_M * BLOCK_N * itemsize "
                    "// (1 + EPILOGUE_SUBTILE)"}}}}
#: "auto+prior": the same kernel recorded at another footprint or dtype seeds the search
#: with its three best configs, translated as `auto` translates earlier studies' winners.
PRIOR_FROM = {"h200-copy.csv": "h200-copy-256m.csv", "h200-copy-256m.csv": "h200-copy.csv",
              "h200-copy-fp16.csv": "h200-copy.csv", "h200-add-256m.csv": "h200-add.csv",
              "h200-matmul-fp16.csv": "h200-matmul.csv", "h200-copy-8m.csv": "h200-copy.csv",
              "h200-copy-4g.csv": "h200-copy.csv", "h200-add-bf16.csv": "h200-add.csv",
              "h200-matmul-2k.csv": "h200-matmul.csv", "h200-copy-bf16-64m.csv": "h200-copy.csv",
              "h200-add-fp16-32m.csv": "h200-add.csv", "h200-matmul-1k.csv": "h200-matmul.csv",
              "h200-matmul-fp32.csv": "h200-matmul.csv", "h200-copy-fp16-2g.csv": "h200-copy.csv",
              "h200-add-128m.csv": "h200-add.csv", "h200-matmul-3k.csv": "h200-matmul.csv",
              "h200-matmul-fp16-1536.csv": "h200-matmul.csv",
              "h200-copy-bf16-512m.csv": "h200-copy.csv", "h200-copy-fp16-32m.csv": "h200-copy.csv",
              "h200-add-bf16-16m.csv": "h200-add.csv", "h200-add-512m.csv": "h200-add.csv",
              "h200-matmul-2560.csv": "h200-matmul.csv",
              "h200-matmul-fp16-1280.csv": "h200-matmul.csv",
              "h200-copy-128m.csv": "h200-copy.csv", "h200-add-fp16-256m.csv": "h200-add.csv",
              "h200-matmul-1536.csv": "h200-matmul.csv",
              "h200-matmul-fp16-1792.csv": "h200-matmul.csv",
              "h200-matmul-3584.csv": "h200-matmul.csv",
              "h200-matmul-fp16-1k.csv": "h200-matmul.csv",
              "h200-matmul-1152.csv": "h200-matmul.csv", "h200-matmul-1280.csv": "h200-matmul.csv",
              "h200-matmul-fp16-2304.csv": "h200-matmul.csv",
              "h200-matmul-fp16-3k.csv": "h200-matmul.csv", "h200-add-64m.csv": "h200-add.csv",
              "h200-copy-bf16-2g.csv": "h200-copy.csv",
              "h200-matmul-1792.csv": "h200-matmul.csv", "h200-matmul-2304.csv": "h200-matmul.csv",
              "h200-matmul-fp16-2560.csv": "h200-matmul.csv",
              "h200-matmul-fp16-1152.csv": "h200-matmul.csv",
              "h200-add-bf16-256m.csv": "h200-add.csv", "h200-copy-fp16-512m.csv": "h200-copy.csv"}


def override(settings: str) -> None:
    """Set ``auto``'s constants from ``NAME=VALUE,...`` (``--set``): a variant of its
    search, or of the kernel models it follows, measured without editing them.  A name is
    set in each of ``_auto_model.py``, ``_auto_pattern.py``, ``_auto_state.py``,
    ``_surrogate.py`` (the Gaussian processes) and the kernel models'
    ``sweeper/kernels/_guess.py`` that has it; a name none has is an error."""
    from sweeper.kernels import _guess
    from sweeper.samplers import _auto_model, _auto_pattern, _auto_state, _surrogate

    for setting in filter(None, settings.split(",")):
        name, _, value = setting.partition("=")
        owners = [m for m in (_auto_model, _auto_pattern, _auto_state, _surrogate, _guess)
                  if hasattr(m, name)]
        if not owners:
            raise AttributeError(f"auto has no constant {name}")
        for module in owners:
            old = getattr(module, name)
            setattr(module, name, value == "1" if isinstance(old, bool) else type(old)(value))


def priors(table: Path, space) -> list[dict[str, str]]:
    other = PRIOR_FROM.get(table.name)
    if other is None:
        return []
    device = open_device(f"replay:{table_path(other)}")
    rows = sorted((r for r in device.rows if r.get("status") == "ok"),
                  key=lambda r: float(r["median_ms"]))[:PER_STUDY]
    out: list[dict[str, str]] = []
    for r in rows:      # as auto translates an earlier study's winners (_priors.py)
        for choice in translate({p: r[p] for p in device.params}, space):
            if choice not in out:
                out.append(choice)
    return out


class StopAtGoal:
    """Counts measured trials and stops the sweep at the first within GOAL of the best
    (or, given ``tied``, at the first of those configs); without ``stop`` it only notes
    when that happened."""

    def __init__(self, best: float, stop: StopFlag | None,
                 tied: set[tuple[str, ...]] | None = None, params: list[str] = ()) -> None:
        self.best, self.stop, self.count, self.reached = best, stop, 0, None
        self.tied, self.params = tied, params

    def start(self, total: int, done: int, best: object = None) -> None: ...
    def finish(self) -> None: ...

    def trial(self, record, best) -> None:
        self.count += 1
        if self.tied is not None:
            hit = tuple(str(record.choice.get(p)) for p in self.params) in self.tied
        else:
            hit = record.ok and record.score >= GOAL * self.best
        if self.reached is None and hit:
            self.reached = self.count
            if self.stop is not None:
                self.stop.set = True


def tied_with_best(device) -> set[tuple[str, ...]]:
    """The table's configs whose samples' median CI overlaps the fastest one's."""
    samples = {tuple(r[p] for p in device.params): [float(x) for x in r["samples_ms"].split()]
               for r in device.rows if r.get("status", "ok") == "ok" and r.get("samples_ms")}
    return set(tied_set(samples)[1])


def table_rates(device, space, kernel) -> list[float]:
    """Each ``ok`` row's throughput (GB/s of the kernel's bytes moved at its median)."""
    env = device.facts().env()
    return [kernel.bytes_moved(space.resolve({p: row[p] for p in device.params}, env).problem)
            / float(row["median_ms"]) / 1e6
            for row in device.rows if row.get("status", "ok") == "ok" and row["median_ms"]]


def table_best(device, space, kernel) -> float:
    return max(table_rates(device, space, kernel), default=0.0)


#: Each run's mean milliseconds of asking the sampler per trial, by sampler.
ASK_MS: dict[str, list[float]] = {}
#: Each run's trials that failed (out of resources, ...) before it stopped, by table and
#: sampler: on a GPU each costs a compile and measures nothing.
FAILED: dict[tuple[str, str], list[int]] = {}


def trials_to_goal(table: Path, space_path: str, sampler: str, seed: int, root: Path,
                   goal: str = "98", limit: int | None = None,
                   ask_ahead: bool = False) -> int | None:
    """Measured trials until the goal is reached (None: not within the whole space, or
    within ``limit`` trials); with ``ask_ahead``, each next config asked before the
    last outcome is told."""
    device = open_device(f"replay:{table}")
    space = load_space(ROOT / space_path)
    seeds = priors(table, space) if sampler == "auto+prior" else []   # [] = the search alone
    store = StudyStore(root / f"{table.stem}-{sampler}-{seed}")
    space = dataclasses.replace(space, sampler=SamplerSpec(name=VARIANTS.get(sampler, sampler),
                                                           seed=seed),
                                budget=dataclasses.replace(space.budget, trials=limit,
                                                           time_s=None))
    kernel = load_kernel(space.kernel, space.kernel_options)
    if sampler == "auto-nomodel":
        kernel.model = lambda config, facts: None    # type: ignore[method-assign]
    if sampler in DECLARED:
        kernel.model = declared_model(kernel, sampler)   # type: ignore[method-assign]
    open_study(store, space, kernel, device, command="benchmarks/search_efficiency.py")
    stop = StopFlag()
    watch = StopAtGoal(table_best(device, space, kernel), stop,
                       tied_with_best(device) if goal == "tied" else None, device.params)
    sweep = Sweep(space, kernel, device, store, reporter=watch, stop=stop, priors=seeds)
    sweep.ask_ahead = ask_ahead
    summary = sweep.run()
    if summary.timing is not None:
        ASK_MS.setdefault(sampler, []).append(summary.timing.per_trial_ms("ask"))
    FAILED.setdefault((table.name, sampler), []).append(
        sum(1 for t in store.records()[0] if t.status != "ok"))
    return watch.reached


def declared_model(kernel: Any, variant: str = "auto-declared") -> Any:
    """The model a user's kernel like ``kernel`` would declare (:data:`DECLARED`
    ``[variant]``), on each config's meta-parameters with the kernel's defaults filled in
    (a recorded config lacks those its space left out, as a user's space would give them
    all)."""
    from sweeper.kernels._model_form import read_model

    declaration = DECLARED[variant].get(kernel.name)
    if declaration is None:
        raise SystemExit(f"{variant}: the tables of {', '.join(DECLARED[variant])} only, "
                         f"not {kernel.name}'s")
    declared = read_model(declaration, list(kernel.meta_params), None, list(kernel.dims))
    defaults = {name: p.default for name, p in kernel.meta_params.items()}
    return lambda config, facts: declared(
        dataclasses.replace(config, meta={**defaults, **config.meta}), facts)


def blind(configs: int, hits: int, seeds: int) -> str:
    """``median / worst`` trials to the first of ``hits`` configs among ``configs`` (those
    that reach the goal: within 98 % of the best, or tied with it) for a
    search that knows nothing of where they are: uniform sampling without replacement
    (the hypergeometric first hit), its median and the median of the worst of ``seeds``
    runs.  Averaged over where the hits could lie, no search does better: before its
    first hit it sees only configs that are not hits, whatever their values."""
    def found_by(t: int) -> float:
        return 1 - math.comb(configs - hits, t) / math.comb(configs, t)

    median = next(t for t in range(1, configs + 1) if found_by(t) >= 0.5)
    worst = next(t for t in range(1, configs + 1) if found_by(t) ** seeds >= 0.5)
    return f"{median} / {worst}"


def within_goal(table: Path, space_path: str, goal: str = "98") -> tuple[int, int]:
    """(configs measured ok, configs that reach ``goal``: within 98 % of the best, or
    ``tied`` within noise with it) of a recorded table."""
    device = open_device(f"replay:{table}")
    space = load_space(ROOT / space_path)
    kernel = load_kernel(space.kernel, space.kernel_options)
    rates = table_rates(device, space, kernel)
    if goal == "tied":
        return len(rates), len(tied_with_best(device))
    return len(rates), sum(r >= GOAL * max(rates) for r in rates)


def cell(counts: list[int | None]) -> str:
    """``median / worst`` of trials to the goal over seeds (``never``: a seed missed)."""
    reached = [c for c in counts if c is not None]
    if not reached:
        return "never"
    worst = "never" if len(reached) < len(counts) else max(reached)
    return f"{statistics.median(reached):g} / {worst}"


def selected(which: str, only: str, folder: Path, sharp: bool = False
             ) -> dict[str, tuple[Path, str]]:
    """Table name -> (table, space file) for ``--tables which`` and ``--only``;
    counterfactual tables (``sharp``: those of the sharp models) are built into
    ``folder``.  Raises KeyError for an unknown ``--only`` name, with the known ones."""
    if which == COUNTERFACTUAL:
        from counterfactuals import COUNTERFACTUALS, SHARP_COUNTERFACTUALS, build
        known = list(SHARP_COUNTERFACTUALS if sharp else COUNTERFACTUALS)
    else:
        spaces = TABLES if which == "all" else SETS[which]
        known = list(spaces)
    wanted = only.split(",") if only else known
    unknown = [t for t in wanted if t not in known]
    if unknown:
        raise KeyError(f"no such table: {', '.join(unknown)}; known: {', '.join(known)}")
    if which == COUNTERFACTUAL:
        return {name: build(name, folder) for name in wanted}
    return {name: (table_path(name), spaces[name]) for name in wanted}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seeds FIRST..FIRST+SEEDS-1 (another sample of the same size)")
    parser.add_argument("--samplers", default="random,tpe,gp,qmc,cmaes,auto,auto+prior",
                        help="comma-separated; also auto-nomodel (auto without the "
                        "kernel's model: the pattern search on every table) and blind "
                        "(not run: what a search that knows nothing of where the configs "
                        "that reach the goal lie can expect, computed exactly)")
    parser.add_argument("--tables", choices=("all", *SETS, COUNTERFACTUAL), default="all")
    parser.add_argument("--goal", choices=("98", "tied"), default="98")
    parser.add_argument("--only", default="", help="comma-separated table names, e.g. "
                        "h200-copy-8m.csv (within --tables)")
    parser.add_argument("--ask-ahead", choices=("on", "off"), default="off",
                        help="ask for the next config before the last outcome is told")
    parser.add_argument("--counts", action="store_true",
                        help="also print every seed's count, and each sampler's mean")
    parser.add_argument("--set", default="", help="auto's constants for a variant, e.g. "
                        "PATIENCE=6 (sweeper/samplers/_auto_model.py, _auto_pattern.py, "
                        "_auto_state.py, _surrogate.py) or the kernel models', e.g. "
                        "TMA_LOADS=1.0 "
                        "(sweeper/kernels/_guess.py)")
    args = parser.parse_args()
    override(args.set)
    samplers = args.samplers.split(",")
    results: dict[tuple[str, str], list[int | None]] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            tables = selected(args.tables, args.only, Path(tmp))
        except KeyError as err:
            parser.error(err.args[0])
        for name, (table, _) in list(tables.items()):
            if not table.exists():
                print(f"skipped {name}: not recorded yet ({table.relative_to(ROOT)})")
                del tables[name]
        if not tables:
            print("no recorded table to replay")
            return
        for name, (table, space_path) in tables.items():
            for sampler in samplers:
                if sampler == BLIND:
                    continue
                results[(name, sampler)] = [
                    trials_to_goal(table, space_path, sampler, seed, Path(tmp), args.goal,
                                   ask_ahead=args.ask_ahead == "on")
                    for seed in range(args.first_seed, args.first_seed + args.seeds)]
    target = (f"{100 * GOAL:g}% of the exhaustive best" if args.goal == "98" else
              "a config tied within noise with the exhaustive best")
    seeds = f"{args.seeds} seeds" + (f" from {args.first_seed}" if args.first_seed else "")
    print(f"trials to reach {target}, {seeds}, ask-ahead {args.ask_ahead} "
          f"({time.perf_counter() - t0:.0f} s)")
    print("| table | " + " | ".join(f"{s} median / worst" for s in samplers) + " |")
    print("|---|" + "---|" * len(samplers))
    for name, (table, space_path) in tables.items():
        cells = [blind(*within_goal(table, space_path, args.goal), args.seeds) if s == BLIND
                 else cell(results[(name, s)]) for s in samplers]
        print(f"| {name} | " + " | ".join(cells) + " |")
    samplers = [s for s in samplers if s != BLIND]
    for (name, sampler), counts in results.items() if args.counts else ():
        print(f"counts {name} {sampler}: " + " ".join(str(c) for c in counts))
    for sampler in samplers:
        every = [c for name in tables for c in results[(name, sampler)]]
        reached = [c for c in every if c is not None]
        if reached:
            print(f"{sampler}: all tables, median {statistics.median(reached):g}, worst "
                  f"{'never' if len(reached) < len(every) else max(reached)}")
        if args.counts and reached:
            print(f"{sampler}: mean {statistics.mean(reached):.2f} over the "
                  f"{len(reached)} runs that reached it")
        failed = {name: sum(FAILED.get((name, sampler), [])) for name in tables}
        if args.counts and any(failed.values()):
            print(f"{sampler}: failed trials before the goal (or the limit), all seeds: "
                  + ", ".join(f"{name} {n}" for name, n in failed.items() if n)
                  + f"; {sum(failed.values())} in all")
        if ASK_MS.get(sampler):
            print(f"{sampler}: ask {statistics.median(ASK_MS[sampler]):.2f} ms per trial "
                  f"(median over {len(ASK_MS[sampler])} runs; worst run "
                  f"{max(ASK_MS[sampler]):.2f} ms)")


if __name__ == "__main__":
    main()
