"""Each seed's trials to 98 % on the 18 counterfactuals, for seeds FIRST..FIRST+N-1
(search_robustness.py runs seeds 0..N-1 only).

    python docs/raw/2026-12-07-search28/robseeds.py FIRST N [SETTINGS] [ONLY]

from the repository root; SETTINGS as search_efficiency.py's --set."""
import sys, tempfile, statistics
from pathlib import Path
sys.path.insert(0, "."); sys.path.insert(0, "benchmarks")  # run from the repository root
from search_efficiency import COUNTERFACTUAL, override, selected, trials_to_goal, cell
first, n = int(sys.argv[1]), int(sys.argv[2])
override(sys.argv[3] if len(sys.argv) > 3 else "")
only = sys.argv[4] if len(sys.argv) > 4 else ""
with tempfile.TemporaryDirectory() as tmp:
    for name, (table, space) in selected(COUNTERFACTUAL, only, Path(tmp)).items():
        counts = [trials_to_goal(table, space, "auto", s, Path(tmp), limit=100) for s in range(first, first + n)]
        print(f"| {name} | {cell(counts)} |", "counts", " ".join(str(c) for c in counts), flush=True)
