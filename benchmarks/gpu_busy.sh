#!/usr/bin/env bash
# How busy a sweep keeps the GPU, and where the rest of its wall goes (issue #27): three
# `sweeper run`s on the GPU machine, each printing its `gpu busy` line and `--timing`
# breakdown; logs in $OUT/busy-*.log.
#   copy         spaces/copy.yaml (204 configs, memory-bound, short trials)
#   matmul-auto  spaces/matmul-8k.yaml (108 configs, power-bound; measure.duty auto:
#                a cool-down before each config once the power cap shows), cold Triton cache
#   matmul-off   the same with measure.duty off, warm cache
# Run after the install line of benchmarks/gpu_run.sh (optuna from .whl).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
studies=$(mktemp -d)
sed 's/cache: cold}/cache: cold, duty: off}/' spaces/matmul-8k.yaml > "$studies/matmul-8k-off.yaml"
for run in "copy spaces/copy.yaml" "matmul-auto spaces/matmul-8k.yaml" \
           "matmul-off $studies/matmul-8k-off.yaml"; do
  set -- $run
  log="$OUT/busy-$1.log"
  { time timeout 280 python3 -m sweeper run "$2" --studies-dir "$studies" --study "busy-$1" \
      --no-priors --no-report --timing ; } > "$log" 2>&1
  echo "== $1"
  grep -E "^(done|gpu busy|time|real|power)|^(winner|best in the sweep)" "$log" | cut -c1-400
done
