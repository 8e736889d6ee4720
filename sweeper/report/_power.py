"""Power, clocks and throttling over a study: what the GPU was doing while it was measured.

Every trial on a GPU records its sampling window's SM clock, board power and throttle
reasons (``TrialRecord.clocks``); a study found power-bound records when and why it
switched to an equal-duty schedule (a ``duty`` record in the journal).  This module sums
them up per study, so a reader can tell a kernel that ran at full clock from one that
ran capped, and whether the comparison between configs was made under equal conditions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from sweeper.finals import FinalRecord
from sweeper.measure._duty import POWER_CAP
from sweeper.store import DutyRecord, StudyMeta, TrialRecord


def power_summary(trials: Sequence[TrialRecord], meta: StudyMeta,
                  duty_records: Sequence[DutyRecord], finals: Sequence[FinalRecord]
                  ) -> dict[str, Any]:
    """Per study: the schedule and why, how many trials saw the power cap, the spread of
    the clocks the trials ran at, board power, and the samples discarded by reason."""
    windows = [t.clocks for t in trials if t.clocks and t.clocks.sm_mhz_mean is not None]
    clocks = [w.sm_mhz_mean for w in windows if w.sm_mhz_mean is not None]
    capped = [w.reasons[POWER_CAP] for w in windows if w.reasons.get(POWER_CAP)]
    power = [w.power_w_max for w in windows if w.power_w_max is not None]
    discarded: Counter[str] = Counter()
    for t in trials:
        for reason in t.discard_reasons:
            discarded[reason.split(" (")[0].split(":")[0]] += 1
    spec = meta.measure.get("duty", "auto")
    return {
        "schedule": spec,
        "switched": duty_records[-1].note if duty_records else "",
        "finals_duty": sorted({f.duty for f in finals if f.duty}),
        "trials_with_clocks": len(windows),
        "trials_capped": len(capped),
        "capped_share": float(np.mean(capped)) if capped else 0.0,
        "sm_mhz": {"min": min(clocks), "median": float(np.median(clocks)),
                   "max": max(clocks)} if clocks else None,
        "power_w_max": max(power) if power else None,
        "samples_discarded": sum(t.discarded for t in trials),
        "discard_reasons": dict(discarded.most_common()),
    }


def power_markdown(summary: dict[str, Any]) -> list[str]:
    """The report's "Power, clocks and throttling" section; nothing where no trial had
    clocks to read (the interpreter, a replay)."""
    if not summary["trials_with_clocks"]:
        return []
    out = ["\n## Power, clocks and throttling\n"]
    mhz = summary["sm_mhz"]
    out.append(f"SM clock while sampling (mean per trial, over {summary['trials_with_clocks']} "
               f"trials): {mhz['min']:.0f}-{mhz['max']:.0f} MHz, median {mhz['median']:.0f}"
               + (f"; highest board power {summary['power_w_max']:.0f} W"
                  if summary["power_w_max"] is not None else "") + ".\n")
    if summary["trials_capped"]:
        out.append(f"The power cap (`sw_power_cap`) showed in {summary['trials_capped']} "
                   f"trial(s), in {100 * summary['capped_share']:.0f}% of their NVML polls on "
                   "average; it labels samples and does not discard them, except under a "
                   "cool-down schedule.\n")
    else:
        out.append("The power cap (`sw_power_cap`) never showed while sampling.\n")
    if summary["switched"]:
        out.append(f"Equal duty: {summary['switched']}.\n")
    elif summary["schedule"] not in ("auto", "off"):
        out.append(f"Equal duty: measure.duty {summary['schedule']} for every config.\n")
    if summary["finals_duty"]:
        out.append(f"The finals ran under the same schedule ({'; '.join(summary['finals_duty'])})"
                   ".\n")
    if summary["samples_discarded"]:
        reasons = ", ".join(f"{k} ({v} chunk(s))" for k, v in summary["discard_reasons"].items())
        out.append(f"Samples discarded while throttled: {summary['samples_discarded']} "
                   f"({reasons}).\n")
    return out
