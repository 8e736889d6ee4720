#!/usr/bin/env bash
# Issue #27 on the GPU machine: how busy sweeps keep the GPU under measure.duty auto
# (sustained load, cool-down finals), whether that ranks power-bound configs as the cool
# measurement does, time to a tuned 8192³ matmul from a cold Triton cache, --time, and
# `sweeper plan`'s estimate against each run's wall.  Each stage named in $STAGES runs:
#   coldauto  spaces/matmul-8k.yaml with sampler auto and --time 60s, empty Triton cache and a
#             fresh sweeper cache (the estimate a fresh machine prints)
#   coldautoab the same, the code before a change (.base/, carried) then now, each from an
#             empty Triton cache and a fresh sweeper cache
#   ffn       benchmarks/spaces/matmul-ffn.yaml (4096 x 14336 x 4096 bf16, 108 configs):
#             cold cache, then warm under auto twice and under {cool: 100ms}
#   8k        spaces/matmul-8k.yaml exhaustive under auto (warm), ranked against the two
#             {cool: 1s} studies of docs/raw/2026-12-02-s14/duty-studies.tgz
#   copy      spaces/copy.yaml twice (cold, then warm cache)
#   softmax   spaces/softmax.yaml, cold cache
#   shapes    spaces/matmul-shapes.yaml, cold cache, then warm with --time 30s
#   cool      spaces/matmul-8k.yaml under {cool: 50ms} and {cool: 25ms}, ranked against the
#             two {cool: 1s} studies of docs/raw/2026-12-02-s14/duty-studies.tgz
#   plans     the four shipped spaces of issue #27 (copy, softmax, matmul-8k, matmul-shapes)
#             as a new user runs them: cold Triton cache, report on, each `sweeper plan`
#             first; run in a fresh sweeper cache (no costs measured yet), then again in the
#             cache those runs left (fresh Triton caches again)
#   command   benchmarks/command_overhead.py spaces/copy.yaml, warm cache: sweeper run
#             against the bare-loop script
#   budget    spaces/matmul-shapes.yaml with --time 12s (it needs more), warm cache
#   freshplan `sweeper plan` of the four shipped spaces in a fresh sweeper cache (no run's
#             costs measured yet) and an empty Triton cache: the parts a fresh machine prices
#   timebudget spaces/matmul-shapes.yaml under --time 20s, again, then --time 12s ($TIMES), the code
#             before a change (.base/, carried) and now, each in a fresh sweeper cache and
#             empty Triton cache of its own (the second and third runs find the costs and
#             binaries the first left): how much of a time budget each measures with
#             ($CODES: e.g. "now" alone)
#   timebudgetffn the ffn space (power-bound: its finals take cool-downs) under --time 20s,
#             the code before a change (.base/, carried) and now in turn, twice, after one
#             untimed run fills a Triton cache they share: what a budget keeps for the
#             finals and what the sweep measures with the rest ($CODES as above)
#   ffnonce   the ffn space once from a cold cache, then once warm under auto (run A only)
#   newshapes new shapes of a warm kernel, in a fresh sweeper cache and one Triton cache:
#             benchmarks/spaces/matmul-k256.yaml (the kernel cold), then matmul-odd.yaml
#             (its binaries new: the compile pool starts with the sweep,
#             plan.pool_from_start), then matmul-odd again (every binary run before: a
#             load each); the binaries each run kept (binaries.json) counted after each
#   llm       benchmarks/spaces/matmul-llm.yaml (576 configs over an LLM layer's four
#             matmul shapes) from a cold Triton cache, then warm twice
#   finals    the finals' schedule on power-bound matmuls: cool-downs before each entrant
#             (measure.finals_duty: cool, the default) against sustained load (sustained),
#             each twice on the ffn space (warm) and once on matmul-8k, every winner looked
#             up in a cool measurement of every config (ffn under {cool: 100ms}; 8k: the two
#             {cool: 1s} studies of docs/raw/2026-12-02-s14/duty-studies.tgz); then the
#             LLM space warm under each (its four problems' finals)
#   confirm   the ffn space under finals_duty: sustained twice (warm), after a cold run
#             under the default cool finals: the race's winner and its cool confirmation
#   failsearch auto, 25 trials, on the long-K bf16 and the fp16 8192 x 2048 x 8192 matmul
#             spaces (a quarter of their configs run out of shared memory), each from an
#             empty Triton cache, the code before a change (.base/, carried) then now: the
#             failed trials and the wall a search that learns where configs fail saves
#   spread    spaces/matmul-8k.yaml under TPE, $SPREAD_TRIALS (15) trials, each from an empty
#             Triton cache:
#             the compile pool fed every valid config in a seeded order (SpreadHints, the
#             default) against --compile-workers 0 (each trial compiles its own)
#   llmconfirm the LLM space (four problems) from a cold Triton cache, then warm under the
#             default cool finals and under finals_duty: sustained (each winner confirmed
#             after cool-downs beside its torch baseline)
#   lazypool  the LLM space warm, the code before a change (.base/: that commit's tree,
#             carried) against the code now, in alternating order, after a cold run: what a
#             change to the compile pool or the worker costs or saves
#   scaleverify the scale spaces of held-out sets 11 and 13 (bf16 512 MiB, fp32 2 GiB), warm,
#             the code before a change (.base/, carried) against the code now, alternating,
#             after a cold run each: what scale's one-pass replay in its check saves
#   stridedverify the same over set 12's copy-strided spaces (a transpose and a gather):
#             what copy-strided's check without a fresh index saves
#   stridedplans `sweeper plan` against the wall of first runs of copy-strided (the shipped
#             space, the fp16 transpose and stride 33 of held-out set 13), each from an
#             empty Triton cache in a fresh sweeper cache, report on
#   startup   where a run's start goes before its first trial: spaces/matmul-shapes.yaml, 2
#             trials, no report, warm Triton cache, run under `python -X importtime` (the
#             imports, longest first) and under cProfile (the command's own process; the
#             workers start beside it), then its `time:` line alone, with bytecode and
#             without (PYTHONDONTWRITEBYTECODE and an empty cache prefix) in turn, three times
#   idle      the ffn space (warm) under duty auto with IDLE_S as it is and with
#             IDLE_S=$IDLE_SHORT (0.005: a load after any pause) in a copy of the tree,
#             twice each, each ranked against {cool: 100ms}: what loading after every
#             pause costs in wall and busy time, and whether it ranks like the cool sweep
#   tail      the same with TAIL_S as it is against TAIL_S=0 (no launches queued after
#             each config's samples to keep the GPU loaded till the next trial); TAIL_S
#             exists in the tree of commit 579e58d only (measured, taken back)
#   window    the ffn space (warm, after a cold run) with 30, 100 and 300 timed samples a
#             config ($WINDOW_REPEATS) under measure.duty auto and under {cool: 100ms} at 30
#             and 100, runs A then B in turn: how the length of each config's sampling
#             window moves GPU busy and the top ten's ranks (A against B, each against cool)
# Every run is preceded by `sweeper plan` on the same studies folder and is timed from the
# shell; logs in $OUT/NAME.log, each study's study.json and trials.jsonl in
# $OUT/studies/NAME/, and a table last: plan estimate against wall, gpu busy, winner.
# Run after the install line of benchmarks/gpu_run.sh (optuna from .whl).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/studies"
studies=$(mktemp -d)
caches=$(mktemp -d)
TIMEFORMAT="wall %R s"
table="$OUT/table.txt"; : > "$table"

