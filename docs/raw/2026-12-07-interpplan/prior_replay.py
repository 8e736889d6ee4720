"""Replay plan.note_run's launch-scale arithmetic over the runs of launch-ratios.json (each
sequence one sweeper cache, in time order) and score each rule by how far the scale the
runs before a run left (a kernel not run yet: the median of the other kernels' ratios)
is off that run's measured ratio, |log(scale / ratio)|; a sequence's first run, on a
fresh cache, is not scored.  Rules: a run's trials against PRIOR trials of what the
machine's other kernels measured; where none ran, of the model's 1 (anchor 1, as on main)
or none (the machine's first kernel kept as measured).
    python docs/raw/2026-12-07-interpplan/prior_replay.py docs/raw/2026-12-07-interpplan/launch-ratios.json"""
import json
import math
import statistics
import sys


def replay(runs, prior, anchor_one):
    ratio, trials, scale, errors = {}, {}, {}, []
    for _, kernel, _, n, r in runs:
        others = [v for k, v in ratio.items() if k != kernel]
        predicted = scale.get(kernel, statistics.median(others) if others else 1.0)
        errors.append(abs(math.log(predicted / r)))
        before = min(trials.get(kernel, 0), 200)                # SCALE_TRIALS_KEPT
        if before:
            r = math.exp((before * math.log(ratio[kernel]) + n * math.log(r)) / (before + n))
        ratio[kernel], trials[kernel] = r, n + before
        others = [v for k, v in ratio.items() if k != kernel]
        machine = statistics.median(others) if others else None
        weight = 1.0 if machine is None and not anchor_one else \
            trials[kernel] / (trials[kernel] + prior)
        scale[kernel] = r ** weight * (machine or 1.0) ** (1 - weight)
    return errors[1:]


data = json.load(open(sys.argv[1]))["sequences"]
for anchor_one in (True, False):
    for prior in (0, 5, 10, 20, 50):
        errors = [e for s in data.values() for e in replay(s["ratios"], prior, anchor_one)]
        print(f"anchor {'1' if anchor_one else 'none'}, prior {prior:2d}: off by "
              f"{math.exp(statistics.fmean(errors)):.2f}x in the mean, "
              f"{math.exp(max(errors)):.2f}x at most, within 1.5x "
              f"{sum(e <= math.log(1.5) for e in errors)}/{len(errors)}")
