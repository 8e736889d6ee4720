#!/usr/bin/env bash
# A/B: the warmup as launches back to back (.base, e5864db) against turns of the sampling
# loop (this tree): the warm copy sweep's wall and GPU busy (bare loop in each invocation),
# alternated, then the hook-cost benchmark (each trial's first samples) from fresh processes.
set -uo pipefail
STAGES=" " bash benchmarks/gpu_run.sh >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pycache PYTHONUNBUFFERED=1
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu.py -k first_sample 2>&1 | tail -3
for r in 1 2; do
  for tree in base head; do
    if [ $tree = base ]; then dir=$PWD/.base; else dir=$PWD; fi
    ( cd "$dir" && PYTHONPATH=/tmp/site:$dir python3 benchmarks/command_overhead.py spaces/copy.yaml \
        --cache warm --runs bare,run --out "$OUT/ab/$tree-$r" 2>&1 | grep -E '^\| (bare|run) ' \
        | sed "s/^/$tree round $r /" )
    grep -h -E 'busy' "$OUT/ab/$tree-$r"/run*.stdout | head -3 | sed "s/^/$tree round $r /"
  done
done 2>&1 | tee "$OUT/ab-warmup.log"
for tree in head base head; do
  if [ $tree = base ]; then dir=$PWD/.base; else dir=$PWD; fi
  ( cd "$dir" && PYTHONPATH=/tmp/site:$dir python3 benchmarks/autotune_hooks_cost.py ) 2>&1 \
      | sed "s/^/$tree /" | tee -a "$OUT/hookcost-ab.log" | grep -E "^\w+ (  #|\| [0-9])"
done
