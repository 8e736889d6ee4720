#!/usr/bin/env bash
# The power-aware finals on the GPU machine: the 8192³ bf16 matmul study (auto, 40 trials)
# twice under the cool-down schedule (measure.duty: auto) and twice under the load schedule,
# each in its own studies folder (no priors between them), then benchmarks/rank_stability.py
# on each pair and across schedules. Logs and studies into $OUT.
set -uo pipefail; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/env.txt
python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "sustained or nvml" 2>&1 | tail -3
for s in a b; do echo "=== cool-$s $(date -u +%T)"; python3 -m sweeper run benchmarks/spaces/matmul-8k.yaml --study cool-$s --studies-dir /tmp/p$s --quiet --no-report 2>&1 | tee -a $OUT/runs.log | tail -5; done
python3 benchmarks/rank_stability.py /tmp/pa/cool-a /tmp/pb/cool-b 2>&1 | tee $OUT/rank-cool.log | tail -4
tar czf $OUT/studies-cool.tgz -C /tmp pa pb
for s in a b; do echo "=== load-$s $(date -u +%T)"; python3 -m sweeper run benchmarks/spaces/matmul-8k-load.yaml --study load-$s --studies-dir /tmp/q$s --quiet --no-report 2>&1 | tee -a $OUT/runs.log | tail -5; done
python3 benchmarks/rank_stability.py /tmp/qa/load-a /tmp/qb/load-b 2>&1 | tee $OUT/rank-load.log | tail -4
python3 benchmarks/rank_stability.py /tmp/pa/cool-a /tmp/qa/load-a 2>&1 | tee $OUT/rank-cross.log | tail -2
tar czf $OUT/studies-load.tgz -C /tmp qa qb
echo "=== done $(date -u +%T)"
