#!/usr/bin/env bash
# `sweeper plan`'s estimate against `sweeper run`'s wall (issue #27), each space planned
# then run from the shell in a fresh studies folder; all in a fresh sweeper cache (no
# costs measured on this machine yet), then again in the cache those runs left; each run
# with the machine's load average (1, 5 and 15 minutes) before it.
#   bash benchmarks/plan_accuracy.sh [DEVICE] [SPACE...]   (default: interpret, copy-small, copy)
set -uo pipefail
device=${1:-interpret}; shift || true
spaces=("${@:-spaces/copy-small.yaml spaces/copy.yaml}")
export SWEEPER_CACHE=$(mktemp -d)
TIMEFORMAT="wall %R s"
for round in first again; do
  for sp in ${spaces[@]}; do
    studies=$(mktemp -d)
    echo "== $round $sp (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    python3 -m sweeper plan "$sp" --device "$device" --studies-dir "$studies" 2>&1 | grep "^estimated"
    { time python3 -m sweeper run "$sp" --device "$device" --studies-dir "$studies" --quiet \
        > "$studies/run.log" 2>&1 ; } 2>&1
    grep -E "^time:" "$studies/run.log" | cut -c1-200
  done
done
