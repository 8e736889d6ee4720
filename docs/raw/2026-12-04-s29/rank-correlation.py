"""Diagnostic for docs/search.md, "A hedge with TPE (issue 28)": the rank correlation of
the kernel model's guesses with the measured throughputs, after n configs are measured,
as auto runs today (HEDGE=1 with HEDGE_MAX=0: the share is computed, never paid), mean
over seeds 0-2 of the runs still short of 98 % at n (at most 30 trials).  Needs the
switches of commit 66c8eb0.  Run from the repository root:
PYTHONPATH=. python docs/raw/2026-12-04-s29/rank-correlation.py
"""
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, "benchmarks")
import numpy as np
from scipy.stats import spearmanr
from search_efficiency import override, selected, trials_to_goal

from sweeper.samplers import _auto_hedge
from sweeper.samplers._auto_state import key_of

RECORDED = ("h200-matmul-1k.csv,h200-matmul-1536.csv,h200-matmul-2304.csv,"
            "h200-softmax-bf16-32k.csv,h200-copy-bf16-64m.csv")
COUNTERFACTUALS = "add-1g/box,add-wide-1g/box,copy-1g/box,copy-1g/spill,add-bf16-1g/stride"
override("HEDGE=1,HEDGE_MAX=0")
log = []
orig = _auto_hedge.Hedge.share


def share(self):
    sc = [(self.prior[key_of(p)], v) for p, v in self.state.scores
          if v > 0 and key_of(p) in self.prior]
    if len(sc) >= 4:
        log.append((len(sc), spearmanr([g for g, _ in sc], [v for _, v in sc]).statistic))
    return orig(self)


_auto_hedge.Hedge.share = share
with tempfile.TemporaryDirectory() as tmp:
    for which, names in (("all", RECORDED), ("counterfactual", COUNTERFACTUALS)):
        for name, (t, sp) in selected(which, names, Path(tmp)).items():
            out = {}
            for seed in range(3):
                log.clear()
                trials_to_goal(t, sp, "auto", seed, Path(tmp), limit=30)
                for n, r in log:
                    out.setdefault(n, []).append(r)
            print(name, " ".join(f"{n}:{np.mean(out[n]):.2f}" for n in (4, 6, 8, 10, 15, 20, 25)
                                 if n in out), flush=True)
