"""The report's part on finals taken on several GPUs: whether one config serves every GPU
(:mod:`sweeper.consensus`), and each finalist's slowdown on each GPU as a table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from sweeper.consensus import AGREE, Agreement
from sweeper.store import ProblemKey


def agreement_frame(agree: Agreement) -> pd.DataFrame:
    """One row per finalist measured on every GPU, fastest worst case first: its % from
    each GPU's best median, its worst, and what it is (a GPU's winner, exported)."""
    rows = []
    for number, by_gpu in agree.slowdown.items():
        won = [f"GPU {g}" for g, w in agree.winners.items() if w == number]
        what = (["exported"] if number == agree.chosen else []) + \
            ([f"winner on {', '.join(won)}"] if won else [])
        rows.append({"#": number, **{f"GPU {g.index} % from best":
                                     round(100 * by_gpu[g.index], 2) for g in agree.gpus},
                     "worst %": round(100 * max(by_gpu.values()), 2), "": "; ".join(what)})
    return pd.DataFrame(rows).sort_values(["worst %", "#"], kind="stable")


def agreement_json(agreements: Mapping[ProblemKey, Agreement]) -> list[dict[str, Any]]:
    """The agreements as report.json gives them, in problem order."""
    return [{"problem": {**key._asdict(), "dims": dict(key.dims)}, "agreed": a.agreed,
             "threshold_pct": 100 * AGREE, "gpus": [str(g) for g in a.gpus],
             "exported": a.chosen, "worst_pct": 100 * a.worst, "summary": a.headline(),
             "gpu_winners": {str(g): n for g, n in a.winners.items()},
             "slowdown_pct": {str(n): {str(g): 100 * v for g, v in row.items()}
                              for n, row in a.slowdown.items()}}
            for key, a in sorted(agreements.items())]


def agreement_markdown(agree: Agreement) -> list[str]:
    """The paragraph and table report.md gives under a problem's final."""
    names = ", ".join(str(g) for g in agree.gpus)
    return [f"Across GPUs ({names}; the same finalists in the same rounds on each): "
            f"{agree.headline()}. A config within {AGREE:.0%} of a GPU's fastest median "
            "counts as its best.\n", agreement_frame(agree)]