run() {   # NAME CACHE SPACE [run options...]
  local name=$1 cache=$2 space=$3; shift 3
  local log="$OUT/$name.log"
  mkdir -p "$caches/$cache"
  {
    echo "+ sweeper plan $space"
    TRITON_CACHE_DIR="$caches/$cache" python3 -m sweeper plan "$space" \
        --studies-dir "$studies" 2>&1 | grep -E "estimated|last run|would measure|binaries"
    echo "+ sweeper run $space $*"
    time TRITON_CACHE_DIR="$caches/$cache" timeout 280 python3 -m sweeper run "$space" \
        --studies-dir "$studies" --study "$name" --no-priors --timing "$@" 2>&1
  } > "$log" 2>&1
  mkdir -p "$OUT/studies"
  cp -r "$studies/$name" "$OUT/studies/" 2>/dev/null
  echo "== $name"
  grep -E "^(done|gpu busy|power|winner|wall|estimated|  the study's last)" "$log" | cut -c1-330
  printf '%-16s %-28s %-10s %-8s %s\n' "$name" \
      "$(grep -m1 -oE '^estimated time: [^ ]+' "$log" | cut -d' ' -f3)" \
      "$(grep -m1 -oE '^wall [0-9.]+' "$log" | cut -d' ' -f2)" \
      "$(grep -m1 -oE '^gpu busy [0-9.]+%' "$log" | cut -d' ' -f3)" \
      "$(grep -m1 -E '^winner' "$log" | grep -oE '[0-9.]+× torch[.a-z_]*' | head -1)" >> "$table"
}

