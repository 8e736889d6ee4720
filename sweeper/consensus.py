"""A winner every GPU agrees on: one problem's finals, taken on each GPU, read together.

Every rank of a multi-GPU job should launch the same config: ranks that pick their own
winner from noise end up running different kernels, and different kernels on the ranks
of a collective can deadlock it.  So with several GPUs the finalists are re-measured in
interleaved rounds on each of them (one :class:`~sweeper.finals.FinalRecord` per GPU),
and this module asks of those records: is there one config within ``AGREE`` of the
fastest median on every GPU?

- Each finalist's *slowdown* on a GPU is its median there over that GPU's fastest
  finalist median, minus one.
- *Agreed*: some config's slowdown is at most ``AGREE`` on every GPU.  Among such
  configs the one that is its own GPU's winner on the most GPUs is chosen (each GPU's
  final already traded noise for steadiness by its rule), then the smallest worst
  slowdown.
- Otherwise the GPUs disagree: each GPU's own winner is kept, with its slowdown on the
  others, and the *best common config* is the one whose worst slowdown is smallest
  (minimax): the config to give every rank when they must agree.

Ties go to the smaller mean slowdown, then the lower trial number, so the choice never
depends on the order the records were read in.  Pure: no measuring, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweeper.core import grid_labels
from sweeper.finals import FinalRecord
from sweeper.measure import PRACTICAL
from sweeper.store import GpuSlot, ProblemKey, TrialRecord

#: One config is good enough for every GPU when it is this close to each GPU's best: the
#: same 1 % of every launch's time that the finals and ``compare`` call a real difference.
AGREE = PRACTICAL
#: Slowdowns this close are equal (floating-point noise in the ratios of medians).
EPS = 1e-12


@dataclass(frozen=True)
class Agreement:
    """One problem's per-GPU finals read together.

    ``slowdown[number][gpu index]`` is finalist ``number``'s fractional slowdown on that
    GPU; ``winners[gpu index]`` each GPU's own winner; ``chosen`` the config every GPU
    gets (the agreed one, else the best common config) and ``worst`` its largest
    slowdown."""

    problem: ProblemKey
    gpus: tuple[GpuSlot, ...]
    slowdown: dict[int, dict[int, float]]
    winners: dict[int, int]
    chosen: int
    worst: float
    agreed: bool

    def headline(self) -> str:
        """The line the console and the report give: ``one config for every GPU: #47
        (worst 0.4 % from a GPU's best)``, or the per-GPU winners and what was exported."""
        if self.agreed:
            return (f"one config for every GPU: #{self.chosen} (worst {_pct(self.worst)} "
                    "from a GPU's best)")
        return (f"the GPUs disagree (no config within {AGREE:.0%} of the best on every GPU): "
                f"{self.apart()}; exported: #{self.chosen}, the best common config (worst "
                f"{_pct(self.worst)} from a GPU's best), with each GPU's winner alongside")

    def apart(self) -> str:
        """How far apart the per-GPU winners are: ``GPU 0's #47 is 2.1 % slower on GPU 1;
        GPU 1's #39 is 1.5 % slower on GPU 0``."""
        parts = []
        for gpu in self.gpus:
            won = self.winners[gpu.index]
            others = ", ".join(f"{_pct(self.slowdown[won][g.index])} slower on GPU {g.index}"
                               for g in self.gpus if g.index != gpu.index)
            parts.append(f"GPU {gpu.index}'s #{won} is {others}")
        return "; ".join(parts)

    def why(self) -> str:
        """Why the exported config was chosen, as the tuning entry records it."""
        if self.agreed:
            return (f"within {AGREE:.0%} of the best on all {len(self.gpus)} GPUs (worst "
                    f"{_pct(self.worst)}): every rank can use it")
        return (f"no config is within {AGREE:.0%} of the best on all {len(self.gpus)} GPUs; "
                f"this one's worst slowdown ({_pct(self.worst)}) is the smallest; "
                "gpu_winners lists each GPU's own")


def export_fields(agree: Agreement | None, trials: Mapping[int, TrialRecord]
                  ) -> dict[str, Any]:
    """What a tuning entry adds when its problem's finals ran on several GPUs: the
    ``agreement`` (whether one config serves every GPU, the exported config's worst
    slowdown and why it was exported) and ``gpu_winners``: each GPU's own winner, its
    config and its slowdown on every GPU, so a caller may still choose per rank.  Empty
    without an agreement."""
    if agree is None:
        return {}
    winners = []
    for gpu in agree.gpus:
        t = trials[agree.winners[gpu.index]]
        assert t.config is not None                # a finalist was measured
        winners.append({
            "gpu_index": gpu.index, "gpu": gpu.name, "trial": t.number,
            "grid": t.config.grid, "grid_expr": t.choice["grid"],
            **{f"{k}_expr": v for k, v in grid_labels(t.choice, t.config).items()},
            **t.config.grid_extents, "block": t.config.block, "meta": dict(t.config.meta),
            "slowdown_pct": {str(g): round(100 * v, 3)
                             for g, v in agree.slowdown[t.number].items()}})
    return {"agreement": {"agreed": agree.agreed, "gpus": [g.index for g in agree.gpus],
                          "exported": "agreed config" if agree.agreed else
                          "best common config", "trial": agree.chosen,
                          "worst_pct": round(100 * agree.worst, 3), "why": agree.why()},
            "gpu_winners": winners}


def agreement(finals: Sequence[FinalRecord]) -> Agreement:
    """The agreement of ``finals``: one problem's finals, one per GPU (at least one), over
    the same finalists; a finalist missing on some GPU cannot be every GPU's config and
    is left out."""
    assert finals, "agreement() of no finals"
    ordered = sorted(finals, key=lambda f: f.gpu.index if f.gpu else -1)
    gpus = tuple(f.gpu or GpuSlot(0, "") for f in ordered)
    medians = {g.index: {r.number: r.stats.median for r in f.finalists}
               for g, f in zip(gpus, ordered, strict=True)}
    common = set.intersection(*(set(m) for m in medians.values()))
    slowdown = {n: {g: m[n] / min(m.values()) - 1 for g, m in medians.items()}
                for n in sorted(common)}
    winners = {g.index: f.winner for g, f in zip(gpus, ordered, strict=True)}
    wins = {n: sum(w == n for w in winners.values()) for n in slowdown}

    def spread(n: int) -> tuple[float, float]:
        values = slowdown[n].values()
        return max(values), sum(values) / len(values)

    agreed = [n for n in slowdown if spread(n)[0] <= AGREE + EPS]
    if agreed:
        chosen = min(agreed, key=lambda n: (-wins[n], _rounded(spread(n)), n))
    else:
        chosen = min(slowdown, key=lambda n: (_rounded(spread(n)), n))
    return Agreement(problem=ordered[0].problem, gpus=gpus, slowdown=slowdown,
                     winners=winners, chosen=chosen, worst=spread(chosen)[0],
                     agreed=bool(agreed))


def _rounded(key: tuple[float, float]) -> tuple[float, float]:
    """``key`` with slowdowns closer than ``EPS`` made equal, so ties fall through."""
    return round(key[0] / EPS) * EPS, round(key[1] / EPS) * EPS


def _pct(fraction: float) -> str:
    """``0.4 %``: a slowdown as the console and report print it."""
    return f"{100 * fraction:.1f} %"


__all__ = ["AGREE", "Agreement", "agreement", "export_fields"]
