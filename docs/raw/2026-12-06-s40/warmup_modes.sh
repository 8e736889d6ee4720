STAGES=" " bash benchmarks/gpu_run.sh >/dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pycache PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu.py -k first_sample 2>&1 | tail -3 | tee $OUT/pytest-first.log
python3 benchmarks/first_samples.py --reps 3 --gaps 0.002,0.5 --warmups count,loop,as_samples,count+poison,loop+poison,as_samples+poison --json $OUT/fs2.json > $OUT/fs2.log 2>&1; tail -28 $OUT/fs2.log
for mode in loop events count loop events count; do
  SWEEPER_WARMUP_MODE=$mode python3 benchmarks/autotune_hooks_cost.py 2>&1 | sed "s/^/$mode /" | tee -a $OUT/hook-modes.log | grep -E "^\w+ +#" | sed -E "s/\{[^}]*\}//; s/; discarded.*//"
done
