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
# The install line, for reference:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#       --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
STAGES=${STAGES:-tests calibrate example trust overhead}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 \
    || echo "(console script not installed; using python3 -m sweeper)"
sweeper() { if command -v sweeper >/dev/null; then command sweeper "$@"; else python3 -m sweeper "$@"; fi; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv;
  python3 -c "import torch, triton, optuna; print('torch', torch.__version__, 'triton', triton.__version__, 'optuna', optuna.__version__)"; } 2>&1 | tee "$OUT/env.txt"
for stage in $STAGES; do
  echo "=== $stage $(date -u +%T)"
  case $stage in
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
  esac
done
echo "=== done $(date -u +%T)"
