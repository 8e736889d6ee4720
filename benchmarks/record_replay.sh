#!/usr/bin/env bash
# Record replay tables on the GPU (issue 4): sweep each space exhaustively, export every
# trial as a replay table into $OUT. Run after the install line of gpu_run.sh.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for space in copy copy-256m add matmul; do
  echo "=== $space $(date -u +%T)"
  python3 -m sweeper run benchmarks/spaces/$space.yaml --study rec-$space --studies-dir /tmp/rec \
      --quiet --no-report 2>&1 | tee -a "$OUT/record.log"
  python3 -m sweeper export rec-$space --studies-dir /tmp/rec --format csv \
      -o "$OUT/h200-$space.csv" 2>&1 | tee -a "$OUT/record.log"
done
