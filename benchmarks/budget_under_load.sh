#!/usr/bin/env bash
# `--time` on the interpreter while $BURNERS (4) CPU-bound processes share the machine
# (LOAD=cpu, the default), or while a `dd` writes 1 GB at a time to the studies' disk
# (LOAD=disk: the study is kept on disk, not in /dev/shm): how many configs the sweep
# measured, what the budget kept for the finals, whether and in how many rounds the finals
# ran, the writing of the study after the sweep (`--timing`'s summary step) and the
# command's wall; the code before a change (.base/: that commit's tree) and now, $RUNS (4)
# runs each, in turn.  The space is the one
# tests/test_time_budget.py::test_the_time_budget_bounds_the_whole_command runs (it needs
# longer than $TIME).  No GPU needed.
#   bash benchmarks/budget_under_load.sh > LOG
set -uo pipefail
BURNERS=${BURNERS:-4} RUNS=${RUNS:-4} TIME=${TIME:-10s} LOAD=${LOAD:-cpu}
work=$(mktemp -d)
python3 - "$work/space.yaml" <<'PY'
import sys
from tests.conftest import SMALL_SPACE
open(sys.argv[1], "w").write(
    SMALL_SPACE.replace("block: [32, 128]", "block: [32, 64, 128]")
    .replace("BLOCK: [256, 1024]", "BLOCK: [256, 512, 1024]")
    .replace("footprint: [4KiB]", "footprint: [1KiB]")
    .replace('grid: [sms, "cdiv(n, BLOCK)"]', f"grid: {list(range(1, 65))}"))
PY
pids=()
if [ "$LOAD" = disk ]; then
  (while :; do dd if=/dev/zero of="$work/dd" bs=1M count=1000 conv=fsync 2>/dev/null; done) &
  pids+=($!)
  echo "$(date -u) a dd writing 1 GB at a time, --time $TIME, $(nproc) cores"
else
  for _ in $(seq "$BURNERS"); do (while :; do :; done) & pids+=($!); done
  echo "$(date -u) $BURNERS burners, --time $TIME, $(nproc) cores"
fi
trap 'kill "${pids[@]}" 2>/dev/null; pkill -f "of=$work/dd"; rm -rf "$work"' EXIT
for run in $(seq "$RUNS"); do
  for code in before now; do
    dir=$PWD; [ "$code" = before ] && dir=$PWD/.base
    if [ "$LOAD" = disk ]; then studies=$(mktemp -d "$work/studies.XXXX")
    else studies=$(mktemp -d /dev/shm/budget.XXXX 2>/dev/null || mktemp -d); fi
    start=$(date +%s.%N)
    (cd "$dir" && SWEEPER_CACHE="$work/cache-$code" python3 -m sweeper run "$work/space.yaml" \
        --device interpret --studies-dir "$studies" --quiet --no-report --time "$TIME" --timing) \
        > "$work/out" 2>&1
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    summary=$(grep -oE "summary [0-9.]+ s" "$work/out" | grep -oE "[0-9.]+")
    measured=$(grep -oE "^done: [0-9]+ measured" "$work/out" | grep -oE "[0-9]+")
    kept=$(grep -oE "[0-9.]+ s of it kept for the finals" "$work/out" | grep -oE "^[0-9.]+")
    final=$(grep -oE "after [0-9]+ interleaved rounds? over [0-9]+ finalists" "$work/out")
    [ -z "$final" ] && final=$(grep -q "left for the next run" "$work/out" && echo "left for the next run" || echo "none")
    printf "%-6s run %s: %4s configs, kept %4s s, final: %-40s summary %4s s, wall %.1f s\n" \
        "$code" "$run" "${measured:-?}" "${kept:--}" "$final" "${summary:-?}" "$wall"
    rm -rf "$studies"
  done
done
