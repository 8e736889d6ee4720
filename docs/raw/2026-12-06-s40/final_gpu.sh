#!/usr/bin/env bash
# The session's last GPU call: the GPU-marked tests on the final tree, the warm copy
# command against the bare loop (both with the warmup rule), and the hook-cost benchmark.
set -uo pipefail
STAGES="gputests" bash benchmarks/gpu_run.sh 2>&1 | tail -15
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pycache PYTHONUNBUFFERED=1
export PYTHONPATH=/tmp/site:$PWD
for r in 1 2; do
  python3 benchmarks/command_overhead.py spaces/copy.yaml --cache warm --runs bare,run \
      --out "/tmp/co-$r" 2>&1 | grep -E '^\| (bare|run) ' | sed "s/^/round $r /"
  grep -h -E 'gpu busy|^time:' /tmp/co-$r/run*.stdout | sed "s/^/round $r /"
done 2>&1 | tee "$OUT/command-warm.log"
python3 benchmarks/autotune_hooks_cost.py 2>&1 | tee "$OUT/hookcost-final.log" | tail -8
