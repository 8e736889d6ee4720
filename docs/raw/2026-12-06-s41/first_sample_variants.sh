#!/usr/bin/env bash
# A short kernel's outlying samples under four variants of the timer's loop, each in fresh
# processes (GPU): base (as landed), gc (the garbage collector off while the loop queues),
# lead (four more holds before a sampling call's first turn, ~200 µs), gc+lead.
# The variants come from timer-variants.patch, applied to this copy of the tree only.
#   bash docs/raw/2026-12-06-s41/first_sample_variants.sh   (from the repository root)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/fs"
HERE=docs/raw/2026-12-06-s41
git apply "$HERE/timer-variants.patch" 2>/dev/null || patch -p1 < "$HERE/timer-variants.patch"
REPS=${REPS:-4}
for rep in $(seq 1 "$REPS"); do
  for v in $(python3 -c "import random,sys; v=['base','gc','lead','gc+lead']; random.Random($rep).shuffle(v); print(' '.join(v))"); do
    SWEEPER_TIMER_VARIANT=$v timeout 120 python3 benchmarks/first_samples.py --reps 2 \
      --warmups as_samples --gaps 0.002,0.5 --json "$OUT/fs/$v-$rep.json" > "$OUT/fs/$v-$rep.log" 2>&1
  done
  for v in $(python3 -c "import random; v=['base','gc+lead']; random.Random($rep).shuffle(v); print(' '.join(v))"); do
    SWEEPER_TIMER_VARIANT=$v timeout 150 python3 benchmarks/autotune_hooks_cost.py > "$OUT/fs/hook-$v-$rep.log" 2>&1
  done
done
python3 - "$OUT/fs" <<'PY'
import json, pathlib, re, statistics, sys
d = pathlib.Path(sys.argv[1])
print("| variant | processes | trials | first-trial first sample / settled | first / settled: median, worst | trials whose worst sample > 2x settled |")
print("|---|---|---|---|---|---|")
for v in ["base", "gc", "lead", "gc+lead"]:
    rows = [json.loads(p.read_text()) for p in sorted(d.glob(f"{v}-*.json"))]
    if not rows: continue
    firsts = [r[0]["first_ratio"] for r in rows]
    rest = [t for r in rows for t in r[1:]]
    allt = [t for r in rows for t in r]
    print(f"| {v} | {len(rows)} | {len(allt)} | " + " ".join(f"{x:.2f}" for x in firsts)
          + f" | {statistics.median(t['first_ratio'] for t in rest):.2f}, {max(t['first_ratio'] for t in rest):.2f}"
          + f" | {sum(t['worst_ratio'] > 2 for t in allt)} of {len(allt)} |")
print()
print("| variant (sweeper pipeline) | processes | trials | trials with most > 2x median | first-trial first samples µs | medians µs |")
print("|---|---|---|---|---|---|")
pat = re.compile(r"^\s+#(\d+) .*?: ([\d.]+) / ([\d.]+) / ([\d.]+) µs of \d+, first ([\d. ]+);")
for v in ["base", "gc+lead"]:
    n = big = 0; firsts = []; meds = []
    files = sorted(d.glob(f"hook-{v}-*.log"))
    for p in files:
        for line in p.read_text().splitlines():
            m = pat.match(line)
            if not m: continue
            n += 1; lo, med, hi = map(float, m.group(2, 3, 4))
            big += hi > 2 * med; meds.append(med)
            if m.group(1) == "0": firsts.append(float(m.group(5).split()[0]))
    if n:
        print(f"| {v} | {len(files)} | {n} | {big} | " + " ".join(f"{x:.0f}" for x in firsts)
              + f" | {min(meds):.1f}-{max(meds):.1f} |")
PY
