"""Two or more logs of search_efficiency.py or search_robustness.py side by side (each
row's last cell, median / worst), with the goal count (median <= 5, worst <= 15) and the
sum of medians (a `never` median counted 100) of each.

    python docs/raw/2026-12-07-search28/compare.py BEFORE.log AFTER.log ..."""
import re, statistics, sys
def read(p):
    out = {}
    for line in open(p):
        if not line.startswith("| ") or "---" in line or "median / worst" in line or "counterfactual |" in line:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if re.match(r"^[\d.]+ / (\d+|never)$", cells[-1]) and not cells[0].startswith("prior"):
            out[cells[0]] = cells[-1]
    return out
def med(c): return float(c.split(" / ")[0]) if c.split(" / ")[0] != "never" else 999
def worst(c): w = c.split(" / ")[1]; return 999 if w == "never" else int(w)
logs = [read(p) for p in sys.argv[1:]]
names = [n for n in logs[0]]
print("| table | " + " | ".join(p.split("/")[-1] for p in sys.argv[1:]) + " |")
goal = [0]*len(logs); summ=[0]*len(logs)
for n in names:
    row = [l.get(n, "-") for l in logs]
    for i, c in enumerate(row):
        if c != "-":
            summ[i] += min(med(c), 100)
            goal[i] += med(c) <= 5 and worst(c) <= 15
    flag = "" if len(set(row)) == 1 else "  *"
    print(f"| {n} | " + " | ".join(row) + f" |{flag}")
print("goal met:", goal, " sum of medians (never=100):", summ)
