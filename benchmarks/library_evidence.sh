#!/usr/bin/env bash
# The kernel library on a GPU: each built-in's example space swept, its winner against its
# torch baseline in the same interleaved rounds, logs and reports into $OUT:
#   bash benchmarks/library_evidence.sh [SPACE ...]     (default: the library's examples)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
studies=/tmp/library-studies
for space in ${@:-spaces/scale.yaml spaces/softmax.yaml spaces/copy-strided.yaml spaces/copy-strided-oat.yaml}; do
  name=$(basename "$space" .yaml)
  echo "=== $space $(date -u +%T)" | tee -a "$OUT/library.log"
  /usr/bin/time -f "wall %e s" python3 -m sweeper run "$space" --studies-dir "$studies" \
      --no-priors 2>&1 | tee "$OUT/$name.log" | grep -E "^(best in|winner|done|wall|sweeper:)" \
      | tee -a "$OUT/library.log"
done
for report in "$studies"/*/report.md; do
  cp "$report" "$OUT/$(basename "$(dirname "$report")")-report.md"
done
