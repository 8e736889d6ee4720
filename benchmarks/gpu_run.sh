#!/usr/bin/env bash
# One call on the GPU machine (see docs/benchmarks.md): install the carried wheels, run the
# GPU tests, the example study `sweeper run spaces/copy.yaml`, and the overhead benchmark.
# Logs go to $OUT; the study comes back as a tarball.
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#       --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 \
    || echo "(console script not installed; using python3 -m sweeper)"
sweeper() { if command -v sweeper >/dev/null; then command sweeper "$@"; else python3 -m sweeper "$@"; fi; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv;
  python3 -c "import torch, triton, optuna; print('torch', torch.__version__, 'triton', triton.__version__, 'optuna', optuna.__version__)"; } 2>&1 | tee "$OUT/env.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  python3 -m pytest -q -x -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest.log" | tail -5
fi
rm -rf studies/copy-fp32
( time sweeper run spaces/copy.yaml ) 2>&1 | tee "$OUT/run.log" | grep -v '^\s*$' | tail -8
tar czf "$OUT/study-copy-fp32.tgz" studies/copy-fp32
python3 benchmarks/sweep_overhead.py 2>&1 | tee "$OUT/overhead.log"
