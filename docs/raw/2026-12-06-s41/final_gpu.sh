#!/usr/bin/env bash
# The session's last GPU call: the GPU-marked tests on the final tree, the warm copy
# command against the bare loop (both with the lead before a call's first sample), the
# hook-cost benchmark and the first-samples benchmark in fresh processes.
set -uo pipefail
STAGES="gputests" bash benchmarks/gpu_run.sh 2>&1 | tail -15
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pycache PYTHONUNBUFFERED=1
export PYTHONPATH=/tmp/site:$PWD
for r in 1 2; do
  python3 benchmarks/command_overhead.py spaces/copy.yaml --cache warm --runs bare,run \
      --out "/tmp/co-$r" 2>&1 | grep -E '^\| (bare|run) ' | sed "s/^/round $r /"
  grep -h -E 'gpu busy|^time:' /tmp/co-$r/run*.stdout | sed "s/^/round $r /"
done 2>&1 | tee "$OUT/command-warm.log"
for r in 1 2; do
  python3 benchmarks/autotune_hooks_cost.py 2>&1 | sed "s/^/process $r /"
done | tee "$OUT/hookcost-final.log" | grep -E "#[0-9]|hook /" | cut -c1-150
for r in 1 2; do
  python3 benchmarks/first_samples.py --reps 2 --warmups as_samples --gaps 0.002,0.5 2>&1 \
      | sed "s/^/process $r /"
done | tee "$OUT/first-samples-final.log" | grep -E "first trial of the process|\| (sum|copy)"
