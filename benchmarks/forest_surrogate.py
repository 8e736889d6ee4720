"""A forest surrogate in place of ``auto``'s search, measured on the recorded tables (no
GPU needed): likelihood-free Bayesian optimisation (LFBO, Song et al. 2022; Helion's
``LFBOPatternSearch`` ranks its moves the same way), a random-forest classifier of "in
the best ``gamma`` of what was measured" (positives weighted by how far they lead, the
expected-improvement form), each proposal the unmeasured valid config it rates most
likely to be among the best.

    python benchmarks/forest_surrogate.py [--model on|off] [--gamma 0.2] [--kind rf|et]
                                          [--seeds 10] [--tables all] [--only T1,T2]

- ``--model on``: the kernel model's log guess is a feature beside the axes (a forest can
  split on the guess where the model is right and on the axes where it is not), the
  search starts with the model's best guess, and the guess breaks the forest's ties;
  compare with ``search_efficiency.py --samplers auto``.
- ``--model off``: the axes alone, for a kernel without a model; compare with
  ``--samplers auto-nomodel`` (and ``tpe``).

Then ``--start`` configs drawn at random, and one proposal a trial, every outcome told
before the next: the counts are trials to 98 % of the table's best, as
``search_efficiency.py`` prints them (a config the table lacks failed: it measures 0).
The valid configs and the model's guesses are ``auto``'s own (one trial of it is run to
read them).  Needs scikit-learn, which sweeper does not depend on: ``pip install
scikit-learn``.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from search_efficiency import cell, selected, trials_to_goal  # noqa: E402
from search_robustness import auto_samplers  # noqa: E402
from table_sets import GOAL, SETS  # noqa: E402


def landscape(table: Path, space: str, folder: Path) -> tuple[np.ndarray, np.ndarray,
                                                             np.ndarray]:
    """The table's valid configs as ``auto`` sees them: each axis's position in [0, 1] as
    its Gaussian processes place it (``SearchState.position``: the space file's order),
    the model's log guess (``-inf`` where it has none) and the measured throughput (0
    where the config failed or is not in the table)."""
    with auto_samplers() as made:
        trials_to_goal(table, space, "auto", 0, folder, limit=1)
    state = made[-1].state
    prior: dict[Any, float] = getattr(made[-1].strategy, "prior", None) or {}
    keys = list(prior) or sorted(state.valid)
    with table.open() as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    params = [p for p, _ in keys[0] if p in rows[0]]
    ms = {tuple(r[p] for p in params): float(r["median_ms"]) for r in rows
          if r.get("status", "ok") == "ok" and r["median_ms"]}
    rate = np.array([1 / ms[k] if (k := tuple(dict(c)[p] for p in params)) in ms else 0.0
                     for c in keys])
    axes = np.array([state.position(dict(c)) for c in keys], float)
    guess = np.array([prior.get(c, -math.inf) for c in keys], float)
    return axes, guess, rate


def search(axes: np.ndarray, guess: np.ndarray, rate: np.ndarray, seed: int,
           args: argparse.Namespace) -> int | None:
    """Trials until a config within 98 % of the best is measured (None: never)."""
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

    rng = np.random.default_rng(seed)
    n, goal = len(rate), GOAL * rate.max()
    model = args.model == "on" and np.isfinite(guess).any()
    floor = np.nanmin(np.where(np.isfinite(guess), guess, np.nan)) - 1 if model else 0.0
    guess = np.where(np.isfinite(guess), guess, floor) if model else np.zeros(n)
    features = np.column_stack([axes, guess]) if model else axes
    measured = [int(np.argmax(guess))] if model else []
    rest = np.setdiff1d(np.arange(n), measured)
    measured += [int(i) for i in rng.choice(rest, min(args.start, len(rest)), replace=False)]
    for t, i in enumerate(measured, 1):
        if rate[i] >= goal:
            return t
    forest = RandomForestClassifier if args.kind == "rf" else ExtraTreesClassifier
    while len(measured) < n:
        y = np.log(np.maximum(rate[measured], 1e-6 * rate.max()))
        tau = np.quantile(y, 1 - args.gamma)
        good = (y >= tau).astype(int)
        if good.all() or not good.any():           # one class: the best alone is good
            good = (np.arange(len(y)) == np.argmax(y)).astype(int)
        weight = np.where(good == 1, np.maximum(y - tau, 0) + 1e-3, 1.0)
        weight[good == 1] *= good.sum() / weight[good == 1].sum()
        classifier = forest(n_estimators=args.trees, random_state=int(rng.integers(2**30)))
        classifier.fit(features[measured], good, sample_weight=weight)
        rest = np.setdiff1d(np.arange(n), measured)
        likely = classifier.predict_proba(features[rest])[:, list(classifier.classes_).index(1)]
        score = likely + 1e-3 * (guess[rest] - guess.max()) + 1e-9 * rng.random(len(rest))
        measured.append(int(rest[np.argmax(score)]))
        if rate[measured[-1]] >= goal:
            return len(measured)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", choices=("on", "off"), default="on")
    parser.add_argument("--gamma", type=float, default=0.2)
    parser.add_argument("--kind", choices=("rf", "et"), default="rf")
    parser.add_argument("--trees", type=int, default=32)
    parser.add_argument("--start", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--tables", choices=("all", *SETS), default="all")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    try:
        import sklearn  # noqa: F401
    except ImportError:
        sys.exit("forest_surrogate.py needs scikit-learn: pip install scikit-learn")
    started, pooled = time.monotonic(), []
    print(f"trials to reach 98% of the exhaustive best, {args.seeds} seeds, forest surrogate "
          f"(model {args.model}, gamma {args.gamma}, {args.kind}, {args.trees} trees, "
          f"{args.start} random start points)\n| table | forest median / worst |\n|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (table, space) in selected(args.tables, args.only, Path(tmp)).items():
            if not table.exists():
                continue
            axes, guess, rate = landscape(table, space, Path(tmp))
            counts = [search(axes, guess, rate, seed, args) for seed in range(args.seeds)]
            pooled += counts
            print(f"| {name} | {cell(counts)} |", flush=True)
    reached = [c for c in pooled if c is not None]
    print(f"pooled: median {statistics.median(reached):g}, mean {statistics.mean(reached):.2f}"
          f", worst {max(reached)}, {len(pooled) - len(reached)} runs never "
          f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
