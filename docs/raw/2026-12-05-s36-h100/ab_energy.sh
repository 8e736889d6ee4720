#!/usr/bin/env bash
# A/B: the worker's NVML poller reading the energy counter on every poll (.base, a05f8e7)
# against every 20th poll (this tree), warm copy, alternated; bare loop in each invocation.
set -uo pipefail
STAGES=" " bash benchmarks/gpu_run.sh >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pycache PYTHONUNBUFFERED=1
for r in 1 2; do
  for tree in base head; do
    if [ $tree = base ]; then dir=$PWD/.base; else dir=$PWD; fi
    ( cd "$dir" && PYTHONPATH=/tmp/site:$dir python3 benchmarks/command_overhead.py spaces/copy.yaml \
        --cache warm --runs bare,run --out "$OUT/ab/$tree-$r" 2>&1 | grep -E '^\| (bare|run) ' \
        | sed "s/^/$tree round $r /" )
    grep -h -E '^  worker 0' "$OUT/ab/$tree-$r"/run*.stdout | sed "s/^/$tree round $r /"
  done
done 2>&1 | tee "$OUT/ab-energy.log"
STAGES="profile" STAGE_TIMEOUT=150 bash benchmarks/gpu_run.sh > "$OUT/profile-stage.log" 2>&1
grep -E 'Energy|_nvml.py|time: ' "$OUT/profile-copy.log" | head -8
