#!/usr/bin/env bash
# How long a cool-down equal duty needs (issue #27): spaces/matmul-8k.yaml (108 configs,
# power-bound on the H200) swept exhaustively under measure.duty {cool: S} for each S in
# $COOLDOWNS (default 1s 250ms 100ms), warm Triton cache (a first sweep fills it), each
# study's study.json and trials.jsonl copied to $OUT/duty-S/ for
# benchmarks/rank_stability.py, and each run's done / gpu busy / winner lines printed.
# Run after the install line of benchmarks/gpu_run.sh (optuna from .whl).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
studies=$(mktemp -d)
for s in ${COOLDOWNS:-1s 250ms 100ms}; do
  space="$studies/matmul-8k-$s.yaml"
  sed "s/cache: cold}/cache: cold, duty: {cool: $s}}/" spaces/matmul-8k.yaml > "$space"
  log="$OUT/duty-$s.log"
  { time timeout 280 python3 -m sweeper run "$space" --studies-dir "$studies" \
      --study "duty-$s" --no-priors --no-report --timing ; } > "$log" 2>&1
  mkdir -p "$OUT/duty-$s"
  cp "$studies/duty-$s/study.json" "$studies/duty-$s/trials.jsonl" "$OUT/duty-$s/"
  echo "== cool $s"
  grep -E "^(done|gpu busy|real)|^winner" "$log" | cut -c1-330
done
