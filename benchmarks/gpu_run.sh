#!/usr/bin/env bash
# One call on the GPU machine (see docs/benchmarks.md): install the carried wheels, then run
# the stages named in $STAGES (default: all) and leave logs in $OUT.
#   tests     python3 -m pytest (GPU tests included)
#   calibrate sweeper calibrate
#   example   sweeper run spaces/copy.yaml from scratch; the study comes back as a tarball
#   trust     benchmarks/trust_evidence.py (agreement, stability, cold/warm, ceilings)
#   overhead  benchmarks/sweep_overhead.py
#   oat       sweeper run spaces/copy-oat.yaml (one variable at a time); study as a tarball
#   record    benchmarks/record_heldout.sh $RECORD (replay tables of those spaces, into $OUT;
#             names under benchmarks/spaces/ or paths to space files)
#   live      benchmarks/search_live.py on copy and matmul (auto on the GPU, abandonment)
#   ab        sweeper ab: block 128 vs 256 (a near tie) and grid sms vs 16*sms (not one)
#   gputests  python3 -m pytest -m gpu tests (the GPU-marked tests only, but those of `hangs`;
#             $GPUTESTS: test files or folders in place of tests)
#   cudacopy  the CUDA C copy (spaces/cuda-copy.yaml) and the Triton copy at 1 GiB fp32
#   matmul    spaces/matmul-8k.yaml (8192^3 bf16), matmul-shapes.yaml, and fp8 at 8192^3
#   dispatch  the dispatch-by-shape spaces, exported as replay tables, and the regret
#   launcher  benchmarks/launcher_overhead.py (tuned_kernel against a plain launch)
#   hookcost  benchmarks/autotune_hooks_cost.py $HOOKCOST_ARGS (e.g. --diagnose, --graph)
#   firstsamples benchmarks/first_samples.py $FIRST_ARGS: a short kernel's first samples after
#             four warm-ups and four idle gaps (put it first on a machine just started)
#   coolburst benchmarks/cool_burst_probe.py: a power-bound matmul's samples right after a
#             cool-down, sample by sample, with NVML's clock read every millisecond (~1 min)
#   multigpu  benchmarks/multi_gpu.py spaces/copy.yaml (needs two GPUs)
#   multigpunvml the same, NVML polled every 200 ms (SWEEPER_NVML_PERIOD_MS)
#   multigpulong the sweeps alone on spaces/matmul-8k.yaml (long trials; about 7 minutes)
#   nvmlcontention benchmarks/nvml_contention.py: a worker's trials alone and beside other
#             processes polling the same GPU's NVML state (one GPU; about 90 s)
#   reportspeed benchmarks/report_speed.py
#   reportpools benchmarks/report_speed.py --pools: drawing pools by size, in a process
#             holding nothing of CUDA, CUDA initialized, and a CUDA context
#   command   benchmarks/command_overhead.py spaces/copy.yaml (sweeper run against a bare-loop
#             script and Kernel Tuner, from the shell, warm and cold caches)
#   commandrounds the same, each run $ROUNDS (3) times interleaved, judged by the medians (bare
#             loop, sweeper run and Kernel Tuner; about 5 minutes)
#   commandwarm the same, warm cache only: bare loop, sweeper run and --no-report, $ROUNDS (3)
#             rounds interleaved, judged by the medians (about 3 minutes)
#   commandpoll the same, warm: bare loop, sweeper run, and sweeper run with its workers'
#             NVML state read once, not polled (what the poller costs), $ROUNDS (3) rounds
#   commandabandon the same with measure.abandon 1.5 (bare loop and sweeper run; no Kernel Tuner)
#   commandci the same with sweeper's default stopping rule (stop: ci, 0.5 %) in place of 50
#             (bare loop, sweeper run and Kernel Tuner)
#   profile   sweeper run $PROFILE_SPACES (spaces/copy.yaml) --workers inline under cProfile,
#             warm cache: where a trial's time goes beyond the kernel's (pstats by own and
#             cumulative time, in profile-NAME.log)
#   compilepool benchmarks/compile_pool.py, then with a process per core (no A/B)
#   runtiming sweeper run spaces/copy.yaml --timing, warm cache, with and without worker
#             processes, the compile pool and the report ($GPUS: e.g. --gpus 0)
#   coldpool  sweeper run spaces/copy.yaml --timing from an empty Triton cache: the default
#             compile pool against --compile-workers 0 (each run its own empty cache)
#   twogpus   the GPU tests that need two GPUs
#   hangs     the GPU tests of a hang and an illegal address (under their own timeout)
#   reload    benchmarks/reload_probe.py $RELOAD_ARGS: the load a hot GPU needs after a pause before a
#             power-bound kernel's samples read as under sustained load (about 3 minutes)
#   busy      benchmarks/busy_budget.sh with its stages $BUSY (after this script's install
#             and bytecode set-up; its logs and studies in $OUT/busy/busy-budget.tgz)
# The install line, for reference (and `unset PYTHONDONTWRITEBYTECODE; export
# PYTHONPYCACHEPREFIX=/tmp/pycache` before it, as below):
#   python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade \
#       --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
# Each stage runs under `timeout` (STAGE_TIMEOUT seconds, default 540): a stage that hangs
# is killed with its children, said in the log, and the next stage runs.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export OUT
sweeper() { if command -v sweeper >/dev/null; then command sweeper "$@"; else python3 -m sweeper "$@"; fi; }
if [ "${1:-}" != "--stage" ]; then
  STAGES=${STAGES:-tests calibrate example trust overhead}
  # bytecode as a user's install has it: the image sets PYTHONDONTWRITEBYTECODE and ships
  # torch, triton, pandas and the rest without bytecode, so every process compiled them from
  # source (2.7 s of a `sweeper run`'s start on the H200 machine, each worker's start too;
  # optuna, SQLAlchemy and sweeper 3.2 s more before they were compiled here). Python now
  # writes each module's bytecode once, into a folder of its own, at its first import
  # (warmed below), as it does by default beside the sources.
  unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pycache
  python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl || exit 1
  python3 -m compileall -q -j 0 sweeper benchmarks >/dev/null
  export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
  python3 -c "import torch, triton, optuna, numpy, pandas, seaborn, matplotlib.pyplot, \
rich, yaml, sweeper.cli, sweeper.report" || true
  python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 \
      || echo "(console script not installed; using python3 -m sweeper)"
  { date -u; echo "PYTHONPYCACHEPREFIX=$PYTHONPYCACHEPREFIX"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv;
    python3 -c "import torch, triton, optuna; print('torch', torch.__version__, 'triton', triton.__version__, 'optuna', optuna.__version__)"; } 2>&1 | tee "$OUT/env.txt"
  for stage in $STAGES; do
    echo "=== $stage $(date -u +%T)"
    timeout -k 10 "${STAGE_TIMEOUT:-540}" bash "$0" --stage "$stage"
    rc=$?; [ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "=== $stage: killed after ${STAGE_TIMEOUT:-540} s"
  done
  echo "=== done $(date -u +%T)"
  exit 0
fi
stage=$2
  case $stage in
    hangs) timeout -k 10 300 python3 -m pytest -q -p no:cacheprovider -m gpu -rA \
        tests/test_hangs.py "tests/test_gpu.py" -k "illegal or never_returns" \
        2>&1 | tee "$OUT/pytest-hangs.log" | grep -E "^(PASSED|FAILED|ERROR)|passed|failed" ;;
    tests) python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest.log" | tail -4 ;;
    calibrate) sweeper calibrate --force 2>&1 | tee "$OUT/calibrate.log" ;;
    example)
      rm -rf studies/copy-fp32
      ( time sweeper run spaces/copy.yaml ) 2>&1 | tee "$OUT/run.log" | grep -v '^\s*$' | tail -12
      tar czf "$OUT/study-copy-fp32.tgz" studies/copy-fp32 ;;
    oat)
      rm -rf studies/copy-oat
      sweeper run spaces/copy-oat.yaml 2>&1 | tee "$OUT/oat.log" | grep -v '^\s*$' | tail -8
      tar czf "$OUT/study-copy-oat.tgz" studies/copy-oat ;;
    record) OUT=$OUT bash benchmarks/record_heldout.sh ${RECORD:-} ;;
    live)
      for space in copy matmul; do
        python3 benchmarks/search_live.py --space spaces/$space.yaml --out /tmp/live-$space
      done 2>&1 | tee "$OUT/search-live.log" ;;
    ab)
      { sweeper ab spaces/copy.yaml --vary block=128,256 -p 'grid=["cdiv(n, BLOCK)"]' -p BLOCK=1024
        sweeper ab spaces/copy.yaml --vary 'grid=sms,16*sms' -p block=256 -p BLOCK=1024
      } 2>&1 | tee "$OUT/ab.log" ;;
    trust) python3 benchmarks/trust_evidence.py 2>&1 | tee "$OUT/trust.log" | grep -v '^copy \|^matmul ' ;;
    overhead) python3 benchmarks/sweep_overhead.py 2>&1 | tee "$OUT/overhead.log" ;;
    twogpus) python3 -m pytest -q -p no:cacheprovider -m gpu tests -rA -k "two_gpus or several_gpus or with_two_gpus" 2>&1 \
        | tee "$OUT/pytest-twogpus.log" | grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed" ;;
    gputests) python3 -m pytest -q -p no:cacheprovider -m gpu ${GPUTESTS:-tests} -rA \
        -k "not (illegal or never_returns)" 2>&1 \
        | tee "$OUT/pytest-gpu.log" | grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed" ;;
    cudacopy)
      for space in spaces/cuda-copy.yaml "spaces/copy.yaml -p footprint=1GiB -p dtype=float32 --study copy-1g"; do
        ( time sweeper run $space --studies-dir /tmp/st --no-priors ) 2>&1 \
          | tee -a "$OUT/cudacopy.log" | grep -E "^(best|winner|final|real|sweeper:)|torch" | tail -8
      done
      cp /tmp/st/cuda-copy*/report.md "$OUT/cuda-copy-report.md" 2>/dev/null
      cp /tmp/st/copy-1g/report.md "$OUT/copy-1g-report.md" 2>/dev/null ;;
    matmul)
      for space in spaces/matmul-8k.yaml spaces/matmul-shapes.yaml \
          "spaces/matmul-8k.yaml -p dtype=float8_e4m3fn -p BLOCK_K=128 --study matmul-8k-fp8"; do
        ( time sweeper run $space --studies-dir /tmp/st --no-priors ) 2>&1 \
          | tee -a "$OUT/matmul.log" | grep -E "^(best|winner|final|real|sweeper:)|torch" | tail -10
      done
      for s in /tmp/st/matmul*; do cp "$s/report.md" "$OUT/$(basename "$s")-report.md"; done ;;
    dispatch)
      for s in tuned heldout; do
        sweeper run benchmarks/spaces/dispatch-$s.yaml --quiet --studies-dir /tmp/d --no-priors \
          2>&1 | tail -3
        sweeper export dispatch-$s --studies-dir /tmp/d --format csv -o "$OUT/dispatch-$s.csv"
      done 2>&1 | tee "$OUT/dispatch.log"
      python3 benchmarks/dispatch_regret.py --tuned "$OUT/dispatch-tuned.csv" \
        --held-out "$OUT/dispatch-heldout.csv" 2>&1 | tee -a "$OUT/dispatch.log" ;;
    launcher) python3 benchmarks/launcher_overhead.py 2>&1 | tee "$OUT/launcher.log" ;;
    hookcost) python3 benchmarks/autotune_hooks_cost.py ${HOOKCOST_ARGS:-} 2>&1 | tee "$OUT/hookcost.log" ;;
    firstsamples) python3 benchmarks/first_samples.py --json "$OUT/first-samples.json" ${FIRST_ARGS:-} 2>&1 \
        | tee "$OUT/first-samples.log" | tail -45 ;;
    coolburst) python3 benchmarks/cool_burst_probe.py 2>&1 | tee "$OUT/cool-burst.log" | tail -20 ;;
    multigpu) python3 benchmarks/multi_gpu.py spaces/copy.yaml 2>&1 | tee "$OUT/multigpu.log" ;;
    multigpunvml) SWEEPER_NVML_PERIOD_MS=200 python3 benchmarks/multi_gpu.py spaces/copy.yaml 2>&1 \
        | tee "$OUT/multigpu-nvml200.log" ;;
    multigpulong) python3 benchmarks/multi_gpu.py spaces/matmul-8k.yaml --brief 2>&1 \
        | tee "$OUT/multigpu-long.log" ;;
    nvmlcontention) python3 benchmarks/nvml_contention.py spaces/copy.yaml 2>&1 \
        | tee "$OUT/nvml-contention.log" ;;
    reload) python3 benchmarks/reload_probe.py --out "$OUT/reload" ${RELOAD_ARGS:-} 2>&1 | tee "$OUT/reload.log" ;;
    reportspeed) python3 benchmarks/report_speed.py 2>&1 | tee "$OUT/reportspeed.log" ;;
    reportpools) for state in none cuda-init cuda-context; do
        python3 benchmarks/report_speed.py --pools --state $state 2>&1 | grep -A9 "^state"
      done | tee "$OUT/reportpools.log" ;;
    command) python3 benchmarks/command_overhead.py spaces/copy.yaml --out "$OUT/command" \
        2>&1 | tee "$OUT/command.log"
      for f in "$OUT"/command/{bare,run}*.stdout; do echo "$(basename "$f"):"; grep -A8 "^time: " "$f"; done \
        | tee -a "$OUT/command.log"
      tar czf "$OUT/command.tgz" -C "$OUT" command && rm -rf "$OUT/command" ;;
    commandrounds) python3 benchmarks/command_overhead.py spaces/copy.yaml --rounds "${ROUNDS:-3}" \
        --runs bare,run,kernel-tuner --out "$OUT/command-rounds" 2>&1 | tee "$OUT/command-rounds.log"
      for f in "$OUT"/command-rounds/run*.stdout; do echo "$(basename "$f"):"; grep -A8 "^time: " "$f"; done \
        | tee -a "$OUT/command-rounds.log"
      tar czf "$OUT/command-rounds.tgz" -C "$OUT" command-rounds && rm -rf "$OUT/command-rounds" ;;
    commandwarm) python3 benchmarks/command_overhead.py spaces/copy.yaml --cache warm --rounds "${ROUNDS:-3}" \
        --runs bare,run,run-no-report --out "$OUT/command-warm" 2>&1 | tee "$OUT/command-warm.log"
      for f in "$OUT"/command-warm/run*.stdout "$OUT"/command-warm/bare*.stdout; do echo "$(basename "$f"):"; grep -E -A8 "^(time: |bare loop)" "$f"; done \
        | tee -a "$OUT/command-warm.log"
      rm -rf "$OUT/command-warm" ;;
    commandpoll) python3 benchmarks/command_overhead.py spaces/copy.yaml --cache warm --rounds "${ROUNDS:-3}" \
        --runs bare,run,run-poll-once --out "$OUT/command-poll" 2>&1 | tee "$OUT/command-poll.log"
      for f in "$OUT"/command-poll/run*.stdout; do echo "$(basename "$f"):"; grep -E -A8 "^time: " "$f"; done \
        | tee -a "$OUT/command-poll.log"
      rm -rf "$OUT/command-poll" ;;
    commandabandon) python3 benchmarks/command_overhead.py spaces/copy.yaml --runs bare,run \
        --measure abandon=1.5 --out "$OUT/command-abandon" 2>&1 | tee "$OUT/command-abandon.log"
      for f in "$OUT"/command-abandon/*.stdout; do echo "$(basename "$f"):"; grep -E -A8 "^(time: |bare loop)" "$f"; done \
        | tee -a "$OUT/command-abandon.log"
      tar czf "$OUT/command-abandon.tgz" -C "$OUT" command-abandon && rm -rf "$OUT/command-abandon" ;;
    commandci) python3 benchmarks/command_overhead.py spaces/copy.yaml --runs bare,run,kernel-tuner \
        --measure stop=ci --out "$OUT/command-ci" 2>&1 | tee "$OUT/command-ci.log"
      for f in "$OUT"/command-ci/*.stdout; do echo "$(basename "$f"):"; grep -E -A8 "^(time: |bare loop)" "$f"; done \
        | tee -a "$OUT/command-ci.log"
      tar czf "$OUT/command-ci.tgz" -C "$OUT" command-ci && rm -rf "$OUT/command-ci" ;;
    runtiming)
      export TRITON_CACHE_DIR=/tmp/tc-runtiming
      sweeper run spaces/copy.yaml --studies-dir /tmp/rt-warm-up --quiet --no-report ${GPUS:-} >/dev/null 2>&1
      for v in "" "--workers inline" "--compile-workers 0" "--no-report"; do
        echo "--- sweeper run spaces/copy.yaml ${GPUS:-} $v (warm Triton cache)"
        rm -rf /tmp/rt; ( time sweeper run spaces/copy.yaml --studies-dir /tmp/rt --timing --quiet ${GPUS:-} $v ) 2>&1 \
          | grep -E "^(time|  |real|done|sweeper:)"
      done 2>&1 | tee "$OUT/runtiming.log" ;;
    profile)
      for space in ${PROFILE_SPACES:-spaces/copy.yaml}; do
        name=$(basename "$space" .yaml)
        export TRITON_CACHE_DIR=/tmp/tc-profile-$name
        sweeper run "$space" --studies-dir /tmp/pf-warm-up --quiet --no-report >/dev/null 2>&1
        rm -rf /tmp/pf
        python3 -m cProfile -o "$OUT/profile-$name.pstats" -m sweeper run "$space" --studies-dir /tmp/pf \
            --quiet --no-report --workers inline --timing 2>&1 | tee "$OUT/profile-$name.log"
        python3 -c "import pstats, sys; p = pstats.Stats(sys.argv[1]); p.sort_stats('tottime').print_stats(45); p.sort_stats('cumulative').print_stats(90)" \
            "$OUT/profile-$name.pstats" 2>&1 | sed "s#$PWD/##; s#/tmp/site/##" >> "$OUT/profile-$name.log"
        rm -f "$OUT/profile-$name.pstats"
      done ;;
    coldpool)
      for v in "" "--compile-workers 0" "" "--compile-workers 0"; do
        echo "--- sweeper run spaces/copy.yaml $v (empty Triton cache)"
        rm -rf /tmp/cp /tmp/tc-cold; export TRITON_CACHE_DIR=/tmp/tc-cold
        ( time sweeper run spaces/copy.yaml --studies-dir /tmp/cp --timing --quiet $v ) 2>&1 \
          | grep -E "^(time|  |real|done|sweeper:)"
      done 2>&1 | tee "$OUT/coldpool.log" ;;
    compilepool) python3 benchmarks/compile_pool.py ${COMPILE_POOL_ARGS:-} 2>&1 | tee "$OUT/compile_pool.log"
      python3 benchmarks/compile_pool.py --workers "$(nproc)" --ab 0 2>&1 | tee -a "$OUT/compile_pool.log" ;;
    busy) OUT="$OUT/busy" STAGES="${BUSY:-}" bash benchmarks/busy_budget.sh ;;
  esac
