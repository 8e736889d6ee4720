#!/usr/bin/env bash
# Does a long kernel need ten warmup turns?  spaces/copy.yaml (1 GiB fp32, 204 configs,
# launches of 0.3-2 ms), warm Triton cache, measure.warmup 10 (the default) against 2,
# alternated over two rounds: each run's time line (wall, GPU busy), then the rankings
# of every pair of runs (benchmarks/rank_stability.py, top 10 and all configs).
set -uo pipefail
STAGES=" " bash benchmarks/gpu_run.sh >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pycache PYTHONUNBUFFERED=1
export PYTHONPATH=/tmp/site:$PWD
sed 's/warmup: 10/warmup: 2/' spaces/copy.yaml > /tmp/copy-w2.yaml
python3 -m sweeper run spaces/copy.yaml --studies-dir /tmp/st --study warm-cache --no-report >/dev/null 2>&1
for r in 1 2; do
  for w in 10 2; do
    if [ $w = 10 ]; then space=spaces/copy.yaml; else space=/tmp/copy-w2.yaml; fi
    python3 -m sweeper run $space --studies-dir /tmp/st --study w$w-$r > /tmp/w$w-$r.log 2>&1
    grep -E "^time:|gpu busy|^best|^winner" /tmp/w$w-$r.log | sed "s/^/warmup $w round $r: /"
  done
done 2>&1 | tee "$OUT/warmup-turns.log"
for pair in "w10-1 w10-2" "w2-1 w2-2" "w10-1 w2-1" "w10-2 w2-2" "w10-1 w2-2" "w10-2 w2-1"; do
  set -- $pair
  for top in 10 204; do
    echo "== $1 vs $2, top $top"
    python3 benchmarks/rank_stability.py /tmp/st/$1 /tmp/st/$2 --top $top 2>&1 | grep -i -E "spearman|winner" | head -4
  done
done 2>&1 | tee -a "$OUT/warmup-turns.log"
python3 - <<'PY' 2>&1 | tee -a "$OUT/warmup-turns.log"
import statistics, sys
sys.path.insert(0, "benchmarks")
from rank_stability import medians
from sweeper.store import StudyStore
m = {n: medians(StudyStore("/tmp/st/" + n)) for n in ("w10-1", "w10-2", "w2-1", "w2-2")}
for a, b in (("w10-1", "w10-2"), ("w2-1", "w2-2"), ("w10-1", "w2-1"), ("w10-2", "w2-2")):
    r = [m[b][k][1] / m[a][k][1] for k in m[a].keys() & m[b].keys()]
    print(f"{b}/{a} medians over {len(r)} configs: median {statistics.median(r):.4f}, "
          f"min {min(r):.4f}, max {max(r):.4f}, beyond 2 %: {sum(abs(x - 1) > 0.02 for x in r)}")
PY
