"""What the measurements say of the kernel model while ``auto`` searches: for each table and
seed, at each proposal around the model, the number of configs measured, the fitted slope
(``model_slope``, pulled towards 1), the least-squares slope alone and the Pearson
correlation of the (flattened) log guesses with the log measurements; and the trial at which
the run reached 98 %.

    python trust_stats.py [--tables all] [--only T1,T2] [--seeds 10] [--set NAME=VALUE]
"""
import argparse, sys, tempfile
from pathlib import Path
import numpy as np
ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT / "benchmarks"))
from search_efficiency import override, selected, trials_to_goal  # noqa: E402
from table_sets import SETS  # noqa: E402
import sweeper.samplers._auto_model as am  # noqa: E402

log = []
real = am.model_slope
def logged(guess, y, every, weight):
    b = real(guess, y, every, weight)
    dg, dy = guess - guess.mean(), y - y.mean()
    raw = float(dg @ dy) / float(dg @ dg) if float(dg @ dg) > 0 else float("nan")
    r = float(dg @ dy) / np.sqrt(float(dg @ dg) * float(dy @ dy)) if float(dg @ dg) * float(dy @ dy) > 0 else float("nan")
    log.append((len(y), b, raw, r, float(np.std(guess)), float(np.std(y))))
    return b
am.model_slope = logged

p = argparse.ArgumentParser()
p.add_argument("--tables", default="all"); p.add_argument("--only", default=None)
p.add_argument("--seeds", type=int, default=10); p.add_argument("--set", default="")
a = p.parse_args(); override(a.set)
with tempfile.TemporaryDirectory() as tmp:
    tables = selected(a.tables, a.only, Path(tmp))
    for name, (table, space) in tables.items():
        for seed in range(a.seeds):
            log.clear()
            n = trials_to_goal(table, space, "auto", seed, Path(tmp), limit=60)
            cells = " ".join(f"{k}:{b:.2f}/{raw:.2f}/{r:.2f}" for k, b, raw, r, sg, sy in log)
            print(f"{name} seed {seed} goal {n} | {cells}", flush=True)