ffn_cool() {  # the ffn space under {cool: 100ms}, written to the studies folder: its path
  sed 's/cache: cold}/cache: cold, duty: {cool: 100ms}}/' benchmarks/spaces/matmul-ffn.yaml \
      > "$studies/matmul-ffn-cool.yaml"
  echo "$studies/matmul-ffn-cool.yaml"
}

rank() {  # A B [--top N]
  echo "# rank_stability $*" | tee -a "$OUT/ranks.log"
  python3 benchmarks/rank_stability.py "$@" 2>&1 | tee -a "$OUT/ranks.log" | tail -6
}

before_after() {   # SPACE...: each under benchmarks/spaces/, cold, then warm with the code
  # before (.base/) and now in turn, twice
  local base=$PWD/.base space r
  echo "before: $(cd "$base" && python3 -c 'import sweeper; print(sweeper.__file__)')"
  for space in "$@"; do
    run "$space-cold" "$space" "benchmarks/spaces/$space.yaml" --no-report
    for r in a b; do
      (cd "$base" && run "$space-before-$r" "$space" "benchmarks/spaces/$space.yaml" --no-report)
      run "$space-now-$r" "$space" "benchmarks/spaces/$space.yaml" --no-report
    done
  done
}

for stage in ${STAGES:-coldauto ffn 8k copy softmax shapes}; do
  case $stage in
  coldauto)
    sed 's/^sampler: exhaustive/sampler: auto/' spaces/matmul-8k.yaml > "$studies/matmul-8k-auto.yaml"
    SWEEPER_CACHE=$(mktemp -d) run coldauto cold-8k "$studies/matmul-8k-auto.yaml" \
        --time 60s --no-report ;;
  coldautoab)
    sed 's/^sampler: exhaustive/sampler: auto/' spaces/matmul-8k.yaml > "$studies/matmul-8k-auto.yaml"
    for code in before now; do
      dir=$PWD; [ "$code" = before ] && dir=$PWD/.base
      (cd "$dir" && SWEEPER_CACHE=$(mktemp -d) run "coldauto-$code" "cold-8k-$code" \
          "$studies/matmul-8k-auto.yaml" --time 60s --no-report)
    done ;;
  ffn)
    run ffn-cold ffn benchmarks/spaces/matmul-ffn.yaml --no-report
    run ffn-auto-a ffn benchmarks/spaces/matmul-ffn.yaml --no-report
    run ffn-auto-b ffn benchmarks/spaces/matmul-ffn.yaml --no-report
    run ffn-cool ffn "$(ffn_cool)" --no-report
    rank "$OUT/studies/ffn-cool" "$OUT/studies/ffn-auto-a"
    rank "$OUT/studies/ffn-cool" "$OUT/studies/ffn-auto-b"
    rank "$OUT/studies/ffn-auto-a" "$OUT/studies/ffn-auto-b"
    rank "$OUT/studies/ffn-cool" "$OUT/studies/ffn-auto-a" --top 200 ;;
  idle|tail)
    # a copy of the tree with one constant of sweeper/measure/_duty.py changed: IDLE_S
    # at $IDLE_SHORT (idle) or TAIL_S at 0 (tail: no launches queued after the samples)
    if [ "$stage" = idle ]; then name=IDLE_S from=0.05 to=${IDLE_SHORT:-0.005}
    else name=TAIL_S from=0.02 to=0; fi
    run ffn-cold ffn benchmarks/spaces/matmul-ffn.yaml --no-report
    run ffn-cool ffn "$(ffn_cool)" --no-report
    other=$(mktemp -d)
    cp -r sweeper benchmarks spaces pyproject.toml "$other/"
    sed -i "s/^$name = $from$/$name = $to/" "$other/sweeper/measure/_duty.py"
    grep -q "^$name = $to$" "$other/sweeper/measure/_duty.py" ||
        { echo "$stage: $name = $from not found in sweeper/measure/_duty.py"; continue; }
    echo "$stage: $name = $(cd "$other" && python3 -c "from sweeper.measure import _duty; print(_duty.$name)") in the copy"
    for r in a b; do
      run "ffn-auto-$r" ffn benchmarks/spaces/matmul-ffn.yaml --no-report
      (cd "$other" && run "ffn-$stage-$r" ffn benchmarks/spaces/matmul-ffn.yaml --no-report)
      rank "$OUT/studies/ffn-cool" "$OUT/studies/ffn-auto-$r"
      rank "$OUT/studies/ffn-cool" "$OUT/studies/ffn-$stage-$r"
    done
    rank "$OUT/studies/ffn-auto-a" "$OUT/studies/ffn-auto-b"
    rank "$OUT/studies/ffn-$stage-a" "$OUT/studies/ffn-$stage-b" ;;
  window)
    run ffn-cold ffn benchmarks/spaces/matmul-ffn.yaml --no-report
    reps=${WINDOW_REPEATS:-30 100 300}
    for r in $reps; do
      sed "s/repeat: 30,/repeat: $r,/" benchmarks/spaces/matmul-ffn.yaml > "$studies/ffn-r$r.yaml"
      sed "s/repeat: 30, cache: cold}/repeat: $r, cache: cold, duty: {cool: 100ms}}/" \
          benchmarks/spaces/matmul-ffn.yaml > "$studies/ffn-cool-r$r.yaml"
    done
    for ab in a b; do
      for r in 30 100; do run "ffn-cool-r$r-$ab" ffn "$studies/ffn-cool-r$r.yaml" --no-report; done
      for r in $reps; do run "ffn-r$r-$ab" ffn "$studies/ffn-r$r.yaml" --no-report; done
    done
    for c in 30 100; do rank "$OUT/studies/ffn-cool-r$c-a" "$OUT/studies/ffn-cool-r$c-b"; done
    for r in $reps; do
      rank "$OUT/studies/ffn-r$r-a" "$OUT/studies/ffn-r$r-b"
      for c in 30 100; do for ab in a b; do
        rank "$OUT/studies/ffn-cool-r$c-$ab" "$OUT/studies/ffn-r$r-a"
        rank "$OUT/studies/ffn-cool-r$c-$ab" "$OUT/studies/ffn-r$r-b"
      done; done
    done ;;
  ffnonce)
    run ffn-cold ffn benchmarks/spaces/matmul-ffn.yaml --no-report
    run ffn-auto-a ffn benchmarks/spaces/matmul-ffn.yaml --no-report ;;
  8k)
    run 8k-auto cold-8k spaces/matmul-8k.yaml --no-report
    ref=$(mktemp -d); tar xzf docs/raw/2026-12-02-s14/duty-studies.tgz -C "$ref"
    rank "$ref/cool-1s-a" "$OUT/studies/8k-auto"
    rank "$ref/cool-1s-b" "$OUT/studies/8k-auto"
    rank "$ref/cool-1s-a" "$ref/cool-1s-b" ;;
  copy)
    run copy-cold copy spaces/copy.yaml
    run copy-warm copy spaces/copy.yaml ;;
  softmax)
    run softmax-cold softmax spaces/softmax.yaml ;;
  shapes)
    run shapes-cold shapes spaces/matmul-shapes.yaml
    run shapes-time30 shapes spaces/matmul-shapes.yaml --time 30s ;;
  cool)
    ref=$(mktemp -d); tar xzf docs/raw/2026-12-02-s14/duty-studies.tgz -C "$ref"
    for c in 50ms 25ms; do
      sed "s/cache: cold}/cache: cold, duty: {cool: $c}}/" spaces/matmul-8k.yaml \
          > "$studies/matmul-8k-cool-$c.yaml"
      run "8k-cool-$c" cold-8k "$studies/matmul-8k-cool-$c.yaml" --no-report
      rank "$ref/cool-1s-a" "$OUT/studies/8k-cool-$c"
      rank "$ref/cool-1s-b" "$OUT/studies/8k-cool-$c"
      rank "$ref/cool-1s-a" "$OUT/studies/8k-cool-$c" --top 200
    done ;;
  plans)
    for round in first again; do
      [ "$round" = first ] && export SWEEPER_CACHE=$(mktemp -d)
      for sp in copy softmax matmul-8k matmul-shapes; do
        run "plan-$round-$sp" "plan-$round-$sp" "spaces/$sp.yaml"
      done
      # what those runs measured: the costs a fresh machine's plan assumes stand against
      cp "$SWEEPER_CACHE/run-costs.json" "$OUT/plans-run-costs-$round.json" 2>/dev/null
    done
    unset SWEEPER_CACHE ;;
  command)
    python3 benchmarks/command_overhead.py spaces/copy.yaml --cache warm \
        --runs bare,run,run-no-report --out "$OUT/command" > "$OUT/command.log" 2>&1
    tail -15 "$OUT/command.log" ;;
  llm)
    run llm-cold llm benchmarks/spaces/matmul-llm.yaml --no-report
    run llm-warm llm benchmarks/spaces/matmul-llm.yaml --no-report
    run llm-warm-b llm benchmarks/spaces/matmul-llm.yaml --no-report ;;
  budget)
    run budget-12s shapes spaces/matmul-shapes.yaml --time 12s ;;
  startup)
    run startup-warm shapes spaces/matmul-shapes.yaml --trials 2 --no-report
    one() { TRITON_CACHE_DIR="$caches/shapes" python3 "$@" -m sweeper run \
        spaces/matmul-shapes.yaml --studies-dir "$studies" --study "startup-$RANDOM" \
        --no-priors --trials 2 --no-report --timing; }
    one -X importtime > "$OUT/startup-importtime-run.log" 2> "$OUT/startup-importtime.log"
    grep -E "^time:" "$OUT/startup-importtime-run.log"
    echo "imports, longest (cumulative us, self us, module):"
    grep "^import time:" "$OUT/startup-importtime.log" | tr -d '|' | \
        awk '{print $4, $3, $5}' | sort -rn | head -40 | tee "$OUT/startup-imports-top.txt"
    one -m cProfile -o "$OUT/startup.prof" 2>&1 | grep -E "^time:"
    python3 -c "import pstats, sys; p = pstats.Stats(sys.argv[1]); \
p.sort_stats('cumulative').print_stats(60); p.sort_stats('tottime').print_stats(30)" \
        "$OUT/startup.prof" > "$OUT/startup-pstats.txt" 2>&1
    head -110 "$OUT/startup-pstats.txt" | tail -75
    for i in 1 2 3; do     # the image's own setting (no bytecode for torch and the rest)
      echo -n "with bytecode:    "; one 2>&1 | grep -E "^time:"
      echo -n "without bytecode: "; PYTHONDONTWRITEBYTECODE=1 PYTHONPYCACHEPREFIX=$(mktemp -d) \
          one 2>&1 | grep -E "^time:"
    done ;;
  newshapes)
    export SWEEPER_CACHE=$(mktemp -d)
    for name in k256:matmul-k256 odd:matmul-odd odd-again:matmul-odd; do
      run "newshapes-${name%%:*}" newshapes "benchmarks/spaces/${name#*:}.yaml" --no-report
      python3 -c "import json, sys; kept = json.load(open(sys.argv[1])); \
print('binaries kept:', {k.split(' | ')[2]: len(v) for k, v in kept.items()})" \
          "$SWEEPER_CACHE/binaries.json" 2>&1 | tee -a "$OUT/newshapes-${name%%:*}.log"
    done
    unset SWEEPER_CACHE ;;
  finals)
    run ffn-cold ffn benchmarks/spaces/matmul-ffn.yaml --no-report
    for sp in ffn:benchmarks/spaces/matmul-ffn.yaml 8k:spaces/matmul-8k.yaml; do
      sed 's/cache: cold}/cache: cold, finals_duty: sustained}/' "${sp#*:}" \
          > "$studies/${sp%%:*}-sustained.yaml"
    done
    for r in a b; do
      run "ffn-finals-cool-$r" ffn benchmarks/spaces/matmul-ffn.yaml --no-report
      run "ffn-finals-sustained-$r" ffn "$studies/ffn-sustained.yaml" --no-report
    done
    run ffn-cool ffn "$(ffn_cool)" --no-report
    for r in cool-a cool-b sustained-a sustained-b; do
      rank "$OUT/studies/ffn-cool" "$OUT/studies/ffn-finals-$r"
    done
    run 8k-finals-sustained cold-8k "$studies/8k-sustained.yaml" --no-report
    run 8k-finals-cool cold-8k spaces/matmul-8k.yaml --no-report
    ref=$(mktemp -d); tar xzf docs/raw/2026-12-02-s14/duty-studies.tgz -C "$ref"
    for r in sustained cool; do
      rank "$ref/cool-1s-a" "$OUT/studies/8k-finals-$r"
      rank "$ref/cool-1s-b" "$OUT/studies/8k-finals-$r"
    done
    sed 's/cache: cold}/cache: cold, finals_duty: sustained}/' benchmarks/spaces/matmul-llm.yaml \
        > "$studies/llm-sustained.yaml"
    run llm-cold llm benchmarks/spaces/matmul-llm.yaml --no-report
    run llm-finals-cool llm benchmarks/spaces/matmul-llm.yaml --no-report
    run llm-finals-sustained llm "$studies/llm-sustained.yaml" --no-report
    rank "$OUT/studies/llm-finals-cool" "$OUT/studies/llm-finals-sustained" ;;
  lazypool)
    base=$PWD/.base
    run llm-cold llm benchmarks/spaces/matmul-llm.yaml --no-report
    for r in a b; do
      (cd "$base" && run "llm-before-$r" llm benchmarks/spaces/matmul-llm.yaml --no-report)
      run "llm-now-$r" llm benchmarks/spaces/matmul-llm.yaml --no-report
    done
    for r in before-a now-a before-b now-b; do
      echo "$r: $(grep -E '^  (worker 0|compile pool)' "$OUT/llm-$r.log" | cut -c1-200 | tr '\n' ' ')"
    done ;;
  scaleverify) before_after scale-bf16-512m scale-fp32-2g ;;
  stridedverify) before_after copy-strided-transpose copy-strided-gather ;;
  stridedplans)
    SWEEPER_CACHE=$(mktemp -d) run strided-shipped strided-shipped spaces/copy-strided.yaml
    for space in copy-strided-transpose-fp16 copy-strided-33; do
      SWEEPER_CACHE=$(mktemp -d) run "$space-first" "$space-first" \
          "benchmarks/spaces/$space.yaml"
    done ;;
  llmconfirm)
    sed 's/cache: cold}/cache: cold, finals_duty: sustained}/' benchmarks/spaces/matmul-llm.yaml \
        > "$studies/llm-sustained.yaml"
    run llm-cold llm benchmarks/spaces/matmul-llm.yaml --no-report
    run llm-confirm-cool llm benchmarks/spaces/matmul-llm.yaml --no-report
    run llm-confirm-sustained llm "$studies/llm-sustained.yaml" --no-report
    rank "$OUT/studies/llm-confirm-cool" "$OUT/studies/llm-confirm-sustained"
    grep -h "^winner" "$OUT/llm-confirm-cool.log" "$OUT/llm-confirm-sustained.log" \
        | cut -c1-400 > "$OUT/llm-winners.txt" ;;
  confirm)
    sed 's/cache: cold}/cache: cold, finals_duty: sustained}/' benchmarks/spaces/matmul-ffn.yaml \
        > "$studies/ffn-sustained.yaml"
    run ffn-cold ffn benchmarks/spaces/matmul-ffn.yaml --no-report
    run ffn-confirm-a ffn "$studies/ffn-sustained.yaml" --no-report
    run ffn-confirm-b ffn "$studies/ffn-sustained.yaml" --no-report ;;
  timebudget)
    for code in ${CODES:-before now}; do
      dir=$PWD; [ "$code" = before ] && dir=$PWD/.base
      export SWEEPER_CACHE; SWEEPER_CACHE=$(mktemp -d)
      for t in ${TIMES:-20 20 12}; do
        name="time-$code-${t}s"; [ -e "$OUT/$name.log" ] && name="$name-again"
        (cd "$dir" && run "$name" "shapes-$code" spaces/matmul-shapes.yaml --time "${t}s")
        grep -E "^(time:|done:)|finals_overhead" "$OUT/$name.log" | cut -c1-400
      done
      echo "run costs ($code):"; cat "$SWEEPER_CACHE/run-costs.json" 2>/dev/null | \
          grep -E "finals_overhead|report_s|startup_s"
    done
    unset SWEEPER_CACHE ;;
  freshplan)
    for space in copy softmax matmul-8k matmul-shapes; do
      SWEEPER_CACHE=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d) python3 -m sweeper plan \
          "spaces/$space.yaml" --studies-dir "$studies" 2>&1 | tee "$OUT/freshplan-$space.log"
    done ;;
  timebudgetffn)
    run "ffn-tb-warm" "ffn-tb" benchmarks/spaces/matmul-ffn.yaml --no-report
    for round in 1 2; do
      for code in ${CODES:-before now}; do
        dir=$PWD; [ "$code" = before ] && dir=$PWD/.base
        (cd "$dir" && run "ffn-time-$code-$round" "ffn-tb" benchmarks/spaces/matmul-ffn.yaml \
            --time 20s)
        grep -E "^(time:|done:|winner)" "$OUT/ffn-time-$code-$round.log" | cut -c1-400
      done
    done ;;
  failsearch)
    base=$PWD/.base
    for space in matmul-bf16-long-k matmul-fp16-down; do
      sed 's/^sampler: exhaustive/sampler: auto/' "benchmarks/spaces/$space.yaml" \
          > "$studies/$space-auto.yaml"
      (cd "$base" && run "$space-before" "$space-before" "$studies/$space-auto.yaml" \
          --trials 25 --no-report)
      run "$space-now" "$space-now" "$studies/$space-auto.yaml" --trials 25 --no-report
    done ;;
  spread)
    sed 's/^sampler: exhaustive/sampler: tpe/' spaces/matmul-8k.yaml > "$studies/matmul-8k-tpe.yaml"
    run spread-pool spread-pool "$studies/matmul-8k-tpe.yaml" --trials "${SPREAD_TRIALS:-15}" \
        --no-report
    run spread-none spread-none "$studies/matmul-8k-tpe.yaml" --trials "${SPREAD_TRIALS:-15}" \
        --no-report \
        --compile-workers 0 ;;
  esac
done
echo
echo "run              plan estimate                wall (s)   busy     winner"
cat "$table"
# the logs and studies in one file (what comes back from the GPU machine is counted; the
# reports' pictures left out, their report.md and report.json kept)
tgz=$(mktemp --suffix .tgz)
tar czf "$tgz" --exclude='*.png' --exclude='*.svg' --exclude=report.html -C "$OUT" . && find "$OUT" -mindepth 1 ! -name table.txt -delete && \
    mv "$tgz" "$OUT/busy-budget.tgz"
