"""Two `search_efficiency.py --counts` logs side by side: each table whose median / worst
moved (flagged where the median grew by more than a trial, or the worst went beyond 15
from within it), then the tables meeting issue 28's goal, the sum of medians, the mean
and the pooled median / worst.

    python compare_counts.py BEFORE.log AFTER.log
"""
import re, statistics, sys
def load(p):
    out = {}
    for line in open(p):
        m = re.match(r"counts (\S+) auto: (.*)", line)
        if m:
            out[m.group(1)] = [None if x == "None" else int(x) for x in m.group(2).split()]
    return out
def summ(c):
    r = [x for x in c if x is not None]
    med = statistics.median(r) if r else 999
    worst = max(r) if len(r) == len(c) else 999
    return med, worst
a, b = load(sys.argv[1]), load(sys.argv[2])
goal_a = goal_b = 0; sa = sb = 0; allb=[]; alla=[]
for t in a:
    if t not in b: continue
    ma, wa = summ(a[t]); mb, wb = summ(b[t])
    goal_a += ma <= 5 and wa <= 15; goal_b += mb <= 5 and wb <= 15
    sa += ma; sb += mb; alla += a[t]; allb += b[t]
    flag = []
    if mb > ma + 1: flag.append("MEDIAN WORSE")
    if wb > 15 and wa <= 15: flag.append("WORST>15")
    if (ma, wa) != (mb, wb):
        print(f"{t:45s} {ma:g}/{wa} -> {mb:g}/{wb} {' '.join(flag)}")
print(f"tables {len([t for t in a if t in b])}; goal {goal_a} -> {goal_b}; sum medians {sa:g} -> {sb:g}; mean {statistics.mean([x for x in alla if x]):.2f} -> {statistics.mean([x for x in allb if x]):.2f}; pooled median {statistics.median([x for x in alla if x]):g}/{max(x for x in alla if x)} -> {statistics.median([x for x in allb if x]):g}/{max(x for x in allb if x)}")
