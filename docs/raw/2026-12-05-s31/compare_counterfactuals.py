"""Two `search_robustness.py` logs side by side: each counterfactual whose `auto` median /
worst moved, how many medians got shorter and longer, and the goal met before and after.

    python compare_counterfactuals.py BEFORE.log AFTER.log
"""
import re, sys
def load(p):
    out = {}
    for line in open(p):
        if line.startswith("| ") and "/" in line and not line.startswith("| counterfactual"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            out[cells[0]] = cells[-1]
    return out
def med(c): return 999 if c.startswith("never") else float(c.split("/")[0])
def worst(c): w = c.split("/")[-1].strip(); return 999 if w == "never" else float(w)
a, b = load(sys.argv[1]), load(sys.argv[2])
longer = shorter = big = 0
for t in a:
    if a[t] != b.get(t):
        ma, mb = med(a[t]), med(b[t])
        longer += mb > ma; shorter += mb < ma; big += mb > ma + 1
        print(f"{t:35s} {a[t]:>14s} -> {b[t]}")
goal = lambda d: sum(med(c) <= 5 and worst(c) <= 15 for c in d.values())
print(f"{len(a)} counterfactuals; medians shorter {shorter}, longer {longer} (by more than one: {big}); goal {goal(a)} -> {goal(b)}")
for line in open(sys.argv[2]):
    if line.startswith("auto: all"): print(line.strip())
