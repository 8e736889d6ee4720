#!/usr/bin/env bash
# Record replay tables the auto sampler was not designed on (held out), into $OUT:
#   bash benchmarks/record_heldout.sh [SPACE ...]   (names under spaces/, without .yaml)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
for space in ${@:-add-256m copy-fp16 matmul-fp16}; do
  python3 -m sweeper run spaces/$space.yaml --study rec-$space --studies-dir /tmp/rec --quiet \
      --no-report 2>&1 | tee -a "$OUT/record.log" | tail -2
  python3 -m sweeper export rec-$space --studies-dir /tmp/rec --format csv \
      -o "$OUT/h200-$space.csv" 2>&1 | tee -a "$OUT/record.log"
done
