#!/usr/bin/env bash
# The power-aware finals on the GPU machine: the 8192³ bf16 matmul study (auto, 40 trials)
# twice per schedule in $SCHEDULES (default: cool, the measure.duty: auto default; also:
# load), each in its own studies folder (no priors between them), then
# benchmarks/rank_stability.py on each pair. Logs and studies into $OUT.
set -uo pipefail; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 || exit 1
declare -A SPACE=([cool]=benchmarks/spaces/matmul-8k.yaml [load]=benchmarks/spaces/matmul-8k-load.yaml)
for sched in ${SCHEDULES:-cool}; do
  for s in a b; do
    echo "=== $sched-$s $(date -u +%T)"
    python3 -m sweeper run ${SPACE[$sched]} --study $sched-$s --studies-dir /tmp/$sched$s \
        --quiet --no-report 2>&1 | tee -a $OUT/runs.log | tail -5
  done
  python3 benchmarks/rank_stability.py /tmp/${sched}a/$sched-a /tmp/${sched}b/$sched-b 2>&1 \
      | tee $OUT/rank-$sched.log | tail -4
  tar czf $OUT/studies-$sched.tgz -C /tmp ${sched}a ${sched}b
done
echo "=== done $(date -u +%T)"
