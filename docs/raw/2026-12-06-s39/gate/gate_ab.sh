#!/usr/bin/env bash
# The timer's gate against the spin it replaced, on the GPU (docs/benchmarks.md): the tree
# as it is ("now") and the tree before the gate, unpacked in .base/ ("base": `git archive
# COMMIT sweeper spaces pyproject.toml benchmarks/autotune_hooks_cost.py | tar -x -C .base`),
# run in turn, $ROUNDS (2) rounds:
#   - benchmarks/autotune_hooks_cost.py: a 15 µs atomic sum whose launch zeroes its output
#     first (each trial's samples, with the first five, and Triton's autotuner's figure);
#   - sweeper run spaces/copy.yaml, warm Triton cache: wall, GPU busy, the best and winner
#     (what the gate costs or saves a sweep of 0.25 ms kernels).
# Logs in $OUT/gate-*.log; the summary table last.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
ROUNDS=${ROUNDS:-2}
here=$PWD
run_tree() {   # tree, what, log
  local root=$here; [ "$1" = base ] && root=$here/.base
  ( cd "$root" && export PYTHONPATH=/tmp/site:$root && case $2 in
      hook) timeout 200 python3 benchmarks/autotune_hooks_cost.py ;;
      copy) rm -rf /tmp/gate-st && timeout 200 python3 -m sweeper run spaces/copy.yaml \
              --studies-dir /tmp/gate-st ;;
    esac ) > "$3" 2>&1
}
run_tree now copy "$OUT/gate-copy-warmup.log"          # fills the Triton cache
for r in $(seq "$ROUNDS"); do
  for tree in now base; do
    run_tree $tree hook "$OUT/gate-hook-$tree-$r.log"
    run_tree $tree copy "$OUT/gate-copy-$tree-$r.log"
  done
done
echo "| tree | round | hook µs (4 configs) | triton µs | copy wall s | gpu busy | best GB/s | winner GB/s |"
echo "|---|---|---|---|---|---|---|---|"
for r in $(seq "$ROUNDS"); do
  for tree in now base; do
    h=$OUT/gate-hook-$tree-$r.log c=$OUT/gate-copy-$tree-$r.log
    hook=$(grep -E '^\| [0-9]' "$h" | head -4 | awk -F'|' '{printf "%s ", $4+0}')
    tri=$(grep -E '^\| [0-9]' "$h" | head -4 | awk -F'|' '{printf "%s ", $6+0}')
    wall=$(grep -oE '^time: [0-9.]+ s' "$c" | grep -oE '[0-9.]+')
    busy=$(grep -oE 'gpu busy [0-9.]+%' "$c" | head -1 | grep -oE '[0-9.]+%')
    best=$(grep -E '^best in the sweep' "$c" | grep -oE '[0-9]+ GB/s' | tail -1)
    win=$(grep -E '^winner' "$c" | grep -oE '[0-9]+ GB/s' | head -1)
    echo "| $tree | $r | $hook | $tri | $wall | $busy | $best | $win |"
  done
done
