"""For each counterfactual and seed: the trial of the first config measured in its region
(the configs it keeps at their recorded speed) and the trial of the goal (98 %).

    python docs/raw/2026-12-07-search28/region_hit.py [SETTINGS] [ONLY] [SEEDS]

from the repository root; SETTINGS as search_efficiency.py's --set ("" for none), ONLY a
comma-separated list of counterfactuals ("" for all 18), SEEDS seeds 0..SEEDS-1 (10)."""
import sys, tempfile, statistics
from pathlib import Path
sys.path.insert(0, "."); sys.path.insert(0, "benchmarks")  # run from the repository root
from search_efficiency import COUNTERFACTUAL, override, selected, trials_to_goal
from search_trace import proposals
from search_robustness import auto_samplers
from counterfactuals import ALL, BASES
from table_sets import table_path
from sweeper.devices import open_device
from sweeper.samplers._auto_state import key_of
override(sys.argv[1] if len(sys.argv) > 1 else "")
only = sys.argv[2] if len(sys.argv) > 2 else ""
seeds = range(int(sys.argv[3]) if len(sys.argv) > 3 else 10)
with tempfile.TemporaryDirectory() as tmp:
    for name, (table, space) in selected(COUNTERFACTUAL, only, Path(tmp)).items():
        cf = open_device(f"replay:{table}")
        base = open_device(f"replay:{table_path(BASES[ALL[name][0]][0])}")
        names = list(cf.params)
        bm = {tuple(r[p] for p in names): r["median_ms"] for r in base.rows}
        region = {tuple(r[p] for p in names) for r in cf.rows if r.get("median_ms") and r["median_ms"] == bm.get(tuple(r[p] for p in names))}
        firsts, goals, gaps = [], [], []
        for seed in seeds:
            with auto_samplers() as made, proposals() as proposed:
                count = trials_to_goal(table, space, "auto", seed, Path(tmp), limit=100)
            first = next((i for i, (p, ph) in enumerate(proposed, 1) if p and tuple(str(p[q]) for q in names) in region), None)
            firsts.append(first); goals.append(count)
        print(f"{name:22s} region={len(region):3d} first-in-region {firsts} goal {goals}", flush=True)
