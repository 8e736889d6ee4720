#!/usr/bin/env bash
# Record replay tables the auto sampler was not designed on (held out), into $OUT:
#   bash benchmarks/record_heldout.sh [SPACE ...]
# SPACE: a space file's path, or a name under benchmarks/spaces/ without .yaml; each table
# is written as $OUT/h200-<file's stem>.csv.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
for arg in ${@:-add-256m copy-fp16 matmul-fp16}; do
  case $arg in *.yaml) path=$arg ;; *) path=benchmarks/spaces/$arg.yaml ;; esac
  if [ ! -f "$path" ]; then
    echo "record_heldout.sh: $path: no such space file" | tee -a "$OUT/record.log"; continue
  fi
  space=$(basename "$path" .yaml)
  python3 -m sweeper run "$path" --study rec-$space --studies-dir /tmp/rec --quiet \
      --no-report 2>&1 | tee -a "$OUT/record.log" | tail -2
  python3 -m sweeper export rec-$space --studies-dir /tmp/rec --format csv \
      -o "$OUT/h200-$space.csv" 2>&1 | tee -a "$OUT/record.log"
done
